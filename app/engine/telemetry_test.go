package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/docketgo/docket/adapters/memory"
	docketotel "github.com/docketgo/docket/adapters/otel"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/ports"
)

// tokenRecorder is a backend that remembers every claim token it hands
// out, so a test can search the telemetry for them.
type tokenRecorder struct {
	ports.Backend
	mu     sync.Mutex
	tokens []string
}

func (b *tokenRecorder) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	batch, err := b.Backend.ClaimDue(ctx, r)
	if err == nil {
		b.mu.Lock()
		for _, l := range batch.Leases {
			b.tokens = append(b.tokens, l.Token.Reveal())
		}
		b.mu.Unlock()
	}
	return batch, err
}

func (b *tokenRecorder) revealed() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.tokens...)
}

// otelSink is the OpenTelemetry SDK with in-memory exporters.
type otelSink struct {
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	tel    ports.Telemetry
}

func newOtelSink(t *testing.T) *otelSink {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := docketotel.New(docketotel.Config{TracerProvider: tp, MeterProvider: mp})
	require.NoError(t, err)
	return &otelSink{spans: spans, reader: reader, tel: tel}
}

func (s *otelSink) metrics(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, s.reader.Collect(context.Background(), &rm))
	return rm
}

func (s *otelSink) named(name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, sp := range s.spans.GetSpans() {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func attrsOf(kvs []attribute.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

// dataPoints returns every data point's attributes and count (histogram
// count, or 1 for a sum or gauge point) of the metric called name.
func dataPoints(rm metricdata.ResourceMetrics, name string) (attrs []map[string]string, counts []uint64) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch data := m.Data.(type) {
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					attrs, counts = append(attrs, attrsOf(dp.Attributes.ToSlice())), append(counts, dp.Count)
				}
			case metricdata.Sum[float64]:
				for _, dp := range data.DataPoints {
					attrs, counts = append(attrs, attrsOf(dp.Attributes.ToSlice())), append(counts, 1)
				}
			case metricdata.Gauge[float64]:
				for _, dp := range data.DataPoints {
					attrs, counts = append(attrs, attrsOf(dp.Attributes.ToSlice())), append(counts, 1)
				}
			}
		}
	}
	return attrs, counts
}

