package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// unansweringStore stands for a store behind a half-open connection (a
// failover without a TCP reset): while a switch is on, ClaimDue or Commit
// answers only when its context ends. Every other call, and every call
// while the switches are off, reaches the wrapped memory adapter.
type unansweringStore struct {
	ports.Backend
	hangClaims, hangCommits atomic.Bool
	hungClaims, hungCommits chan struct{} // one send per hung call, when room
}

func newUnansweringStore(b ports.Backend) *unansweringStore {
	return &unansweringStore{Backend: b, hungClaims: make(chan struct{}, 100), hungCommits: make(chan struct{}, 100)}
}

func hang(ctx context.Context, hung chan<- struct{}) error {
	select {
	case hung <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *unansweringStore) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	if s.hangClaims.Load() {
		return nil, hang(ctx, s.hungClaims)
	}
	return s.Backend.ClaimDue(ctx, r)
}

func (s *unansweringStore) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	if s.hangCommits.Load() {
		return nil, hang(ctx, s.hungCommits)
	}
	return s.Backend.Commit(ctx, scope, p)
}

func waitHung(t *testing.T, ch <-chan struct{}, what string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		select {
		case <-ch:
		case <-time.After(awaitLimit):
			t.Fatalf("hung %s %d never happened: the one before it never returned", what, i)
		}
	}
}

func TestAStoreThatStopsAnsweringDoesNotStallTheEngine(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	store := newUnansweringStore(h.store)
	store.hangClaims.Store(true)
	store.hangCommits.Store(true)
	cfg := h.config(k)
	cfg.Backend = store
	// Short enough for a quick test, long enough that healthy memory
	// calls (the facade's included) never hit it on a loaded machine.
	cfg.StoreTimeout = 250 * time.Millisecond
	cfg.Dispatcher.MaxClaimAttempts = 50 // released commits count as claims without progress
	e := startEngine(t, cfg)
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})

	// Polls time out and the dispatcher polls again.
	waitHung(t, store.hungClaims, "claim", 2)
	store.hangClaims.Store(false)
	// A vehicle's commit times out; it releases the claim, and the run is
	// claimed and tried again.
	waitHung(t, store.hungCommits, "commit", 2)
	store.hangCommits.Store(false)

	done := await(t, e.Client, r.ID)
	assert.Equal(t, run.StatusDone, done.Status, "the run completes once the store answers again")
	assert.Equal(t, map[string]any{"result": "x"}, done.Output)

	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		assert.NoError(t, err)
	case <-time.After(awaitLimit):
		t.Fatal("Stop hangs")
	}
}

func TestDrainRunsDoesNotHangOnAStoreThatStopsAnswering(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	store := newUnansweringStore(h.store)
	e := manual(t, h, k, func(c *engine.Config) {
		c.Backend = store
		c.StoreTimeout = 250 * time.Millisecond
	})
	ctx := context.Background()
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, map[string]any{"value": "x"})
	require.NoError(t, err)

	store.hangClaims.Store(true)
	drained := make(chan error, 1)
	go func() {
		_, err := e.DrainRuns(ctx, 0)
		drained <- err
	}()
	select {
	case err = <-drained:
		require.ErrorIs(t, err, context.DeadlineExceeded, "the claim fails at the store timeout")
	case <-time.After(awaitLimit):
		t.Fatal("DrainRuns hangs on a claim the store never answers")
	}

	store.hangClaims.Store(false)
	sum, err := e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Drained, "the admission phase was not left held")
	done, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
}

func TestObserverCallsEndAtTheObserverTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		timeout time.Duration
		want    time.Duration
	}{
		{"the configured timeout", 30 * time.Millisecond, 30 * time.Millisecond},
		{"the default timeout", 0, engine.DefaultObserverTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(true)
			k := newKit()
			type deadline struct {
				set  bool
				left time.Duration
			}
			deadlines := make(chan deadline, 1)
			e := manual(t, h, k, func(c *engine.Config) {
				c.ObserverTimeout = tt.timeout
				c.Observers = []observe.Observer{observe.Func(func(ctx context.Context, _ observe.Commit) error {
					at, ok := ctx.Deadline()
					deadlines <- deadline{set: ok, left: time.Until(at)}
					if ok && tt.timeout > 0 {
						<-ctx.Done() // a sink that never answers is cut off
					}
					return ctx.Err()
				})}
			})
			ref, err := e.SaveGraph(context.Background(), build(t, minimalLinear()))
			require.NoError(t, err)
			_, err = e.StartRun(context.Background(), ref, map[string]any{"value": "x"})
			require.NoError(t, err)
			got := <-deadlines
			require.True(t, got.set, "the call has a deadline")
			assert.Greater(t, got.left, tt.want-time.Second)
			assert.LessOrEqual(t, got.left, tt.want)
		})
	}
}

func TestAnObserverAtObserverMaxInFlightMissesCommitsInsteadOfQueueingThem(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	release := make(chan struct{})
	var calls atomic.Int32
	e := manual(t, h, k, func(c *engine.Config) {
		c.ObserverMaxInFlight = 1
		c.Observers = []observe.Observer{observe.Func(func(ctx context.Context, _ observe.Commit) error {
			calls.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})}
	})
	ref, err := e.SaveGraph(context.Background(), build(t, minimalLinear()))
	require.NoError(t, err)
	for range 3 {
		_, err = e.StartRun(context.Background(), ref, map[string]any{"value": "x"})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return calls.Load() == 1 }, 10*time.Second, time.Millisecond)
	close(release)
	require.Never(t, func() bool { return calls.Load() > 1 }, 100*time.Millisecond, time.Millisecond,
		"the commits made while the observer was busy are not delivered later")

	_, err = e.StartRun(context.Background(), ref, map[string]any{"value": "x"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return calls.Load() == 2 }, 10*time.Second, time.Millisecond,
		"once its call returned, the observer gets commits again")
}

