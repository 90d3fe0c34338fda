package memory_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func drained(ch <-chan ports.Wake) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestWakeAnnouncements(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.True(t, f.store.Capabilities().Listen)
	wakes, err := f.store.Notifier().Listen(f.ctx)
	require.NoError(t, err)

	hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
	assert.False(t, drained(wakes), "graph saves announce nothing")

	_, err = f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("future", "g", hash, t0), WakeAt: t0.Add(time.Hour)})
	require.NoError(t, err)
	assert.False(t, drained(wakes), "a future first wake announces nothing")

	r, err := f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("due", "g", hash, t0), WakeAt: t0})
	require.NoError(t, err)
	require.True(t, drained(wakes), "a due first wake is announced")

	lease := f.claimOne(t0)
	assert.False(t, drained(wakes), "claims announce nothing")
	require.NoError(t, f.store.RefreshClaim(f.ctx, "due", lease.Token, t0))
	require.NoError(t, f.store.ReleaseClaim(f.ctx, "due", lease.Token, t0))
	assert.False(t, drained(wakes), "refresh and release announce nothing")

	lease = f.claimOne(t0)
	res, err := f.store.AbandonClaim(f.ctx, "due", lease.Token, claim.AbandonParams{ExpectedSeq: 1, Now: t0, RetryAt: t0, MaxClaimAbandons: 3})
	require.NoError(t, err)
	require.Equal(t, ports.AbandonRescheduled, res)
	assert.False(t, drained(wakes), "abandon announces nothing")

	lease = f.claimOne(t0)
	m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, t0)
	r, err = f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
	require.NoError(t, err)
	assert.False(t, drained(wakes), "a retained claim announces nothing")

	m = next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionAt, At: t0.Add(time.Second)}, t0)
	r, err = f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
	require.NoError(t, err)
	assert.False(t, drained(wakes), "a future at-wake announces nothing")

	f.clock.Set(t0.Add(time.Second))
	m = next(r, run.StatusRunning, run.CheckpointInterruptResolved, run.Disposition{Kind: run.DispositionImmediate}, t0.Add(time.Second))
	_, err = f.store.MutateRun(f.ctx, ports.Tenantless(), "due", func(*run.Run) (*run.Moment, error) { return m, nil })
	require.NoError(t, err)
	assert.True(t, drained(wakes), "an immediate signal commit is announced")
}

func TestAnnouncementIsVisibleAfterTheWrite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	wakes, err := f.store.Notifier().Listen(f.ctx)
	require.NoError(t, err)
	hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
	seen := make(chan error, 1)
	go func() {
		<-wakes
		_, err := f.store.FetchRun(f.ctx, ports.Tenantless(), "run-1")
		seen <- err
	}()
	_, err = f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("run-1", "g", hash, t0), WakeAt: t0})
	require.NoError(t, err)
	assert.NoError(t, <-seen, "a listener woken by the insert sees the run")
}

func TestFailedWritesAnnounceNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	wakes, err := f.store.Notifier().Listen(f.ctx)
	require.NoError(t, err)
	m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionImmediate}, t0)
	_, err = f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: ports.NewClaimToken("00000000-0000-4000-8000-000000000000")})
	require.ErrorIs(t, err, ports.ErrStaleFence)
	_, err = f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("run-1", "g", r.GraphHash, t0), WakeAt: t0})
	require.ErrorIs(t, err, ports.ErrConflict)
	assert.False(t, drained(wakes))
}

func TestListenStopsWithItsContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(f.ctx)
	wakes, err := f.store.Notifier().Listen(ctx)
	require.NoError(t, err)
	cancel()
	select {
	case _, open := <-wakes:
		assert.False(t, open, "the channel closes")
	case <-time.After(time.Second):
		t.Fatal("the channel did not close")
	}
	f.insertRun(ports.Tenantless(), "run-1") // announcing after close must not panic
}

// TestAWokenListenerCanClaimAtOnce stands for a dispatcher that claims the
// moment a wake arrives: the hook runs inside the announcement, before the
// writer returns, so a row still locked by the writer would be skipped by
// ClaimDue and the wake wasted.
func TestAWokenListenerCanClaimAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(f *fixture) (write func() error)
	}{
		{"a due first wake", func(f *fixture) func() error {
			hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
			return func() error {
				_, err := f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("run-1", "g", hash, t0), WakeAt: t0})
				return err
			}
		}},
		{"a claimed commit that yields", func(f *fixture) func() error {
			r := f.insertRun(ports.Tenantless(), "run-1")
			lease := f.claimOne(t0)
			m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget}, t0)
			return func() error {
				_, err := f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
				return err
			}
		}},
		{"a signal commit", func(f *fixture) func() error {
			r := f.insertRun(ports.Tenantless(), "run-1")
			m := next(r, run.StatusRunning, run.CheckpointInterruptResolved, run.Disposition{Kind: run.DispositionImmediate}, t0)
			return func() error {
				_, err := f.store.MutateRun(f.ctx, ports.Tenantless(), "run-1", func(*run.Run) (*run.Moment, error) { return m, nil })
				return err
			}
		}},
		{"a poisoned run's retry", func(f *fixture) func() error {
			f.insertRun(ports.Tenantless(), "run-1")
			for _, want := range []ports.AbandonResult{ports.AbandonRescheduled, ports.AbandonPoisoned} {
				lease := f.claimOne(t0)
				res, err := f.store.AbandonClaim(f.ctx, "run-1", lease.Token, claim.AbandonParams{ExpectedSeq: 1, Now: t0, RetryAt: t0, MaxClaimAbandons: 1})
				require.NoError(f.t, err)
				require.Equal(f.t, want, res)
			}
			return func() error {
				_, err := f.store.RetryPoisonedRun(f.ctx, ports.Tenantless(), "run-1", t0)
				return err
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			write := tt.setup(f)
			var claimed []int
			f.store.OnAnnounce(func() {
				batch, err := f.store.ClaimDue(f.ctx, request(t0, 1))
				require.NoError(t, err)
				claimed = append(claimed, len(batch.Leases))
			})
			require.NoError(t, write())
			assert.Equal(t, []int{1}, claimed, "one announcement, and the woken claim gets the run")
		})
	}
}

// tickingClock advances a microsecond on every read, as a real clock may
// between two reads of one write.
type tickingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Microsecond)
	return c.now
}

// A run started due by a starter whose clock runs ahead is stored due at
// the store clock, and announced, however the store clock moved during
// the insertion: the wake and the announcement read one store clock.
func TestAnImmediateStartAheadOfTheStoreClockIsAnnounced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.store = memory.New(memory.Options{Clock: &tickingClock{now: t0}})
	hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
	wakes, err := f.store.Notifier().Listen(f.ctx)
	require.NoError(t, err)
	ahead := t0.Add(time.Hour)
	_, err = f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("ahead", "g", hash, ahead), WakeAt: ahead})
	require.NoError(t, err)
	info, err := f.store.InspectRun(f.ctx, ports.System(), "ahead")
	require.NoError(t, err)
	require.True(t, info.WakeAt.Before(ahead), "the first wake is at the store clock")
	assert.True(t, drained(wakes), "a first wake at the store clock is announced")
}
