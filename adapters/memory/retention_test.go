package memory_test

import (
	"testing"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPruneEventsDeletesOldestFirstInBatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1") // event 1 inserted at t0
	f.clock.Set(t0.Add(time.Minute))
	lease := f.claimOne(t0)
	m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, t0.Add(time.Minute))
	_, err := f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token}) // event 2 at t0+1m
	require.NoError(t, err)

	n, err := f.store.PruneEvents(f.ctx, ports.PruneParams{Before: t0, BatchSize: 10})
	require.NoError(t, err)
	assert.Zero(t, n, "an event exactly at the cutoff survives")

	n, err = f.store.PruneEvents(f.ctx, ports.PruneParams{Before: t0.Add(time.Hour), BatchSize: 1})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the batch bounds deletions")
	page, err := f.store.ListEvents(f.ctx, ports.Tenantless(), "run-1", ports.ListEventsParams{Limit: 10})
	require.NoError(t, err)
	require.Len(t, page.Events, 1)
	assert.Equal(t, int64(2), page.Events[0].Seq, "the oldest went first")
	assert.Equal(t, int64(2), page.LatestSeq)
	require.NotNil(t, page.OldestAvailableSeq)
	assert.Equal(t, int64(2), *page.OldestAvailableSeq)

	_, err = f.store.PruneEvents(f.ctx, ports.PruneParams{Before: t0.Add(time.Hour), BatchSize: 10})
	require.NoError(t, err)
	latest, err := f.store.FetchLatestEvent(f.ctx, ports.Tenantless(), "run-1")
	require.NoError(t, err)
	assert.Nil(t, latest, "a fully pruned run has no latest event")
	page, err = f.store.ListEvents(f.ctx, ports.Tenantless(), "run-1", ports.ListEventsParams{Limit: 10})
	require.NoError(t, err)
	assert.Nil(t, page.LatestAvailableSeq)
	assert.Equal(t, int64(2), page.LatestSeq, "the committed counter survives pruning")
}

func TestPruneRunsDeletesOnlyOldTerminalRunsWithTheirEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.insertRun(ports.Tenantless(), "active")
	r := f.insertRun(ports.Tenantless(), "finished")
	_, err := f.store.MutateRun(f.ctx, ports.Tenantless(), "finished", func(current *run.Run) (*run.Moment, error) {
		return next(current, run.StatusCancelled, run.CheckpointRunCancelled, run.Disposition{Kind: run.DispositionTerminal}, t0.Add(time.Minute)), nil
	})
	require.NoError(t, err)
	require.Equal(t, int64(1), r.EventSeq)

	res, err := f.store.PruneRuns(f.ctx, ports.PruneParams{Before: t0.Add(time.Minute), BatchSize: 10})
	require.NoError(t, err)
	assert.Zero(t, res.Runs, "updated_at exactly at the cutoff survives")

	res, err = f.store.PruneRuns(f.ctx, ports.PruneParams{Before: t0.Add(time.Hour), BatchSize: 10})
	require.NoError(t, err)
	assert.Equal(t, ports.PruneRunsResult{Runs: 1, CascadeEvents: 2}, res)
	_, err = f.store.FetchRun(f.ctx, ports.System(), "finished")
	assert.ErrorIs(t, err, ports.ErrNotFound)
	_, err = f.store.FetchRun(f.ctx, ports.System(), "active")
	assert.NoError(t, err, "non-terminal runs are never pruned")
}

func TestPruneInputIsValidated(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.store.PruneEvents(f.ctx, ports.PruneParams{Before: t0})
	assert.ErrorIs(t, err, ports.ErrInvalidArgument)
	_, err = f.store.PruneRuns(f.ctx, ports.PruneParams{BatchSize: 1})
	assert.ErrorIs(t, err, ports.ErrInvalidArgument)
	_, err = f.store.PruneGraphVersions(f.ctx, ports.PruneGraphsParams{BatchSize: 1})
	assert.ErrorIs(t, err, ports.ErrInvalidArgument)
}
