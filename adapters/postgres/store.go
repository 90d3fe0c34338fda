package postgres

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// ErrConfig is wrapped by every configuration error New returns.
var ErrConfig = errors.New("invalid docket postgres configuration")

// Config configures a Store. The zero value of every field but Pool means
// the documented default.
type Config struct {
	// Pool is the connection pool of every statement (required). Its
	// sessions must default to READ COMMITTED and read-write, with
	// standard_conforming_strings on. The Store
	// does not own it: closing the Store leaves it open. For PgBouncer in
	// transaction pooling mode set its ConnConfig.DefaultQueryExecMode to
	// pgx.QueryExecModeSimpleProtocol (and leave Notifier nil, or point a
	// notify.Listener at a direct endpoint). A tracer on the pool (pgx's
	// tracelog, say) sees every statement's arguments; claim tokens are
	// bound as values that render as "[redacted]", so it never logs one.
	Pool *pgxpool.Pool
	// Schema is the schema holding Docket's tables, matching
	// ^[a-z_][a-z0-9_]*$ (at most 63 bytes). Empty: the schema in which the
	// pool's search_path finds docket_runs, resolved once at New. It is the
	// payload of the store's wake announcements.
	Schema string
	// Policy is the claim policy ClaimDue executes: claim.Legacy (the
	// default, FIFO) or the tenant-fair claim.WindowedInterleave (any
	// instance of it: its random source is PostgreSQL's random()). These
	// are the policies implemented in SQL. New makes the policy's admission
	// mode the schema's admission authority ("last boot wins"): stores of
	// the other policy on the same schema then fail closed with
	// ports.UnavailableInactiveEngine until restarted.
	Policy claim.Policy
	// KeepAdmissionMode makes New leave the schema's admission mode as it
	// is instead of making Policy's mode the authority. Set it in
	// processes that never claim (admin tools, one-off commands), so that
	// starting one cannot make a running fleet's dispatchers fail closed.
	// ClaimDue still works while the gate is in Policy's mode and fails
	// with ports.UnavailableInactiveEngine otherwise.
	KeepAdmissionMode bool
	// Clock overrides the store clock (CURRENT_TIMESTAMP and
	// clock_timestamp()) with a caller-controlled one: retained-claim and
	// refresh stamps, immediate wakes, announcement checks, and the
	// insertion times of runs, events and graph versions. Leave it nil in
	// production: the database clock is the one every instance shares.
	// Tests and single-process deterministic modes set it.
	Clock ports.Clock
	// Notifier is the wake listener Backend.Notifier returns (for example
	// a notify.Listener on this schema). Nil means poll-only:
	// Capabilities().Listen is false. The store announces wakes with
	// pg_notify either way. A Notifier that reports its schema (a
	// notify.Listener's Schema method) must report this store's: New
	// refuses one that could never hear it.
	Notifier ports.Notifier
	// MaxCommitBatch caps how many claimed commits of different runs share
	// one statement, and how many run insertions do (default 64; 1 sends
	// every write alone). Writes are grouped only while an earlier
	// statement is in flight, so a lone write never waits for company;
	// each commit keeps its own fence.
	MaxCommitBatch int
	// MaxCommitFlushes caps the statements in flight at once, each on its
	// own pooled connection (default 2), for each of three kinds of
	// batched write: mid-run commits, commits that finish a run, and run
	// insertions. A statement beyond the first starts only once several
	// mid-run commits wait, or a full batch (MaxCommitBatch) of the
	// others: those change their scope's schedule row, and statements of
	// one scope finish one after the other.
	MaxCommitFlushes int
	// Telemetry receives operation spans with bounded labels (default
	// ports.NopTelemetry). Claim tokens, identities, payloads and state
	// never reach it.
	Telemetry ports.Telemetry
}

// Store is the PostgreSQL backend: ports.RunStore, ports.EventStore and
// ports.GraphStore over one schema. It is safe for concurrent use. Every
// hot operation is one statement on a pooled connection, shared by
// concurrent claimed commits and by concurrent insertions; only an
// owner's first insertion, serialized mutations, poison recovery and prune
// passes open a (short) transaction. No connection is held while caller code runs,
// except a MutateRun mutation, which runs under the run's row lock.
type Store struct {
	pool      *pgxpool.Pool
	bun       *bun.DB
	sqlDB     *sql.DB
	schema    string
	stmt      statements
	policy    claim.Policy
	claimSQL  string // the policy's admission statement
	clock     ports.Clock
	notifier  ports.Notifier
	telemetry ports.Telemetry
	commits   *batcher[commitRow]
	// closings carries the claimed commits that finish a run, inserts the
	// insertions. Both change their scope's schedule row, which a
	// statement locks in its statement trigger, at its end, scopes in key
	// order (so two never deadlock), and holds until it commits:
	// statements of one scope do most of their work side by side but
	// finish one after the other, so a second one starts only once a full
	// batch waits (a saturated one-step drain then gains about a fifth,
	// 64 concurrent starters as much; fewer, larger statements serve
	// lighter loads better). Closings batch apart from mid-run commits,
	// which change no schedule row and never wait behind that lock.
	closings *batcher[commitRow]
	inserts  *batcher[insertRow]
	// partitions are the owners whose claim partition this store has
	// seen exist (partitions are never removed by Docket).
	partitions sync.Map
	wire       wireConfig
	wireNames  sync.Map // statement text -> prepared statement name
}

