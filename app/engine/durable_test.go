package engine_test

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

// harness is one shared store and clock that several engines (each with
// its own node registry, like separate processes) run against.
type harness struct {
	clock    *manualClock
	store    ports.Backend
	pollOnly bool
}

// newHarness is a harness on the memory adapter.
func newHarness(pollOnly bool) *harness {
	clock := newManualClock()
	return &harness{clock: clock, store: memory.New(memory.Options{Clock: clock}), pollOnly: pollOnly}
}

// config is an engine configuration on the harness. With notifications,
// polling is slow enough that runs started after the initial poll move
// mostly through announcements; poll-only engines poll every few ms.
func (h *harness) config(k *kit) engine.Config {
	d := fastDispatch()
	if !h.pollOnly {
		d.PollInterval = 200 * time.Millisecond
	}
	return engine.Config{Backend: h.store, Nodes: k.registry, Clock: h.clock, PollOnly: h.pollOnly, Dispatcher: d}
}

// backends are the stores every end-to-end scenario runs on.
var backends = []struct {
	name string
	new  func(t *testing.T, pollOnly bool) *harness
}{
	{"memory", func(_ *testing.T, pollOnly bool) *harness { return newHarness(pollOnly) }},
	{"postgres", newPostgresHarness},
}

// wakeModes runs a scenario on every backend (memory, PostgreSQL), each
// with notifications and poll-only.
func wakeModes(t *testing.T, scenario func(t *testing.T, h *harness)) {
	for _, b := range backends {
		for _, mode := range []struct {
			name     string
			pollOnly bool
		}{{"notify", false}, {"poll-only", true}} {
			t.Run(b.name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				scenario(t, b.new(t, mode.pollOnly))
			})
		}
	}
}

// onBackends runs a scenario that does not depend on wake-ups on every
// backend, poll-only.
func onBackends(t *testing.T, scenario func(t *testing.T, h *harness)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			scenario(t, b.new(t, true))
		})
	}
}

func saveAndStart(t *testing.T, c *engine.Client, g *graph.Graph, input map[string]any) *run.Run {
	t.Helper()
	ref, err := c.SaveGraph(context.Background(), g)
	require.NoError(t, err)
	r, err := c.StartRun(context.Background(), ref, input)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, r.Status)
	require.EqualValues(t, 1, r.CheckpointSeq, "StartRun returns the committed initialized run")
	return r
}

func TestDurableScenariosCompleteThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		k := newKit()
		e := startEngine(t, h.config(k))
		ctx := context.Background()

		t.Run("minimal linear copies its input", func(t *testing.T) {
			r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "hello"})
			done := await(t, e.Client, r.ID)
			assert.Equal(t, run.StatusDone, done.Status)
			assert.Equal(t, map[string]any{"result": "hello"}, done.Output)
			assert.Equal(t, 1, done.Step)
			events := allEvents(t, e.Client, r.ID)
			requireHistory(t, done, events)
			assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRunCompleted},
				checkpointTypes(events))
		})

		t.Run("fan-out and fan-in meet at the barrier", func(t *testing.T) {
			r := saveAndStart(t, e.Client, build(t, multiSource()), map[string]any{})
			done := await(t, e.Client, r.ID)
			assert.Equal(t, run.StatusDone, done.Status)
			assert.Equal(t, 3, done.Step)
			requireHistory(t, done, allEvents(t, e.Client, r.ID))
			assert.Len(t, k.attemptsOf("combine"), 1, "the join runs once")
		})

		t.Run("counting cycle runs to its guard", func(t *testing.T) {
			r := saveAndStart(t, e.Client, build(t, cycleCounter()), nil)
			done := await(t, e.Client, r.ID)
			assert.Equal(t, run.StatusDone, done.Status)
			assert.Equal(t, 10.0, done.Channels.Value("state:count"))
			requireHistory(t, done, allEvents(t, e.Client, r.ID))
		})

		t.Run("a permanent failure fails the run", func(t *testing.T) {
			r := saveAndStart(t, e.Client, build(t, single("fails", refAlwaysFails)), nil)
			done := await(t, e.Client, r.ID)
			assert.Equal(t, run.StatusFailed, done.Status)
			require.NotNil(t, done.Failure)
			events := allEvents(t, e.Client, r.ID)
			requireHistory(t, done, events)
			assert.Equal(t, run.EventRunFailed, events[len(events)-2].Type)
		})

		t.Run("retries park and resume when the clock reaches the backoff", func(t *testing.T) {
			r := saveAndStart(t, e.Client, build(t, retrying(1, 3, 60_000)), nil)
			waitParked(t, e.Client, r.ID)
			h.clock.Advance(time.Minute)
			done := await(t, e.Client, r.ID)
			assert.Equal(t, run.StatusDone, done.Status)
			assert.Equal(t, map[string]any{"out": "done"}, done.Output)
			events := allEvents(t, e.Client, r.ID)
			requireHistory(t, done, events)
			assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled,
				run.CheckpointStepCommitted, run.CheckpointRunCompleted}, checkpointTypes(events))
		})

		t.Run("interrupts park the run until resolved", func(t *testing.T) {
			r := saveAndStart(t, e.Client, build(t, interruptReview()), nil)
			waiting := await(t, e.Client, r.ID)
			require.Equal(t, run.StatusWaiting, waiting.Status)
			require.Len(t, waiting.Interrupts, 1)
			var id string
			for id = range waiting.Interrupts {
			}
			resolved, err := e.ResolveInterrupt(ctx, r.ID, id, "approved")
			require.NoError(t, err)
			assert.Equal(t, waiting.CheckpointSeq+1, resolved.CheckpointSeq)
			done := await(t, e.Client, r.ID)
			assert.Equal(t, run.StatusDone, done.Status)
			assert.Equal(t, "approved", done.Channels.Value("state:applied"))
			requireHistory(t, done, allEvents(t, e.Client, r.ID))
		})
	})
}

