package otel_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	docketotel "github.com/docketgo/docket/adapters/otel"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func label(k, v string) ports.Label { return ports.Label{Key: k, Value: v} }

func TestSpansCarryTheirNameAttributesAndResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		operation string
		labels    []ports.Label
		result    string
		m         ports.Measurements
		wantName  string
		wantAttrs map[string]attribute.Value
		wantError bool
	}{
		{
			name:      "dispatcher poll",
			operation: "dispatcher.poll",
			labels:    []ports.Label{label("claim_policy", "fifo"), label("source", "scheduled")},
			result:    ports.ResultOK,
			m:         ports.Measurements{"demand": 4, "concurrency": 8, "in_flight": 4, "leases": 3, "poisoned": 1},
			wantName:  "docket.dispatcher.poll",
			wantAttrs: map[string]attribute.Value{
				"docket.claim_policy": attribute.StringValue("fifo"),
				"docket.source":       attribute.StringValue("scheduled"),
				"docket.result":       attribute.StringValue("ok"),
				"docket.demand":       attribute.Int64Value(4),
				"docket.concurrency":  attribute.Int64Value(8),
				"docket.in_flight":    attribute.Int64Value(4),
				"docket.leases":       attribute.Int64Value(3),
				"docket.poisoned":     attribute.Int64Value(1),
			},
		},
		{
			name:      "vehicle drain ending in a lost fence",
			operation: "vehicle.drain",
			labels:    []ports.Label{label("run_id", "run-7f3a"), label("graph_id", "orders")},
			result:    "fence_lost",
			m:         ports.Measurements{"committed_moments": 2, "claim_held_ms": 12.5, "claim_attempt": 1},
			wantName:  "docket.vehicle.drain",
			wantAttrs: map[string]attribute.Value{
				"docket.run_id":            attribute.StringValue("run-7f3a"),
				"docket.graph_id":          attribute.StringValue("orders"),
				"docket.result":            attribute.StringValue("fence_lost"),
				"docket.committed_moments": attribute.Int64Value(2),
				"docket.claim_held_ms":     attribute.Float64Value(12.5),
				"docket.claim_attempt":     attribute.Int64Value(1),
			},
		},
		{
			name:      "moment losing its fence is not an error",
			operation: "moment",
			labels:    []ports.Label{label("run_id", "run-1"), label("step", "3"), label("checkpoint_seq", "9")},
			result:    ports.ResultStaleFence,
			wantName:  "docket.moment",
			wantAttrs: map[string]attribute.Value{
				"docket.run_id":         attribute.StringValue("run-1"),
				"docket.step":           attribute.Int64Value(3),
				"docket.checkpoint_seq": attribute.Int64Value(9),
				"docket.result":         attribute.StringValue("stale_fence"),
			},
		},
		{
			name:      "node attempt carries task id and attempt",
			operation: "node.attempt",
			labels: []ports.Label{
				label("run_id", "run-1"), label("task_id", "task-3-charge"), label("node", "charge"),
				label("attempt", "2"), label("step", "3"),
			},
			result:   ports.ResultError,
			wantName: "docket.node.attempt",
			wantAttrs: map[string]attribute.Value{
				"docket.run_id":  attribute.StringValue("run-1"),
				"docket.task_id": attribute.StringValue("task-3-charge"),
				"docket.node":    attribute.StringValue("charge"),
				"docket.attempt": attribute.Int64Value(2),
				"docket.step":    attribute.Int64Value(3),
				"docket.result":  attribute.StringValue("error"),
			},
			wantError: true,
		},
		{
			name:      "spec-prefixed name and an unknown result",
			operation: "docket.postgres.run_store.claim",
			labels:    []ports.Label{label("preference", "ready")},
			result:    "",
			wantName:  "docket.run_store.claim",
			wantAttrs: map[string]attribute.Value{
				"docket.preference": attribute.StringValue("ready"),
				"docket.result":     attribute.StringValue("other"),
			},
		},
		{
			name:      "operation outside the catalog still traces",
			operation: "engine.start_run",
			labels:    []ports.Label{label("run_id", "run-2")},
			result:    ports.ResultOK,
			wantName:  "docket.engine.start_run",
			wantAttrs: map[string]attribute.Value{
				"docket.run_id": attribute.StringValue("run-2"),
				"docket.result": attribute.StringValue("ok"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			_, s := h.tel.StartSpan(context.Background(), tt.operation, tt.labels...)
			s.End(tt.result, tt.m)

			got := h.span(t, tt.wantName)
			assert.Equal(t, tt.wantAttrs, spanAttrs(got))
			if tt.wantError {
				assert.Equal(t, codes.Error, got.Status.Code)
			} else {
				assert.Equal(t, codes.Unset, got.Status.Code)
			}
			assert.Equal(t, "github.com/docketgo/docket/adapters/otel", got.InstrumentationScope.Name)
		})
	}
}

