package dbbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/ports"
)

// DocketSchema is the schema the durable scenarios migrate.
const DocketSchema = "docket"

// Shapes of the durable scenarios.
const (
	ShapeOneStep = "one-step"
	ShapeChain10 = "chain10"
	ShapeFanOut8 = "fanout8"
	// ShapeHistory10 is a 10-node chain whose nodes each append one
	// message of about 8 KB of prose to a list: the growing history of an
	// agent session, rewritten with the run document at every commit.
	ShapeHistory10 = "history10"
)

// DocketGraph is the graph of a durable scenario: every node writes its own
// state field (the same no-op node as the inline scenarios).
func DocketGraph(shape string) (*graph.Graph, int, error) {
	b := graph.New("bench-"+shape).Input("in", schema.String(), graph.Required())
	writes := func(field string) graph.RecordOption { return graph.Config(map[string]any{"field": field}) }
	switch shape {
	case ShapeOneStep, ShapeChain10:
		n := 1
		if shape == ShapeChain10 {
			n = 10
		}
		prev := graph.Start
		for i := range n {
			id := fmt.Sprintf("n%02d", i)
			b.State(id, schema.String()).Node(id, noopRef, writes(id)).Edge("e_"+id, prev, id)
			prev = id
		}
		b.Edge("e_finish", prev, graph.Finish).Output("out", prev)
		g, err := b.Build()
		return g, n, err
	case ShapeFanOut8:
		branches := make([]string, 8)
		for i := range branches {
			id := fmt.Sprintf("b%02d", i)
			branches[i] = id
			b.State(id, schema.String()).Node(id, noopRef, writes(id)).Edge("e_"+id, graph.Start, id)
		}
		b.State("join", schema.String()).Node("join", noopRef, writes("join")).
			Join("e_join", branches, "join").Edge("e_finish", "join", graph.Finish).Output("out", "join")
		g, err := b.Build()
		return g, 2, err
	case ShapeHistory10:
		b.State(historyField, schema.List(schema.String()), graph.Reducer(reducer.Append, nil))
		prev := graph.Start
		for i := range 10 {
			id := fmt.Sprintf("n%02d", i)
			b.Node(id, sayRef, graph.Config(map[string]any{"message": int64(i)})).Edge("e_"+id, prev, id)
			prev = id
		}
		b.Edge("e_finish", prev, graph.Finish).Output("out", historyField)
		g, err := b.Build()
		return g, 10, err
	}
	return nil, 0, fmt.Errorf("unknown shape %q", shape)
}

const (
	noopRef      = "bench.noop"
	sayRef       = "bench.say"
	historyField = "history"
)

func registry() *node.Registry {
	return node.NewRegistry().MustRegister(noopRef, node.New(
		schema.Object(map[string]*schema.Schema{"field": schema.String().AsRequired()}),
		func(_ context.Context, in node.Input) (node.Output, error) {
			return node.Update(map[string]any{in.Config["field"].(string): "v"}), nil
		})).MustRegister(sayRef, node.New(
		schema.Object(map[string]*schema.Schema{"message": schema.Integer().AsRequired()}),
		func(_ context.Context, in node.Input) (node.Output, error) {
			return node.Update(map[string]any{historyField: []any{Message(int(in.Config["message"].(int64)))}}), nil
		}))
}

// MessageBytes is the length of every Message.
const MessageBytes = 8 << 10

// messages are the history10 nodes' messages, built once.
var messages = func() [10]string {
	words := strings.Fields(`the model reads the request and plans a tool call before it answers with
		a summary of the results it found in the documents the user attached earlier in this session
		while the search returned three pages of matches for the query about invoices and quarterly
		revenue so the assistant compares them and asks whether the totals should include taxes`)
	var out [10]string
	seed := uint32(1)
	for i := range out {
		var b strings.Builder
		for b.Len() < MessageBytes {
			seed = seed*1664525 + 1013904223 // a fixed pseudo-random walk: the same text every run
			b.WriteString(words[int(seed>>16)%len(words)])
			b.WriteByte(' ')
		}
		out[i] = b.String()[:MessageBytes]
	}
	return out
}()

// Message is the text the i-th history10 node appends: MessageBytes of
// prose-like words, different for every node.
func Message(i int) string { return messages[i%len(messages)] }

// Docket is one engine on a migrated fresh database.
type Docket struct {
	Engine *engine.Engine
	Pool   *pgxpool.Pool
	Ref    engine.GraphRef
	// Steps is the number of supersteps one run of the graph commits.
	Steps int
	store *postgres.Store
	// tenants and their graph references, when DocketOptions.Tenants is
	// set: run i belongs to tenants[i % len(tenants)].
	tenants []*engine.Client
	refs    []engine.GraphRef
}