// waitParked waits until the run's latest commit is a retry park that
// released the claim.
func waitParked(t *testing.T, c *engine.Client, runID string) *ports.RunInfo {
	t.Helper()
	var info *ports.RunInfo
	eventually(t, "a committed retry park", func() bool {
		var err error
		info, err = c.InspectRun(context.Background(), runID)
		require.NoError(t, err)
		return info.LatestCheckpointType == run.CheckpointRetryScheduled && !info.Claimed()
	})
	return info
}

func TestInterruptResolvedFromAnotherEngineInstance(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		worker := startEngine(t, h.config(newKit()))
		// The signalling instance never starts: it only reads and signals.
		api, err := engine.New(h.config(newKit()))
		require.NoError(t, err)

		r := saveAndStart(t, api.Client, build(t, interruptReview()), nil)
		waiting := await(t, api.Client, r.ID)
		require.Equal(t, run.StatusWaiting, waiting.Status)
		for id := range waiting.Interrupts {
			_, err := api.ResolveInterrupt(ctx, r.ID, id, "approved")
			require.NoError(t, err)
		}
		done := await(t, worker.Client, r.ID)
		assert.Equal(t, run.StatusDone, done.Status)
		assert.Equal(t, "approved", done.Channels.Value("state:applied"))

		_, err = api.ResolveInterrupt(ctx, r.ID, "interrupt_missing", "x")
		assert.ErrorIs(t, err, engine.ErrInactiveRun, "a terminal run is checked before the interrupt id")

		// On a host that cannot compile the run's graph, the finished run
		// is still reported as inactive, not as a graph problem.
		bareConfig := h.config(newKit())
		bareConfig.Nodes = node.NewRegistry()
		bare, err := engine.New(bareConfig)
		require.NoError(t, err)
		_, err = bare.ResolveInterrupt(ctx, r.ID, "interrupt_missing", "x")
		assert.ErrorIs(t, err, engine.ErrInactiveRun)
	})
}

func TestRetryParkSurvivesAnEngineRestart(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		kitA, kitB := newKit(), newKit()
		a, err := engine.New(h.config(kitA))
		require.NoError(t, err)
		require.NoError(t, a.Start(context.Background()))

		r := saveAndStart(t, a.Client, build(t, retrying(1, 3, 60_000)), nil)
		parked := waitParked(t, a.Client, r.ID)
		assert.Equal(t, epoch.Add(time.Minute), parked.WakeAt, "the park wakes after the backoff")
		require.NoError(t, a.Stop(context.Background()))

		b := startEngine(t, h.config(kitB))
		h.clock.Advance(time.Minute)
		done := await(t, b.Client, r.ID)
		assert.Equal(t, run.StatusDone, done.Status)

		first, second := kitA.attemptsOf("flaky"), kitB.attemptsOf("flaky")
		require.Len(t, first, 1, "engine A ran the first attempt")
		require.Len(t, second, 1, "engine B ran the retry after the restart")
		assert.Equal(t, 1, first[0].Attempt)
		assert.Equal(t, 2, second[0].Attempt)
		assert.Equal(t, r.ID+":0:flaky:2", second[0].IdempotencyKey)
		requireHistory(t, done, allEvents(t, b.Client, r.ID))
	})
}

