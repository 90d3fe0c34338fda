package engine_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
)

// refPause takes a few milliseconds, so runs are mid-flight when the
// database goes away.
const refPause = "test.pause"

// outage is a running engine on a private cluster the test stops, crashes
// and starts again.
type outage struct {
	cluster *pgtest.Cluster
	db      *pgtest.Database
	logs    *countingLog
	pool    *pgxpool.Pool
	k       *kit
	cfg     engine.Config
	engine  *engine.Engine
	ref     engine.GraphRef // five pauses in a row
}

// countingLog counts log records.
type countingLog struct{ n atomic.Int64 }

func (h *countingLog) Enabled(context.Context, slog.Level) bool  { return true }
func (h *countingLog) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h *countingLog) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h *countingLog) WithGroup(string) slog.Handler             { return h }

func pausing(steps int) *graph.Builder {
	b := graph.New("pausing").State("out", schema.String())
	prev := graph.Start
	for i := range steps {
		id := fmt.Sprintf("p%d", i)
		b = b.Node(id, refPause).Edge("edge_"+id, prev, id)
		prev = id
	}
	return b.Edge("edge_finish", prev, graph.Finish)
}

// newOutage builds (but does not start) an engine with a listener on a
// private cluster: short orphan TTL and store timeout, so recovery fits a
// test.
func newOutage(t *testing.T, tune func(*engine.Config)) *outage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o := &outage{cluster: pgtest.NewCluster(t), logs: &countingLog{}}
	o.db = o.cluster.NewDatabase(t)
	_, err := migrations.Up(ctx, o.db.Connect(t), migrations.Options{Schema: "docket"})
	require.NoError(t, err)
	cfg, err := pgxpool.ParseConfig(o.db.URL)
	require.NoError(t, err)
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	o.pool = pool
	logger := slog.New(o.logs)
	listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: cfg.ConnConfig, Schema: "docket",
		MaxBackoff: 200 * time.Millisecond, Logger: logger})
	require.NoError(t, err)
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: "docket", Notifier: listener})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })

	k := newKit()
	o.k = k
	k.registry.MustRegister(refPause, node.New(obj(nil), func(ctx context.Context, in node.Input) (node.Output, error) {
		k.record(in)
		select {
		case <-time.After(20 * time.Millisecond):
			return node.Update(nil), nil
		case <-ctx.Done():
			return node.Output{}, ctx.Err()
		}
	}))
	ecfg := engine.Config{
		Backend:           store,
		Nodes:             k.registry,
		StoreTimeout:      2 * time.Second,
		MaxAttemptElapsed: 200 * time.Millisecond,
		Dispatcher: engine.DispatcherConfig{Concurrency: 4, PollInterval: 100 * time.Millisecond,
			OrphanTTL: 2 * time.Second, DrainTimeout: 3 * time.Second},
		Vehicle: engine.VehicleConfig{DrainBudget: engine.DrainBudget{MaxElapsed: time.Second}},
		Logger:  logger,
	}
	if tune != nil {
		tune(&ecfg)
	}
	o.cfg = ecfg
	o.engine, err = engine.New(ecfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.engine.Stop(context.Background()) })
	o.ref, err = o.engine.SaveGraph(ctx, build(t, pausing(5)))
	require.NoError(t, err)
	return o
}

func (o *outage) start(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		r, err := o.engine.StartRun(context.Background(), o.ref, nil)
		require.NoError(t, err)
		ids[i] = r.ID
	}
	return ids
}

// startRetrying starts n runs, retrying a start that failed on a session
// the server terminated (the pool hands out a connection it used less than
// a second ago without a ping). Each start has its own idempotency key,
// so a retried start that had landed is not a second run.
func (o *outage) startRetrying(t *testing.T, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		key := engine.WithIdempotencyKey(fmt.Sprintf("%s-%d", time.Now().Format(time.RFC3339Nano), i))
		for attempt := 1; ; attempt++ {
			r, err := o.engine.StartRun(context.Background(), o.ref, nil, key)
			if err == nil {
				ids[i] = r.ID
				break
			}
			require.Less(t, attempt, 10, "start: %v", err)
		}
	}
	return ids
}

// requireDone waits for every run to finish (reads may fail while the
// server is still recovering) and checks each history is exact: one
// checkpoint per commit, one terminal event.
func (o *outage) requireDone(t *testing.T, ids []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, id := range ids {
		for {
			r, err := o.engine.AwaitRun(context.Background(), id, time.Until(deadline))
			if err != nil {
				require.True(t, time.Now().Before(deadline), "run %s: %v", id, err)
				time.Sleep(20 * time.Millisecond)
				continue
			}
			require.Equal(t, run.StatusDone, r.Status, "run %s", id)
			requireHistory(t, r, allEvents(t, o.engine.Client, id))
			break
		}
	}
}

