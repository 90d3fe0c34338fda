package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

const wait = 10 * time.Second

// fakeStore answers ClaimDue through a per-test function and records
// releases. Other RunStore methods are not used by the dispatcher.
type fakeStore struct {
	ports.RunStore
	claim func(call int, r claim.Request) (*ports.ClaimBatch, error)

	mu       sync.Mutex
	requests []claim.Request
	released []string
	entered  chan int // call numbers, as ClaimDue is entered
}

func newFakeStore(claim func(call int, r claim.Request) (*ports.ClaimBatch, error)) *fakeStore {
	return &fakeStore{claim: claim, entered: make(chan int, 100)}
}

func (s *fakeStore) ClaimDue(_ context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	call := len(s.requests)
	s.mu.Unlock()
	s.entered <- call
	return s.claim(call, r)
}

func (s *fakeStore) ReleaseClaim(_ context.Context, runID string, _ ports.ClaimToken, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, runID)
	return nil
}

func (s *fakeStore) limits() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, len(s.requests))
	for i, r := range s.requests {
		out[i] = r.Limit
	}
	return out
}

func (s *fakeStore) releases() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.released...)
}

// recv returns the next value of ch, failing the test when none comes
// within wait: a regression makes the test fail, not hang the package.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatalf("%s never happened", what)
		panic("unreachable")
	}
}

func (s *fakeStore) waitCall(t *testing.T, n int) {
	t.Helper()
	for {
		select {
		case call := <-s.entered:
			if call >= n {
				return
			}
		case <-time.After(wait):
			t.Fatalf("ClaimDue call %d never happened", n)
		}
	}
}

func leases(prefix string, n int) *ports.ClaimBatch {
	b := &ports.ClaimBatch{}
	for i := range n {
		b.Leases = append(b.Leases, ports.Lease{RunID: fmt.Sprintf("%s%d", prefix, i), Token: ports.NewClaimToken("t"), Attempt: 1})
	}
	return b
}

func empty() *ports.ClaimBatch { return &ports.ClaimBatch{} }

// fullClaims answers the first n claims with as many leases as asked
// for ("c<call>-<i>") and every later one with nothing.
func fullClaims(n int) func(int, claim.Request) (*ports.ClaimBatch, error) {
	return func(call int, r claim.Request) (*ports.ClaimBatch, error) {
		if call > n {
			return empty(), nil
		}
		return leases(fmt.Sprintf("c%d-", call), r.Limit), nil
	}
}

// firstThenEmpty answers the first claim with b and every later one with
// nothing.
func firstThenEmpty(b *ports.ClaimBatch) func(int, claim.Request) (*ports.ClaimBatch, error) {
	return func(call int, _ claim.Request) (*ports.ClaimBatch, error) {
		if call == 1 {
			return b, nil
		}
		return empty(), nil
	}
}

func newDispatcher(t *testing.T, store *fakeStore, edit func(*dispatch.Config)) *dispatch.Dispatcher {
	t.Helper()
	cfg := dispatch.Config{
		Runs:             store,
		Phase:            &claim.Phase{},
		Concurrency:      3,
		PollInterval:     time.Hour, // only explicit triggers poll
		OrphanTTL:        time.Minute,
		MaxClaimAttempts: 5,
		DrainTimeout:     wait,
		Drive:            func(context.Context, ports.Lease, func()) {},
	}
	if edit != nil {
		edit(&cfg)
	}
	d, err := dispatch.New(cfg)
	require.NoError(t, err)
	return d
}

func TestDemandIsTheFreeConcurrency(t *testing.T) {
	t.Parallel()
	store := newFakeStore(fullClaims(2))
	release := make(chan struct{})
	started := make(chan string, 10)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Drive = func(_ context.Context, l ports.Lease, _ func()) {
			started <- l.RunID
			<-release
		}
	})
	require.NoError(t, d.Start(context.Background()))
	for range 3 {
		recv(t, started, "a drive start")
	}
	d.RequestPoll() // no free slot: no query
	release <- struct{}{}
	store.waitCall(t, 2)
	recv(t, started, "a drive start")
	assert.Equal(t, []int{3, 1}, store.limits(), "the first poll asks for every slot, the next for the one freed")
	close(release)
	require.NoError(t, d.Stop(context.Background()))
	assert.Empty(t, store.releases(), "launched leases are the vehicles' to release")
}