func TestCancellationWhileAVehicleIsMidStepWinsTheFence(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		tel := newTelemetryLog()
		cfg := h.config(k)
		cfg.Telemetry = tel
		e := startEngine(t, cfg)

		r := saveAndStart(t, e.Client, build(t, single("gated", refGated)), nil)
		k.waitStarted(t)
		cancelled, err := e.CancelRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusCancelled, cancelled.Status)

		k.releaseGate()
		lost := tel.waitFact(t, ports.FactVehicleDrain, map[string]string{"outcome": "fence_lost"})
		assert.Zero(t, lost.m["committed_moments"], "the vehicle committed nothing")
		assert.NotEmpty(t, tel.matching(ports.FactFenceLost, map[string]string{"stage": "commit"}))

		final, err := e.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusCancelled, final.Status)
		assert.Equal(t, cancelled.CheckpointSeq, final.CheckpointSeq, "nothing committed after the cancellation")
		events := allEvents(t, e.Client, r.ID)
		requireHistory(t, final, events)
		for _, ev := range events {
			assert.NotEqual(t, run.EventNodeCompleted, ev.Type, "the stale attempt's result was discarded")
		}
		again, err := e.CancelRun(ctx, r.ID)
		require.NoError(t, err, "cancelling twice is idempotent")
		assert.Equal(t, final.CheckpointSeq, again.CheckpointSeq)
	})
}

func TestRepeatedlyLostClaimsPoisonTheRunUntilRetried(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		poisoned := make(chan []ports.PoisonOutcome, 4)
		cfg := h.config(k)
		// Attempts never finish on their own within the test, so every
		// claim is lost to the orphan TTL (measured on the manual clock).
		cfg.MaxAttemptElapsed = time.Minute
		cfg.Vehicle.DrainBudget.MaxElapsed = time.Minute
		cfg.Dispatcher.OrphanTTL = 2 * time.Minute
		cfg.Dispatcher.MaxClaimAttempts = 2
		cfg.Dispatcher.OnPoisoned = func(_ context.Context, p []ports.PoisonOutcome) { poisoned <- p }
		e := startEngine(t, cfg)

		r := saveAndStart(t, e.Client, build(t, single("stuck", refGated)), nil)
		first := k.waitStarted(t)
		h.clock.Advance(3 * time.Minute)
		stolen := k.waitStarted(t)
		assert.Equal(t, first.IdempotencyKey, stolen.IdempotencyKey, "a steal replays the same attempt identity")
		h.clock.Advance(3 * time.Minute)

		select {
		case p := <-poisoned:
			require.Len(t, p, 1)
			assert.Equal(t, r.ID, p[0].RunID)
			assert.Equal(t, claim.ReasonMaxClaimAttempts, p[0].PoisonReason)
			assert.Equal(t, ports.Tenantless(), p[0].Owner)
		case <-time.After(awaitLimit):
			t.Fatal("the run was not poisoned")
		}
		_, err := e.AwaitRun(ctx, r.ID, awaitLimit)
		var pe *engine.PoisonedError
		require.ErrorAs(t, err, &pe)
		assert.ErrorIs(t, err, engine.ErrPoisoned)
		assert.Equal(t, claim.ReasonMaxClaimAttempts, pe.Info.PoisonReason)
		assert.False(t, pe.Info.Claimed())

		// Both stale vehicles now finish their attempt; neither may commit.
		k.releaseGate()
		recovered, err := e.RetryPoisonedRun(ctx, r.ID)
		require.NoError(t, err)
		assert.EqualValues(t, 1, recovered.CheckpointSeq, "recovery consumes no checkpoint")
		done := await(t, e.Client, r.ID)
		assert.Equal(t, run.StatusDone, done.Status)
		assert.Equal(t, map[string]any{"out": "gated"}, done.Output)
		events := allEvents(t, e.Client, r.ID)
		requireHistory(t, done, events)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRunCompleted},
			checkpointTypes(events), "exactly one winner committed the step")
	})
}

