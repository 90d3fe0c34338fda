package dbbench_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/dbbench"
	"github.com/docketgo/docket/pgtest"
)

// A fan-out workflow checkpoints every branch and its join: branches+1
// step outputs per workflow, each workflow returning its branch count.
func TestDBOSFanOutCheckpointsEveryBranchAndTheJoin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg := pgtest.New(t)
	db := &dbbench.Database{Name: pg.Name, URL: pg.URL}

	const workflows, branches = 3, 4
	res, err := dbbench.DBOSFanOut(ctx, db, workflows, branches, 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, workflows, res.Workflows)
	assert.Len(t, res.Latencies, workflows)

	var perWorkflow []int
	rows, err := pg.Pool(t).Query(ctx, `SELECT count(*) FROM dbos.operation_outputs GROUP BY workflow_uuid`)
	require.NoError(t, err)
	for rows.Next() {
		var n int
		require.NoError(t, rows.Scan(&n))
		perWorkflow = append(perWorkflow, n)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []int{branches + 1, branches + 1, branches + 1}, perWorkflow)
}
