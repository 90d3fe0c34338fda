package engine_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/app/prune"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// manual returns a ModeManual engine on the harness.
func manual(t *testing.T, h *harness, k *kit, edit ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	cfg := h.config(k)
	cfg.Mode = engine.ModeManual
	for _, f := range edit {
		f(&cfg)
	}
	e, err := engine.New(cfg)
	require.NoError(t, err)
	return e
}

func TestConfigValidationNamesEveryInvalidField(t *testing.T) {
	t.Parallel()
	store := newHarness(true).store
	valid := func() engine.Config { return engine.Config{Backend: store} }
	tests := []struct {
		name   string
		edit   func(*engine.Config)
		fields []string
	}{
		{"missing backend", func(c *engine.Config) { c.Backend = nil }, []string{"Backend"}},
		{"unknown tenant mode", func(c *engine.Config) { c.TenantMode = "some" }, []string{"TenantMode"}},
		{"unknown mode", func(c *engine.Config) { c.Mode = "inline" }, []string{"Mode"}},
		{"negative concurrency", func(c *engine.Config) { c.Dispatcher.Concurrency = -1 }, []string{"Dispatcher.Concurrency"}},
		{"negative max finishing", func(c *engine.Config) { c.Dispatcher.MaxFinishing = -1 }, []string{"Dispatcher.MaxFinishing"}},
		{"negative poll interval", func(c *engine.Config) { c.Dispatcher.PollInterval = -time.Second }, []string{"Dispatcher.PollInterval"}},
		{"poll interval below a millisecond", func(c *engine.Config) { c.Dispatcher.PollInterval = time.Microsecond }, []string{"Dispatcher.PollInterval"}},
		{"await poll interval below a millisecond", func(c *engine.Config) { c.AwaitPollInterval = time.Nanosecond }, []string{"AwaitPollInterval"}},
		{"concurrency beyond the bound", func(c *engine.Config) { c.Dispatcher.Concurrency = engine.MaxConcurrency + 1 }, []string{"Dispatcher.Concurrency"}},
		{"negative max claim attempts", func(c *engine.Config) { c.Dispatcher.MaxClaimAttempts = -2 }, []string{"Dispatcher.MaxClaimAttempts"}},
		{"max claim attempts beyond 32 bits", func(c *engine.Config) { c.Dispatcher.MaxClaimAttempts = math.MaxInt32 + 1 }, []string{"Dispatcher.MaxClaimAttempts"}},
		{"negative drain timeout", func(c *engine.Config) { c.Dispatcher.DrainTimeout = -1 }, []string{"Dispatcher.DrainTimeout"}},
		{"orphan TTL not above the drain budget", func(c *engine.Config) { c.Dispatcher.OrphanTTL = 3 * time.Second }, []string{"Dispatcher.OrphanTTL"}},
		{"drain budget below the attempt maximum", func(c *engine.Config) { c.MaxAttemptElapsed = 5 * time.Second }, []string{"Vehicle.DrainBudget.MaxElapsed"}},
		{"attempt maximum beyond the orphan TTL", func(c *engine.Config) { c.MaxAttemptElapsed = 2 * time.Minute },
			[]string{"Vehicle.DrainBudget.MaxElapsed", "Dispatcher.OrphanTTL", "(3s)", "(2m0s)", "(1m0s)"}},
		{"attempt maximum below a millisecond", func(c *engine.Config) { c.MaxAttemptElapsed = time.Microsecond }, []string{"MaxAttemptElapsed"}},
		{"negative moment budget", func(c *engine.Config) { c.Vehicle.DrainBudget.MaxMoments = -5 }, []string{"Vehicle.DrainBudget.MaxMoments"}},
		{"backoff cap below base", func(c *engine.Config) { c.Vehicle.AbandonBackoffCap = time.Second }, []string{"Vehicle.AbandonBackoffCap"}},
		{"negative max abandons", func(c *engine.Config) { c.Vehicle.MaxClaimAbandons = -1 }, []string{"Vehicle.MaxClaimAbandons"}},
		{"max abandons beyond 32 bits", func(c *engine.Config) { c.Vehicle.MaxClaimAbandons = math.MaxInt32 + 1 }, []string{"Vehicle.MaxClaimAbandons"}},
		{"pruner without interval", func(c *engine.Config) {
			c.Pruner = &prune.Config{RunRetention: time.Hour, BatchSize: 10}
		}, []string{"Pruner.Interval"}},
		{"event retention above run retention", func(c *engine.Config) {
			c.Pruner = &prune.Config{Interval: time.Minute, EventRetention: 2 * time.Hour, RunRetention: time.Hour, BatchSize: 10}
		}, []string{"Pruner.EventRetention"}},
		{"pruner without batch size", func(c *engine.Config) {
			c.Pruner = &prune.Config{Interval: time.Minute, RunRetention: time.Hour}
		}, []string{"Pruner.BatchSize"}},
		{"pruner with several problems", func(c *engine.Config) {
			c.Pruner = &prune.Config{EventRetention: -time.Hour, RunRetention: time.Hour}
		}, []string{"Pruner.Interval", "Pruner.EventRetention", "Pruner.BatchSize"}},
		{"nil observer", func(c *engine.Config) { c.Observers = append(c.Observers, nil) }, []string{"Observers"}},
		{"nil observer func", func(c *engine.Config) { c.Observers = append(c.Observers, observe.Func(nil)) }, []string{"Observers"}},
		{"negative store timeout", func(c *engine.Config) { c.StoreTimeout = -time.Second }, []string{"StoreTimeout"}},
		{"negative observer timeout", func(c *engine.Config) { c.ObserverTimeout = -time.Second }, []string{"ObserverTimeout"}},
		{"negative observer bound", func(c *engine.Config) { c.ObserverMaxInFlight = -1 }, []string{"ObserverMaxInFlight"}},
		{"several problems at once", func(c *engine.Config) {
			c.Backend = nil
			c.Dispatcher.Concurrency = -1
			c.Vehicle.MaxClaimAbandons = -1
		}, []string{"Backend", "Dispatcher.Concurrency", "Vehicle.MaxClaimAbandons"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.edit(&cfg)
			_, err := engine.New(cfg)
			require.ErrorIs(t, err, engine.ErrInvalidConfig)
			var ce *engine.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.fields[0], ce.Field)
			for _, f := range tt.fields {
				assert.Contains(t, err.Error(), f)
			}
		})
	}

	t.Run("zero values mean the documented defaults", func(t *testing.T) {
		t.Parallel()
		_, err := engine.New(valid())
		require.NoError(t, err)
		unlimited := valid()
		unlimited.Vehicle.DrainBudget.MaxMoments = engine.Unlimited
		_, err = engine.New(unlimited)
		require.NoError(t, err)
	})
}

