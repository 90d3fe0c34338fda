package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPrunePassDeletesExpiredRowsUnderItsLock(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(t0)
	spans := &spanRecorder{}
	env := newEnv(t, envOptions{clock: clock, telemetry: spans})
	ctx := context.Background()

	// A run that finished at t0 (events inserted at t0) and one still running.
	finished := env.finishedRun(t, t0, t0.Add(time.Hour), t0)
	running := env.insertRun(t, ports.Tenantless(), t0, t0.Add(time.Hour))

	// Twelve unreferenced versions of another graph, one a minute apart.
	for i := range 12 {
		clock.Set(t0.Add(time.Duration(i) * time.Minute))
		g, err := graph.New("pruned-graph").Description(fmt.Sprintf("version %d", i)).
			Input("topic", schema.String()).Node("n", "fixture.n").
			Edge("in", graph.Start, "n").Edge("out", "n", graph.Finish).Build()
		require.NoError(t, err)
		hash, err := graph.Hash(g)
		require.NoError(t, err)
		_, err = env.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: g, Hash: hash})
		require.NoError(t, err)
	}

	cfg := postgres.PruneConfig{EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: 100, KeepGraphVersions: 10}
	now := t0.Add(2 * time.Hour)

	// Another instance's pass holds the lock: this one skips, deleting nothing.
	holder := env.db.Connect(t)
	tx, err := holder.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "docket:pruner:"+env.schema)
	require.NoError(t, err)
	res, err := env.store.PrunePass(ctx, cfg, now)
	require.NoError(t, err)
	assert.Equal(t, postgres.PruneResult{Locked: true}, res)
	assert.Equal(t, ports.ResultLocked, spans.last(t, "pruner.pass").result)
	whole, err := env.store.PruneWholePass(ctx, ports.PrunePassParams{EventsBefore: t0.Add(time.Hour), RunsBefore: t0.Add(time.Hour),
		KeepGraphVersions: 10, BatchSize: 100})
	require.NoError(t, err)
	assert.Equal(t, ports.PrunePassResult{Locked: true}, whole, "an engine's pass waits its turn too")
	require.NoError(t, tx.Rollback(ctx))

	res, err = env.store.PrunePass(ctx, cfg, now)
	require.NoError(t, err)
	assert.False(t, res.Locked)
	assert.Equal(t, 1, res.RunsDeleted, "the old terminal run")
	assert.Equal(t, 2, res.GraphsDeleted, "the two oldest unreferenced versions beyond ten")
	assert.GreaterOrEqual(t, res.EventsDeleted, 1, "events inserted before the cutoff")

	_, err = env.store.FetchRun(ctx, ports.System(), finished.ID)
	assert.ErrorIs(t, err, ports.ErrNotFound)
	_, err = env.store.FetchRun(ctx, ports.System(), running.ID)
	assert.NoError(t, err, "running runs are never pruned")
	page, err := env.store.ListEvents(ctx, ports.System(), running.ID, ports.ListEventsParams{Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, page.Events, "old events are gone")
	assert.Positive(t, page.LatestSeq, "the run keeps its committed event counter")
	versions, err := env.store.ListGraphVersions(ctx, ports.Tenantless(), "pruned-graph", ports.ListGraphVersionsParams{Limit: 100})
	require.NoError(t, err)
	assert.Len(t, versions.Versions, 10)
	c := compiledFixture(t)
	_, err = env.store.FetchGraph(ctx, ports.Tenantless(), ports.GraphRef{GraphID: c.Effective.ID, Hash: c.Hash})
	assert.NoError(t, err, "a version a run references is kept")

	res, err = env.store.PrunePass(ctx, cfg, now)
	require.NoError(t, err)
	assert.Equal(t, postgres.PruneResult{Now: now}, res, "a second pass finds nothing")

	res, err = env.store.PrunePass(ctx, cfg, time.Time{})
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), res.Now, time.Minute, "without a time, the pass cuts at the database's")

	// A pass its caller stopped (Ctrl-C on docket prune) did not fail.
	stopped, stop := context.WithCancel(ctx)
	stop()
	_, err = env.store.PrunePass(stopped, cfg, now)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, ports.ResultSkipped, spans.last(t, "pruner.pass").result)
}

func TestPrunePassCutoffsInsideAMicrosecondStayStrict(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{clock: conformance.NewManualClock(t0)})
	ctx := context.Background()
	env.finishedRun(t, t0, t0, t0)
	cfg := postgres.PruneConfig{BatchSize: 100, KeepGraphVersions: 10}
	res, err := env.store.PrunePass(ctx, cfg, t0.Add(700*time.Nanosecond))
	require.NoError(t, err)
	assert.Equal(t, 1, res.RunsDeleted, "updated at t0, strictly before t0+700ns")
	assert.Positive(t, res.EventsDeleted, "inserted at t0, strictly before t0+700ns")
}