var _ ports.Backend = (*Store)(nil)

// New validates cfg, checks the database and returns a Store. It refuses
// a schema that is not at exactly migrations.CurrentVersion (with the
// migrations package's message saying what to run), a pool whose sessions
// are not READ COMMITTED and read-write, and an unsupported claim policy.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Pool == nil {
		return nil, fmt.Errorf("%w: Config.Pool is required", ErrConfig)
	}
	if cfg.Policy == nil {
		cfg.Policy = claim.Legacy
	}
	mode := claim.AdmissionMode(cfg.Policy)
	if mode == "" {
		return nil, fmt.Errorf("%w: Config.Policy %q is not implemented by the PostgreSQL adapter "+
			"(use claim.Legacy or claim.WindowedInterleave)", ErrConfig, cfg.Policy.Name())
	}
	if cfg.MaxCommitBatch < 0 || cfg.MaxCommitFlushes < 0 {
		return nil, fmt.Errorf("%w: MaxCommitBatch and MaxCommitFlushes must not be negative", ErrConfig)
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = ports.NopTelemetry{}
	}
	schema, err := migrations.ResolveSchema(ctx, cfg.Pool, cfg.Schema)
	if err != nil {
		if errors.Is(err, migrations.ErrInvalidSchema) {
			return nil, fmt.Errorf("%w: Config.Schema: %w", ErrConfig, err)
		}
		return nil, err
	}
	// A listener that names its schema must name this one, or it would
	// never hear this store's announcements: each wake would silently
	// wait for the next poll.
	if n, ok := cfg.Notifier.(interface{ Schema() string }); ok && n.Schema() != schema {
		return nil, fmt.Errorf("%w: Config.Notifier listens for schema %q, but this store announces with %q", ErrConfig, n.Schema(), schema)
	}
	if err := checkSession(ctx, cfg.Pool); err != nil {
		return nil, err
	}
	if err := migrations.Check(ctx, cfg.Pool, schema); err != nil {
		return nil, err
	}
	stmt := renderStatements(schema)
	if !cfg.KeepAdmissionMode {
		if err := normalizeGate(ctx, cfg.Pool, stmt, mode); err != nil {
			return nil, err
		}
	}
	claimSQL := stmt.claimDue
	if mode == claim.AdmissionModeWindowed {
		claimSQL = stmt.claimDueWindowed
	}
	commits := &batcher[commitRow]{
		maxBatch:   cmp.Or(cfg.MaxCommitBatch, defaultMaxCommitBatch),
		maxFlushes: cmp.Or(cfg.MaxCommitFlushes, defaultMaxCommitFlushes),
	}
	closings := scheduleLane[commitRow](commits.maxBatch, commits.maxFlushes)
	inserts := scheduleLane[insertRow](commits.maxBatch, commits.maxFlushes)
	sqlDB := stdlib.OpenDBFromPool(cfg.Pool)
	s := &Store{
		pool:      cfg.Pool,
		wire:      newWireConfig(cfg.Pool),
		bun:       bun.NewDB(sqlDB, pgdialect.New()),
		sqlDB:     sqlDB,
		schema:    schema,
		stmt:      stmt,
		policy:    cfg.Policy,
		claimSQL:  claimSQL,
		clock:     cfg.Clock,
		notifier:  cfg.Notifier,
		telemetry: cfg.Telemetry,
		commits:   commits,
		closings:  closings,
		inserts:   inserts,
	}
	commits.flush = s.flushCommits
	closings.flush = s.flushCommits
	inserts.flush = s.flushInserts
	commits.release = commitRow.release
	closings.release = commitRow.release
	return s, nil
}

// checkSession refuses sessions whose default transactions are not READ
// COMMITTED and read-write: admission's SKIP LOCKED re-check semantics rely
// on READ COMMITTED, and the gate refuses anything else at claim time too.
// It also refuses sessions with standard_conforming_strings off: the read
// models inline their filters as literals (bun quotes a string by doubling
// its quotes), and there a backslash in a filter would end its literal and
// turn the rest into SQL.
func checkSession(ctx context.Context, pool *pgxpool.Pool) error {
	var isolation, readOnly, conforming string
	err := pool.QueryRow(ctx,
		`SELECT current_setting('transaction_isolation'), current_setting('transaction_read_only'),
		        current_setting('standard_conforming_strings')`).
		Scan(&isolation, &readOnly, &conforming)
	if err != nil {
		return fmt.Errorf("docket postgres: read the session's settings: %w", err)
	}
	if conforming != "on" {
		return fmt.Errorf("%w: the pool's sessions run with standard_conforming_strings %s; Docket requires on "+
			"(check the role, database and connection string)", ErrConfig, conforming)
	}
	if isolation != "read committed" {
		return fmt.Errorf("%w: the pool's sessions run %s transactions; Docket requires read committed "+
			"(check default_transaction_isolation of the role, database and connection string)", ErrConfig, isolation)
	}
	if readOnly != "off" {
		return fmt.Errorf("%w: the pool's sessions are read-only (default_transaction_read_only is on, "+
			"or the server is a standby); Docket needs a writable primary", ErrConfig)
	}
	return nil
}