func TestTenantRequiredModeIsolatesTenants(t *testing.T) {
	t.Parallel()
	onTenantFairBackends(t, tenantIsolation)
}

func tenantIsolation(t *testing.T, h *harness) {
	ctx := context.Background()
	k := newKit()
	cfg := h.config(k)
	cfg.TenantMode = engine.TenantRequired
	e := startEngine(t, cfg)
	acme, other := e.Tenant("acme"), e.Tenant("other")

	ref, err := acme.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	r, err := acme.StartRun(ctx, ref, map[string]any{"value": "mine"})
	require.NoError(t, err)
	done := await(t, acme, r.ID)
	assert.Equal(t, run.StatusDone, done.Status)

	// The owner reads its run through every read call.
	fetched, err := acme.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, done.CheckpointSeq, fetched.CheckpointSeq)
	info, err := acme.InspectRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, info.Run.Status)
	events, err := acme.ListEvents(ctx, r.ID, ports.ListEventsParams{})
	require.NoError(t, err)
	assert.Len(t, events.Events, int(done.EventSeq))
	latest, err := acme.LatestEvent(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, done.EventSeq, latest.Seq)
	first, err := acme.FetchEvent(ctx, r.ID, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), first.Seq)

	_, err = other.FetchRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.InspectRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.ListEvents(ctx, r.ID, ports.ListEventsParams{})
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.LatestEvent(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.FetchEvent(ctx, r.ID, 1)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.CancelRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.RetryPoisonedRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.FetchGraph(ctx, ref)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	_, err = other.StartRun(ctx, ref, map[string]any{"value": "theirs"})
	assert.ErrorIs(t, err, engine.ErrNotFound, "a graph version belongs to its tenant")
	page, err := other.ListRuns(ctx, ports.ListRunsParams{})
	require.NoError(t, err)
	assert.Empty(t, page.Runs)
	page, err = acme.ListRuns(ctx, ports.ListRunsParams{})
	require.NoError(t, err)
	require.Len(t, page.Runs, 1)
	assert.Equal(t, ports.Tenant("acme"), page.Runs[0].Owner)

	_, err = e.FetchRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrInvalidTenant, "the tenantless client needs a tenant in required mode")
	_, err = e.Tenant("").FetchRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrInvalidTenant)

	none, err := engine.New(h.config(newKit()))
	require.NoError(t, err)
	_, err = none.Tenant("acme").FetchRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrInvalidTenant, "tenants are rejected in tenant-none mode")
	_, err = none.FetchRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrNotFound, "tenantless callers do not see tenant rows")
}