func TestStopLeavesUnfinishedWorkRecoverableByAnotherEngine(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	ctx := context.Background()
	kitA, kitB := newKit(), newKit()
	cfg := h.config(kitA)
	cfg.MaxAttemptElapsed = time.Minute
	cfg.Vehicle.DrainBudget.MaxElapsed = time.Minute
	cfg.Dispatcher.OrphanTTL = 2 * time.Minute
	cfg.Dispatcher.DrainTimeout = 20 * time.Millisecond
	a, err := engine.New(cfg)
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))

	r := saveAndStart(t, a.Client, build(t, single("gated", refGated)), nil)
	kitA.waitStarted(t)
	err = a.Stop(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded, "Stop reports work it could not drain")
	info, err := a.InspectRun(ctx, r.ID)
	require.NoError(t, err)
	assert.True(t, info.Claimed(), "the claim is left to expire, not released")

	cfgB := h.config(kitB)
	cfgB.Dispatcher.OrphanTTL = 2 * time.Minute
	b := startEngine(t, cfgB)
	h.clock.Advance(3 * time.Minute)
	kitB.releaseGate()
	done := await(t, b.Client, r.ID)
	assert.Equal(t, run.StatusDone, done.Status)
	after, err := b.InspectRun(ctx, r.ID)
	require.NoError(t, err)
	assert.False(t, after.Claimed())
	requireHistory(t, done, allEvents(t, b.Client, r.ID))
}

func TestNotificationsDriveRunsWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	h := newHarness(false)
	k := newKit()
	cfg := h.config(k)
	cfg.Dispatcher.PollInterval = time.Hour // only the initial poll happens
	worker := startEngine(t, cfg)
	// Another process starts the run: only the store's announcement can
	// tell the worker.
	starter, err := engine.New(cfg)
	require.NoError(t, err)
	r := saveAndStart(t, starter.Client, build(t, minimalLinear()), map[string]any{"value": "hi"})
	done := await(t, worker.Client, r.ID)
	assert.Equal(t, run.StatusDone, done.Status)
}

// A run this engine starts due at once is claimed by its own dispatcher
// at once, without an announcement and without waiting for the poll.
func TestARunStartedHereIsClaimedWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	cfg := h.config(k)
	cfg.Dispatcher.PollInterval = time.Hour // only the initial poll happens
	tel := newTelemetryLog()
	cfg.Telemetry = tel
	e := startEngine(t, cfg)
	ref, err := e.SaveGraph(context.Background(), build(t, minimalLinear()))
	require.NoError(t, err)
	// Twice: the first start may race the initial poll; the second comes
	// when the dispatcher has nothing left to do but wait an hour.
	for range 2 {
		waitIdle(t, tel)
		r, err := e.StartRun(context.Background(), ref, map[string]any{"value": "hi"})
		require.NoError(t, err)
		done := await(t, e.Client, r.ID)
		assert.Equal(t, run.StatusDone, done.Status)
	}
}

// A signal of this engine that makes a run due now (an interrupt's
// answer) has its own dispatcher claim it at once, as a start does,
// without an announcement and without waiting for the poll.
func TestARunResolvedHereIsClaimedWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	cfg := h.config(newKit())
	cfg.Dispatcher.PollInterval = time.Hour // only the initial poll happens
	tel := newTelemetryLog()
	cfg.Telemetry = tel
	e := startEngine(t, cfg)
	ctx := context.Background()
	r := saveAndStart(t, e.Client, build(t, interruptReview()), nil)
	waiting := await(t, e.Client, r.ID)
	require.Equal(t, run.StatusWaiting, waiting.Status)
	waitIdle(t, tel)
	for id := range waiting.Interrupts {
		_, err := e.ResolveInterrupt(ctx, r.ID, id, "approved")
		require.NoError(t, err)
	}
	done, err := e.AwaitRun(ctx, r.ID, 5*time.Second)
	require.NoError(t, err, "the resolved run waited for the hourly poll")
	assert.Equal(t, run.StatusDone, done.Status)
}

// Recovering a poisoned run makes it due now: this engine's dispatcher
// claims it at once, as after a start, without waiting for the poll.
func TestARunRetriedHereIsClaimedWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	k := newKit()
	poisoner := manual(t, h, k, func(c *engine.Config) {
		c.Dispatcher.OrphanTTL = time.Minute
		c.Dispatcher.MaxClaimAttempts = 1
	})
	r := saveAndStart(t, poisoner.Client, build(t, minimalLinear()), map[string]any{"value": "v"})
	// A worker claims the run and dies: the next admission poisons it.
	lost, err := h.store.ClaimDue(ctx, claim.Request{Now: h.clock.Now(), Limit: 1, OrphanTTL: time.Minute, MaxClaimAttempts: 1})
	require.NoError(t, err)
	require.Len(t, lost.Leases, 1)
	h.clock.Advance(2 * time.Minute)
	sum, err := poisoner.DrainRuns(ctx, 0)
	require.NoError(t, err)
	require.Len(t, sum.Poisoned, 1)

	cfg := h.config(k)
	cfg.Dispatcher.PollInterval = time.Hour // only the initial poll happens
	tel := newTelemetryLog()
	cfg.Telemetry = tel
	e := startEngine(t, cfg)
	waitIdle(t, tel)
	_, err = e.RetryPoisonedRun(ctx, r.ID)
	require.NoError(t, err)
	done, err := e.AwaitRun(ctx, r.ID, 5*time.Second)
	require.NoError(t, err, "the recovered run waited for the hourly poll")
	assert.Equal(t, run.StatusDone, done.Status)
}

