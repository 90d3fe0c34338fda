package otel_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// These calls mirror, name for name and nesting for nesting, how the
// durable runtime reports today (app/dispatch, app/vehicle, app/prune,
// app/engine, app/observe and adapters/notify), so a drift between the two
// shows up here. app/engine's own test drives the real runtime into this
// adapter end to end.

func TestDispatcherReportsBecomeClaimAndPollMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	bg := context.Background()
	pctx, poll := h.tel.StartSpan(bg, ports.FactDispatcherPoll,
		label(ports.LabelClaimPolicy, "legacy"), label(ports.LabelSource, "vehicle_exit"))
	_, claimSpan := h.tel.StartSpan(pctx, ports.FactDispatcherClaim)
	claimSpan.End(ports.ResultOK, nil)
	h.tel.Emit(pctx, ports.FactClaimAttempt, ports.Measurements{"count": 1, "claim_attempts": 1}, label(ports.LabelResult, "acquired"))
	h.tel.Emit(pctx, ports.FactClaimAttempt, ports.Measurements{"count": 1, "claim_attempts": 3}, label(ports.LabelResult, "reacquired"))
	h.tel.Emit(pctx, ports.FactClaimPoisoned, ports.Measurements{"count": 1}, label(ports.LabelReason, ports.PoisonReasonMaxClaimAttempts))
	for range 2 {
		_, launch := h.tel.StartSpan(pctx, ports.FactDispatcherLaunch)
		launch.End(ports.ResultOK, nil)
	}
	poll.End(ports.ResultOK, ports.Measurements{
		"demand": 4, "concurrency": 8, "in_flight": 4, "leases": 2, "poisoned": 1,
		"ready_candidates": 5, "expired_candidates": 1,
	})
	h.tel.Emit(bg, ports.FactDispatcherState, ports.Measurements{
		"concurrency": 8, "demand": 2, "in_flight": 6, "finishing": 3, "poll_active": 0, "poll_pending": 1,
	})
	h.tel.Emit(bg, ports.FactDispatcherShutdown,
		ports.Measurements{"duration_ms": 250, "vehicles_remaining": 0}, label(ports.LabelResult, "drained"))

	pollSpan := h.span(t, "docket.dispatcher.poll")
	attrs := spanAttrs(pollSpan)
	assert.Equal(t, attribute.StringValue("legacy"), attrs["docket.claim_policy"])
	assert.Equal(t, attribute.Int64Value(5), attrs["docket.ready_candidates"])
	for _, child := range []string{"docket.dispatcher.claim"} {
		assert.Equal(t, pollSpan.SpanContext.SpanID(), h.span(t, child).Parent.SpanID(), child)
	}
	var events []string
	for _, e := range pollSpan.Events {
		events = append(events, e.Name)
	}
	assert.Equal(t, []string{"docket.claim.attempt", "docket.claim.attempt", "docket.claim.poisoned"}, events,
		"claim facts land on their poll")

	rm := h.collect(t)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.dispatcher.claim.duration", map[string]string{"docket.result": "ok"}).Count)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.dispatcher.poll.duration",
		map[string]string{"docket.claim_policy": "legacy", "docket.result": "ok", "docket.source": "vehicle_exit"}).Count)
	assert.Equal(t, 2.0, pointWith(t, rm, "docket.claims", map[string]string{"docket.claim_policy": "legacy", "docket.source": "vehicle_exit"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.admission.poisoned", map[string]string{"docket.claim_policy": "legacy"}).Value)
	assert.Equal(t, 5.0, pointWith(t, rm, "docket.backlog", map[string]string{"docket.class": "ready"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.backlog", map[string]string{"docket.class": "expired"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.claim.attempts", map[string]string{"docket.result": "acquired"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.claim.attempts", map[string]string{"docket.result": "reacquired"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.poisoned", map[string]string{"docket.reason": "max_claim_attempts"}).Value)
	assert.Equal(t, uint64(2), pointWith(t, rm, "docket.dispatcher.launch.duration", map[string]string{"docket.result": "ok"}).Count)
	assert.Equal(t, 6.0, pointWith(t, rm, "docket.dispatcher.in_flight", map[string]string{}).Value)
	assert.Equal(t, 3.0, pointWith(t, rm, "docket.dispatcher.finishing", map[string]string{}).Value)
	assert.Equal(t, 2.0, pointWith(t, rm, "docket.dispatcher.demand", map[string]string{}).Value)
	assert.Equal(t, 8.0, pointWith(t, rm, "docket.dispatcher.concurrency", map[string]string{}).Value)
	assert.InDelta(t, 0.25, pointWith(t, rm, "docket.dispatcher.shutdown.duration", map[string]string{"docket.result": "drained"}).Value, 1e-12)
}

func TestVehicleReportsBecomeNestedSpansWithEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const runID, taskID = "run_4df2c552697bb10c", "run_4df2c552697bb10c:0:flaky"
	ctx, vehicle := h.tel.StartSpan(context.Background(), ports.FactVehicle,
		label(ports.LabelRunID, runID), label(ports.LabelGraphID, "orders"),
		label(ports.LabelGraphHash, "9ba92feeb27d"), label(ports.LabelClaimAttempt, "1"))
	h.tel.Emit(ctx, ports.FactGraphCacheFetch, ports.Measurements{"count": 1}, label(ports.LabelResult, "miss"))
	_, fetch := h.tel.StartSpan(ctx, ports.FactGraphFetch, label(ports.LabelGraphID, "orders"))
	fetch.End(ports.ResultOK, nil)
	_, compile := h.tel.StartSpan(ctx, ports.FactGraphCompile, label(ports.LabelGraphID, "orders"))
	compile.End(ports.ResultOK, nil)

	// A moment whose attempt fails and whose retry is committed.
	mctx, moment := h.tel.StartSpan(ctx, ports.FactMoment,
		label(ports.LabelRunID, runID), label(ports.LabelStep, "0"), label(ports.LabelCheckpointSeq, "2"))
	_, attempt := h.tel.StartSpan(mctx, ports.FactNodeAttempt,
		label(ports.LabelRunID, runID), label(ports.LabelTaskID, taskID), label(ports.LabelNode, "flaky"),
		label(ports.LabelAttempt, "1"), label(ports.LabelStep, "0"))
	attempt.End(ports.ResultError, nil)
	_, commit := h.tel.StartSpan(mctx, ports.FactRunStoreCommit)
	commit.End(ports.ResultOK, nil)
	h.tel.Committed(mctx, ports.CommittedFact{CheckpointType: run.CheckpointRetryScheduled, Disposition: run.DispositionAt,
		CheckpointSeq: 2, Step: 0, RetryDelay: 50 * time.Millisecond})
	moment.End(ports.ResultOK, nil)

	// A moment that loses its fence at commit.
	mctx, moment = h.tel.StartSpan(ctx, ports.FactMoment,
		label(ports.LabelRunID, runID), label(ports.LabelStep, "0"), label(ports.LabelCheckpointSeq, "3"))
	_, attempt = h.tel.StartSpan(mctx, ports.FactNodeAttempt,
		label(ports.LabelRunID, runID), label(ports.LabelTaskID, taskID), label(ports.LabelNode, "flaky"),
		label(ports.LabelAttempt, "2"), label(ports.LabelStep, "0"))
	attempt.End(ports.ResultOK, nil)
	_, commit = h.tel.StartSpan(mctx, ports.FactRunStoreCommit)
	commit.End(ports.ResultStaleFence, nil)
	moment.End(ports.ResultStaleFence, nil)
	h.tel.Emit(ctx, ports.FactFenceLost, ports.Measurements{"count": 1},
		label(ports.LabelStage, "commit"), label(ports.LabelResult, ports.ResultStaleFence))
	h.tel.Emit(ctx, ports.FactVehicleDrain, ports.Measurements{
		"committed_moments": 1, "elapsed_ms": 40, "claim_held_ms": 45, "claim_attempt": 1,
	}, label(ports.LabelOutcome, "fence_lost"))
	vehicle.End(ports.ResultStaleFence, nil)

	vehicleSpan := h.span(t, "docket.vehicle")
	va := spanAttrs(vehicleSpan)
	assert.Equal(t, attribute.StringValue(runID), va["docket.run_id"])
	assert.Equal(t, attribute.StringValue("orders"), va["docket.graph_id"])
	assert.Equal(t, attribute.Int64Value(1), va["docket.claim_attempt"])
	var events []string
	for _, e := range vehicleSpan.Events {
		events = append(events, e.Name)
	}
	assert.Equal(t, []string{"docket.graph_cache.fetch", "docket.claim.fence_lost", "docket.vehicle.drain"}, events)
	drain := vehicleSpan.Events[2]
	assert.Contains(t, drain.Attributes, attribute.String("docket.outcome", "fence_lost"))
	assert.Contains(t, drain.Attributes, attribute.Int64("docket.committed_moments", 1))
	for _, child := range []string{"docket.graph.fetch", "docket.graph.compile"} {
		assert.Equal(t, vehicleSpan.SpanContext.SpanID(), h.span(t, child).Parent.SpanID(), child)
	}
	moments := map[string]bool{}
	for _, s := range h.spans.GetSpans() {
		if s.Name == "docket.moment" {
			moments[s.SpanContext.SpanID().String()] = true
			assert.Equal(t, vehicleSpan.SpanContext.SpanID(), s.Parent.SpanID())
		}
	}
	require.Len(t, moments, 2)
	var attempts []string
	for _, s := range h.spans.GetSpans() {
		switch s.Name {
		case "docket.node.attempt":
			a := spanAttrs(s)
			assert.Equal(t, attribute.StringValue(taskID), a["docket.task_id"])
			attempts = append(attempts, a["docket.attempt"].String())
			assert.True(t, moments[s.Parent.SpanID().String()], "an attempt nests in its moment")
		case "docket.run_store.commit":
			assert.True(t, moments[s.Parent.SpanID().String()], "a commit nests in its moment")
		case "docket.moment":
			for _, e := range s.Events {
				assert.Equal(t, "docket.lifecycle.committed", e.Name)
			}
		}
	}
	assert.Equal(t, []string{"1", "2"}, attempts)

	rm := h.collect(t)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.graph_cache.lookups", map[string]string{"docket.result": "miss"}).Value)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.node.attempt.duration", map[string]string{"docket.result": "error"}).Count)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.node.attempt.duration", map[string]string{"docket.result": "ok"}).Count)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.moment.duration", map[string]string{"docket.result": "ok"}).Count)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.moment.duration", map[string]string{"docket.result": "stale_fence"}).Count)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.run_store.commit.duration", map[string]string{"docket.result": "stale_fence"}).Count)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.run_store.commit.duration", map[string]string{"docket.result": "ok"}).Count)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.fence_losses", map[string]string{"docket.stage": "commit", "docket.result": "stale_fence"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.commits", map[string]string{"docket.checkpoint_type": "retry_scheduled", "docket.disposition": "at"}).Value)
	assert.InDelta(t, 0.05, pointWith(t, rm, "docket.commit.retry_delay", map[string]string{}).Value, 1e-12)
	drainDuration := pointWith(t, rm, "docket.vehicle.drain.duration", map[string]string{"docket.outcome": "fence_lost"})
	assert.InDelta(t, 0.040, drainDuration.Value, 1e-12)
	assert.InDelta(t, 0.045, pointWith(t, rm, "docket.vehicle.claim_held", map[string]string{"docket.outcome": "fence_lost"}).Value, 1e-12)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.vehicle.duration", map[string]string{"docket.result": "stale_fence"}).Count)

	metricsText := fmt.Sprintf("%+v", rm)
	for _, identity := range []string{runID, taskID, "orders", "9ba92feeb27d"} {
		assert.NotContains(t, metricsText, identity, "no identity becomes a metric attribute")
	}
}