func TestSpansNestThroughTheContext(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, drain := h.tel.StartSpan(context.Background(), "vehicle.drain", label("run_id", "run-1"))
	momentCtx, moment := h.tel.StartSpan(ctx, "moment", label("run_id", "run-1"))
	_, attempt := h.tel.StartSpan(momentCtx, "node.attempt", label("task_id", "t-1"))
	attempt.End(ports.ResultOK, nil)
	moment.End(ports.ResultOK, nil)
	drain.End("parked", nil)

	drainSpan := h.span(t, "docket.vehicle.drain")
	momentSpan := h.span(t, "docket.moment")
	attemptSpan := h.span(t, "docket.node.attempt")
	assert.Equal(t, drainSpan.SpanContext.SpanID(), momentSpan.Parent.SpanID())
	assert.Equal(t, momentSpan.SpanContext.SpanID(), attemptSpan.Parent.SpanID())
	assert.Equal(t, drainSpan.SpanContext.TraceID(), attemptSpan.SpanContext.TraceID())
}

func TestEmitAndCommittedAddEventsToTheCurrentSpan(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx, drain := h.tel.StartSpan(context.Background(), "vehicle.drain", label("run_id", "run-1"))
	h.tel.Emit(ctx, "claim.fence_lost", ports.Measurements{"count": 1},
		label("stage", "commit"), label("result", "stale_fence"), label("claim_token", "secret"))
	h.tel.Committed(ctx, ports.CommittedFact{
		CheckpointType: run.CheckpointStepCommitted, Disposition: run.DispositionContinue,
		CheckpointSeq: 4, Step: 2,
	})
	drain.End("fence_lost", nil)

	events := h.span(t, "docket.vehicle.drain").Events
	require.Len(t, events, 2)
	assert.Equal(t, "docket.claim.fence_lost", events[0].Name)
	assert.ElementsMatch(t, []attribute.KeyValue{
		attribute.String("docket.stage", "commit"),
		attribute.String("docket.result", "stale_fence"),
		attribute.Int64("docket.count", 1),
	}, events[0].Attributes)
	assert.Equal(t, "docket.lifecycle.committed", events[1].Name)
	assert.ElementsMatch(t, []attribute.KeyValue{
		attribute.String("docket.checkpoint_type", "step_committed"),
		attribute.String("docket.disposition", "continue"),
		attribute.Int64("docket.checkpoint_seq", 4),
		attribute.Int64("docket.step", 2),
	}, events[1].Attributes)
}

func TestSpanEndsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, s := h.tel.StartSpan(context.Background(), "node.attempt")
	s.End(ports.ResultOK, nil)
	s.End(ports.ResultError, nil)

	require.Len(t, h.spans.GetSpans(), 1)
	assert.Equal(t, attribute.StringValue("ok"), spanAttrs(h.span(t, "docket.node.attempt"))["docket.result"])
	pts := pointsOf(t, h.collect(t), "docket.node.attempt.duration")
	require.Len(t, pts, 1)
	assert.Equal(t, uint64(1), pts[0].Count)
}