// A tenant signals its own runs (answers, recoveries, cancellations);
// another tenant's signals to the same run find nothing and change nothing.
func TestATenantSignalsOnlyItsOwnRuns(t *testing.T) {
	t.Parallel()
	onTenantFairBackends(t, func(t *testing.T, h *harness) {
		ctx := context.Background()
		e := manual(t, h, newKit(), func(c *engine.Config) { c.TenantMode = engine.TenantRequired })
		acme, other := e.Tenant("acme"), e.Tenant("other")
		r := saveAndStart(t, acme, build(t, interruptReview()), nil)
		_, err := e.DrainRuns(ctx, 0)
		require.NoError(t, err)
		waiting := await(t, acme, r.ID)
		require.Equal(t, run.StatusWaiting, waiting.Status)
		open := waiting.OpenInterrupts()
		require.Len(t, open, 1)

		_, err = other.ResolveInterrupt(ctx, r.ID, open[0].ID, "mallory")
		require.ErrorIs(t, err, engine.ErrNotFound)
		_, err = other.CancelRun(ctx, r.ID)
		require.ErrorIs(t, err, engine.ErrNotFound)
		healthy, err := acme.RetryPoisonedRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, waiting.CheckpointSeq, healthy.CheckpointSeq, "a healthy run is returned unchanged")

		resolved, err := acme.ResolveInterrupt(ctx, r.ID, open[0].ID, "approved")
		require.NoError(t, err)
		assert.Equal(t, waiting.CheckpointSeq+1, resolved.CheckpointSeq, "the other tenant's answer changed nothing")
		_, err = e.DrainRuns(ctx, 0)
		require.NoError(t, err)
		done := await(t, acme, r.ID)
		assert.Equal(t, run.StatusDone, done.Status)
		assert.Equal(t, "approved", done.Channels.Value("state:applied"))

		second := saveAndStart(t, acme, build(t, interruptReview()), nil)
		cancelled, err := acme.CancelRun(ctx, second.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusCancelled, cancelled.Status)
	})
}

func TestStartRunWithAnIdempotencyKeyStartsOnce(t *testing.T) {
	t.Parallel()
	onTenantFairBackends(t, idempotentStarts)
}

