package engine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// pruneBeforeFetch prunes every terminal run right before the first
// FetchRun: the pruner of another engine winning the race between an
// idempotent start's conflicting insert and its read of the existing run.
type pruneBeforeFetch struct {
	*memory.Store
	once sync.Once
}

func (b *pruneBeforeFetch) FetchRun(ctx context.Context, scope ports.Scope, runID string) (*run.Run, error) {
	b.once.Do(func() {
		_, _ = b.PruneRuns(ctx, ports.PruneParams{Before: time.Now().Add(time.Hour), BatchSize: 100})
	})
	return b.Store.FetchRun(ctx, scope, runID)
}

// Once the pruner deletes a run its idempotency key is free again, even
// when the deletion lands between the repeated start's insert, which
// conflicted, and its read of the run that was there: the start inserts
// the run anew instead of reporting the id taken.
func TestIdempotentStartRacingThePrunerStartsANewRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memory.New(memory.Options{})
	k := newKit()
	e, err := engine.New(engine.Config{Backend: store, Nodes: k.registry, Mode: engine.ModeManual})
	require.NoError(t, err)
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	old, err := e.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	done, err := e.FetchRun(ctx, old.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusDone, done.Status)

	racing, err := engine.New(engine.Config{Backend: &pruneBeforeFetch{Store: store}, Nodes: newKit().registry, Mode: engine.ModeManual})
	require.NoError(t, err)
	fresh, err := racing.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	require.Equal(t, old.ID, fresh.ID)
	require.Equal(t, run.StatusRunning, fresh.Status)
	require.EqualValues(t, 1, fresh.CheckpointSeq)
}