func TestSpanDurationsAreMeasuredNotTakenFromTheCaller(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	before := time.Now()
	_, s := h.tel.StartSpan(context.Background(), "moment")
	time.Sleep(2 * time.Millisecond)
	s.End(ports.ResultOK, ports.Measurements{"duration": float64(time.Hour)})
	wall := time.Since(before).Seconds()

	p := pointWith(t, h.collect(t), "docket.moment.duration", map[string]string{"docket.result": "ok"})
	assert.Equal(t, uint64(1), p.Count)
	assert.GreaterOrEqual(t, p.Value, 0.002, "the sleep is inside the span")
	assert.LessOrEqual(t, p.Value, wall, "seconds, bounded by the wall time around the span")
}

func TestMetricsHaveTheirNamesLabelsAndValues(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	tel := h.tel

	_, poll := tel.StartSpan(ctx, "dispatcher.poll", label("claim_policy", "fifo"), label("source", "notification"))
	poll.End(ports.ResultOK, ports.Measurements{"leases": 3, "poisoned": 1, "ready_candidates": 7, "expired_candidates": 2})
	_, poll = tel.StartSpan(ctx, "dispatcher.poll", label("claim_policy", "fifo"), label("source", "notification"))
	poll.End(ports.ResultOK, ports.Measurements{"leases": 2, "ready_candidates": 5, "expired_candidates": 0})

	tel.Emit(ctx, "dispatcher.state", ports.Measurements{"concurrency": 8, "demand": 3, "in_flight": 5})
	tel.Emit(ctx, "claim.fence_lost", ports.Measurements{"count": 1}, label("stage", "commit"), label("result", "stale_fence"))
	tel.Emit(ctx, "docket.postgres.claim.fence_lost", nil, label("stage", "commit"), label("result", "stale_fence"))
	tel.Emit(ctx, "claim.poisoned", nil, label("reason", "max_claim_attempts"))
	tel.Emit(ctx, "claim.attempt", ports.Measurements{"count": 1, "claim_attempts": 2}, label("result", "reacquired"))
	tel.Emit(ctx, "vehicle.drain",
		ports.Measurements{"committed_moments": 3, "elapsed_ms": 1500, "claim_held_ms": 2000, "claim_attempt": 1},
		label("outcome", "parked"), label("budget", "max_moments"))
	tel.Emit(ctx, "graph.fetch", ports.Measurements{"duration": float64(2 * time.Second)}, label("result", "ok"))
	tel.Emit(ctx, "notification", ports.Measurements{"count": 1}, label("result", "received"))

	for _, r := range []string{ports.ResultOK, ports.ResultOK, ports.ResultError} {
		_, attempt := tel.StartSpan(ctx, "node.attempt", label("task_id", "t-1"), label("attempt", "1"))
		attempt.End(r, nil)
	}
	_, prune := tel.StartSpan(ctx, "pruner.pass")
	prune.End(ports.ResultOK, ports.Measurements{"events_deleted": 10, "runs_deleted": 2})

	tel.Committed(ctx, ports.CommittedFact{CheckpointType: run.CheckpointStepCommitted, Disposition: run.DispositionContinue, CheckpointSeq: 2, Step: 1})
	tel.Committed(ctx, ports.CommittedFact{CheckpointType: run.CheckpointStepCommitted, Disposition: run.DispositionContinue, CheckpointSeq: 3, Step: 2})
	tel.Committed(ctx, ports.CommittedFact{
		CheckpointType: run.CheckpointRetryScheduled, Disposition: run.DispositionAt,
		CheckpointSeq: 4, Step: 2, RetryDelay: 2500 * time.Millisecond,
	})

	rm := h.collect(t)
	none := map[string]string{}
	tests := []struct {
		name      string
		metric    string
		attrs     map[string]string
		wantValue float64
		wantCount uint64 // histograms only
	}{
		{"claims count leases by policy and source", "docket.claims",
			map[string]string{"docket.claim_policy": "fifo", "docket.source": "notification"}, 5, 0},
		{"admission poison by policy", "docket.admission.poisoned",
			map[string]string{"docket.claim_policy": "fifo"}, 1, 0},
		{"ready backlog is the last poll's", "docket.backlog", map[string]string{"docket.class": "ready"}, 5, 0},
		{"expired backlog is the last poll's", "docket.backlog", map[string]string{"docket.class": "expired"}, 0, 0},
		{"poll durations", "docket.dispatcher.poll.duration",
			map[string]string{"docket.claim_policy": "fifo", "docket.source": "notification", "docket.result": "ok"}, -1, 2},
		{"concurrency gauge", "docket.dispatcher.concurrency", none, 8, 0},
		{"demand gauge", "docket.dispatcher.demand", none, 3, 0},
		{"in-flight gauge", "docket.dispatcher.in_flight", none, 5, 0},
		{"fence losses with and without count, any prefix", "docket.fence_losses",
			map[string]string{"docket.stage": "commit", "docket.result": "stale_fence"}, 2, 0},
		{"poison by reason", "docket.poisoned", map[string]string{"docket.reason": "max_claim_attempts"}, 1, 0},
		{"claim attempts by result", "docket.claim.attempts", map[string]string{"docket.result": "reacquired"}, 1, 0},
		{"drain duration from elapsed_ms in seconds", "docket.vehicle.drain.duration",
			map[string]string{"docket.outcome": "parked", "docket.budget": "max_moments"}, 1.5, 1},
		{"moments per drain", "docket.vehicle.drain.moments", map[string]string{"docket.outcome": "parked"}, 3, 1},
		{"claim held in seconds", "docket.vehicle.claim_held", map[string]string{"docket.outcome": "parked"}, 2, 1},
		{"emitted nanosecond duration in seconds", "docket.graph.fetch.duration", map[string]string{"docket.result": "ok"}, 2, 1},
		{"notifications", "docket.notifications", map[string]string{"docket.result": "received"}, 1, 0},
		{"successful attempt durations", "docket.node.attempt.duration", map[string]string{"docket.result": "ok"}, -1, 2},
		{"failed attempt durations", "docket.node.attempt.duration", map[string]string{"docket.result": "error"}, -1, 1},
		{"pruned events", "docket.pruner.deleted", map[string]string{"docket.kind": "events", "docket.result": "ok"}, 10, 0},
		{"pruned runs", "docket.pruner.deleted", map[string]string{"docket.kind": "runs", "docket.result": "ok"}, 2, 0},
		{"step commits", "docket.commits",
			map[string]string{"docket.checkpoint_type": "step_committed", "docket.disposition": "continue"}, 2, 0},
		{"retry commits", "docket.commits",
			map[string]string{"docket.checkpoint_type": "retry_scheduled", "docket.disposition": "at"}, 1, 0},
		{"retry delay in seconds", "docket.commit.retry_delay", none, 2.5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := pointWith(t, rm, tt.metric, tt.attrs)
			if tt.wantValue >= 0 {
				assert.InDelta(t, tt.wantValue, p.Value, 1e-9)
			}
			assert.Equal(t, tt.wantCount, p.Count)
		})
	}

	t.Run("instruments have their kind and unit", func(t *testing.T) {
		t.Parallel()
		kinds := []struct {
			metric string
			unit   string
			check  func(any) bool
		}{
			{"docket.claims", "{claim}", isMonotonicSum},
			{"docket.commits", "{commit}", isMonotonicSum},
			{"docket.fence_losses", "{fence_loss}", isMonotonicSum},
			{"docket.poisoned", "{run}", isMonotonicSum},
			{"docket.backlog", "{run}", isGauge},
			{"docket.dispatcher.in_flight", "{run}", isGauge},
			{"docket.node.attempt.duration", "s", isHistogram},
			{"docket.dispatcher.poll.duration", "s", isHistogram},
			{"docket.vehicle.drain.duration", "s", isHistogram},
			{"docket.vehicle.drain.moments", "{moment}", isHistogram},
		}
		for _, k := range kinds {
			m := metricOf(t, rm, k.metric)
			assert.Equal(t, k.unit, m.Unit, k.metric)
			assert.True(t, k.check(m.Data), "%s has %T", k.metric, m.Data)
			assert.NotEmpty(t, m.Description, k.metric)
		}
	})
}