func TestDurableRuntimeTelemetryReachesOpenTelemetry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sink := newOtelSink(t)
	backend := &tokenRecorder{Backend: memory.New(memory.Options{Policy: claim.WindowedInterleave})}
	const tenant = "tenant-7f3a9c"
	e := startEngine(t, engine.Config{
		Backend:    backend,
		Nodes:      newKit().registry,
		TenantMode: engine.TenantRequired,
		Dispatcher: fastDispatch(),
		Telemetry:  sink.tel,
	})
	client := e.Tenant(tenant)

	// One node that fails its first attempt and succeeds on the retry, so
	// the run has several moments and two attempts of one task.
	g := build(t, graph.New("otel-probe-graph").
		State("out", schema.String()).
		Node("flaky", refFlaky, cfg("failures", 1.0, "field", "out", "value", "done"), graph.Retry(3, 1)).
		Edge("edge_start_flaky", graph.Start, "flaky").
		Edge("edge_flaky_finish", "flaky", graph.Finish))
	ref, err := client.SaveGraph(ctx, g)
	require.NoError(t, err)
	started, err := client.StartRun(ctx, ref, nil, engine.WithRunID("run-otel-probe-1"))
	require.NoError(t, err)
	done := await(t, client, started.ID)
	require.Equal(t, run.StatusDone, done.Status)
	require.NoError(t, e.Stop(ctx))

	taskIDs := map[string]bool{}
	t.Run("spans", func(t *testing.T) {
		polls := sink.named("docket.dispatcher.poll")
		require.NotEmpty(t, polls, "dispatcher polls are spans")
		poll := attrsOf(polls[0].Attributes)
		assert.Equal(t, "tenant_fair", poll["docket.claim_policy"])
		assert.Equal(t, "initial", poll["docket.source"], "the first poll is the initial one")
		assert.Contains(t, poll, "docket.demand", "the poll span ends with its measurements")
		claims := sink.named("docket.dispatcher.claim")
		require.NotEmpty(t, claims)
		assert.Equal(t, polls[0].SpanContext.SpanID(), claims[0].Parent.SpanID(), "the claim call is inside its poll")

		vehicles := sink.named("docket.vehicle")
		require.NotEmpty(t, vehicles)
		vehicleIDs := map[string]bool{}
		for _, v := range vehicles {
			a := attrsOf(v.Attributes)
			assert.Equal(t, started.ID, a["docket.run_id"])
			assert.Equal(t, "otel-probe-graph", a["docket.graph_id"])
			vehicleIDs[v.SpanContext.SpanID().String()] = true
		}

		moments := sink.named("docket.moment")
		require.GreaterOrEqual(t, len(moments), 2, "the failed attempt's moment and the retry's")
		momentIDs := map[string]bool{}
		committedMoments, committedEvents := 0, 0
		for _, m := range moments {
			a := attrsOf(m.Attributes)
			assert.Equal(t, started.ID, a["docket.run_id"])
			assert.Contains(t, a, "docket.step")
			assert.Contains(t, a, "docket.checkpoint_seq")
			assert.True(t, vehicleIDs[m.Parent.SpanID().String()], "a moment is inside its vehicle")
			momentIDs[m.SpanContext.SpanID().String()] = true
			if a["docket.result"] == "ok" {
				committedMoments++
			}
			for _, ev := range m.Events {
				if ev.Name == "docket.lifecycle.committed" {
					committedEvents++
				}
			}
		}
		assert.Equal(t, int(done.CheckpointSeq-1), committedEvents, "every checkpoint after the start has its committed fact")
		assert.Equal(t, committedEvents-1, committedMoments, "one moment span per commit: the completion rides with the last step")

		attempts := sink.named("docket.node.attempt")
		require.Len(t, attempts, 2, "the failed attempt and its retry")
		var numbers []string
		for _, a := range attempts {
			attrs := attrsOf(a.Attributes)
			assert.True(t, strings.HasPrefix(attrs["docket.task_id"], started.ID+":"), "task id %q", attrs["docket.task_id"])
			taskIDs[attrs["docket.task_id"]] = true
			assert.Equal(t, "flaky", attrs["docket.node"])
			numbers = append(numbers, attrs["docket.attempt"]+"="+attrs["docket.result"])
			assert.True(t, momentIDs[a.Parent.SpanID().String()], "an attempt is inside its moment")
		}
		assert.ElementsMatch(t, []string{"1=error", "2=ok"}, numbers)

		for _, c := range sink.named("docket.run_store.commit") {
			assert.True(t, momentIDs[c.Parent.SpanID().String()], "a commit is inside its moment")
		}
		assert.NotEmpty(t, sink.named("docket.lifecycle.transition"), "the start is a lifecycle transition")
	})

	rm := sink.metrics(t)
	t.Run("metrics", func(t *testing.T) {
		_, counts := dataPoints(rm, "docket.node.attempt.duration")
		require.NotEmpty(t, counts, "attempt durations are recorded")
		total := uint64(0)
		for _, c := range counts {
			total += c
		}
		assert.EqualValues(t, 2, total)

		for _, name := range []string{
			"docket.run_store.commit.duration", "docket.moment.duration", "docket.vehicle.duration",
			"docket.dispatcher.poll.duration", "docket.dispatcher.claim.duration", "docket.claims",
			"docket.claim.attempts", "docket.commits", "docket.commit.retry_delay", "docket.backlog",
			"docket.dispatcher.in_flight", "docket.vehicle.drain.duration", "docket.lifecycle.transition.duration",
		} {
			attrs, _ := dataPoints(rm, name)
			assert.NotEmpty(t, attrs, "%s has data", name)
		}
		commitResults, _ := dataPoints(rm, "docket.run_store.commit.duration")
		assert.Contains(t, commitResults, map[string]string{"docket.result": "ok"})
		claimAttempts, _ := dataPoints(rm, "docket.claim.attempts")
		assert.Contains(t, claimAttempts, map[string]string{"docket.result": "acquired"})
		claimsByPolicy, _ := dataPoints(rm, "docket.claims")
		for _, a := range claimsByPolicy {
			assert.Equal(t, "tenant_fair", a["docket.claim_policy"])
		}
	})

	t.Run("no identities in metrics, no tokens or tenants anywhere", func(t *testing.T) {
		tokens := backend.revealed()
		require.NotEmpty(t, tokens)
		metricsJSON, err := json.Marshal(rm)
		require.NoError(t, err)
		spansJSON, err := json.Marshal(sink.spans.GetSpans())
		require.NoError(t, err)
		metricsText := fmt.Sprintf("%s\n%+v", metricsJSON, rm)
		everything := metricsText + fmt.Sprintf("\n%s\n%+v", spansJSON, sink.spans.GetSpans())

		require.Contains(t, string(spansJSON), started.ID, "the search is meaningful: spans carry the run id")
		require.NotEmpty(t, taskIDs)
		identities := []string{started.ID, "otel-probe-graph", ref.Hash, tenant}
		for id := range taskIDs {
			identities = append(identities, id)
		}
		for _, identity := range identities {
			assert.NotContains(t, metricsText, identity, "metrics carry no identity")
		}
		assert.NotContains(t, everything, tenant, "no tenant is emitted")
		for _, token := range tokens {
			assert.NotContains(t, everything, token, "no claim token is emitted")
			assert.NotContains(t, everything, strings.ReplaceAll(token, "-", ""), "not even without dashes")
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				attrs, _ := dataPoints(rm, m.Name)
				for _, a := range attrs {
					for key := range a {
						for _, forbidden := range []string{"run_id", "graph_id", "graph_hash", "task_id", "node", "attempt", "step", "tenant", "token", "checkpoint_seq"} {
							assert.NotEqual(t, "docket."+forbidden, key, "%s carries %s", m.Name, key)
						}
					}
				}
			}
		}
	})
}