func TestAFinishingDriveGivesItsSlotToTheNextClaim(t *testing.T) {
	t.Parallel()
	store := newFakeStore(fullClaims(3))
	finish := map[string]chan struct{}{"c1-0": make(chan struct{}), "c2-0": make(chan struct{})}
	started := make(chan string, 10)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Concurrency, c.MaxFinishing = 1, 1
		c.Drive = func(_ context.Context, l ports.Lease, nodesDone func()) {
			ch, finishes := finish[l.RunID]
			if finishes {
				// Before the start is reported: c2-0 must ask while c1-0
				// still finishes.
				nodesDone() // only the final commit remains
				nodesDone() // a second call changes nothing
			}
			started <- l.RunID
			if finishes {
				<-ch
			}
		}
	})
	require.NoError(t, d.Start(context.Background()))
	// c1-0 frees its slot before it reports its start, so c2-0 may report
	// first; both started while c1-0 still blocks is what counts.
	assert.ElementsMatch(t, []string{"c1-0", "c2-0"}, []string{recv(t, started, "a drive start"), recv(t, started, "a drive start")},
		"the finishing drive's slot went to the next claim")
	// c2-0 found no free finishing place, so it keeps its slot: no third
	// claim while it runs, whatever is requested.
	d.RequestPoll()
	close(finish["c1-0"])
	select {
	case id := <-started:
		t.Fatalf("%s was launched while the only slot was held", id)
	case <-time.After(50 * time.Millisecond):
	}
	assert.Equal(t, []int{1, 1}, store.limits())

	close(finish["c2-0"])
	assert.Equal(t, "c3-0", recv(t, started, "a drive start"), "the slot is free again once the drive that kept it ends")
	require.NoError(t, d.Stop(context.Background()))
}

func TestAFinishingDriveWithoutASubscriptionPollsWhenItEnds(t *testing.T) {
	t.Parallel()
	store := newFakeStore(firstThenEmpty(leases("r", 1))) // fewer than the two places asked for
	finishing := make(chan struct{})
	finish := make(chan struct{})
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Concurrency = 2
		c.Drive = func(_ context.Context, _ ports.Lease, nodesDone func()) {
			nodesDone()
			close(finishing)
			<-finish
		}
	})
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	recv(t, finishing, "a drive finishing")
	select {
	case call := <-store.entered:
		t.Fatalf("claim %d while the only run was still finishing after a short poll", call)
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	store.waitCall(t, 2) // its outcome may have made work due
	require.NoError(t, d.Stop(context.Background()))
}

func TestAFinishingDriveEndsWithoutAPollWhileSubscribed(t *testing.T) {
	t.Parallel()
	store := newFakeStore(firstThenEmpty(leases("r", 1)))
	finishing := make(chan struct{})
	finish := make(chan struct{})
	ended := make(chan struct{})
	n := &fakeNotifier{ch: make(chan ports.Wake)}
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Concurrency = 2
		c.Notifier = n
		c.Drive = func(_ context.Context, _ ports.Lease, nodesDone func()) {
			defer close(ended)
			nodesDone()
			close(finishing)
			<-finish
		}
	})
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	require.Eventually(t, d.Listening, wait, time.Millisecond)
	recv(t, finishing, "a drive finishing")
	close(finish)
	recv(t, ended, "a drive end")
	select {
	case call := <-store.entered:
		t.Fatalf("claim %d after a finishing drive ended: the store announces what its commit made due", call)
	case <-time.After(50 * time.Millisecond):
	}
	n.ch <- ports.Wake{} // an announcement still polls
	store.waitCall(t, 2)
	require.NoError(t, d.Stop(context.Background()))
}

