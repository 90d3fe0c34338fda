// Package migrations creates, upgrades, downgrades and verifies the
// PostgreSQL schema of Docket's durable backend (schema version 2: graph
// versions, runs, events, the claim-policy gate, claim partitions and the
// trigger-maintained claim schedule).
//
// The SQL lives in embedded files under sql/, one up and one down file per
// version, templated only with the quoted schema name. Up, Down, Status and
// Check are what the CLI (`docket migrate …`) and the PostgreSQL adapter's
// startup check call; the adapter itself is not here.
//
// # Why a small runner of its own
//
// The schema version is recorded where the reference implementation records
// it: as the comment of the schema's docket_runs table
// (COMMENT ON TABLE "<schema>".docket_runs IS '2'). An operator can read it
// with psql on any installation, and a schema migrated by one tool is
// recognised by another, with no bookkeeping table that a general-purpose
// migrator (bun, goose, …) would add and insist on owning. The runner needed
// for that is a few dozen lines on pgx: every Up or Down is one transaction
// holding pg_advisory_xact_lock(hashtextextended('docket:migrate:' ||
// schema, 0)), so concurrent migrators of one schema serialize and all but
// the first find nothing to do. DDL in PostgreSQL is transactional, so a
// failed migration leaves the previous version intact.
//
// # Schema names
//
// Every object lives in one schema (the "prefix"), "public" by default.
// A name must match ^[a-z_][a-z0-9_]*$ and be at most 63 bytes; anything
// else is rejected with ErrInvalidSchema before any SQL is sent, and valid
// names are still always quoted with pgx.Identifier.Sanitize.
//
// # Divergences from the reference schema
//
// docket_runs has one extra column, event_seq bigint NOT NULL DEFAULT 0 with
// CHECK docket_runs_event_seq_check (event_seq >= 0): the run's committed
// event counter, which the reference keeps only inside its opaque state, so
// that event pages can report latest_seq without decoding the run. Check
// verifies it as part of the shape check. The document columns (run state,
// event payload and metadata, graph) are compressed with lz4 where the
// server supports it, the server's default elsewhere; readers see the same
// bytes.
package migrations
