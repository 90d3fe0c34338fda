package memory_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConcurrentCommitsAtOneFenceHaveExactlyOneWinner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	lease := f.claimOne(t0)

	const racers = 8
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			n := r.Clone()
			n.Input = map[string]any{"racer": int64(i)}
			m := run.Propose(r, n, nil, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, t0)
			_, errs[i] = f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two winners")
			winner = i
			continue
		}
		assert.ErrorIs(t, err, ports.ErrStaleFence)
	}
	require.NotEqual(t, -1, winner, "no winner")
	stored, err := f.store.FetchRun(f.ctx, ports.Tenantless(), "run-1")
	require.NoError(t, err)
	assert.Equal(t, int64(winner), stored.Input["racer"], "the stored run is the winner's")
}

func TestConcurrentClaimersLeaseEveryRunExactlyOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const runs = 40
	for i := range runs {
		f.insertRun(ports.Tenantless(), fmt.Sprintf("run-%02d", i))
	}
	var mu sync.Mutex
	leased := map[string]int{}
	tokens := map[ports.ClaimToken]bool{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				batch, err := f.store.ClaimDue(f.ctx, request(t0, 3))
				if !assert.NoError(t, err) || len(batch.Leases) == 0 {
					return
				}
				mu.Lock()
				for _, l := range batch.Leases {
					leased[l.RunID]++
					tokens[l.Token] = true
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, leased, runs)
	for id, n := range leased {
		assert.Equal(t, 1, n, id)
	}
	assert.Len(t, tokens, runs, "tokens are distinct")
}

func TestMutationHoldsTheRowAgainstClaimsAndCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	lease := f.claimOne(t0)
	// Let the claim expire so admission would steal it if it could see it.
	later := t0.Add(time.Hour)

	inside := make(chan struct{})
	proceed := make(chan struct{})
	mutated := make(chan error, 1)
	go func() {
		_, err := f.store.MutateRun(f.ctx, ports.Tenantless(), "run-1", func(current *run.Run) (*run.Moment, error) {
			close(inside)
			<-proceed
			return next(current, run.StatusCancelled, run.CheckpointRunCancelled, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCancelled}, later), nil
		})
		mutated <- err
	}()
	<-inside

	batch, err := f.store.ClaimDue(f.ctx, request(later, 1))
	require.NoError(t, err)
	assert.Empty(t, batch.Leases, "admission skips a locked row instead of waiting")

	committed := make(chan error, 1)
	go func() {
		m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, later)
		_, err := f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
		committed <- err
	}()
	select {
	case err := <-committed:
		t.Fatalf("the claimed commit did not wait for the row lock: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(proceed)
	require.NoError(t, <-mutated)
	assert.ErrorIs(t, <-committed, ports.ErrStaleFence, "the signal won; the holder's commit is stale")
	info := f.inspect("run-1")
	assert.Equal(t, run.StatusCancelled, info.Run.Status)
	assert.False(t, info.Claimed(), "the signal revoked the claim")
}

func TestMutateRunPassesThroughMutationErrorsAndNilMoments(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	boom := errors.New("interrupt is not open")
	_, err := f.store.MutateRun(f.ctx, ports.Tenantless(), "run-1", func(*run.Run) (*run.Moment, error) { return nil, boom })
	assert.Same(t, boom, err)

	got, err := f.store.MutateRun(f.ctx, ports.Tenantless(), "run-1", func(*run.Run) (*run.Moment, error) { return nil, nil })
	require.NoError(t, err)
	assert.Equal(t, r, got, "a nil moment returns the current run")

	_, err = f.store.MutateRun(f.ctx, ports.Tenant("other"), "run-1", func(*run.Run) (*run.Moment, error) { return nil, nil })
	assert.ErrorIs(t, err, ports.ErrNotFound)
}

func TestMutationOfAStaleSnapshotIsAStaleFence(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionImmediate}, t0)
	fixed := func(*run.Run) (*run.Moment, error) { return m, nil }
	_, err := f.store.MutateRun(f.ctx, ports.Tenantless(), "run-1", fixed)
	require.NoError(t, err)
	_, err = f.store.MutateRun(f.ctx, ports.Tenantless(), "run-1", fixed)
	assert.ErrorIs(t, err, ports.ErrStaleFence)
}