// normalizeGate makes this store's engine (mode: the policy's admission
// mode) the admission authority of the schema at startup (spec §6.3, "last
// boot wins"): mixing engines on one schema is unsupported, and the loser
// fails closed (inactive_engine) instead of admitting under different
// rules.
func normalizeGate(ctx context.Context, pool *pgxpool.Pool, stmt statements, mode string) error {
	var current string
	err := pool.QueryRow(ctx, stmt.gateMode).Scan(&current)
	if err == nil && current == mode {
		return nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return dbError("read the admission gate", err)
	}
	if _, err := pool.Exec(ctx, stmt.normalizeGate, mode); err != nil {
		return dbError("normalize the admission gate", err)
	}
	return nil
}

// Schema returns the schema the store works in (the announcement payload).
func (s *Store) Schema() string { return s.schema }

// Close releases the store's database/sql bridge. The pool stays open.
func (s *Store) Close() error { return s.sqlDB.Close() }

// Capabilities reports a listener when Config.Notifier was given, and
// tenant fairness under claim.WindowedInterleave.
func (s *Store) Capabilities() ports.Capabilities {
	return ports.Capabilities{Listen: s.notifier != nil, TenantFair: s.policy.MarksAdmission()}
}

// Notifier returns Config.Notifier (nil in poll-only mode).
func (s *Store) Notifier() ports.Notifier { return s.notifier }

// storeNow is the store clock override as a nullable parameter: nil lets
// the SQL use the database clock.
func (s *Store) storeNow() *time.Time {
	if s.clock == nil {
		return nil
	}
	t := ports.Micros(s.clock.Now())
	return &t
}

// scopeArgs are the ($is_system, $scope_key) parameters of a scoped
// statement; callers have validated the scope.
func scopeArgs(scope ports.Scope) (bool, string) {
	return scope.IsSystem(), scope.Key()
}

// tenantArg is the tenant_id column value of an owner scope.
func tenantArg(owner ports.OwnerScope) *string {
	if owner.IsTenantless() {
		return nil
	}
	id := owner.TenantID()
	return &id
}

// ownerOf is the owner scope of a row's tenant_id.
func ownerOf(tenantID *string) ports.OwnerScope {
	if tenantID == nil {
		return ports.Tenantless()
	}
	return ports.OwnerOf(*tenantID)
}

// inTx runs fn in a READ COMMITTED transaction, committing when fn returns
// nil and rolling back otherwise.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// observe opens a telemetry span for op; the returned function ends it
// with a bounded result label.
func (s *Store) observe(ctx context.Context, op string) func(result string) {
	if ports.Discards(s.telemetry) {
		return endNothing
	}
	_, span := s.telemetry.StartSpan(ctx, op)
	return func(result string) { span.End(result, nil) }
}

func endNothing(string) {}

// observeOperation spans one claim operation; it ends with whether the
// operation matched the run's current claim (or, for a poison recovery,
// a poisoned run).
func (s *Store) observeOperation(ctx context.Context, operation string) func(result string, matched bool) {
	_, span := s.telemetry.StartSpan(ctx, "claim.operation", ports.Label{Key: "operation", Value: operation})
	return func(result string, matched bool) {
		m := 0.0
		if matched {
			m = 1
		}
		span.End(result, ports.Measurements{"matched": m})
	}
}

// resultOf labels a write's outcome: ok, stale_fence, other (an expected
// port outcome such as not found or an invalid proposal) or error.
func resultOf(err error) string {
	switch {
	case err == nil:
		return ports.ResultOK
	case errors.Is(err, ports.ErrStaleFence):
		return ports.ResultStaleFence
	case errors.Is(err, ports.ErrNotFound), errors.Is(err, ports.ErrInvalidCommit),
		errors.Is(err, ports.ErrEventConflict), errors.Is(err, ports.ErrInvalidArgument),
		errors.Is(err, ports.ErrInvalidScope), errors.Is(err, ports.ErrConflict):
		return ports.ResultOther
	default:
		return ports.ResultError
	}
}

// scheduleLane is a lane of writes that change their scope's schedule row
// (finishing commits, insertions): a second statement starts only once a
// full batch waits, since statements of one scope finish one after the
// other (see Store.closings).
func scheduleLane[T any](maxBatch, maxFlushes int) *batcher[T] {
	return &batcher[T]{maxBatch: maxBatch, maxFlushes: maxFlushes, parallelAt: maxBatch}
}