// An engine started under a span (one around a service's start-up, say)
// keeps its loop's traces apart: each poll and each vehicle begins a
// trace of its own, and capacity changes attach to no span.
func TestPollsAndVehiclesAreTracesOfTheirOwn(t *testing.T) {
	t.Parallel()
	sink := newOtelSink(t)
	e, err := engine.New(engine.Config{Backend: memory.New(memory.Options{}), Nodes: newKit().registry,
		Dispatcher: fastDispatch(), Telemetry: sink.tel})
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(sink.spans))
	startupCtx, startup := tp.Tracer("app").Start(context.Background(), "app.startup")
	require.NoError(t, e.Start(startupCtx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	require.Equal(t, run.StatusDone, await(t, e.Client, r.ID).Status)
	require.NoError(t, e.Stop(context.Background()))
	startup.End()

	for _, name := range []string{"docket.dispatcher.poll", "docket.vehicle"} {
		spans := sink.named(name)
		require.NotEmpty(t, spans, name)
		for _, s := range spans {
			assert.False(t, s.Parent.IsValid(), "%s begins a trace of its own", name)
			require.Len(t, s.Links, 1, "%s links the span it was started under", name)
			assert.Equal(t, startup.SpanContext().TraceID(), s.Links[0].SpanContext.TraceID())
		}
	}
	for _, s := range sink.named("app.startup") {
		for _, ev := range s.Events {
			assert.NotEqual(t, "docket.dispatcher.state", ev.Name, "dispatcher.state attaches to no span")
		}
	}
}

func TestAnIdempotentRepeatIsNoErrorTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sink := newOtelSink(t)
	e, err := engine.New(engine.Config{Backend: memory.New(memory.Options{}), Nodes: newKit().registry, Telemetry: sink.tel})
	require.NoError(t, err)
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	first, err := e.StartRun(ctx, ref, map[string]any{"value": "x"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	again, err := e.StartRun(ctx, ref, map[string]any{"value": "x"}, engine.WithIdempotencyKey("order-1"))
	require.NoError(t, err)
	require.Equal(t, first.ID, again.ID)

	starts := sink.named("docket.lifecycle.transition")
	require.Len(t, starts, 2)
	assert.Equal(t, "ok", attrsOf(starts[0].Attributes)["docket.result"])
	assert.Equal(t, "skipped", attrsOf(starts[1].Attributes)["docket.result"], "a repeat commits nothing and fails nothing")
	assert.NotEqual(t, "Error", starts[1].Status.Code.String())
}

// Every graph cache lookup is counted and timed, the client's as well as
// the vehicles': a StartRun that compiles the graph is the cache's miss,
// and the hit ratio must show it.
func TestGraphCacheLookupsAreCountedAndTimed(t *testing.T) {
	t.Parallel()
	sink := newOtelSink(t)
	e := startEngine(t, engine.Config{Backend: memory.New(memory.Options{}), Nodes: newKit().registry,
		Dispatcher: fastDispatch(), Telemetry: sink.tel})
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	require.Equal(t, run.StatusDone, await(t, e.Client, r.ID).Status)
	require.NoError(t, e.Stop(context.Background()))
	rm := sink.metrics(t)
	lookups, _ := dataPoints(rm, "docket.graph_cache.lookups")
	assert.Contains(t, lookups, map[string]string{"docket.result": "miss"}, "the start compiled the graph")
	durations, _ := dataPoints(rm, "docket.graph_cache.fetch.duration")
	assert.NotEmpty(t, durations)
	assert.Len(t, sink.named("docket.graph.fetch"), 1, "the graph is fetched once, on the miss")
	assert.Len(t, sink.named("docket.graph.compile"), 1)
}

// failingClaims is a backend whose ClaimDue fails, as during a store
// outage.
type failingClaims struct {
	ports.Backend
	calls atomic.Int32
}

func (b *failingClaims) ClaimDue(context.Context, claim.Request) (*ports.ClaimBatch, error) {
	b.calls.Add(1)
	return nil, errors.New("the store is unreachable")
}

// A poll whose claim failed saw no candidates: it must not report an
// empty backlog while runs are due.
func TestAFailedClaimReportsNoBacklog(t *testing.T) {
	t.Parallel()
	sink := newOtelSink(t)
	backend := &failingClaims{Backend: memory.New(memory.Options{})}
	e, err := engine.New(engine.Config{Backend: backend, Nodes: newKit().registry,
		Dispatcher: fastDispatch(), Telemetry: sink.tel})
	require.NoError(t, err)
	for range 3 {
		saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	}
	require.NoError(t, e.Start(context.Background()))
	require.Eventually(t, func() bool { return backend.calls.Load() >= 2 }, awaitLimit, time.Millisecond)
	require.NoError(t, e.Stop(context.Background()))

	rm := sink.metrics(t)
	polls, _ := dataPoints(rm, "docket.dispatcher.poll.duration")
	require.Contains(t, polls, map[string]string{"docket.claim_policy": "legacy", "docket.source": "initial", "docket.result": "error"})
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[float64]); ok && m.Name == "docket.backlog" {
				for _, dp := range g.DataPoints {
					assert.NotEqual(t, 0.0, dp.Value, "three runs are due; a failed claim reported an empty %v backlog",
						dp.Attributes.ToSlice())
				}
			}
		}
	}
}

