package dbbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/dbbench"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// peerDatabase is a fresh database for one peer's run and a context that
// bounds the test.
func peerDatabase(t *testing.T) (context.Context, *pgtest.Database, *dbbench.Database) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pg := pgtest.New(t)
	return ctx, pg, &dbbench.Database{Name: pg.Name, URL: pg.URL}
}

// A drained database passes every gate; a planted double commit of a
// terminal moment, or a miscounted drain, fails them.
func TestInvariantGatesPassAfterADrainAndCatchAPlantedDoubleCommit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg := pgtest.New(t)
	db := &dbbench.Database{Name: pg.Name, URL: pg.URL}
	d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: dbbench.ShapeOneStep, Concurrency: 4, PollOnly: true, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close(context.Background()) })

	const runs = 5
	require.NoError(t, d.StartRuns(ctx, runs))
	res, err := d.Drain(ctx, runs, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, runs, res.Jobs)
	require.NoError(t, dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, runs))

	err = dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, runs+1)
	require.ErrorIs(t, err, dbbench.ErrGateFailed)
	assert.Contains(t, err.Error(), "exact terminal count")

	// Plant a second run_completed event on one run, as a double commit of
	// its terminal moment would.
	events := pgx.Identifier{dbbench.DocketSchema, "docket_events"}.Sanitize()
	_, err = d.Pool.Exec(ctx, `INSERT INTO `+events+` (run_id, seq, type, step, payload, metadata, occurred_at, inserted_at)
SELECT e.run_id, (SELECT max(x.seq) FROM `+events+` x WHERE x.run_id = e.run_id) + 1, type, step, payload, metadata, occurred_at, inserted_at
FROM `+events+` e WHERE type = 'run_completed' ORDER BY run_id LIMIT 1`)
	require.NoError(t, err)
	err = dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, runs)
	require.ErrorIs(t, err, dbbench.ErrGateFailed)
	assert.Contains(t, err.Error(), "one terminal event per run")
	assert.Contains(t, err.Error(), "event_seq matches the log")
}

func TestDocketGraphsCompileForEveryShape(t *testing.T) {
	t.Parallel()
	for shape, steps := range map[string]int{dbbench.ShapeOneStep: 1, dbbench.ShapeChain10: 10, dbbench.ShapeFanOut8: 2, dbbench.ShapeHistory10: 10} {
		g, n, err := dbbench.DocketGraph(shape)
		require.NoError(t, err, shape)
		assert.NotNil(t, g)
		assert.Equal(t, steps, n, shape)
	}
	_, _, err := dbbench.DocketGraph("ring")
	assert.Error(t, err)
}

// A history10 run ends with every node's message in its history, in node
// order: the state the scenario commits really grows by a message a step.
func TestHistoryRunsAccumulateEveryMessage(t *testing.T) {
	t.Parallel()
	ctx, _, db := peerDatabase(t)
	d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: dbbench.ShapeHistory10, Concurrency: 2, PollOnly: true, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close(context.Background()) })

	require.NoError(t, d.StartRuns(ctx, 2))
	res, err := d.Drain(ctx, 2, time.Minute)
	require.NoError(t, err)
	require.Equal(t, 2, res.Jobs)
	require.NoError(t, dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, 2))

	page, err := d.Engine.ListRuns(ctx, ports.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, page.Runs, 2)
	for _, summary := range page.Runs {
		r, err := d.Engine.FetchRun(ctx, summary.RunID)
		require.NoError(t, err)
		history, ok := r.Output["out"].([]any)
		require.True(t, ok, "out is the history list, got %T", r.Output["out"])
		require.Len(t, history, 10)
		for i, m := range history {
			assert.Equal(t, dbbench.Message(i), m, "message %d", i)
			assert.Len(t, m, dbbench.MessageBytes)
		}
		assert.NotEqual(t, history[0], history[1], "every node says something different")
	}
}

func TestDrainPollsRarelyWhileMuchRemainsAndOftenNearTheEnd(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 20*time.Millisecond, dbbench.DrainPollWait(0, 1000, time.Second), "no rate yet")
	assert.Equal(t, 100*time.Millisecond, dbbench.DrainPollWait(100, 1000, time.Second), "9 s to go")
	assert.Equal(t, 25*time.Millisecond, dbbench.DrainPollWait(900, 1000, 900*time.Millisecond), "100 ms to go")
	assert.Equal(t, 5*time.Millisecond, dbbench.DrainPollWait(999, 1000, time.Second), "the end is near")
}