func isMonotonicSum(d any) bool {
	s, ok := d.(metricdata.Sum[float64])
	return ok && s.IsMonotonic
}

func isGauge(d any) bool {
	_, ok := d.(metricdata.Gauge[float64])
	return ok
}

func isHistogram(d any) bool {
	_, ok := d.(metricdata.Histogram[float64])
	return ok
}

func TestBadValuesNeverReachAnInstrument(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, poll := h.tel.StartSpan(ctx, "dispatcher.poll")
	poll.End(ports.ResultOK, ports.Measurements{"leases": -3, "ready_candidates": nanValue()})
	h.tel.Emit(ctx, "claim.fence_lost", ports.Measurements{"count": nanValue()}, label("stage", "commit"))

	rm := h.collect(t)
	for _, name := range []string{"docket.claims", "docket.backlog", "docket.fence_losses"} {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name == name {
					assert.Empty(t, pointsOfMetric(t, m), "%s recorded a bad value", name)
				}
			}
		}
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

func TestConcurrentUseIsSafe(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	const workers, perWorker = 8, 50
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range perWorker {
				ctx, s := h.tel.StartSpan(context.Background(), "node.attempt", label("task_id", "t"))
				h.tel.Emit(ctx, "claim.attempt", nil, label("result", "acquired"))
				h.tel.Committed(ctx, ports.CommittedFact{CheckpointType: run.CheckpointStepCommitted, Disposition: run.DispositionContinue})
				s.End(ports.ResultOK, nil)
			}
		})
	}
	wg.Wait()

	rm := h.collect(t)
	total := float64(workers * perWorker)
	assert.Equal(t, total, pointWith(t, rm, "docket.claim.attempts", map[string]string{"docket.result": "acquired"}).Value)
	assert.Equal(t, uint64(total), pointWith(t, rm, "docket.node.attempt.duration", map[string]string{"docket.result": "ok"}).Count)
	assert.Len(t, h.spans.GetSpans(), workers*perWorker)
}

