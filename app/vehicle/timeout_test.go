package vehicle_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// hungOnce stands for a store behind a half-open connection, once: its
// first FetchRun or Commit (whichever the case picks) answers only when
// its context ends. With writeFirst the commit is written before the
// answer is lost. Every other call reaches the memory adapter.
type hungOnce struct {
	ports.RunStore
	fetch, commit, writeFirst bool
	fired                     atomic.Bool
}

func (s *hungOnce) hang(ctx context.Context, enabled bool) (bool, error) {
	if !enabled || s.fired.Swap(true) {
		return false, nil
	}
	<-ctx.Done()
	return true, ctx.Err()
}

func (s *hungOnce) FetchRun(ctx context.Context, scope ports.Scope, runID string) (*run.Run, error) {
	if hung, err := s.hang(ctx, s.fetch); hung {
		return nil, err
	}
	return s.RunStore.FetchRun(ctx, scope, runID)
}

func (s *hungOnce) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	if s.commit && s.writeFirst && !s.fired.Load() {
		if _, err := s.RunStore.Commit(context.Background(), scope, p); err != nil {
			return nil, err
		}
	}
	if hung, err := s.hang(ctx, s.commit); hung {
		return nil, err
	}
	return s.RunStore.Commit(ctx, scope, p)
}

func TestAStoreThatStopsAnsweringEndsTheDriveAndTheRunStillCompletes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		store func(ports.RunStore) *hungOnce
		stage string
		// resumeSeq is the checkpoint the next claim starts from: what the
		// store holds, whatever the first drive believed.
		resumeSeq int64
	}{
		{"a read of the claimed run that hangs", func(s ports.RunStore) *hungOnce {
			return &hungOnce{RunStore: s, fetch: true}
		}, vehicle.StagePreFetch, 1},
		{"a commit that hangs before it is written", func(s ports.RunStore) *hungOnce {
			return &hungOnce{RunStore: s, commit: true}
		}, vehicle.StageCommit, 1},
		{"a commit that is written but whose answer is lost", func(s ports.RunStore) *hungOnce {
			return &hungOnce{RunStore: s, commit: true, writeFirst: true}
		}, vehicle.StageCommit, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, twoSteps("t.write"))
			v := f.vehicle(t, tt.store(f.store), func(c *vehicle.Config) { c.StoreTimeout = 200 * time.Millisecond })

			done := make(chan vehicle.Outcome, 1)
			lease := f.claim(t)
			if tt.stage == vehicle.StagePreFetch {
				lease.Run = nil // a store whose claim returns no document: the holder reads it
			}
			go func() { done <- v.Drive(context.Background(), lease) }()
			var out vehicle.Outcome
			select {
			case out = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the drive hangs on a store that does not answer")
			}
			assert.Equal(t, vehicle.Discarded, out.Kind)
			assert.Equal(t, tt.stage, out.Reason)
			assert.ErrorIs(t, out.Err, context.DeadlineExceeded)
			info := f.info(t)
			require.False(t, info.Claimed(), "the claim was released, not left to the orphan TTL")
			require.Equal(t, tt.resumeSeq, info.Run.CheckpointSeq)

			// The store answers again: the next claim finishes the run.
			lease = f.claim(t)
			assert.Equal(t, tt.resumeSeq, lease.CheckpointSeq)
			out = v.Drive(context.Background(), lease)
			assert.Equal(t, vehicle.Parked, out.Kind)
			assert.Equal(t, run.DispositionTerminal, out.Park)
			assert.Equal(t, run.StatusDone, f.info(t).Run.Status)
		})
	}
}
