package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/adapters/postgres/pgconformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// envOptions shape one test store.
type envOptions struct {
	// simple runs every statement with pgx's simple protocol (PgBouncer
	// transaction pooling); such a store has no listener.
	simple bool
	// clock overrides the store clock; nil keeps the database clock.
	clock ports.Clock
	// listen wires a notify.Listener on the store's schema.
	listen bool
	// maxConns bounds the store's pool (default 4).
	maxConns int32
	// tracer observes the store's statements (tests that pause a write).
	tracer pgx.QueryTracer
	// policy is the store's claim policy (nil: claim.Legacy).
	policy claim.Policy
	// genericPlans makes the pool's sessions plan every prepared statement
	// generically (plan_cache_mode = force_generic_plan, no JIT), as
	// PostgreSQL may settle on after five executions: what a store writes
	// must not depend on the plan.
	genericPlans bool
	// telemetry receives the store's spans (nil: none).
	telemetry ports.Telemetry
	// dial, when set, opens the pool's connections (tests that cut one).
	dial pgconn.DialFunc
	// ownFunctionsFirst puts the test's schema before pg_catalog in the
	// sessions' search_path, so that a function the test creates there
	// stands in for the built-in function of its name in the store's
	// statements (tests that pause a statement at a chosen point).
	ownFunctionsFirst bool
}

// testEnv is one Store on a fresh, migrated schema of the test process's
// shared database, with its own small pool.
type testEnv struct {
	db      *pgtest.Database
	schema  string
	pool    *pgxpool.Pool
	store   *postgres.Store
	session *pgconformance.SessionMode
	// mode is the admission mode of the store's policy.
	mode string
}

func newEnv(t testing.TB, opts envOptions) *testEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.SharedDatabase(t)
	schema := schemas.take(t, db)
	// Registered first, so it runs last: after the pool and the listener
	// of this test are closed, the emptied schema serves the next test.
	t.Cleanup(func() { schemas.give(db, schema) })
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatalf("parse %s: %v", db.Name, err)
	}
	cfg.MaxConns = opts.maxConns
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 4
	}
	cfg.MinConns = 0
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	if opts.genericPlans {
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_generic_plan"
		cfg.ConnConfig.RuntimeParams["jit"] = "off"
	}
	if opts.ownFunctionsFirst {
		cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize() + ", pg_catalog"
	}
	if opts.simple {
		cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	listenConfig := cfg.ConnConfig.Copy()
	cfg.ConnConfig.Tracer = opts.tracer
	if opts.dial != nil {
		cfg.ConnConfig.DialFunc = opts.dial
	}
	session := &pgconformance.SessionMode{}
	cfg.PrepareConn = session.Prepare
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("open a pool: %v", err)
	}
	t.Cleanup(pool.Close)

	storeCfg := postgres.Config{Pool: pool, Schema: schema, Clock: opts.clock, Policy: opts.policy, Telemetry: opts.telemetry}
	if opts.listen {
		listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: listenConfig, Schema: schema})
		if err != nil {
			t.Fatalf("listener: %v", err)
		}
		storeCfg.Notifier = listener
	}
	store, err := postgres.New(ctx, storeCfg)
	if err != nil {
		t.Fatalf("postgres.New: %v", err)
	}
	t.Cleanup(func() { _ = store.Close() })
	mode := claim.AdmissionModeLegacy
	if opts.policy != nil {
		mode = claim.AdmissionMode(opts.policy)
	}
	return &testEnv{db: db, schema: schema, pool: pool, store: store, session: session, mode: mode}
}

// schemaPool hands out migrated, empty schemas of the shared database and
// takes them back emptied: a fresh schema per test without paying for DDL
// every time. The shared database (and every schema in it) is dropped by
// pgtest.Main.
type schemaPool struct {
	mu    sync.Mutex
	next  int
	clean []string
}

var schemas schemaPool

func (p *schemaPool) take(t testing.TB, db *pgtest.Database) string {
	t.Helper()
	p.mu.Lock()
	if n := len(p.clean); n > 0 {
		schema := p.clean[n-1]
		p.clean = p.clean[:n-1]
		p.mu.Unlock()
		return schema
	}
	p.next++
	schema := fmt.Sprintf("pgadapter_%d_%d", os.Getpid(), p.next)
	p.mu.Unlock()
	ctx := context.Background()
	conn := db.Connect(t)
	// Tests need no durability: commits that skip the WAL flush keep the
	// shared server fast for every package testing against it.
	if _, err := conn.Exec(ctx, "SET synchronous_commit = off"); err != nil {
		t.Fatalf("configure the migration session: %v", err)
	}
	if _, err := migrations.Up(ctx, conn, migrations.Options{Schema: schema}); err != nil {
		t.Fatalf("migrate schema %s: %v", schema, err)
	}
	return schema
}

// give empties schema (DELETE: the schedule triggers forbid TRUNCATE) and
// returns it to the pool; a schema that cannot be emptied is not reused.
func (p *schemaPool) give(db *pgtest.Database, schema string) {
	q := func(table string) string { return pgx.Identifier{schema, table}.Sanitize() }
	reset := "SET synchronous_commit = off;" +
		"DELETE FROM " + q("docket_events") + ";" +
		"DELETE FROM " + q("docket_runs") + ";" +
		"DELETE FROM " + q("docket_graph_versions") + ";" +
		"UPDATE " + q("docket_claim_policy") + " SET admission_mode = 'legacy';"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		return
	}
	defer func() { _ = conn.Close(context.Background()) }()
	if _, err := conn.Exec(ctx, reset, pgx.QueryExecModeSimpleProtocol); err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clean = append(p.clean, schema)
}

// table is the quoted, schema-qualified name of a Docket table.
func (e *testEnv) table(name string) string {
	return pgx.Identifier{e.schema, name}.Sanitize()
}