// Two engines in one process, each with its own Telemetry on one meter
// provider, keep gauges of their own when each names itself.
func TestConfigAttributesKeepEnginesApart(t *testing.T) {
	t.Parallel()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	engine := func(name string) *docketotel.Telemetry {
		tel, err := docketotel.New(docketotel.Config{MeterProvider: mp, Attributes: []attribute.KeyValue{
			attribute.String("service.component", name),
			attribute.String("docket.result", "the catalog's namespace: ignored"),
			{}, // invalid: ignored
		}})
		require.NoError(t, err)
		return tel
	}
	ctx := context.Background()
	billing, search := engine("billing"), engine("search")
	billing.Emit(ctx, "dispatcher.state", ports.Measurements{"in_flight": 5})
	search.Emit(ctx, "dispatcher.state", ports.Measurements{"in_flight": 2})
	billing.Committed(ctx, ports.CommittedFact{CheckpointType: run.CheckpointRetryScheduled, Disposition: run.DispositionAt, RetryDelay: time.Second})
	_, poll := search.StartSpan(ctx, "dispatcher.poll")
	poll.End(ports.ResultOK, ports.Measurements{"leases": 1})

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(ctx, &rm))
	assert.ElementsMatch(t, []point{
		{Attrs: map[string]string{"service.component": "billing"}, Value: 5},
		{Attrs: map[string]string{"service.component": "search"}, Value: 2},
	}, pointsOf(t, rm, "docket.dispatcher.in_flight"))
	assert.Equal(t, []point{{Attrs: map[string]string{"service.component": "billing"}, Value: 1, Count: 1}},
		pointsOf(t, rm, "docket.commit.retry_delay"))
	commits := pointsOf(t, rm, "docket.commits")
	require.Len(t, commits, 1)
	assert.Equal(t, "billing", commits[0].Attrs["service.component"])
	polls := pointsOf(t, rm, "docket.dispatcher.poll.duration")
	require.Len(t, polls, 1)
	assert.Equal(t, "search", polls[0].Attrs["service.component"])
	assert.Equal(t, "ok", polls[0].Attrs["docket.result"])
}