func TestStopWaitsForFinishingDrives(t *testing.T) {
	t.Parallel()
	store := newFakeStore(firstThenEmpty(leases("r", 2)))
	finishing := make(chan struct{}, 2)
	finish := make(chan struct{})
	cancelled := make(chan string, 2)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.DrainTimeout = 50 * time.Millisecond
		c.Drive = func(ctx context.Context, l ports.Lease, nodesDone func()) {
			nodesDone()
			finishing <- struct{}{}
			select {
			case <-finish:
			case <-ctx.Done():
				cancelled <- l.RunID
			}
		}
	})
	require.NoError(t, d.Start(context.Background()))
	recv(t, finishing, "a drive finishing")
	recv(t, finishing, "a drive finishing")
	err := d.Stop(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded, "finishing drives are in-flight work")
	assert.Contains(t, err.Error(), "2 vehicle(s)")
	assert.ElementsMatch(t, []string{"r0", "r1"}, []string{<-cancelled, <-cancelled},
		"a finishing drive still running at the drain deadline has its context cancelled")
	close(finish)
}

func TestStopReturnsOnceFinishingDrivesEnd(t *testing.T) {
	t.Parallel()
	store := newFakeStore(firstThenEmpty(leases("r", 1)))
	finishing := make(chan struct{})
	finish := make(chan struct{})
	var ended sync.WaitGroup
	ended.Add(1)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Drive = func(ctx context.Context, _ ports.Lease, nodesDone func()) {
			defer ended.Done()
			nodesDone()
			close(finishing)
			<-finish
		}
	})
	require.NoError(t, d.Start(context.Background()))
	recv(t, finishing, "a drive finishing")
	stopped := make(chan error)
	go func() { stopped <- d.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a drive was still finishing", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(finish)
	require.NoError(t, <-stopped)
	ended.Wait()
}

func TestStopReleasesTheLeasesOfAPollInFlight(t *testing.T) {
	t.Parallel()
	unblock := make(chan struct{})
	store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) {
		<-unblock
		return leases("r", 2), nil
	})
	driven := make(chan string, 2)
	n := &fakeNotifier{ch: make(chan ports.Wake), stopped: make(chan struct{})}
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Notifier = n
		c.Drive = func(_ context.Context, l ports.Lease, _ func()) { driven <- l.RunID }
	})
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	stopped := make(chan error)
	go func() { stopped <- d.Stop(context.Background()) }()
	<-n.stopped // shutdown has begun: the listener is the first thing it ends
	close(unblock)
	require.NoError(t, <-stopped)
	assert.ElementsMatch(t, []string{"r0", "r1"}, store.releases(), "leases claimed while stopping are handed back")
	assert.Empty(t, driven, "nothing launches while stopping")
}

// hungReleaseStore's releases answer only when their context ends.
type hungReleaseStore struct{ *fakeStore }

func (s hungReleaseStore) ReleaseClaim(ctx context.Context, _ string, _ ports.ClaimToken, _ time.Time) error {
	<-ctx.Done()
	return ctx.Err()
}

func TestHandingBackAPollsLeasesEndsAtTheDrainDeadline(t *testing.T) {
	t.Parallel()
	unblock := make(chan struct{})
	base := newFakeStore(func(_ int, r claim.Request) (*ports.ClaimBatch, error) {
		<-unblock
		return leases("r", r.Limit), nil
	})
	n := &fakeNotifier{ch: make(chan ports.Wake), stopped: make(chan struct{})}
	d := newDispatcher(t, base, func(c *dispatch.Config) {
		c.Runs = hungReleaseStore{base}
		c.Notifier = n
		c.Concurrency = 3
		c.DrainTimeout = 100 * time.Millisecond
		c.StoreTimeout = time.Hour // a release ends only at the drain deadline
	})
	require.NoError(t, d.Start(context.Background()))
	base.waitCall(t, 1)
	stopped := make(chan error, 1)
	go func() { stopped <- d.Stop(context.Background()) }()
	<-n.stopped
	close(unblock) // three leases, whose releases never answer
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop waits for the releases beyond its drain deadline")
	}
}