// waitIdle waits until the dispatcher last reported nothing in flight and
// no poll running or pending.
func waitIdle(t *testing.T, tel *telemetryLog) {
	t.Helper()
	eventually(t, "the dispatcher is idle", func() bool {
		facts := tel.matching(ports.FactDispatcherState, nil)
		if len(facts) == 0 {
			return false
		}
		m := facts[len(facts)-1].m
		return m["in_flight"] == 0 && m["poll_active"] == 0 && m["poll_pending"] == 0
	})
}

func TestDrainBudgetYieldsAndTheRunStillCompletes(t *testing.T) {
	t.Parallel()
	wakeModes(t, func(t *testing.T, h *harness) {
		k := newKit()
		cfg := h.config(k)
		cfg.Vehicle.DrainBudget.MaxMoments = 3
		tel := newTelemetryLog()
		cfg.Telemetry = tel
		e := startEngine(t, cfg)
		r := saveAndStart(t, e.Client, build(t, cycleCounter()), nil)
		done := await(t, e.Client, r.ID)
		require.Equal(t, run.StatusDone, done.Status)
		events := allEvents(t, e.Client, r.ID)
		requireHistory(t, done, events)
		yields := 0
		for _, ev := range events {
			if ev.Type == run.EventCheckpointCommitted && ev.Metadata.Map()["park_reason"] == run.ReasonDrainBudget {
				yields++
			}
		}
		assert.Positive(t, yields, "a long run yields its claim at the budget")
		for _, f := range tel.matching(ports.FactVehicleDrain, map[string]string{"outcome": "parked"}) {
			assert.LessOrEqual(t, f.m["committed_moments"], 3.0, "no drive commits more than the budget")
		}
	})
}

func TestObserversSeeCommitsAndTheirFailuresChangeNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	rec := &recorder{}
	tel := newTelemetryLog()
	cfg := h.config(k)
	cfg.Telemetry = tel
	cfg.Observers = []observe.Observer{
		rec,
		observe.Func(func(context.Context, observe.Commit) error { panic("observer bug") }),
		observe.Func(func(context.Context, observe.Commit) error { return errors.New("observer down") }),
	}
	e := startEngine(t, cfg)
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	done := await(t, e.Client, r.ID)
	require.Equal(t, run.StatusDone, done.Status)

	eventually(t, "three observed checkpoints", func() bool { return len(rec.seen()) == 3 })
	// Observers run concurrently: delivery order is not commit order.
	seen := rec.seen()
	slices.SortFunc(seen, func(a, b observeCommit) int { return cmp.Compare(a.seq, b.seq) })
	var types []run.CheckpointType
	for i, c := range seen {
		assert.Equal(t, r.ID, c.runID)
		assert.Equal(t, ports.Tenantless(), c.owner)
		assert.EqualValues(t, i+1, c.seq)
		types = append(types, c.ctype)
	}
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, types)
	tel.waitFact(t, ports.FactObserverFailure, map[string]string{"result": "exception"})
	tel.waitFact(t, ports.FactObserverFailure, map[string]string{"result": "callback_error"})
}