func idempotentStarts(t *testing.T, h *harness) {
	ctx := context.Background()
	e := manual(t, h, newKit(), func(c *engine.Config) { c.TenantMode = engine.TenantRequired })
	acme := e.Tenant("acme")
	ref, err := acme.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)

	first, err := acme.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	again, err := acme.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	assert.Equal(t, first.ID, again.ID, "the repeated start returns the same run")
	assert.Equal(t, run.StatusDone, again.Status, "in its current state")

	_, err = acme.StartRun(ctx, ref, map[string]any{"value": "b"}, engine.WithIdempotencyKey("order-1"))
	assert.ErrorIs(t, err, engine.ErrIdempotencyKeyReused)
	_, err = acme.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"),
		engine.WithMetadata(map[string]any{"source": "retry"}))
	assert.ErrorIs(t, err, engine.ErrIdempotencyKeyReused, "other metadata")
	v2, err := acme.SaveGraph(ctx, build(t, minimalLinear().Description("v2")))
	require.NoError(t, err)
	require.Equal(t, ref.GraphID, v2.GraphID)
	_, err = acme.StartRun(ctx, v2, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	assert.ErrorIs(t, err, engine.ErrIdempotencyKeyReused, "another version of the graph")
	_, err = acme.StartRun(ctx, ref, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"), engine.WithRunID("x"))
	assert.ErrorIs(t, err, engine.ErrInvalidOptions)

	other := e.Tenant("other")
	otherRef, err := other.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	theirs, err := other.StartRun(ctx, otherRef, map[string]any{"value": "a"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	assert.NotEqual(t, first.ID, theirs.ID, "keys are scoped to their tenant")

	page, err := acme.ListRuns(ctx, ports.ListRunsParams{})
	require.NoError(t, err)
	assert.Len(t, page.Runs, 1)

	_, err = acme.StartRun(ctx, ref, map[string]any{"value": "c"}, engine.WithRunID(first.ID))
	assert.ErrorIs(t, err, engine.ErrInvalidOptions, "an explicit run id cannot name a key's run")
}

func TestFetchLatestRunReturnsTheNewestMatchingRun(t *testing.T) {
	t.Parallel()
	onTenantFairBackends(t, fetchLatestRun)
}

func fetchLatestRun(t *testing.T, h *harness) {
	ctx := context.Background()
	e := manual(t, h, newKit(), func(c *engine.Config) { c.TenantMode = engine.TenantRequired })
	acme := e.Tenant("acme")
	_, err := acme.FetchLatestRun(ctx, engine.RunFilters{})
	assert.ErrorIs(t, err, engine.ErrNotFound, "no runs yet")

	linear, err := acme.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	review, err := acme.SaveGraph(ctx, build(t, interruptReview()))
	require.NoError(t, err)
	start := func(ref engine.GraphRef, input map[string]any) *run.Run {
		t.Helper()
		r, err := acme.StartRun(ctx, ref, input)
		require.NoError(t, err)
		h.clock.Advance(time.Second) // distinct start times
		return r
	}
	start(linear, map[string]any{"value": "a"}) // older than newLinear, same version
	waiting := start(review, nil)
	newLinear := start(linear, map[string]any{"value": "b"})
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)

	tests := []struct {
		name    string
		filters engine.RunFilters
		want    *run.Run
		status  run.Status
	}{
		{"no filters: the newest run", engine.RunFilters{}, newLinear, run.StatusDone},
		{"by graph", engine.RunFilters{GraphID: review.GraphID}, waiting, run.StatusWaiting},
		{"by graph version", engine.RunFilters{GraphID: linear.GraphID, GraphHash: linear.Hash}, newLinear, run.StatusDone},
		{"by status", engine.RunFilters{Statuses: []run.Status{run.StatusWaiting}}, waiting, run.StatusWaiting},
		{"by several statuses", engine.RunFilters{Statuses: []run.Status{run.StatusWaiting, run.StatusDone}}, newLinear, run.StatusDone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := acme.FetchLatestRun(ctx, tt.filters)
			require.NoError(t, err)
			assert.Equal(t, tt.want.ID, got.RunID)
			assert.Equal(t, tt.status, got.Status)
			assert.Equal(t, ports.Tenant("acme"), got.Owner)
		})
	}

	_, err = acme.FetchLatestRun(ctx, engine.RunFilters{GraphID: linear.GraphID, Statuses: []run.Status{run.StatusWaiting}})
	assert.ErrorIs(t, err, engine.ErrNotFound, "nothing matches every filter")
	_, err = e.Tenant("other").FetchLatestRun(ctx, engine.RunFilters{})
	assert.ErrorIs(t, err, engine.ErrNotFound, "another tenant's runs are invisible")
	_, err = acme.FetchLatestRun(ctx, engine.RunFilters{Statuses: []run.Status{"created"}})
	assert.ErrorIs(t, err, ports.ErrInvalidArgument, "an unknown status is rejected")
	_, err = e.FetchLatestRun(ctx, engine.RunFilters{})
	assert.ErrorIs(t, err, engine.ErrInvalidTenant)
}

func TestManualDrainRunsDrivesDueRunsSynchronously(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	k := newKit()
	e := manual(t, h, k)
	require.ErrorIs(t, e.Start(ctx), engine.ErrManualMode)

	ref, err := e.SaveGraph(ctx, build(t, retrying(1, 3, 60_000)))
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, nil)
	require.NoError(t, err)

	sum, err := e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, sum.Drained)
	assert.Equal(t, vehicle.Parked, sum.Outcomes[0].Kind)
	assert.Equal(t, run.DispositionAt, sum.Outcomes[0].Park, "the retry parks until its backoff")
	assert.False(t, sum.LimitReached)

	sum, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, sum.Drained, "nothing is due before the backoff")

	h.clock.Advance(time.Minute)
	sum, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 1, sum.Drained)
	done, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)

	// The limit counts admissions.
	for range 3 {
		_, err := e.StartRun(ctx, ref, nil)
		require.NoError(t, err)
	}
	sum, err = e.DrainRuns(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Drained)
	assert.True(t, sum.LimitReached)

	_, err = e.DrainRuns(ctx, -1)
	assert.ErrorIs(t, err, engine.ErrInvalidOptions)
	prod, err := engine.New(h.config(k))
	require.NoError(t, err)
	_, err = prod.DrainRuns(ctx, 1)
	assert.ErrorIs(t, err, engine.ErrTestingModeRequired)
}