// TestCommitsRacingStopNeverPanic starts runs (each commit delivers to
// the observers) while the engine stops; run it with -race. Starts keep
// working, and no run started after Stop returned reaches an observer.
func TestCommitsRacingStopNeverPanic(t *testing.T) {
	t.Parallel()
	for range 20 {
		h := newHarness(true)
		k := newKit()
		var observed sync.Map // run id -> true
		cfg := h.config(k)
		cfg.Observers = []observe.Observer{observe.Func(func(_ context.Context, c observe.Commit) error {
			observed.Store(c.Checkpoint.Run.ID, true)
			return nil
		})}
		e, err := engine.New(cfg)
		require.NoError(t, err)
		ctx := context.Background()
		ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
		require.NoError(t, err)
		require.NoError(t, e.Start(ctx))

		var stopped atomic.Bool
		var mu sync.Mutex
		var afterStop []string
		var starters sync.WaitGroup
		for range 3 {
			starters.Go(func() {
				for range 5 {
					after := stopped.Load()
					r, err := e.StartRun(ctx, ref, map[string]any{"value": "x"})
					if !assert.NoError(t, err, "starts keep working while and after the engine stops") {
						return
					}
					if after {
						mu.Lock()
						afterStop = append(afterStop, r.ID)
						mu.Unlock()
					}
				}
			})
		}
		require.NoError(t, e.Stop(ctx))
		stopped.Store(true)
		starters.Wait()
		time.Sleep(5 * time.Millisecond) // a delivery wrongly started would land by now
		for _, id := range afterStop {
			_, seen := observed.Load(id)
			assert.False(t, seen, "run %s, started after Stop, reached an observer", id)
		}
	}
}

// hangingNotifier's subscriptions never answer until cancelled, as a
// LISTEN session to a blackholed server.
type hangingNotifier struct{ entered chan struct{} }

func (n hangingNotifier) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	close(n.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

type hangingListenBackend struct {
	*memory.Store
	n hangingNotifier
}

func (b hangingListenBackend) Notifier() ports.Notifier { return b.n }

func TestASubscriptionThatNeverAnswersHoldsNeitherStartNorStop(t *testing.T) {
	t.Parallel()
	h := newHarness(false)
	backend := hangingListenBackend{Store: h.store.(*memory.Store), n: hangingNotifier{entered: make(chan struct{})}}
	cfg := h.config(newKit())
	cfg.Backend = backend
	cfg.StoreTimeout = 100 * time.Millisecond
	cfg.Dispatcher.DrainTimeout = 100 * time.Millisecond
	e, err := engine.New(cfg)
	require.NoError(t, err)

	started := make(chan error, 1)
	go func() { started <- e.Start(context.Background()) }()
	<-backend.n.entered
	select {
	case err := <-started:
		require.NoError(t, err, "the engine starts polling without its subscription")
	case <-time.After(awaitLimit):
		t.Fatal("Start waits for a subscription that never answers")
	}
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	assert.Equal(t, run.StatusDone, await(t, e.Client, r.ID).Status, "polling drives the run")

	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	select {
	case <-stopped:
	case <-time.After(awaitLimit):
		t.Fatal("Stop hangs behind the subscription")
	}
}

func TestASecondStopWaitsForTheFirstToDrain(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	e := startEngine(t, h.config(k))
	saveAndStart(t, e.Client, build(t, single("gated", refGated)), nil)
	k.waitStarted(t) // a vehicle is running node code

	first := make(chan error, 1)
	go func() { first <- e.Stop(context.Background()) }()
	// Whichever of the two Stops comes first drains; the other waits.
	second := make(chan error, 1)
	go func() { second <- e.Stop(context.Background()) }()
	select {
	case <-second:
		t.Fatal("a second Stop returned while the first was still draining a vehicle")
	case <-time.After(100 * time.Millisecond):
	}
	short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, e.Stop(short), context.DeadlineExceeded, "a Stop waiting for another ends with its own ctx")

	k.releaseGate()
	require.NoError(t, <-first)
	require.NoError(t, <-second, "the second Stop returns what the first did")
}

// Stop ends observer calls on an engine that never started too (a manual
// engine's, or one stopped before Start): a start committed after Stop
// reaches no observer.
func TestStopEndsObserversOfAnEngineThatNeverStarted(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	observed := make(chan string, 8)
	e := manual(t, h, newKit(), func(c *engine.Config) {
		c.Observers = []observe.Observer{observe.Func(func(_ context.Context, c observe.Commit) error {
			observed <- c.Checkpoint.Run.ID
			return nil
		})}
	})
	ctx := context.Background()
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	before, err := e.StartRun(ctx, ref, map[string]any{"value": "x"})
	require.NoError(t, err)
	require.Equal(t, before.ID, <-observed)

	require.NoError(t, e.Stop(ctx))
	_, err = e.StartRun(ctx, ref, map[string]any{"value": "y"})
	require.NoError(t, err, "starts keep working after Stop")
	select {
	case id := <-observed:
		t.Fatalf("run %s, started after Stop, reached an observer", id)
	case <-time.After(50 * time.Millisecond): // a delivery wrongly started would land by now
	}
}
