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

// Every chain hands off step by step to its last step: the drain waits for
// chains×steps completed jobs, one per step of every chain, none left over.
func TestRiverChainCompletesEveryStepOfEveryChain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg := pgtest.New(t)
	db := &dbbench.Database{Name: pg.Name, URL: pg.URL}

	const chains, steps = 3, 4
	res, err := dbbench.RiverChain(ctx, db, chains, steps, 2, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, chains*steps, res.Jobs)

	pool := pg.Pool(t)
	perStep := map[int]int{}
	rows, err := pool.Query(ctx, `SELECT (args->>'step')::int, count(*) FROM river_job WHERE state = 'completed' GROUP BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var step, n int
		require.NoError(t, rows.Scan(&step, &n))
		perStep[step] = n
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[int]int{0: chains, 1: chains, 2: chains, 3: chains}, perStep)
	var other int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state <> 'completed'`).Scan(&other))
	assert.Zero(t, other, "no job is left unfinished")
}
