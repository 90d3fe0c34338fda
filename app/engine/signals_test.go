package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// staleMutations is a backend whose MutateRun loses the sequence race
// (another writer committed first) while lose is positive.
type staleMutations struct {
	ports.Backend
	lose  atomic.Int64
	calls atomic.Int64
}

func (b *staleMutations) MutateRun(ctx context.Context, scope ports.Scope, runID string, mutation ports.Mutation) (*run.Run, error) {
	b.calls.Add(1)
	if b.lose.Add(-1) >= 0 {
		return nil, fmt.Errorf("%w: run %q moved on", ports.ErrStaleFence, runID)
	}
	return b.Backend.MutateRun(ctx, scope, runID, mutation)
}

// A signal that loses the sequence race to another writer is evaluated
// again against the newer run, SignalStaleRetries times at most; a race
// lost once more is the caller's, and commits nothing.
func TestSignalsAreReevaluatedAfterUpToThreeLostRaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	stale := &staleMutations{Backend: h.store}
	e := manual(t, h, newKit(), func(c *engine.Config) { c.Backend = stale })
	r := saveAndStart(t, e.Client, build(t, interruptReview()), nil)

	stale.lose.Store(engine.SignalStaleRetries + 1)
	_, err := e.CancelRun(ctx, r.ID)
	require.ErrorIs(t, err, engine.ErrStaleFence, "callers match it without importing ports")
	assert.EqualValues(t, engine.SignalStaleRetries+1, stale.calls.Load(), "the first try and every retry")
	unchanged, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusRunning, unchanged.Status)

	stale.calls.Store(0)
	stale.lose.Store(engine.SignalStaleRetries)
	cancelled, err := e.CancelRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusCancelled, cancelled.Status)
	assert.EqualValues(t, engine.SignalStaleRetries+1, stale.calls.Load())
}
