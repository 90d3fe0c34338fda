package engine_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// claimOutage is a backend whose ClaimDue fails while down is set, and
// otherwise answers after a while, as a store over a network does: Health
// is then often read while a poll is in flight.
type claimOutage struct {
	ports.Backend
	down   atomic.Bool
	failed atomic.Int32 // ClaimDue calls that failed
}

func (b *claimOutage) ClaimDue(ctx context.Context, req claim.Request) (*ports.ClaimBatch, error) {
	if b.down.Load() {
		b.failed.Add(1)
		return nil, errors.New("store unreachable")
	}
	time.Sleep(2 * time.Millisecond)
	return b.Backend.ClaimDue(ctx, req)
}

func TestHealthFollowsLifecycleAndClaimPolls(t *testing.T) {
	k := newKit()
	store := &claimOutage{Backend: memory.New(memory.Options{})}
	e, err := engine.New(engine.Config{Backend: store, Nodes: k.registry, Dispatcher: fastDispatch(),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	h := e.Health()
	assert.Equal(t, engine.HealthCreated, h.State)
	assert.True(t, h.LastPoll.IsZero())
	assert.Equal(t, 5*time.Millisecond, h.PollInterval)

	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	eventually(t, "a poll answered", func() bool { return !e.Health().LastPoll.IsZero() })
	h = e.Health()
	assert.Equal(t, engine.HealthRunning, h.State)
	// The next poll may be in flight already, and counts as unanswered
	// while it is: only none that began before the latest answer may be.
	assert.True(t, h.UnansweredSince.IsZero() || !h.UnansweredSince.Before(h.LastPoll),
		"the polls before the latest answer were answered")
	eventually(t, "listening", func() bool { return e.Health().Listening }) // the memory store's in-process wake-ups

	// A poll in flight when the outage begins may still be answered: the
	// oldest unanswered poll is the first that fails, or a later one.
	store.down.Store(true)
	eventually(t, "a poll failing", func() bool { return store.failed.Load() > 0 })
	failing := e.Health()
	require.False(t, failing.UnansweredSince.IsZero(), "a failed poll is unanswered")
	time.Sleep(20 * time.Millisecond) // a few more failed polls
	assert.Equal(t, failing.UnansweredSince, e.Health().UnansweredSince, "the oldest unanswered poll is kept")
	store.down.Store(false)
	eventually(t, "polls answered again", func() bool { return e.Health().UnansweredSince.IsZero() })
	assert.True(t, e.Health().LastPoll.After(failing.LastPoll))

	// A run held in a node keeps Stop draining.
	saveAndStart(t, e.Client, build(t, single("gated", refGated)), nil)
	k.waitStarted(t)
	stopped := make(chan error, 1)
	go func() { stopped <- e.Stop(context.Background()) }()
	eventually(t, "stopping", func() bool { return e.Health().State == engine.HealthStopping })
	k.releaseGate()
	require.NoError(t, <-stopped)
	assert.Equal(t, engine.HealthStopped, e.Health().State)
}

// stalledListen is a backend whose wake subscription hangs until released,
// as one against a server that accepts connections and never answers.
type stalledListen struct {
	ports.Backend
	listening chan struct{} // closed when Listen is called
	release   chan struct{}
}

func (b *stalledListen) Notifier() ports.Notifier { return stalledNotifier{b} }

type stalledNotifier struct{ b *stalledListen }

func (n stalledNotifier) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	close(n.b.listening)
	select {
	case <-n.b.release:
	case <-ctx.Done():
	}
	return n.b.Backend.Notifier().Listen(ctx)
}

// Start waits up to StoreTimeout for the wake listener to subscribe;
// Health answers meanwhile, so a health endpoint served before Start (the
// worker's /healthz) says "starting" instead of hanging.
func TestHealthAnswersWhileStartWaitsForTheListener(t *testing.T) {
	k := newKit()
	store := &stalledListen{Backend: memory.New(memory.Options{}), listening: make(chan struct{}), release: make(chan struct{})}
	e, err := engine.New(engine.Config{Backend: store, Nodes: k.registry, Dispatcher: fastDispatch(),
		StoreTimeout: time.Minute, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- e.Start(context.Background()) }()
	select {
	case <-store.listening:
	case <-time.After(awaitLimit):
		t.Fatal("Start never subscribed")
	}

	health := make(chan engine.Health, 1)
	go func() { health <- e.Health() }()
	select {
	case h := <-health:
		assert.Equal(t, engine.HealthCreated, h.State)
		assert.False(t, h.Listening)
	case <-time.After(awaitLimit):
		t.Error("Health waited for Start")
	}
	close(store.release)
	require.NoError(t, <-started)
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	assert.Equal(t, engine.HealthRunning, e.Health().State)
}