// DocketOptions configure OpenDocket.
type DocketOptions struct {
	Shape       string
	Concurrency int
	// PollOnly disables LISTEN/NOTIFY: the dispatcher relies on polling.
	PollOnly     bool
	PollInterval time.Duration
	// Telemetry receives the engine's spans and facts (nil: none).
	Telemetry ports.Telemetry
	// Tracer, when set, traces the pool's statements (drainprobe).
	Tracer pgx.QueryTracer
	// Tenants, when above zero, runs the engine in tenant-required mode
	// with the tenant-fair claim policy, and StartRuns spreads the runs
	// over this many tenants, round robin (drainprobe).
	Tenants int
}

// OpenDocket migrates db, opens the PostgreSQL store and an engine with
// the no-op node registry, and publishes the scenario's graph. The engine
// is not started.
func OpenDocket(ctx context.Context, db *Database, o DocketOptions) (*Docket, error) {
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(o.Concurrency + 8) // vehicles' commits plus claims, signals and the gate queries
	if o.Tracer != nil {
		cfg.ConnConfig.Tracer = o.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	d := &Docket{Pool: pool}
	ok := false
	defer func() {
		if !ok {
			d.Close(context.Background())
		}
	}()
	if _, err := migrations.Up(ctx, pool, migrations.Options{Schema: DocketSchema}); err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	storeCfg := postgres.Config{Pool: pool, Schema: DocketSchema}
	tenantMode := engine.TenantNone
	if o.Tenants > 0 {
		storeCfg.Policy = engine.ClaimPolicyTenantFair.Policy()
		tenantMode = engine.TenantRequired
	}
	if !o.PollOnly {
		listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: cfg.ConnConfig, Schema: DocketSchema})
		if err != nil {
			return nil, err
		}
		storeCfg.Notifier = listener
	}
	if d.store, err = postgres.New(ctx, storeCfg); err != nil {
		return nil, err
	}
	poll := o.PollInterval
	if poll == 0 {
		poll = 100 * time.Millisecond
	}
	d.Engine, err = engine.New(engine.Config{
		Backend:    d.store,
		Nodes:      registry(),
		PollOnly:   o.PollOnly,
		TenantMode: tenantMode,
		Dispatcher: engine.DispatcherConfig{Concurrency: o.Concurrency, PollInterval: poll},
		Logger:     discardLogger(),
		Telemetry:  o.Telemetry,
	})
	if err != nil {
		return nil, err
	}
	g, steps, err := DocketGraph(o.Shape)
	if err != nil {
		return nil, err
	}
	for i := range o.Tenants {
		c := d.Engine.Tenant(fmt.Sprintf("tenant-%05d", i))
		ref, err := c.SaveGraph(ctx, g)
		if err != nil {
			return nil, fmt.Errorf("save graph: %w", err)
		}
		d.tenants, d.refs = append(d.tenants, c), append(d.refs, ref)
	}
	if o.Tenants == 0 {
		if d.Ref, err = d.Engine.SaveGraph(ctx, g); err != nil {
			return nil, fmt.Errorf("save graph: %w", err)
		}
	}
	d.Steps = steps
	ok = true
	return d, nil
}

// Close stops the engine (if started) and closes the store and pool.
func (d *Docket) Close(ctx context.Context) {
	if d.Engine != nil {
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = d.Engine.Stop(stopCtx)
		cancel()
	}
	if d.store != nil {
		_ = d.store.Close()
	}
	d.Pool.Close()
}

// StartRuns starts n runs (each committed initialized and due now) from 8
// goroutines; it is the untimed setup of a drain.
func (d *Docket) StartRuns(ctx context.Context, n int) error {
	return d.StartRunsWith(ctx, n, 8)
}

