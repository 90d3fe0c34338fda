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

// A loaded backlog is made of valid runs: each copy reads back as its own
// run, the trigger-maintained schedule counts them all, claims against it
// lease and release full batches, and the engine then drains every run to
// done past the invariant gates.
func TestLoadedBacklogClaimsAndDrainsToDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg := pgtest.New(t)
	db := &dbbench.Database{Name: pg.Name, URL: pg.URL}
	d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: dbbench.ShapeOneStep, Concurrency: 8, PollOnly: true, PollInterval: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close(context.Background()) })

	const runs = 2000
	load, err := d.LoadBacklog(ctx, runs)
	require.NoError(t, err)
	assert.Equal(t, runs, load.Runs)

	for _, i := range []int{0, 1, runs - 1} {
		r, err := d.Engine.FetchRun(ctx, dbbench.BacklogRunID(i))
		require.NoError(t, err, "run %d", i)
		assert.Equal(t, dbbench.BacklogRunID(i), r.ID)
		assert.Equal(t, "running", string(r.Status))
	}
	var stored, due, unfinished int
	runsTable := pgx.Identifier{dbbench.DocketSchema, "docket_runs"}.Sanitize()
	require.NoError(t, d.Pool.QueryRow(ctx, `SELECT count(DISTINCT run_id), count(*) FILTER (WHERE wake_at <= now() AND claim_token IS NULL) FROM `+runsTable).Scan(&stored, &due))
	require.NoError(t, d.Pool.QueryRow(ctx, `SELECT unfinished_count FROM `+pgx.Identifier{dbbench.DocketSchema, "docket_claim_schedule"}.Sanitize()).Scan(&unfinished))
	assert.Equal(t, runs, stored)
	assert.Equal(t, runs, due)
	assert.Equal(t, runs, unfinished)

	m, err := dbbench.MeasureClaims(ctx, db, dbbench.ClaimOptions{Claims: 10, Batch: 32, Warmup: 2, Explain: true})
	require.NoError(t, err)
	assert.Len(t, m.Latencies, 10)
	assert.Equal(t, 10*32, m.Leases, "every claim leases a full batch")
	assert.Contains(t, m.Plan, "docket_runs")
	assert.Contains(t, m.Plan, "-- generic plan")
	require.NoError(t, d.Pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE wake_at IS NOT NULL AND claim_token IS NULL) FROM `+runsTable).Scan(&due))
	assert.Equal(t, runs, due, "every claimed run was released again, and the explained claim rolled back")

	res, err := d.Drain(ctx, runs, 2*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, runs, res.Jobs)
	require.NoError(t, dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, runs))
}

func TestLoadBacklogRefusesAnEmptyBacklog(t *testing.T) {
	ctx := context.Background()
	pg := pgtest.New(t)
	d, err := dbbench.OpenDocket(ctx, &dbbench.Database{Name: pg.Name, URL: pg.URL}, dbbench.DocketOptions{Shape: dbbench.ShapeOneStep, Concurrency: 1, PollOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close(context.Background()) })
	_, err = d.LoadBacklog(ctx, 0)
	assert.Error(t, err)
}