// An admission that only poisons is no sign that nothing is due:
// DrainRuns goes on to the runs behind it.
func TestDrainRunsDrivesTheRunsBehindAdmissionPoison(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	e := manual(t, h, newKit(), func(c *engine.Config) {
		c.Dispatcher.OrphanTTL = time.Minute
		c.Dispatcher.MaxClaimAttempts = 1
	})
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	for range 2 {
		_, err := e.StartRun(ctx, ref, map[string]any{"value": "v"})
		require.NoError(t, err)
	}
	// A worker claims both and dies: their next admission poisons them.
	lost, err := h.store.ClaimDue(ctx, claim.Request{Now: h.clock.Now(), Limit: 2, OrphanTTL: time.Minute, MaxClaimAttempts: 1})
	require.NoError(t, err)
	require.Len(t, lost.Leases, 2)
	h.clock.Advance(2 * time.Minute)
	healthy, err := e.StartRun(ctx, ref, map[string]any{"value": "v"})
	require.NoError(t, err)

	sum, err := e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	assert.Len(t, sum.Poisoned, 2)
	assert.Equal(t, 1, sum.Drained)
	assert.False(t, sum.LimitReached)
	done, err := e.FetchRun(ctx, healthy.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
}

func TestHostIncompatibleGraphsAreHandedBackWithoutPoison(t *testing.T) {
	t.Parallel()
	onBackends(t, hostIncompatibility)
}

func hostIncompatibility(t *testing.T, h *harness) {
	ctx := context.Background()
	k := newKit()
	small := manual(t, h, k, func(c *engine.Config) {
		c.MaxAttemptElapsed = time.Second
		c.Vehicle.AbandonBackoff = 10 * time.Second
		c.Vehicle.MaxClaimAbandons = 1
	})
	ref, err := small.SaveGraph(ctx, build(t, single("slow", refEcho, graph.Timeout(5000))))
	require.NoError(t, err)
	r, err := small.StartRun(ctx, ref, nil)
	require.NoError(t, err)

	for i, wantWake := range []time.Duration{10 * time.Second, 20 * time.Second} {
		sum, err := small.DrainRuns(ctx, 1)
		var stopped *engine.DrainStoppedError
		require.ErrorAs(t, err, &stopped, "hand-back %d", i)
		assert.Equal(t, vehicle.HostIncompatible, stopped.Outcome.Kind)
		assert.ErrorIs(t, stopped.Outcome.Err, superstep.ErrIncompatibleExecutionPolicy)
		assert.Equal(t, 1, sum.Drained)
		info, err := small.InspectRun(ctx, r.ID)
		require.NoError(t, err)
		assert.False(t, info.Poisoned(), "host incompatibility never poisons")
		assert.Equal(t, i+1, info.ClaimAbandons)
		assert.Equal(t, h.clock.Now().Add(wantWake), info.WakeAt, "the backoff doubles")
		h.clock.Advance(wantWake)
	}

	big := manual(t, h, newKit(), func(c *engine.Config) {
		c.MaxAttemptElapsed = 10 * time.Second
		c.Vehicle.DrainBudget.MaxElapsed = 10 * time.Second
	})
	_, err = big.DrainRuns(ctx, 0)
	require.NoError(t, err)
	done, err := big.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status, "a compatible host runs it")
}

