package dbbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/claim"
)

// backlogTemplateSeq is the sequence number of the one run started
// through the engine; its copies take 1..n-1.
const backlogTemplateSeq = 0

// BacklogRunID is the id of run i of a loaded backlog. The width is fixed
// so that a copy's document differs from the template's only in the id.
func BacklogRunID(i int) string { return fmt.Sprintf("run_backlog_%08d", i) }

// backlogRunIDSQL is BacklogRunID in SQL over the series column g.
const backlogRunIDSQL = `'run_backlog_' || lpad(g::text, 8, '0')`

// maxBacklog is the largest backlog BacklogRunID can number.
const maxBacklog = 100_000_000

// backlogBatch is how many runs one INSERT … SELECT copies: large enough
// that statement overhead vanishes, small enough that one transaction's
// WAL and memory stay modest and that two loaders share a 100k backlog.
const backlogBatch = 50_000

// backlogLoaders is how many batches load at once (one per core of a
// small machine; the inserts are the database's CPU work).
const backlogLoaders = 2

// BacklogLoad is what loading a backlog took.
type BacklogLoad struct {
	Runs int
	// Copy is the time of the INSERT … SELECT batches; Vacuum the
	// VACUUM (ANALYZE) after them.
	Copy, Vacuum time.Duration
}

// LoadBacklog fills d's (fresh, migrated) database with n runs of d's
// graph, every one committed initialized and due now, fast enough for a
// million: one run is started through the engine, so its row, its events
// and its graph version are exactly what the engine writes, and the
// database copies it n-1 times with new run ids (the id inside the stored
// document rewritten to match). Rows go through the tables normally, so
// every CHECK, foreign key and the claim-schedule triggers apply. The
// copies share the template's wake_at and are claimed in id order. The
// engine must not be started.
func (d *Docket) LoadBacklog(ctx context.Context, n int) (BacklogLoad, error) {
	load := BacklogLoad{Runs: n}
	if n < 1 || n > maxBacklog {
		return load, fmt.Errorf("backlog of %d runs: want 1..%d", n, maxBacklog)
	}
	templateID := BacklogRunID(backlogTemplateSeq)
	if _, err := d.Engine.StartRun(ctx, d.Ref, map[string]any{"in": "x"}, engine.WithRunID(templateID)); err != nil {
		return load, fmt.Errorf("start the template run: %w", err)
	}
	runsCopy, eventsCopy, err := d.backlogCopyStatements(ctx, templateID)
	if err != nil {
		return load, err
	}
	start := time.Now()
	if err := copyBacklog(ctx, d.Pool, runsCopy, eventsCopy, templateID, n); err != nil {
		return load, err
	}
	load.Copy = time.Since(start)
	start = time.Now()
	for _, table := range []string{"docket_runs", "docket_events", "docket_claim_schedule"} {
		if _, err := d.Pool.Exec(ctx, "VACUUM (ANALYZE) "+pgx.Identifier{DocketSchema, table}.Sanitize()); err != nil {
			return load, fmt.Errorf("vacuum %s: %w", table, err)
		}
	}
	load.Vacuum = time.Since(start)
	return load, nil
}