// A failed observer call shows in its trace: the span is an error and
// carries the failure fact (the commit stands).
func TestAFailedObserverCallIsAnErrorSpanWithItsFailure(t *testing.T) {
	t.Parallel()
	sink := newOtelSink(t)
	failing := observe.Func(func(context.Context, observe.Commit) error { return errors.New("projection down") })
	panicking := observe.Func(func(context.Context, observe.Commit) error { panic("projection bug") })
	e := startEngine(t, engine.Config{Backend: memory.New(memory.Options{}), Nodes: newKit().registry,
		Dispatcher: fastDispatch(), Telemetry: sink.tel, Observers: []observe.Observer{failing, panicking}})
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	require.Equal(t, run.StatusDone, await(t, e.Client, r.ID).Status)
	require.NoError(t, e.Stop(context.Background()))

	calls := sink.named("docket.checkpoint.observer")
	require.Len(t, calls, 2*int(await(t, e.Client, r.ID).CheckpointSeq))
	results := map[string]int{}
	for _, s := range calls {
		result := attrsOf(s.Attributes)["docket.result"]
		results[result]++
		assert.Equal(t, codes.Error, s.Status.Code, "a %s observer call is a failure", result)
		var events []string
		for _, ev := range s.Events {
			events = append(events, ev.Name)
		}
		assert.Equal(t, []string{"docket.checkpoint.observer.failure"}, events, "the %s call's trace says why", result)
	}
	assert.Equal(t, map[string]int{"callback_error": len(calls) / 2, "exception": len(calls) / 2}, results)
}

// A signal that changes nothing (cancelling a cancelled run) commits
// nothing: like an idempotent start, its transition is skipped.
func TestARepeatedSignalIsASkippedTransition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sink := newOtelSink(t)
	e, err := engine.New(engine.Config{Backend: memory.New(memory.Options{}), Nodes: newKit().registry, Telemetry: sink.tel})
	require.NoError(t, err)
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "x"})
	for range 2 {
		cancelled, err := e.CancelRun(ctx, r.ID)
		require.NoError(t, err)
		require.Equal(t, run.StatusCancelled, cancelled.Status)
	}

	var results []string
	for _, s := range sink.named("docket.lifecycle.transition") {
		a := attrsOf(s.Attributes)
		if a["docket.operation"] == "signal" {
			results = append(results, fmt.Sprintf("%s/%d", a["docket.result"], len(s.Events)))
		}
	}
	assert.Equal(t, []string{"ok/1", "skipped/0"}, results, "result/committed facts of each cancel")
}
