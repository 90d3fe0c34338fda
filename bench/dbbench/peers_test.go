package dbbench_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/dbbench"
)

// Every chain hands off step by step to its last step: the drain waits for
// chains×steps completed jobs, one per step of every chain, none left over.
func TestRiverChainCompletesEveryStepOfEveryChain(t *testing.T) {
	t.Parallel()
	ctx, pg, db := peerDatabase(t)

	const chains, steps = 3, 4
	res, err := dbbench.RiverChain(ctx, db, chains, steps, 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, chains*steps, res.Jobs)

	pool := pg.Pool(t)
	rows, err := pool.Query(ctx, `SELECT (args->>'step')::int, count(*)::int FROM river_job WHERE state = 'completed' GROUP BY 1`)
	require.NoError(t, err)
	counts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct{ Step, Jobs int }])
	require.NoError(t, err)
	perStep := map[int]int{}
	for _, c := range counts {
		perStep[c.Step] = c.Jobs
	}
	assert.Equal(t, map[int]int{0: chains, 1: chains, 2: chains, 3: chains}, perStep)
	var other int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&other))
	assert.Zero(t, other, "no job is left unfinished")
}

// A fan-out workflow checkpoints every branch and its join: branches+1
// step outputs per workflow, each workflow returning its branch count.
func TestDBOSFanOutCheckpointsEveryBranchAndTheJoin(t *testing.T) {
	t.Parallel()
	ctx, pg, db := peerDatabase(t)

	const workflows, branches = 3, 4
	res, err := dbbench.DBOSFanOut(ctx, db, workflows, branches, 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, workflows, res.Workflows)
	assert.Len(t, res.Latencies, workflows)

	rows, err := pg.Pool(t).Query(ctx, `SELECT count(*)::int FROM dbos.operation_outputs GROUP BY workflow_uuid`)
	require.NoError(t, err)
	perWorkflow, err := pgx.CollectRows(rows, pgx.RowTo[int])
	require.NoError(t, err)
	assert.Equal(t, []int{branches + 1, branches + 1, branches + 1}, perWorkflow)
}

// Every step of a DBOS history workflow checkpoints its own message, once.
func TestDBOSHistoryCheckpointsEachMessageOnce(t *testing.T) {
	t.Parallel()
	ctx, pg, db := peerDatabase(t)

	const workflows, steps = 2, 10
	res, err := dbbench.DBOSHistory(ctx, db, workflows, steps, 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, workflows, res.Workflows)

	rows, err := pg.Pool(t).Query(ctx, `SELECT count(*)::int, min(length(output)), max(length(output))
		FROM dbos.operation_outputs GROUP BY workflow_uuid`)
	require.NoError(t, err)
	type perWorkflow struct{ Steps, Shortest, Longest int }
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[perWorkflow])
	require.NoError(t, err)
	require.Len(t, got, workflows)
	for _, w := range got {
		assert.Equal(t, steps, w.Steps)
		assert.GreaterOrEqual(t, w.Shortest, dbbench.MessageBytes, "each output holds its message")
		assert.Less(t, w.Longest, 2*dbbench.MessageBytes, "and only its message")
	}
}
