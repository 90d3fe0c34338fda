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

	outputs := stepOutputs(ctx, t, pg)
	require.Len(t, outputs, workflows)
	for _, w := range outputs {
		assert.Equal(t, branches+1, w.Steps)
	}
}

// Every step of a DBOS history workflow checkpoints its own message, once.
func TestDBOSHistoryCheckpointsEachMessageOnce(t *testing.T) {
	t.Parallel()
	ctx, pg, db := peerDatabase(t)

	const workflows, steps = 2, 10
	res, err := dbbench.DBOSHistory(ctx, db, workflows, steps, 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, workflows, res.Workflows)

	outputs := stepOutputs(ctx, t, pg)
	require.Len(t, outputs, workflows)
	for _, w := range outputs {
		assert.Equal(t, steps, w.Steps)
		assert.GreaterOrEqual(t, w.Shortest, dbbench.MessageBytes, "each output holds its message")
		assert.Less(t, w.Longest, 2*dbbench.MessageBytes, "and only its message")
	}
}

// workflowOutputs is what DBOS checkpointed for one workflow: how many
// step outputs, and the lengths of the shortest and the longest.
type workflowOutputs struct{ Steps, Shortest, Longest int }

// stepOutputs reads the step outputs DBOS checkpointed, per workflow.
func stepOutputs(ctx context.Context, t *testing.T, pg *pgtest.Database) []workflowOutputs {
	t.Helper()
	rows, err := pg.Pool(t).Query(ctx, `SELECT count(*)::int, min(length(output))::int, max(length(output))::int
		FROM dbos.operation_outputs GROUP BY workflow_uuid`)
	require.NoError(t, err)
	outputs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[workflowOutputs])
	require.NoError(t, err)
	return outputs
}