// A run id can come back: once the pruner deleted a run, its idempotency
// key starts a new run under the same id, here on another replica.
func TestAwaitRunNeverReturnsAPrunedRunOfTheSameID(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		replicaA := manual(t, h, k)
		replicaB := manual(t, h, k)
		ref, err := replicaA.SaveGraph(ctx, build(t, minimalLinear()))
		require.NoError(t, err)
		old, err := replicaA.StartRun(ctx, ref, map[string]any{"value": "old"}, engine.WithIdempotencyKey("order-1"))
		require.NoError(t, err)
		_, err = replicaA.DrainRuns(ctx, 0)
		require.NoError(t, err)
		done, err := replicaA.AwaitRun(ctx, old.ID, 0)
		require.NoError(t, err)
		require.Equal(t, run.StatusDone, done.Status)

		h.clock.Advance(2 * time.Hour)
		res, err := h.store.PruneRuns(ctx, ports.PruneParams{Before: h.clock.Now().Add(-time.Hour), BatchSize: 100})
		require.NoError(t, err)
		require.Equal(t, 1, res.Runs)
		fresh, err := replicaB.StartRun(ctx, ref, map[string]any{"value": "new"}, engine.WithIdempotencyKey("order-1"))
		require.NoError(t, err)
		require.Equal(t, old.ID, fresh.ID)

		_, err = replicaA.AwaitRun(ctx, fresh.ID, 300*time.Millisecond) // nobody drives it
		assert.ErrorIs(t, err, engine.ErrAwaitTimeout, "not the pruned run this replica once committed")
	})
}

// Ids a store cannot hold name no run: a typed error, never a raw one.
func TestRunIDsThatAreNotTextAreTypedErrors(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		e := manual(t, h, newKit())
		ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
		require.NoError(t, err)
		for _, id := range []string{"run_\xff", "run_\x00"} {
			_, err = e.FetchRun(ctx, id)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)
			_, err = e.AwaitRun(ctx, id, 0)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)
			_, err = e.CancelRun(ctx, id)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)
			_, err = e.ListEvents(ctx, id, ports.ListEventsParams{})
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)
			_, err = e.StartRun(ctx, ref, map[string]any{"value": "v"}, engine.WithRunID(id))
			assert.ErrorIs(t, err, engine.ErrInvalidOptions, "%q", id)
		}
	})
}

// Run and graph ids of ports.MaxIDBytes bytes work end to end; longer
// ones name no run and cannot be written, alike on every backend: typed
// errors, never a raw database one.
func TestIDsLongerThanTheLimitAreTypedErrors(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		e := manual(t, h, newKit())
		g := build(t, minimalLinear())
		g.ID = strings.Repeat("g", ports.MaxIDBytes)
		ref, err := e.SaveGraph(ctx, g)
		require.NoError(t, err)
		atLimit := strings.Repeat("r", ports.MaxIDBytes)
		r, err := e.StartRun(ctx, ref, map[string]any{"value": "v"}, engine.WithRunID(atLimit))
		require.NoError(t, err)
		require.Equal(t, atLimit, r.ID)
		_, err = e.DrainRuns(ctx, 0)
		require.NoError(t, err)
		done, err := e.FetchRun(ctx, atLimit)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)

		for _, id := range []string{atLimit + "r", strings.Repeat("r", 6000)} {
			_, err = e.StartRun(ctx, ref, map[string]any{"value": "v"}, engine.WithRunID(id))
			assert.ErrorIs(t, err, engine.ErrInvalidOptions, "%d bytes", len(id))
			_, err = e.FetchRun(ctx, id)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%d bytes", len(id))
			_, err = e.AwaitRun(ctx, id, 0)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%d bytes", len(id))
			_, err = e.CancelRun(ctx, id)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%d bytes", len(id))
			_, err = e.ListEvents(ctx, id, ports.ListEventsParams{})
			assert.ErrorIs(t, err, engine.ErrNotFound, "%d bytes", len(id))
			_, err = e.ListRuns(ctx, ports.ListRunsParams{Before: &ports.RunCursor{StartedAt: time.Now(), RunID: id}})
			assert.ErrorIs(t, err, ports.ErrInvalidArgument, "%d bytes", len(id))

			long := build(t, minimalLinear())
			long.ID = strings.Repeat("g", len(id))
			_, err = e.SaveGraph(ctx, long)
			assert.ErrorIs(t, err, ports.ErrInvalidGraph, "%d bytes", len(id))
			_, err = e.LatestGraphRef(ctx, long.ID)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%d bytes", len(id))
			page, err := e.ListRuns(ctx, ports.ListRunsParams{GraphID: long.ID})
			if assert.NoError(t, err, "%d bytes", len(id)) {
				assert.Empty(t, page.Runs, "%d bytes", len(id))
			}
		}
	})
}