// copyBacklog runs the copies backlogLoaders batches at a time. Runs and
// their events commit in separate transactions, so the scope's schedule
// row, which every runs INSERT updates, is held only briefly and the
// loaders overlap.
func copyBacklog(ctx context.Context, pool *pgxpool.Pool, runsCopy, eventsCopy, templateID string, n int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type span struct{ lo, hi int }
	spans := make(chan span)
	go func() {
		defer close(spans)
		for lo := backlogTemplateSeq + 1; lo < n; lo += backlogBatch {
			select {
			case spans <- span{lo, min(lo+backlogBatch, n) - 1}:
			case <-ctx.Done():
				return
			}
		}
	}()
	copyIn := func(sql string, s span, want int64) error {
		return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			// Losing the tail of a benchmark load on a crash is harmless.
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, sql, templateID, s.lo, s.hi)
			if err != nil {
				return err
			}
			if want > 0 && tag.RowsAffected() != want {
				return fmt.Errorf("copied %d rows, want %d", tag.RowsAffected(), want)
			}
			return nil
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, backlogLoaders)
	for range backlogLoaders {
		wg.Go(func() {
			for s := range spans {
				if err := copyIn(runsCopy, s, int64(s.hi-s.lo+1)); err != nil {
					errs <- fmt.Errorf("copy runs %d..%d: %w", s.lo, s.hi, err)
					cancel()
					return
				}
				if err := copyIn(eventsCopy, s, 0); err != nil {
					errs <- fmt.Errorf("copy events of runs %d..%d: %w", s.lo, s.hi, err)
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}

// backlogCopyStatements builds the INSERT … SELECT of the runs and of the
// events, over every stored column of each table (so a column added by a
// later migration is copied too). $1 is the template's run id, $2..$3 the
// inclusive range of copy numbers.
func (d *Docket) backlogCopyStatements(ctx context.Context, templateID string) (runs, events string, err error) {
	// The copies rewrite the id inside the document; it must occur there
	// exactly once, and nowhere in the events' bytes.
	var state []byte
	runsTable := pgx.Identifier{DocketSchema, "docket_runs"}.Sanitize()
	eventsTable := pgx.Identifier{DocketSchema, "docket_events"}.Sanitize()
	if err := d.Pool.QueryRow(ctx, "SELECT state FROM "+runsTable+" WHERE run_id = $1", templateID).Scan(&state); err != nil {
		return "", "", fmt.Errorf("read the template run: %w", err)
	}
	if c := bytes.Count(state, []byte(`"`+templateID+`"`)); c != 1 {
		return "", "", fmt.Errorf("the template document names its run id %d times, want 1", c)
	}
	var mentions int
	if err := d.Pool.QueryRow(ctx, "SELECT count(*) FROM "+eventsTable+
		" WHERE run_id = $1 AND (position(convert_to($1, 'UTF8') IN payload) > 0 OR position(convert_to($1, 'UTF8') IN metadata) > 0)",
		templateID).Scan(&mentions); err != nil {
		return "", "", fmt.Errorf("read the template events: %w", err)
	}
	if mentions != 0 {
		return "", "", fmt.Errorf("%d template events name the run id in their bytes; copying them verbatim would be wrong", mentions)
	}

	runsCols, err := copiedColumns(ctx, d.Pool, "docket_runs")
	if err != nil {
		return "", "", err
	}
	eventsCols, err := copiedColumns(ctx, d.Pool, "docket_events")
	if err != nil {
		return "", "", err
	}
	selectList := func(cols []string, rewrite map[string]string) string {
		exprs := make([]string, len(cols))
		for i, c := range cols {
			if e, ok := rewrite[c]; ok {
				exprs[i] = e
			} else {
				exprs[i] = "t." + pgx.Identifier{c}.Sanitize()
			}
		}
		return strings.Join(exprs, ", ")
	}
	quoted := func(cols []string) string {
		q := make([]string, len(cols))
		for i, c := range cols {
			q[i] = pgx.Identifier{c}.Sanitize()
		}
		return strings.Join(q, ", ")
	}
	runs = "INSERT INTO " + runsTable + " (" + quoted(runsCols) + ")\nSELECT " + selectList(runsCols, map[string]string{
		"run_id": backlogRunIDSQL,
		"state": `convert_to(replace(convert_from(t.state, 'UTF8'), '"' || t.run_id || '"', '"' || ` +
			backlogRunIDSQL + ` || '"'), 'UTF8')`,
	}) + "\nFROM " + runsTable + " AS t CROSS JOIN generate_series($2::integer, $3::integer) AS g\nWHERE t.run_id = $1"
	events = "INSERT INTO " + eventsTable + " (" + quoted(eventsCols) + ")\nSELECT " + selectList(eventsCols, map[string]string{
		"run_id": backlogRunIDSQL,
	}) + "\nFROM " + eventsTable + " AS t CROSS JOIN generate_series($2::integer, $3::integer) AS g\nWHERE t.run_id = $1"
	return runs, events, nil
}

// copiedColumns are the columns of a Docket table a copy writes: every
// column but the serial id and the generated ones.
func copiedColumns(ctx context.Context, pool *pgxpool.Pool, table string) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT column_name FROM information_schema.columns
WHERE table_schema = $1 AND table_name = $2 AND is_generated = 'NEVER' AND column_name <> 'id'
ORDER BY ordinal_position`, DocketSchema, table)
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("table %s.%s has no columns", DocketSchema, table)
	}
	return cols, nil
}

// claimPoolSize is the connection count of a Claimer's pool: one claims
// at a time, and releases spread over all of them.
const claimPoolSize = 4

// Claimer claims against a loaded backlog through the store's ClaimDue,
// on its own pool and store (the engine must not be started), and hands
// every lease back at once, so the backlog keeps its size: a released run
// is due again immediately, at the back of the (wake_at, id) queue. Its
// pool's tracer lends the claim statement's text to Explain.
type Claimer struct {
	pool   *pgxpool.Pool
	store  *postgres.Store
	tracer *statementTracer
	batch  int
}

// NewClaimer opens a Claimer of batch runs per claim on db.
func NewClaimer(ctx context.Context, db *Database, batch int) (*Claimer, error) {
	if batch < 1 {
		return nil, fmt.Errorf("claim batch %d: must be positive", batch)
	}
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return nil, err
	}
	c := &Claimer{tracer: &statementTracer{}, batch: batch}
	cfg.ConnConfig.Tracer = c.tracer
	cfg.MaxConns = claimPoolSize
	if c.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, err
	}
	if c.store, err = postgres.New(ctx, postgres.Config{Pool: c.pool, Schema: DocketSchema}); err != nil {
		c.pool.Close()
		return nil, err
	}
	return c, nil
}

// Close closes the store and the pool.
func (c *Claimer) Close() {
	_ = c.store.Close()
	c.pool.Close()
}

// Claim times one ClaimDue (the statement only), then releases every
// lease, untimed. It returns the latency and the number of leases; a
// claim that poisons a run fails (the backlog is too small for this many
// claims: every claim counts an attempt).
func (c *Claimer) Claim(ctx context.Context) (time.Duration, int, error) {
	t0 := time.Now()
	batch, err := c.store.ClaimDue(ctx, claim.Request{
		Now: time.Now(), Limit: c.batch,
		OrphanTTL: engine.DefaultOrphanTTL, MaxClaimAttempts: engine.DefaultMaxClaimAttempts,
	})
	elapsed := time.Since(t0)
	if err != nil {
		return 0, 0, fmt.Errorf("claim: %w", err)
	}
	if len(batch.Poisoned) > 0 {
		return 0, 0, fmt.Errorf("claim poisoned %d runs: the backlog is too small for this many claims", len(batch.Poisoned))
	}
	// Released from a few connections at once: untimed, but it is most
	// of the scenario's wall time.
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(batch.Leases))
	slots := make(chan struct{}, claimPoolSize)
	for _, l := range batch.Leases {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			if err := c.store.ReleaseClaim(ctx, l.RunID, l.Token, now); err != nil {
				errs <- fmt.Errorf("release %s: %w", l.RunID, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, 0, err
	}
	return elapsed, len(batch.Leases), nil
}

// Explain runs one claim (released like any other) to capture the
// statement and its arguments as the store sent them, then returns
// EXPLAIN (ANALYZE, BUFFERS) of it, executed in a transaction that is
// rolled back: the custom plan for those arguments and the generic plan a
// prepared statement may settle on.
func (c *Claimer) Explain(ctx context.Context) (string, error) {
	c.tracer.arm()
	_, _, err := c.Claim(ctx)
	sql, args, captured := c.tracer.take()
	if err != nil {
		return "", err
	}
	if !captured {
		return "", errors.New("explain: the claim statement was not seen by the tracer")
	}
	plan, err := explain(ctx, c.pool, sql, args)
	if err != nil {
		return "", fmt.Errorf("explain the claim statement: %w", err)
	}
	return plan, nil
}

// ClaimOptions configure MeasureClaims.
type ClaimOptions struct {
	// Claims is the number of timed ClaimDue calls, Batch the limit of each.
	Claims, Batch int
	// Warmup claims run first, untimed.
	Warmup int
	// Explain records EXPLAIN (ANALYZE, BUFFERS) of the claim statement.
	Explain bool
}

// ClaimMeasurement is what MeasureClaims saw.
type ClaimMeasurement struct {
	// Latencies holds one entry per timed ClaimDue.
	Latencies []time.Duration
	// Leases counts the runs the timed claims leased.
	Leases int
	// Plan is Claimer.Explain's output, when ClaimOptions.Explain asked.
	Plan string
}

// MeasureClaims times o.Claims claims of o.Batch runs against db's
// backlog with a Claimer of its own (see Claimer.Claim).
func MeasureClaims(ctx context.Context, db *Database, o ClaimOptions) (ClaimMeasurement, error) {
	var m ClaimMeasurement
	if o.Claims < 1 {
		return m, fmt.Errorf("claims %d: must be positive", o.Claims)
	}
	c, err := NewClaimer(ctx, db, o.Batch)
	if err != nil {
		return m, err
	}
	defer c.Close()
	for range o.Warmup {
		if _, _, err := c.Claim(ctx); err != nil {
			return m, err
		}
	}
	m.Latencies = make([]time.Duration, 0, o.Claims)
	for range o.Claims {
		elapsed, leases, err := c.Claim(ctx)
		if err != nil {
			return m, err
		}
		m.Latencies = append(m.Latencies, elapsed)
		m.Leases += leases
	}
	if o.Explain {
		if m.Plan, err = c.Explain(ctx); err != nil {
			return m, err
		}
	}
	return m, nil
}

// explain runs EXPLAIN (ANALYZE, BUFFERS) of sql with args in a
// transaction it rolls back, so the claim it executes leaves no trace.
func explain(ctx context.Context, pool *pgxpool.Pool, sql string, args []any) (string, error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	query := func(sql string, args ...any) (string, error) {
		rows, err := tx.Query(ctx, sql, args...)
		if err != nil {
			return "", err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		return strings.Join(lines, "\n"), err
	}
	custom, err := query("EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
	if err != nil {
		return "", err
	}
	// The store runs the statement prepared, so after a few executions
	// PostgreSQL may switch to the generic plan: show that one too.
	if _, err := tx.Exec(ctx, "PREPARE docket_bench_claim AS "+sql); err != nil {
		return "", err
	}
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		return "", err
	}
	// EXECUTE takes its arguments as literals here: PostgreSQL does not
	// describe parameters inside EXPLAIN EXECUTE.
	literals := make([]string, len(args))
	for i, a := range args {
		if literals[i], err = sqlLiteral(a); err != nil {
			return "", err
		}
	}
	generic, err := query("EXPLAIN (ANALYZE, BUFFERS) EXECUTE docket_bench_claim(" + strings.Join(literals, ", ") + ")")
	if err != nil {
		return "", fmt.Errorf("generic plan: %w", err)
	}
	return "-- custom plan (the arguments of one claim)\n" + custom + "\n-- generic plan (what a prepared statement may settle on)\n" + generic, nil
}

// sqlLiteral writes a claim argument as a SQL literal.
func sqlLiteral(a any) (string, error) {
	switch v := a.(type) {
	case time.Time:
		return "'" + v.UTC().Format(time.RFC3339Nano) + "'::timestamptz", nil
	case *time.Time:
		if v == nil {
			return "NULL", nil
		}
		return sqlLiteral(*v)
	case int:
		return strconv.Itoa(v), nil
	case int32:
		return strconv.FormatInt(int64(v), 10), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case string:
		return "'" + strings.ReplaceAll(v, "'", "''") + "'", nil
	}
	return "", fmt.Errorf("no literal for a claim argument of type %T", a)
}

// statementTracer records the first statement a pool runs once armed.
type statementTracer struct {
	mu       sync.Mutex
	armed    bool
	captured bool
	sql      string
	args     []any
}

func (t *statementTracer) arm() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed, t.captured = true, false
}

func (t *statementTracer) take() (string, []any, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.armed = false
	return t.sql, t.args, t.captured
}

func (t *statementTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.armed && !t.captured {
		t.sql, t.args, t.captured = data.SQL, append([]any(nil), data.Args...), true
	}
	return ctx
}

func (t *statementTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