func TestStopGivesUpAtTheDrainTimeoutAndCancelsVehicles(t *testing.T) {
	t.Parallel()
	store := newFakeStore(firstThenEmpty(leases("r", 1)))
	running := make(chan struct{})
	cancelled := make(chan struct{})
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.DrainTimeout = 20 * time.Millisecond
		c.Drive = func(ctx context.Context, _ ports.Lease, _ func()) {
			close(running)
			<-ctx.Done()
			close(cancelled)
		}
	})
	require.NoError(t, d.Start(context.Background()))
	recv(t, running, "a running drive")
	err := d.Stop(context.Background())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-cancelled:
	case <-time.After(wait):
		t.Fatal("the straggling vehicle's context was not cancelled")
	}
	assert.Empty(t, store.releases(), "a straggler's claim is left to expire, not released")
	assert.ErrorIs(t, d.Start(context.Background()), dispatch.ErrStopped)
}

func TestPoisonIsReportedAndTriggersAnImmediatePoll(t *testing.T) {
	t.Parallel()
	poison := ports.PoisonOutcome{RunID: "bad", PoisonReason: claim.ReasonMaxClaimAttempts}
	store := newFakeStore(firstThenEmpty(&ports.ClaimBatch{Poisoned: []ports.PoisonOutcome{poison}}))
	reported := make(chan []ports.PoisonOutcome, 1)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.OnPoisoned = func(_ context.Context, p []ports.PoisonOutcome) {
			reported <- p
			panic("callback bug") // best effort: must not hurt the dispatcher
		}
	})
	require.NoError(t, d.Start(context.Background()))
	select {
	case p := <-reported:
		assert.Equal(t, []ports.PoisonOutcome{poison}, p)
	case <-time.After(wait):
		t.Fatal("on_poisoned was not called")
	}
	store.waitCall(t, 2) // the re-poll comes without waiting for the hour-long timer
	require.NoError(t, d.Stop(context.Background()))
}

func TestBurstsOfPollRequestsCollapseIntoOnePendingPoll(t *testing.T) {
	t.Parallel()
	unblock := make(chan struct{})
	store := newFakeStore(func(call int, _ claim.Request) (*ports.ClaimBatch, error) {
		if call == 1 {
			<-unblock
		}
		return empty(), nil
	})
	d := newDispatcher(t, store, nil)
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	for range 10 {
		d.RequestPoll()
		time.Sleep(time.Millisecond)
	}
	close(unblock)
	store.waitCall(t, 2)
	require.NoError(t, d.Stop(context.Background()))
	// One request may still sit in the loop's mailbox when the pending poll
	// starts; everything else collapses.
	assert.LessOrEqual(t, len(store.limits()), 3, "ten requests during one poll make at most two more polls")
}

// fakeNotifier announces on demand and reports the end of its
// subscription (closing stopped, when set).
type fakeNotifier struct {
	ch      chan ports.Wake
	stopped chan struct{}
}

func (n *fakeNotifier) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	out := make(chan ports.Wake, 1)
	go func() {
		defer close(out)
		if n.stopped != nil {
			defer close(n.stopped)
		}
		for {
			select {
			case <-ctx.Done():
				return
			case w := <-n.ch:
				select {
				case out <- w:
				default:
				}
			}
		}
	}()
	return out, nil
}

func TestAnnouncementsWakeTheDispatcher(t *testing.T) {
	t.Parallel()
	store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) { return empty(), nil })
	n := &fakeNotifier{ch: make(chan ports.Wake)}
	d := newDispatcher(t, store, func(c *dispatch.Config) { c.Notifier = n })
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	n.ch <- ports.Wake{}
	store.waitCall(t, 2)
	require.NoError(t, d.Stop(context.Background()))
}

func TestPollsCarryTheRequestSettings(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) { return empty(), nil })
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Clock = ports.ClockFunc(func() time.Time { return now })
		c.Concurrency = 1
	})
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	d.RequestPoll()
	store.waitCall(t, 2)
	require.NoError(t, d.Stop(context.Background()))
	store.mu.Lock()
	defer store.mu.Unlock()
	first, second := store.requests[0], store.requests[1]
	assert.Equal(t, now, first.Now)
	assert.Equal(t, time.Minute, first.OrphanTTL)
	assert.Equal(t, 5, first.MaxClaimAttempts)
	assert.Equal(t, 1, first.Limit)
	assert.NotEqual(t, first.Preference, second.Preference, "demand-1 polls alternate ready and expired first")
}