func TestPruneConfigIsValidated(t *testing.T) {
	t.Parallel()
	valid := postgres.PruneConfig{EventRetention: time.Hour, RunRetention: 2 * time.Hour, BatchSize: 10, KeepGraphVersions: 10}
	require.NoError(t, valid.Validate())
	for name, edit := range map[string]func(*postgres.PruneConfig){
		"negative event retention":    func(c *postgres.PruneConfig) { c.EventRetention = -1 },
		"event retention above run's": func(c *postgres.PruneConfig) { c.EventRetention = 3 * time.Hour },
		"zero batch":                  func(c *postgres.PruneConfig) { c.BatchSize = 0 },
		"zero kept graph versions":    func(c *postgres.PruneConfig) { c.KeepGraphVersions = 0 },
		"negative run retention":      func(c *postgres.PruneConfig) { c.RunRetention, c.EventRetention = -1, -2 },
	} {
		c := valid
		edit(&c)
		assert.ErrorIs(t, c.Validate(), ports.ErrInvalidArgument, name)
	}
}

// TestGraphPruningRacingFirstRunsOfOldVersions starts the first run of
// old, unreferenced versions while passes prune them. Each version ends
// either kept with its run or deleted with its start refused as not
// found; a pass never trips over a run committed while it selected.
func TestGraphPruningRacingFirstRunsOfOldVersions(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{maxConns: 8})
	ctx := context.Background()
	// Other graphs make each pass's ranking take a while, so runs commit
	// while it is under way.
	_, err := env.pool.Exec(ctx, `INSERT INTO `+pgx.Identifier{env.schema, "docket_graph_versions"}.Sanitize()+`
		(tenant_id, graph_id, graph_hash, graph)
		SELECT NULL, 'filler-' || i, md5(i::text), '\x00'::bytea FROM generate_series(1, 10000) AS i`)
	require.NoError(t, err)
	cfg := postgres.PruneConfig{EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: 1000, KeepGraphVersions: 10}
	for round := range 3 {
		var old []*graph.Compiled
		for i := range 40 {
			g, err := graph.New(fmt.Sprintf("raced-%d", round)).Description(fmt.Sprintf("version %d", i)).
				Input("topic", schema.String()).Node("n", "fixture.n").
				Edge("in", graph.Start, "n").Edge("out", "n", graph.Finish).Build()
			require.NoError(t, err)
			c, err := graph.Compile(g, anyImplementation{}, graph.Options{Profile: graph.ProfilePublish})
			require.NoError(t, err)
			_, err = env.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
			require.NoError(t, err)
			if i < 30 { // the newest ten stay anyway
				old = append(old, c)
			}
		}
		started := make([]error, len(old))
		var wg sync.WaitGroup
		for i, c := range old {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 2 * time.Millisecond) // spread over the passes
				id := newRunID("raced")
				m, err := superstep.Start(c, superstep.StartParams{RunID: id, Input: map[string]any{"topic": id}}, superstep.Env{Now: t0})
				if err != nil {
					started[i] = err
					return
				}
				_, started[i] = env.store.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: t0.Add(time.Hour)})
			})
		}
		startsDone := make(chan struct{})
		passes := make(chan error, 1)
		go func() {
			var err error
			for i := 0; err == nil && (i < 2 || !closed(startsDone)); i++ {
				if i%2 == 0 {
					_, err = env.store.PruneGraphVersions(ctx, ports.PruneGraphsParams{Keep: 10, BatchSize: 1000})
				} else {
					_, err = env.store.PrunePass(ctx, cfg, t0)
				}
			}
			passes <- err
		}()
		wg.Wait()
		close(startsDone)
		require.NoError(t, <-passes, "round %d: a prune pass racing first runs", round)
		for i, c := range old {
			_, fetchErr := env.store.FetchGraph(ctx, ports.Tenantless(), ports.GraphRef{GraphID: c.Effective.ID, Hash: c.Hash})
			if started[i] == nil {
				assert.NoError(t, fetchErr, "round %d: version %d has a run, so it is kept", round, i)
			} else {
				assert.ErrorIs(t, started[i], ports.ErrNotFound, "round %d: the start of version %d", round, i)
				assert.ErrorIs(t, fetchErr, ports.ErrNotFound, "round %d: version %d was pruned", round, i)
			}
		}
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// An engine's pruner on a host whose clock runs ahead of the database's
// keeps what the retention keeps by the database's clock.
func TestAPrunerWhoseClockRunsAheadKeepsRowsTheDatabaseStillRetains(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(t0)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	finished := env.finishedRun(t, t0, t0, t0)

	// Retention one hour, pruner clock two hours after the database's.
	ahead := t0.Add(2 * time.Hour)
	pass := ports.PrunePassParams{EventsBefore: ahead.Add(-time.Hour), RunsBefore: ahead.Add(-time.Hour),
		KeepGraphVersions: 10, BatchSize: 100, Now: ahead}
	res, err := env.store.PruneWholePass(ctx, pass)
	require.NoError(t, err)
	assert.Equal(t, ports.PrunePassResult{}, res, "nothing is an hour old by the database's clock")
	_, err = env.store.FetchRun(ctx, ports.System(), finished.ID)
	require.NoError(t, err)

	clock.Set(ahead) // the database's clock catches up
	res, err = env.store.PruneWholePass(ctx, pass)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Runs)
	_, err = env.store.FetchRun(ctx, ports.System(), finished.ID)
	assert.ErrorIs(t, err, ports.ErrNotFound)
}

