package otel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// These calls mirror, name for name, how the durable runtime reports today
// (app/dispatch, app/vehicle, app/prune, app/engine, app/observe and
// adapters/notify), so a drift between the two shows up here.

func TestDispatcherReportsBecomeClaimAndPollMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, claimSpan := h.tel.StartSpan(context.Background(), "dispatcher.claim")
	claimSpan.End(ports.ResultOK, nil)
	h.tel.Emit(context.Background(), "docket.dispatcher.poll", ports.Measurements{
		"duration_ms": 12, "demand": 4, "concurrency": 8, "in_flight": 4, "leases": 3, "poisoned": 1,
	}, label("result", ports.ResultOK), label("source", "vehicle_exit"))
	h.tel.Emit(context.Background(), "docket.dispatcher.shutdown",
		ports.Measurements{"duration_ms": 250, "vehicles_remaining": 0}, label("result", "drained"))

	h.span(t, "docket.dispatcher.claim")
	rm := h.collect(t)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.dispatcher.claim.duration", map[string]string{"docket.result": "ok"}).Count)
	poll := pointWith(t, rm, "docket.dispatcher.poll.duration", map[string]string{"docket.result": "ok", "docket.source": "vehicle_exit"})
	assert.InDelta(t, 0.012, poll.Value, 1e-12)
	assert.Equal(t, 3.0, pointWith(t, rm, "docket.claims", map[string]string{"docket.source": "vehicle_exit"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.admission.poisoned", map[string]string{}).Value)
	assert.InDelta(t, 0.25, pointWith(t, rm, "docket.dispatcher.shutdown.duration", map[string]string{"docket.result": "drained"}).Value, 1e-12)
}

func TestVehicleReportsBecomeADrainSpanWithEvents(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, vehicle := h.tel.StartSpan(context.Background(), "vehicle")
	h.tel.Emit(ctx, "docket.graph_cache.fetch", ports.Measurements{"count": 1}, label("result", "miss"))
	_, fetch := h.tel.StartSpan(ctx, "graph.fetch")
	fetch.End(ports.ResultOK, nil)
	_, compile := h.tel.StartSpan(ctx, "graph.compile")
	compile.End(ports.ResultOK, nil)
	cctx, commit := h.tel.StartSpan(ctx, "run_store.commit")
	commit.End(ports.ResultOK, nil)
	h.tel.Committed(cctx, ports.CommittedFact{CheckpointType: run.CheckpointStepCommitted, Disposition: run.DispositionContinue, CheckpointSeq: 2, Step: 1})
	_, commit = h.tel.StartSpan(ctx, "run_store.commit")
	commit.End(ports.ResultStaleFence, nil)
	h.tel.Emit(ctx, "docket.claim.fence_lost", ports.Measurements{"count": 1},
		label("stage", "commit"), label("result", ports.ResultStaleFence))
	h.tel.Emit(ctx, "docket.vehicle.drain", ports.Measurements{
		"committed_moments": 1, "elapsed_ms": 40, "claim_held_ms": 45, "claim_attempt": 1,
	}, label("outcome", "fence_lost"))
	vehicle.End(ports.ResultStaleFence, nil)

	vehicleSpan := h.span(t, "docket.vehicle")
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
	commits := 0
	for _, s := range h.spans.GetSpans() {
		if s.Name == "docket.run_store.commit" {
			commits++
			assert.Equal(t, vehicleSpan.SpanContext.SpanID(), s.Parent.SpanID())
		}
	}
	require.Equal(t, 2, commits)

	rm := h.collect(t)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.graph_cache.lookups", map[string]string{"docket.result": "miss"}).Value)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.run_store.commit.duration", map[string]string{"docket.result": "stale_fence"}).Count)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.fence_losses", map[string]string{"docket.stage": "commit", "docket.result": "stale_fence"}).Value)
	assert.Equal(t, 1.0, pointWith(t, rm, "docket.commits", map[string]string{"docket.checkpoint_type": "step_committed", "docket.disposition": "continue"}).Value)
	drainDuration := pointWith(t, rm, "docket.vehicle.drain.duration", map[string]string{"docket.outcome": "fence_lost"})
	assert.InDelta(t, 0.040, drainDuration.Value, 1e-12)
	assert.InDelta(t, 0.045, pointWith(t, rm, "docket.vehicle.claim_held", map[string]string{"docket.outcome": "fence_lost"}).Value, 1e-12)
	assert.Equal(t, uint64(1), pointWith(t, rm, "docket.vehicle.duration", map[string]string{"docket.result": "stale_fence"}).Count)
}

func TestPrunerEngineObserverAndListenerReports(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.tel.Emit(ctx, "docket.pruner.pass", ports.Measurements{
		"events_deleted": 5, "runs_deleted": 1, "cascade_events_deleted": 3, "graphs_deleted": 0, "duration_ms": 7,
	}, label("result", ports.ResultOK))
	_, start := h.tel.StartSpan(ctx, "lifecycle.transition", label("operation", "start"))
	start.End(ports.ResultOK, nil)
	_, signal := h.tel.StartSpan(ctx, "lifecycle.transition", label("operation", "signal"))
	signal.End(ports.ResultStaleFence, nil)
	h.tel.Emit(ctx, "docket.checkpoint.observer.failure", ports.Measurements{"count": 1},
		label("checkpoint_type", "run_completed"), label("result", "callback_error"))
	h.tel.Emit(ctx, "notification", ports.Measurements{"count": 1}, label("result", "ignored"))

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
