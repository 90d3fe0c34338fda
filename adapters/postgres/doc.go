// Package postgres is Docket's PostgreSQL backend: ports.RunStore,
// ports.EventStore and ports.GraphStore (one ports.Backend) over one
// schema, on pgx v5 and a pgxpool.Pool.
//
// PostgreSQL is the coordination authority. Each docket_runs row is both
// the run's last committed document and its own queue entry; ready,
// scheduled, claimed, expired and poisoned are predicates over its
// operational columns. Every hot operation is ONE statement on a pooled
// connection (autocommit): ClaimDue (admission gate, FOR UPDATE SKIP LOCKED
// candidates, the merge of claim.Legacy or of the tenant-fair
// claim.WindowedInterleave, lease-or-poison per row), the fenced
// claimed Commit (fence, run update, schedule, event append and the wake
// announcement), RefreshClaim, ReleaseClaim and AbandonClaim. Claimed
// commits and run insertions of concurrent callers share statements (group
// commit; batch.go), each commit under its own fence. The first insertion
// of an owner, serialized mutations (MutateRun), poison recovery and prune
// passes use a short transaction. No connection is held while caller code
// runs, except a MutateRun mutation, which runs under the run's row lock by
// design. The statements are named constants in statements.go, each with
// the invariant it enforces; the configured schema is quoted with
// pgx.Identifier.Sanitize once, at New. Read models (ListRuns, graph
// version lists) go through bun over the same pool.
//
// Wakes are announced with pg_notify('docket_wake', <schema>) inside the
// writing statement, so listeners (adapters/notify) hear only of committed
// writes. Claim tokens are bearer capabilities: they are bound as typed
// UUID parameters, never formatted into SQL, errors or telemetry, and
// never returned by inspection; database errors are scrubbed of row
// details at the boundary (DatabaseError).
//
// The pool may use pgx's simple protocol (PgBouncer transaction pooling);
// LISTEN then needs a separate direct connection, or none (poll-only).
//
// What it is not for: applying migrations (the migrations module does
// that; New only checks the version), or the dispatcher and vehicles (app).
package postgres