// Events and runs age out at their own retentions: with events kept for
// less time than runs, a pass deletes a finished run's old events and
// keeps the run itself until its own, longer, retention passes.
func TestPrunePassKeepsEachRetentionApart(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{clock: conformance.NewManualClock(t0)})
	ctx := context.Background()
	finished := env.finishedRun(t, t0, t0, t0)
	cfg := postgres.PruneConfig{EventRetention: time.Hour, RunRetention: 3 * time.Hour, BatchSize: 100, KeepGraphVersions: 10}
	res, err := env.store.PrunePass(ctx, cfg, t0.Add(2*time.Hour))
	require.NoError(t, err)
	assert.Zero(t, res.RunsDeleted, "updated two hours ago, retained for three")
	assert.Positive(t, res.EventsDeleted, "inserted two hours ago, retained for one")
	_, err = env.store.FetchRun(ctx, ports.System(), finished.ID)
	require.NoError(t, err)
}

// An engine's pruner on a host whose clock runs behind the database's
// deletes no more than its own cutoffs say: only a pruner ahead of the
// database has its cutoffs moved (back).
func TestAPrunerWhoseClockRunsBehindKeepsItsOwnCutoffs(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(t0)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	finished := env.finishedRun(t, t0, t0, t0)

	// Retention one hour, pruner clock two hours before the database's.
	clock.Set(t0.Add(2 * time.Hour))
	pass := ports.PrunePassParams{EventsBefore: t0.Add(-time.Hour), RunsBefore: t0.Add(-time.Hour),
		KeepGraphVersions: 10, BatchSize: 100, Now: t0}
	res, err := env.store.PruneWholePass(ctx, pass)
	require.NoError(t, err)
	assert.Equal(t, ports.PrunePassResult{}, res, "nothing is older than the pruner's cutoffs")
	_, err = env.store.FetchRun(ctx, ports.System(), finished.ID)
	require.NoError(t, err)
}

// A bounded run prune takes the oldest terminal runs first, as
// PruneRuns documents: a batch of one deletes the run finished first.
func TestPruneRunsDeletesTheOldestFirst(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(t0)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	finished := make([]*run.Run, 2)
	for i := range finished {
		at := t0.Add(time.Duration(i) * time.Minute)
		clock.Set(at)
		finished[i] = env.finishedRun(t, at, at, at)
	}
	res, err := env.store.PruneRuns(ctx, ports.PruneParams{Before: t0.Add(time.Hour), BatchSize: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Runs)
	_, err = env.store.FetchRun(ctx, ports.System(), finished[0].ID)
	assert.ErrorIs(t, err, ports.ErrNotFound, "the older run goes first")
	_, err = env.store.FetchRun(ctx, ports.System(), finished[1].ID)
	assert.NoError(t, err, "the newer one waits for the next batch")
}

// The cutoff is strict: an event inserted at the cutoff itself is kept.
func TestPruneEventsKeepsAnEventInsertedAtTheCutoff(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{clock: conformance.NewManualClock(t0)})
	ctx := context.Background()
	r := env.insertRun(t, ports.Tenantless(), t0, t0.Add(time.Hour))
	n, err := env.store.PruneEvents(ctx, ports.PruneParams{Before: t0, BatchSize: 100})
	require.NoError(t, err)
	assert.Zero(t, n, "inserted at t0, not strictly before it")
	page, err := env.store.ListEvents(ctx, ports.System(), r.ID, ports.ListEventsParams{Limit: 10})
	require.NoError(t, err)
	assert.NotEmpty(t, page.Events)
}

// A version a run references is never picked for deletion, so it does
// not take the place of an unreferenced surplus version in a bounded
// pass: a pass of one deletes the oldest version no run references.
func TestGraphPruningSkipsReferencedVersionsWithinItsBatch(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(t0)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	env.insertRun(t, ports.Tenantless(), t0, t0.Add(time.Hour)) // references the oldest version
	for i := 1; i <= 2; i++ {
		clock.Set(t0.Add(time.Duration(i) * time.Minute))
		g, err := graph.New("pg-fixture").Description(fmt.Sprintf("version %d", i)).
			Input("topic", schema.String()).Node("n", "fixture.n").
			Edge("in", graph.Start, "n").Edge("out", "n", graph.Finish).Build()
		require.NoError(t, err)
		hash, err := graph.Hash(g)
		require.NoError(t, err)
		_, err = env.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: g, Hash: hash})
		require.NoError(t, err)
	}
	cfg := postgres.PruneConfig{EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: 1, KeepGraphVersions: 1}
	res, err := env.store.PrunePass(ctx, cfg, t0.Add(time.Minute*3))
	require.NoError(t, err)
	assert.Equal(t, 1, res.GraphsDeleted, "the middle version, unreferenced and beyond the newest")
	c := compiledFixture(t)
	_, err = env.store.FetchGraph(ctx, ports.Tenantless(), ports.GraphRef{GraphID: c.Effective.ID, Hash: c.Hash})
	assert.NoError(t, err, "the referenced version stays")
}