func TestStoredGraphsThatDoNotCompileAreAbandonedThenPoisoned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	publisher := manual(t, h, newKit())
	ref, err := publisher.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	r, err := publisher.StartRun(ctx, ref, map[string]any{"value": "v"})
	require.NoError(t, err)

	// A worker that lacks the graph's node implementation.
	bare := node.NewRegistry()
	tel := newTelemetryLog()
	cfg := h.config(&kit{registry: bare})
	cfg.Vehicle.AbandonBackoff = 10 * time.Second
	cfg.Vehicle.MaxClaimAbandons = 1
	cfg.Telemetry = tel
	cfg.Dispatcher.PollInterval = time.Hour // drive admissions by hand below
	worker, err := engine.New(cfg)
	require.NoError(t, err)
	require.NoError(t, worker.Start(ctx))
	t.Cleanup(func() { _ = worker.Stop(ctx) })

	abandoned := tel.waitFact(t, ports.FactVehicleDrain, map[string]string{"outcome": "abandoned"})
	assert.Zero(t, abandoned.m["committed_moments"])
	info, err := worker.InspectRun(ctx, r.ID)
	require.NoError(t, err)
	assert.False(t, info.Poisoned())
	assert.Equal(t, 1, info.ClaimAbandons)
	wait := info.WakeAt.Sub(h.clock.Now())
	assert.Greater(t, wait, 10*time.Second, "stored-graph hand-backs are jittered above the base")
	assert.LessOrEqual(t, wait, 20*time.Second)
	require.NoError(t, worker.Stop(ctx))

	// The next claim hits the negative cache entry and poisons the run.
	h.clock.Advance(wait)
	manualWorker := manual(t, h, &kit{registry: bare}, func(c *engine.Config) { c.Vehicle.MaxClaimAbandons = 1 })
	_, err = manualWorker.DrainRuns(ctx, 1)
	var stopped *engine.DrainStoppedError
	require.ErrorAs(t, err, &stopped)
	assert.Equal(t, vehicle.Abandoned, stopped.Outcome.Kind)
	assert.Equal(t, ports.AbandonPoisoned, stopped.Outcome.Abandon)
	assert.Equal(t, vehicle.ReasonCompileFailed, stopped.Outcome.Reason)
	info, err = worker.InspectRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, claim.ReasonMaxClaimAbandons, info.PoisonReason)

	// Registering the node heals the host; recovery clears the poison.
	bare.MustRegister(refCopyInput, newKit().mustLookup(refCopyInput))
	_, err = manualWorker.RetryPoisonedRun(ctx, r.ID)
	require.NoError(t, err)
	_, err = manualWorker.DrainRuns(ctx, 0)
	require.NoError(t, err)
	done, err := manualWorker.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
}

func (k *kit) mustLookup(ref string) node.Node {
	n, ok := k.registry.Lookup(ref)
	if !ok {
		panic("no node " + ref)
	}
	return n
}

func TestFacadeErrorsAreTyped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	e := manual(t, h, newKit())
	ref, err := e.SaveGraph(ctx, build(t, interruptReview()))
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, nil)
	require.NoError(t, err)

	_, err = e.AwaitRun(ctx, r.ID, 0)
	assert.ErrorIs(t, err, engine.ErrAwaitTimeout, "a running run does not satisfy a zero-timeout await")
	_, err = e.AwaitRun(ctx, r.ID, -time.Second)
	assert.ErrorIs(t, err, engine.ErrInvalidOptions)
	_, err = e.AwaitRun(ctx, "run_missing", time.Second)
	assert.ErrorIs(t, err, engine.ErrNotFound)

	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	waiting, err := e.AwaitRun(ctx, r.ID, 0)
	require.NoError(t, err)
	require.Equal(t, run.StatusWaiting, waiting.Status)
	var id string
	for id = range waiting.Interrupts {
	}

	_, err = e.ResolveInterrupt(ctx, r.ID, "interrupt_unknown", "x")
	assert.ErrorIs(t, err, engine.ErrNotFound)
	var rule *engine.RuleError
	assert.ErrorAs(t, err, &rule)
	_, err = e.ResolveInterrupt(ctx, r.ID, id, 42.0)
	assert.ErrorIs(t, err, superstep.ErrInvalidInput, "the interrupt's schema wants a string")
	_, err = e.ResolveInterrupt(ctx, r.ID, id, "yes")
	require.NoError(t, err)
	_, err = e.ResolveInterrupt(ctx, r.ID, id, "again")
	assert.ErrorIs(t, err, superstep.ErrAlreadyResolved)
	_, err = e.ResolveInterrupt(ctx, "run_missing", id, "x")
	assert.ErrorIs(t, err, engine.ErrNotFound)

	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	_, err = e.CancelRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrInactiveRun, "a done run cannot be cancelled")
	_, err = e.RetryPoisonedRun(ctx, r.ID)
	assert.ErrorIs(t, err, engine.ErrInactiveRun)

	_, err = e.StartRun(ctx, engine.GraphRef{GraphID: "g"}, nil)
	assert.ErrorIs(t, err, engine.ErrInvalidOptions)
	_, err = e.StartRun(ctx, engine.GraphRef{GraphID: "g", Hash: "h"}, nil)
	assert.ErrorIs(t, err, engine.ErrNotFound)
	mlRef, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	_, err = e.StartRun(ctx, mlRef, map[string]any{})
	assert.ErrorIs(t, err, superstep.ErrInvalidInput)
	_, err = e.SaveGraph(ctx, build(t, single("unknown", "test.not_registered")))
	assert.ErrorIs(t, err, graph.ErrInvalidGraph)
	_, err = e.FetchEvent(ctx, r.ID, 0)
	assert.ErrorIs(t, err, engine.ErrInvalidOptions)
	var noOption engine.StartOption // e.g. an option chosen conditionally
	_, err = e.StartRun(ctx, ref, nil, noOption)
	assert.ErrorIs(t, err, engine.ErrInvalidOptions, "a nil option is an error, as it is inline, not a panic")
}