// A tenant id of ports.MaxIDBytes bytes owns graphs and runs on every
// backend; a longer one is ErrInvalidTenant, never a raw database error.
func TestTenantIDsLongerThanTheLimitAreInvalidTenants(t *testing.T) {
	t.Parallel()
	onTenantFairBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		e := manual(t, h, newKit(), func(c *engine.Config) { c.TenantMode = engine.TenantRequired })
		tenant := e.Tenant(strings.Repeat("t", ports.MaxIDBytes))
		ref, err := tenant.SaveGraph(ctx, build(t, minimalLinear()))
		require.NoError(t, err)
		r, err := tenant.StartRun(ctx, ref, map[string]any{"value": "v"})
		require.NoError(t, err)
		_, err = e.DrainRuns(ctx, 0)
		require.NoError(t, err)
		done, err := tenant.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)

		for _, n := range []int{ports.MaxIDBytes + 1, 6000} {
			over := e.Tenant(strings.Repeat("t", n))
			_, err := over.SaveGraph(ctx, build(t, minimalLinear()))
			assert.ErrorIs(t, err, engine.ErrInvalidTenant, "%d bytes", n)
			_, err = over.StartRun(ctx, ref, map[string]any{"value": "v"})
			assert.ErrorIs(t, err, engine.ErrInvalidTenant, "%d bytes", n)
			_, err = over.FetchRun(ctx, r.ID)
			assert.ErrorIs(t, err, engine.ErrInvalidTenant, "%d bytes", n)
		}
	})
}

// Graph ids, hashes and cursors a store cannot hold name no row: a read
// that filters on one finds nothing, alike on every backend, and a cursor
// no page can have printed is invalid input, never a raw database error.
func TestReadsFilteredOnIDsThatAreNotTextFindNothing(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		e := manual(t, h, newKit())
		saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "v"})
		for _, id := range []string{"g_\xff", "g_\x00"} {
			page, err := e.ListRuns(ctx, ports.ListRunsParams{GraphID: id})
			if assert.NoError(t, err, "%q", id) {
				assert.Empty(t, page.Runs, "%q", id)
			}
			page, err = e.ListRuns(ctx, ports.ListRunsParams{GraphHash: id})
			if assert.NoError(t, err, "%q", id) {
				assert.Empty(t, page.Runs, "%q", id)
			}
			_, err = e.FetchLatestRun(ctx, engine.RunFilters{GraphID: id})
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)
			versions, err := e.ListGraphVersions(ctx, id, ports.ListGraphVersionsParams{})
			if assert.NoError(t, err, "%q", id) {
				assert.Empty(t, versions.Versions, "%q", id)
			}
			_, err = e.LatestGraphRef(ctx, id)
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)
			_, err = e.FetchGraph(ctx, engine.GraphRef{GraphID: id, Hash: strings.Repeat("0", 64)})
			assert.ErrorIs(t, err, engine.ErrNotFound, "%q", id)

			_, err = e.ListRuns(ctx, ports.ListRunsParams{Before: &ports.RunCursor{StartedAt: time.Now(), RunID: "run_" + id}})
			assert.ErrorIs(t, err, ports.ErrInvalidArgument, "%q", id)
			_, err = e.ListGraphVersions(ctx, "g", ports.ListGraphVersionsParams{Before: &ports.GraphCursor{PublishedAt: time.Now(), Hash: id}})
			assert.ErrorIs(t, err, ports.ErrInvalidArgument, "%q", id)
		}
	})
}

// A page after the largest sequence number holds nothing: no event has a
// greater one, on any backend.
func TestEventsAfterTheLargestSeqAreNone(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		e := manual(t, h, newKit())
		r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "v"})
		page, err := e.ListEvents(ctx, r.ID, ports.ListEventsParams{AfterSeq: math.MaxInt64})
		require.NoError(t, err)
		assert.Empty(t, page.Events)
		assert.Equal(t, int64(math.MaxInt64), page.NextAfterSeq)
		assert.False(t, page.HasMore)
	})
}