func TestNewRejectsIncompleteConfigs(t *testing.T) {
	t.Parallel()
	base := func() dispatch.Config {
		return dispatch.Config{Runs: newFakeStore(nil), Phase: &claim.Phase{}, Concurrency: 1, PollInterval: time.Second,
			MaxClaimAttempts: 1, Drive: func(context.Context, ports.Lease, func()) {}}
	}
	for name, edit := range map[string]func(*dispatch.Config){
		"no store":           func(c *dispatch.Config) { c.Runs = nil },
		"no phase":           func(c *dispatch.Config) { c.Phase = nil },
		"no vehicle":         func(c *dispatch.Config) { c.Drive = nil },
		"zero concurrency":   func(c *dispatch.Config) { c.Concurrency = 0 },
		"zero interval":      func(c *dispatch.Config) { c.PollInterval = 0 },
		"zero attempts":      func(c *dispatch.Config) { c.MaxClaimAttempts = 0 },
		"negative finishing": func(c *dispatch.Config) { c.MaxFinishing = -1 },
	} {
		cfg := base()
		edit(&cfg)
		_, err := dispatch.New(cfg)
		assert.Error(t, err, name)
	}
	_, err := dispatch.New(base())
	assert.NoError(t, err)
}

// failingNotifier refuses every subscription.
type failingNotifier struct{}

func (failingNotifier) Listen(context.Context) (<-chan ports.Wake, error) {
	return nil, errors.New("connection refused")
}

func TestListeningIsTrueOnlyWhileASubscriptionIsLive(t *testing.T) {
	t.Parallel()
	n := &fakeNotifier{ch: make(chan ports.Wake), stopped: make(chan struct{})}
	d := newDispatcher(t, newFakeStore(fullClaims(0)), func(c *dispatch.Config) { c.Notifier = n })
	assert.False(t, d.Listening(), "not started")
	require.NoError(t, d.Start(context.Background()))
	require.Eventually(t, d.Listening, wait, time.Millisecond, "the subscription is live")
	require.NoError(t, d.Stop(context.Background()))
	<-n.stopped
	assert.False(t, d.Listening(), "stopped")

	refused := newDispatcher(t, newFakeStore(fullClaims(0)), func(c *dispatch.Config) { c.Notifier = failingNotifier{} })
	require.NoError(t, refused.Start(context.Background()))
	assert.Never(t, refused.Listening, 50*time.Millisecond, time.Millisecond, "a refused subscription is not listening")
	require.NoError(t, refused.Stop(context.Background()))

	pollOnly := newDispatcher(t, newFakeStore(fullClaims(0)), nil)
	require.NoError(t, pollOnly.Start(context.Background()))
	assert.False(t, pollOnly.Listening())
	require.NoError(t, pollOnly.Stop(context.Background()))
}

// cancelledClaimStore's claims return their leases only once their
// context is cancelled, as a claim interrupted after it committed does.
type cancelledClaimStore struct{ *fakeStore }

func (s cancelledClaimStore) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	s.entered <- 1
	<-ctx.Done()
	return leases("r", 2), nil
}

// A poll still running at the drain deadline is cancelled and handed off
// to a goroutine that releases its leases; that goroutine shares nothing
// unsynchronized with the rest of the shutdown (run with -race).
func TestAPollOutlastingTheDrainDeadlineIsHandledAfterStop(t *testing.T) {
	t.Parallel()
	base := newFakeStore(nil)
	d := newDispatcher(t, base, func(c *dispatch.Config) {
		c.Runs = cancelledClaimStore{base}
		c.DrainTimeout = 20 * time.Millisecond
	})
	require.NoError(t, d.Start(context.Background()))
	base.waitCall(t, 1)
	require.NoError(t, d.Stop(context.Background()))
	require.Eventually(t, func() bool { return len(base.releases()) == 2 }, wait, time.Millisecond)
	assert.ElementsMatch(t, []string{"r0", "r1"}, base.releases(), "the late poll's leases are handed back")
}