func TestGraphVersionsArePublishedOncePerContent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := manual(t, newHarness(true), newKit())
	first, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	again, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	assert.Equal(t, first, again, "saving the same content is idempotent")
	assert.Len(t, first.Hash, 64)

	changed, err := e.SaveGraph(ctx, build(t, minimalLinear().Description("v2")))
	require.NoError(t, err)
	assert.NotEqual(t, first.Hash, changed.Hash)

	latest, err := e.LatestGraphRef(ctx, "minimal-linear")
	require.NoError(t, err)
	assert.Contains(t, []string{first.Hash, changed.Hash}, latest.Ref.Hash)
	page, err := e.ListGraphVersions(ctx, "minimal-linear", ports.ListGraphVersionsParams{})
	require.NoError(t, err)
	assert.Len(t, page.Versions, 2)
	doc, err := e.FetchGraph(ctx, first)
	require.NoError(t, err)
	assert.Equal(t, "minimal-linear", doc.ID)
	_, err = e.LatestGraphRef(ctx, "")
	assert.ErrorIs(t, err, engine.ErrInvalidOptions)
}

// SaveGraphVersion reports when a version was first published, also on a
// re-save, so a caller need not look the version up among the listed ones.
func TestSaveGraphVersionReportsTheFirstPublicationTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	e := manual(t, h, newKit())
	published := h.clock.Now()
	first, err := e.SaveGraphVersion(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	assert.Equal(t, published, first.PublishedAt)
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	assert.Equal(t, ref, first.Ref, "SaveGraph returns the same reference")

	h.clock.Advance(time.Minute)
	_, err = e.SaveGraphVersion(ctx, build(t, minimalLinear().Description("v2")))
	require.NoError(t, err)
	h.clock.Advance(time.Minute)
	again, err := e.SaveGraphVersion(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	assert.Equal(t, *first, *again, "a re-save reports the first publication")

	_, err = e.SaveGraphVersion(ctx, nil)
	assert.ErrorIs(t, err, graph.ErrInvalidGraph)
}

func TestPrunerDeletesOnlyTerminalRunsPastRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	k := newKit()
	e := manual(t, h, k)
	mlRef, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	irRef, err := e.SaveGraph(ctx, build(t, interruptReview()))
	require.NoError(t, err)
	finished, err := e.StartRun(ctx, mlRef, map[string]any{"value": "old"})
	require.NoError(t, err)
	parked, err := e.StartRun(ctx, irRef, nil)
	require.NoError(t, err)
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	h.clock.Advance(2 * time.Hour)

	cfg := h.config(k)
	cfg.Pruner = &prune.Config{Interval: 5 * time.Millisecond, EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: 100}
	startEngine(t, cfg)
	eventually(t, "the finished run to be pruned", func() bool {
		_, err := e.FetchRun(ctx, finished.ID)
		return errors.Is(err, engine.ErrNotFound)
	})
	waiting, err := e.FetchRun(ctx, parked.ID)
	require.NoError(t, err, "a waiting run is never pruned")
	assert.Equal(t, run.StatusWaiting, waiting.Status)
	page, err := e.ListEvents(ctx, parked.ID, ports.ListEventsParams{})
	require.NoError(t, err)
	assert.Empty(t, page.Events, "its old events are past the event retention")
	assert.Equal(t, waiting.EventSeq, page.LatestSeq)
}