// A node's failure reason is its error's text or its panic's value, which
// need not be UTF-8 (bytes of another encoding, a cut multi-byte rune).
// The run still retries and then fails with it, on every backend, instead
// of proposing a run its store refuses and replaying the node until the
// run is poisoned.
func TestAFailureReasonThatIsNotUTF8StillRetriesAndFailsTheRun(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		k.registry.
			MustRegister("test.fails_in_latin1", node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				return node.Output{}, errors.New("caf\xe9 closed")
			})).
			MustRegister("test.panics_in_latin1", node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				panic("caf\xe9 closed")
			}))
		e := manual(t, h, k)
		for id, ref := range map[string]string{"fails": "test.fails_in_latin1", "panics": "test.panics_in_latin1"} {
			r := saveAndStart(t, e.Client, build(t, single(id, ref, graph.Retry(2, 0))), nil)
			sum, err := e.DrainRuns(ctx, 0)
			require.NoError(t, err, ref)
			for _, out := range sum.Outcomes {
				assert.Equal(t, vehicle.Parked, out.Kind, "%s: %v", ref, out.Err)
			}
			done, err := e.FetchRun(ctx, r.ID)
			require.NoError(t, err, ref)
			require.Equal(t, run.StatusFailed, done.Status, ref)
			assert.Equal(t, "node_failed", done.Failure.Code, ref)
			reason, _ := done.Failure.Details["errors"].(map[string]any)["node"].(string)
			assert.Contains(t, reason, "caf\uFFFD closed", ref)
			events := allEvents(t, e.Client, r.ID)
			requireHistory(t, done, events)
			var reasons []any
			for _, ev := range events {
				if ev.Type == run.EventNodeFailed {
					reasons = append(reasons, ev.Payload["reason"])
				}
			}
			assert.Equal(t, []any{reason, reason}, reasons, "%s: the retry and the final failure, as stored", ref)
		}
		assert.Len(t, k.attemptsOf("node"), 4, "two attempts per run, none replayed")
	})
}

// An interrupt schema whose field names are not UTF-8 has no wire form: the
// interrupting node fails (invalid_interrupt) and the run records it, on
// every backend, instead of proposing a run its store refuses and
// replaying the node until the run is poisoned.
func TestAnInterruptSchemaWithAFieldNameThatIsNotUTF8FailsTheNode(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		schemas := map[string]*schema.Schema{
			"valid":   schema.Object(map[string]*schema.Schema{"caf\xe9": schema.String()}),
			"invalid": schema.Object(map[string]*schema.Schema{"caf\xe9": schema.List(nil)}),
		}
		for id, s := range schemas {
			k.registry.MustRegister("test.asks_"+id, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				return node.Interrupt(node.InterruptRequest{ResumeChannel: "out", Schema: s}), nil
			}))
		}
		e := manual(t, h, k)
		for _, id := range []string{"invalid", "valid"} {
			t.Run(id, func(t *testing.T) {
				r := saveAndStart(t, e.Client, build(t, single(id, "test.asks_"+id)), nil)
				sum, err := e.DrainRuns(ctx, 0)
				require.NoError(t, err)
				require.Len(t, sum.Outcomes, 1)
				assert.Equal(t, vehicle.Parked, sum.Outcomes[0].Kind, "%v", sum.Outcomes[0].Err)
				done, err := e.FetchRun(ctx, r.ID)
				require.NoError(t, err)
				require.Equal(t, run.StatusFailed, done.Status)
				reason, _ := done.Failure.Details["errors"].(map[string]any)["node"].(string)
				assert.Contains(t, reason, "invalid_interrupt")
				assert.Contains(t, reason, `field name "caf\xe9" is not UTF-8 text`)
				requireHistory(t, done, allEvents(t, e.Client, r.ID))
			})
		}
		assert.Len(t, k.attemptsOf("node"), 2, "one attempt per run, none replayed")
	})
}

// An interrupt schema whose wire form nests deeper than a portable value
// may fails the interrupting node (invalid_interrupt), on every backend,
// instead of proposing a run its store refuses and replaying the node
// until the run is poisoned.
func TestAnInterruptSchemaTooDeepToStoreFailsTheNode(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		k := newKit()
		deep := schema.String()
		for range value.MaxDepth + 1 {
			deep = &schema.Schema{Type: schema.TypeList, Item: deep} // schema.List would copy it each time
		}
		k.registry.MustRegister("test.asks_deep", node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Interrupt(node.InterruptRequest{ResumeChannel: "out", Schema: deep}), nil
		}))
		e := manual(t, h, k)
		r := saveAndStart(t, e.Client, build(t, single("deep", "test.asks_deep")), nil)
		sum, err := e.DrainRuns(ctx, 0)
		require.NoError(t, err)
		require.Len(t, sum.Outcomes, 1)
		assert.Equal(t, vehicle.Parked, sum.Outcomes[0].Kind)
		done, err := e.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusFailed, done.Status)
		reason, _ := done.Failure.Details["errors"].(map[string]any)["node"].(string)
		assert.Contains(t, reason, "invalid_interrupt: interrupt schema is not portable")
		requireHistory(t, done, allEvents(t, e.Client, r.ID))
		assert.Len(t, k.attemptsOf("node"), 1, "one attempt, not replayed")
	})
}