// StartRunsWith starts n runs from the given number of concurrent callers.
func (d *Docket) StartRunsWith(ctx context.Context, n, callers int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				c, ref := d.Engine.Client, d.Ref
				if len(d.tenants) > 0 {
					c, ref = d.tenants[i%int64(len(d.tenants))], d.refs[i%int64(len(d.refs))]
				}
				if _, err := c.StartRun(ctx, ref, map[string]any{"in": "x"}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// Drain starts the engine and times until no run of the database is
// unfinished (or limit passes), then stops the engine.
func (d *Docket) Drain(ctx context.Context, runs int, limit time.Duration) (DrainResult, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	if err := d.Engine.Start(ctx); err != nil {
		return DrainResult{}, err
	}
	// The schedule's trigger-maintained count of unfinished runs is one
	// row to read, however large the drain; the gates check afterwards
	// that every run is done.
	q := "SELECT coalesce(sum(unfinished_count), 0) FROM " + pgx.Identifier{DocketSchema, "docket_claim_schedule"}.Sanitize()
	done := 0
	for {
		var unfinished int
		if err := d.Pool.QueryRow(ctx, q).Scan(&unfinished); err != nil && ctx.Err() == nil {
			return DrainResult{}, err
		}
		done = runs - unfinished
		if done >= runs {
			res := DrainResult{Jobs: runs, Elapsed: time.Since(start)}
			stopCtx, stop := context.WithTimeout(context.Background(), 30*time.Second)
			defer stop()
			return res, d.Engine.Stop(stopCtx)
		}
		select {
		case <-ctx.Done():
			// The partial figure is kept: how fast it went while it went.
			elapsed := time.Since(start)
			return DrainResult{Jobs: done, Elapsed: elapsed}, fmt.Errorf("%w: docket finished %d of %d runs in %s (%.0f runs/s)",
				ErrDrainLimit, done, runs, elapsed.Round(time.Second), float64(done)/elapsed.Seconds())
		case <-time.After(DrainPollWait(done, runs, time.Since(start))):
		}
	}
}

// Bounds of DrainPollWait.
const (
	minDrainPoll = 5 * time.Millisecond
	maxDrainPoll = 100 * time.Millisecond
)

// DrainPollWait is how long Drain waits before it reads the unfinished
// count again, having seen done of runs finished after elapsed: a quarter
// of the time the rest should take at the rate so far, between 5 and
// 100 ms. Reads are few while much remains and every 5 ms near the end,
// so the drain's own queries take little of the CPU the engine and the
// database share, and its end is still seen within 5 ms. (River's drain
// reads nothing until its workers have seen every job.)
func DrainPollWait(done, runs int, elapsed time.Duration) time.Duration {
	if done <= 0 || elapsed <= 0 {
		return 20 * time.Millisecond // no rate yet
	}
	rest := time.Duration(float64(elapsed) * float64(runs-done) / float64(done))
	return min(max(rest/4, minDrainPoll), maxDrainPoll)
}

// Latencies starts n runs one at a time on a started engine and measures
// each from StartRun to its done status (AwaitRun).
func (d *Docket) Latencies(ctx context.Context, n int) ([]time.Duration, error) {
	if err := d.Engine.Start(ctx); err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		r, err := d.Engine.StartRun(ctx, d.Ref, map[string]any{"in": "x"})
		if err != nil {
			return out, err
		}
		if r, err = d.Engine.AwaitRun(ctx, r.ID, 30*time.Second); err != nil {
			return out, err
		}
		if r.Status != "done" {
			return out, fmt.Errorf("run %s ended %s", r.ID, r.Status)
		}
		out = append(out, time.Since(t0))
	}
	return out, nil
}

// ErrDrainLimit is returned when a drain does not finish within its limit.
var ErrDrainLimit = errors.New("drain limit reached")

// ErrGateFailed is wrapped by every invariant gate failure.
var ErrGateFailed = errors.New("invariant gate failed")

// gate is one invariant: a query counting violations (0 passes).
type gate struct {
	name  string
	query string
}

// CheckGates runs the invariant gates over a drained schema: every run
// done, no claim left or shared, exactly one terminal event per run,
// unique and contiguous event sequences, nothing poisoned or stranded. It
// returns every failed gate, each wrapping ErrGateFailed.
func CheckGates(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schemaName string, wantRuns int) error {
	runs := pgx.Identifier{schemaName, "docket_runs"}.Sanitize()
	events := pgx.Identifier{schemaName, "docket_events"}.Sanitize()
	gates := []gate{
		{"exact terminal count", fmt.Sprintf(`SELECT abs(count(*) FILTER (WHERE status = 'done') - %d) + count(*) FILTER (WHERE status <> 'done') FROM %s`, wantRuns, runs)},
		{"no duplicate active claim token", `SELECT count(*) FROM (SELECT claim_token FROM ` + runs + ` WHERE claim_token IS NOT NULL GROUP BY claim_token HAVING count(*) > 1) d`},
		{"no active claims after drain", `SELECT count(*) FROM ` + runs + ` WHERE claim_token IS NOT NULL`},
		{"one terminal event per run", `SELECT count(*) FROM ` + runs + ` r WHERE (SELECT count(*) FROM ` + events +
			` e WHERE e.run_id = r.run_id AND e.type IN ('run_completed', 'run_failed', 'run_cancelled')) <> 1`},
		{"unique {run_id, seq}", `SELECT count(*) FROM (SELECT 1 FROM ` + events + ` GROUP BY run_id, seq HAVING count(*) > 1) d`},
		{"contiguous event sequences", `SELECT count(*) FROM (SELECT run_id FROM ` + events + ` GROUP BY run_id HAVING max(seq) <> count(*) OR min(seq) <> 1) d`},
		{"event_seq matches the log", `SELECT count(*) FROM ` + runs + ` r WHERE r.event_seq <> (SELECT coalesce(max(seq), 0) FROM ` + events + ` e WHERE e.run_id = r.run_id)`},
		{"no poisoned or stranded runs", `SELECT count(*) FROM ` + runs + ` WHERE poisoned_at IS NOT NULL OR status IN ('running', 'waiting')`},
	}
	var errs []error
	for _, g := range gates {
		var violations int64
		if err := q.QueryRow(ctx, g.query).Scan(&violations); err != nil {
			return fmt.Errorf("gate %q: %w", g.name, err)
		}
		if violations != 0 {
			errs = append(errs, fmt.Errorf("%w: %s (%d violations)", ErrGateFailed, g.name, violations))
		}
	}
	return errors.Join(errs...)
}