func TestPrunerEngineObserverAndListenerReports(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.tel.Emit(ctx, ports.FactPrunerPass, ports.Measurements{
		"events_deleted": 5, "runs_deleted": 1, "cascade_events_deleted": 3, "graphs_deleted": 0, "duration_ms": 7,
	}, label("result", ports.ResultOK))
	sctx, start := h.tel.StartSpan(ctx, ports.FactLifecycleTransition, label(ports.LabelOperation, "start"))
	h.tel.Committed(sctx, ports.CommittedFact{CheckpointType: run.CheckpointRunInitialized, Disposition: run.DispositionContinue, CheckpointSeq: 1})
	start.End(ports.ResultOK, nil)
	_, signal := h.tel.StartSpan(ctx, ports.FactLifecycleTransition, label(ports.LabelOperation, "signal"))
	signal.End(ports.ResultStaleFence, nil)
	h.tel.Emit(ctx, ports.FactObserverFailure, ports.Measurements{"count": 1},
		label("checkpoint_type", "run_completed"), label("result", "callback_error"))
	h.tel.Emit(ctx, ports.FactNotification, ports.Measurements{"count": 1}, label("result", "ignored"))

	for _, s := range h.spans.GetSpans() {
		if s.Name == "docket.lifecycle.transition" && spanAttrs(s)["docket.operation"].AsString() == "start" {
			require.Len(t, s.Events, 1)
			assert.Equal(t, "docket.lifecycle.committed", s.Events[0].Name, "the committed fact lands on its transition")
		}
	}
	rm := h.collect(t)
	assert.Equal(t, 5.0, pointWith(t, rm, "docket.pruner.deleted", map[string]string{"docket.kind": "events", "docket.result": "ok"}).Value)
	assert.Equal(t, 3.0, pointWith(t, rm, "docket.pruner.deleted", map[string]string{"docket.kind": "cascade_events", "docket.result": "ok"}).Value)
	assert.InDelta(t, 0.007, pointWith(t, rm, "docket.pruner.pass.duration", map[string]string{"docket.result": "ok"}).Value, 1e-12)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.lifecycle.transition.duration",
		map[string]string{"docket.operation": "signal", "docket.result": "stale_fence"}).Count)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.checkpoint.observer.failures",
		map[string]string{"docket.checkpoint_type": "run_completed", "docket.result": "callback_error"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.notifications", map[string]string{"docket.result": "ignored"}).Value)
}