// A running engine outlives its database: while the server is down (fast
// or immediate shutdown, or every server process killed), starts and
// awaits fail at once with the store's error, the engine neither spins nor
// piles up goroutines, and once the server is back every run finishes
// exactly once, without restarting the engine. Not parallel: it counts
// the process's goroutines.
func TestEngineResumesAfterTheDatabaseComesBack(t *testing.T) {
	modes := map[string]pgtest.Shutdown{"fast": pgtest.ShutdownFast, "immediate": pgtest.ShutdownImmediate, "killed": pgtest.ShutdownKill}
	for name, mode := range modes {
		t.Run(name, func(t *testing.T) {
			o := newOutage(t, nil)
			ctx := context.Background()
			require.NoError(t, o.engine.Start(ctx))
			ids := o.start(t, 12)
			var goroutines []int
			for cycle := range 2 {
				time.Sleep(60 * time.Millisecond) // runs in flight
				o.cluster.Stop(t, mode)
				logged := o.logs.n.Load()

				began := time.Now()
				_, err := o.engine.StartRun(ctx, o.ref, nil)
				require.Error(t, err, "a start while the database is down")
				_, err = o.engine.AwaitRun(ctx, "run_never_started", 10*time.Second)
				require.Error(t, err, "an await while the database is down")
				assert.NotErrorIs(t, err, engine.ErrNotFound)
				assert.Less(t, time.Since(began), time.Second, "a refused connection is an error at once")

				time.Sleep(1500 * time.Millisecond)
				goroutines = append(goroutines, runtime.NumGoroutine())
				// Polls every 100ms (jittered) and a listener retrying with
				// backoff: tens of lines, not a tight loop.
				assert.Less(t, o.logs.n.Load()-logged, int64(100), "cycle %d: log lines while down", cycle)

				o.cluster.Start(t)
				o.requireDone(t, ids)
				ids = append(ids, o.start(t, 6)...)
			}
			o.requireDone(t, ids)
			// A pile-up grows by a goroutine a poll or a reconnect attempt
			// (at least fifteen an outage); a few come and go with the
			// pools' and other tests' background work.
			assert.LessOrEqual(t, goroutines[1], goroutines[0]+5, "goroutines while down, by outage")

			began := time.Now()
			require.NoError(t, o.engine.Stop(ctx))
			assert.Less(t, time.Since(began), time.Second)
		})
	}
}

// Sessions terminated under a running engine (pg_terminate_backend on
// its pool and its listener) cost the work in flight, not the runs: they
// finish, and the reconnected listener's catch-up wake claims new work
// without waiting for the (long) poll interval.
func TestEngineResumesAfterItsSessionsAreTerminated(t *testing.T) {
	t.Parallel()
	o := newOutage(t, func(c *engine.Config) {
		c.Dispatcher.PollInterval = 30 * time.Second
		c.Dispatcher.OrphanTTL = 30 * time.Second
	})
	ctx := context.Background()
	require.NoError(t, o.engine.Start(ctx))
	ids := o.start(t, 8)
	admin := o.db.Connect(t)
	for range 3 {
		time.Sleep(60 * time.Millisecond)
		var n int
		require.NoError(t, admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n))
		require.Positive(t, n)
		ids = append(ids, o.startRetrying(t, 2)...)
	}
	o.requireDone(t, ids)
}

// terminateSessions ends every session on the test's database but the
// caller's, the engine's pooled and listening ones included.
func (o *outage) terminateSessions(t *testing.T) {
	t.Helper()
	var n int
	require.NoError(t, o.db.Connect(t).QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid))
		FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n))
	require.Positive(t, n)
}

// A vehicle whose commit meets a session the server terminated (the pool
// hands out a connection used less than a second ago without a ping)
// releases its claim all the same, on a live connection: the run goes on
// at once instead of waiting out the orphan TTL with the database up.
func TestRunGoesOnAtOnceWhenItsCommitMeetsATerminatedSession(t *testing.T) {
	t.Parallel()
	o := newOutage(t, func(c *engine.Config) {
		c.Dispatcher.OrphanTTL = 30 * time.Second
		c.MaxAttemptElapsed = 10 * time.Second
		c.Vehicle.DrainBudget.MaxElapsed = 10 * time.Second
	})
	ctx := context.Background()
	ref, err := o.engine.SaveGraph(ctx, build(t, single("gated", refGated)))
	require.NoError(t, err)
	require.NoError(t, o.engine.Start(ctx))
	r, err := o.engine.StartRun(ctx, ref, nil)
	require.NoError(t, err)
	o.k.waitStarted(t)

	// Every pooled connection busy a moment ago, then terminated.
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { _, _ = o.pool.Exec(ctx, "SELECT pg_sleep(0.05)") })
	}
	wg.Wait()
	o.terminateSessions(t)
	o.k.releaseGate()

	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := o.engine.AwaitRun(ctx, r.ID, time.Until(deadline))
		if err == nil {
			require.Equal(t, run.StatusDone, got.Status)
			break
		}
		require.True(t, time.Now().Before(deadline), "the run is stranded until its claim expires: %v", err)
		time.Sleep(20 * time.Millisecond)
	}
	assert.Len(t, o.k.attemptsOf("node"), 2, "the discarded attempt is replayed once")
}

// Stop returns within its drain timeout while the database is down:
// vehicles whose commits fail give up their work at once.
func TestEngineStopsWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel()
	o := newOutage(t, func(c *engine.Config) { c.Dispatcher.DrainTimeout = 500 * time.Millisecond })
	ctx := context.Background()
	require.NoError(t, o.engine.Start(ctx))
	ids := o.start(t, 8)
	time.Sleep(60 * time.Millisecond)
	o.cluster.Stop(t, pgtest.ShutdownKill)
	began := time.Now()
	require.NoError(t, o.engine.Stop(ctx))
	assert.Less(t, time.Since(began), 500*time.Millisecond)

	// Another engine on the same store finishes the runs once the server
	// is back and the stranded claims have expired.
	o.cluster.Start(t)
	o.engine = startEngine(t, o.cfg)
	o.requireDone(t, ids)
}
