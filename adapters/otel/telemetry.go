package otel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	otelglobal "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// ScopeName is the instrumentation scope of every tracer and meter this
// adapter creates.
const ScopeName = "github.com/docketgo/docket/adapters/otel"

// Config configures a Telemetry. The zero value uses the global providers.
type Config struct {
	// TracerProvider creates the tracer (nil: otel.GetTracerProvider()).
	TracerProvider trace.TracerProvider
	// MeterProvider creates the meter (nil: otel.GetMeterProvider()).
	MeterProvider metric.MeterProvider
	// Attributes are added to every metric point, so that several engines
	// in one process (each with its own Telemetry) keep series of their
	// own: without them their gauges overwrite each other. Use a few
	// bounded values, such as attribute.String("service.component",
	// "billing-engine"). Keys in the catalog's namespace ("docket.") and
	// invalid attributes (an empty key) are ignored.
	Attributes []attribute.KeyValue
}

// Telemetry implements ports.Telemetry on OpenTelemetry. It is safe for
// concurrent use; every method returns without waiting on an exporter.
type Telemetry struct {
	tracer     trace.Tracer
	constant   []attribute.KeyValue
	facts      map[string]*fact
	commits    metric.Float64Counter
	retryDelay metric.Float64Histogram
}

var _ ports.Telemetry = (*Telemetry)(nil)

// fact is a catalog entry with its instruments.
type fact struct {
	recorders []recorder
	constant  []attribute.KeyValue // Config.Attributes
}

type recorder struct {
	def    *metricDef
	record func(ctx context.Context, v float64, set attribute.Set)
}

// New creates every instrument of the catalog once. It fails only when the
// meter provider refuses an instrument.
func New(cfg Config) (*Telemetry, error) {
	tp := cfg.TracerProvider
	if tp == nil {
		tp = otelglobal.GetTracerProvider()
	}
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otelglobal.GetMeterProvider()
	}
	meter := mp.Meter(ScopeName)
	b := instrumentBuilder{meter: meter, byName: map[string]builtInstrument{}}

	var constant []attribute.KeyValue
	for _, kv := range cfg.Attributes {
		if kv.Valid() && !strings.HasPrefix(string(kv.Key), attributePrefix) {
			constant = append(constant, kv)
		}
	}
	t := &Telemetry{tracer: tp.Tracer(ScopeName), constant: constant, facts: make(map[string]*fact, len(catalog))}
	for i := range catalog {
		entry := &catalog[i]
		f := &fact{constant: constant}
		for j := range entry.Metrics {
			def := &entry.Metrics[j]
			f.recorders = append(f.recorders, recorder{def: def, record: b.build(def)})
		}
		t.facts[entry.Name] = f
	}
	var err error
	t.commits, err = meter.Float64Counter(commitsDef.Name, metric.WithUnit(commitsDef.Unit), metric.WithDescription(commitsDef.Description))
	b.errs = append(b.errs, err)
	t.retryDelay, err = meter.Float64Histogram(retryDelayDef.Name, metric.WithUnit(retryDelayDef.Unit),
		metric.WithDescription(retryDelayDef.Description), metric.WithExplicitBucketBoundaries(retryDelayDef.Buckets...))
	b.errs = append(b.errs, err)
	if err := errors.Join(b.errs...); err != nil {
		return nil, fmt.Errorf("otel telemetry: creating instruments: %w", err)
	}
	return t, nil
}

// instrumentBuilder creates each named instrument once, even when several
// catalog entries feed it (the backlog gauge).
type instrumentBuilder struct {
	meter  metric.Meter
	byName map[string]builtInstrument
	errs   []error
}

type builtInstrument struct {
	kind   instrumentKind
	unit   string
	record func(ctx context.Context, v float64, set attribute.Set)
}

func (b *instrumentBuilder) build(def *metricDef) func(context.Context, float64, attribute.Set) {
	if built, ok := b.byName[def.Name]; ok {
		if built.kind != def.Kind || built.unit != def.Unit {
			b.errs = append(b.errs, fmt.Errorf("instrument %s declared twice with different kind or unit", def.Name))
		}
		return built.record
	}
	opts := []metric.InstrumentOption{metric.WithUnit(def.Unit), metric.WithDescription(def.Description)}
	var record func(context.Context, float64, attribute.Set)
	switch def.Kind {
	case counterKind:
		c, err := b.meter.Float64Counter(def.Name, float64CounterOptions(opts)...)
		b.errs = append(b.errs, err)
		record = func(ctx context.Context, v float64, set attribute.Set) {
			if c != nil && v >= 0 {
				c.Add(ctx, v, metric.WithAttributeSet(set))
			}
		}
	case histogramKind:
		hopts := make([]metric.Float64HistogramOption, 0, len(opts)+1)
		for _, o := range opts {
			hopts = append(hopts, o)
		}
		if len(def.Buckets) > 0 {
			hopts = append(hopts, metric.WithExplicitBucketBoundaries(def.Buckets...))
		}
		h, err := b.meter.Float64Histogram(def.Name, hopts...)
		b.errs = append(b.errs, err)
		record = func(ctx context.Context, v float64, set attribute.Set) {
			if h != nil && v >= 0 {
				h.Record(ctx, v, metric.WithAttributeSet(set))
			}
		}
	case gaugeKind:
		gopts := make([]metric.Float64GaugeOption, 0, len(opts))
		for _, o := range opts {
			gopts = append(gopts, o)
		}
		g, err := b.meter.Float64Gauge(def.Name, gopts...)
		b.errs = append(b.errs, err)
		record = func(ctx context.Context, v float64, set attribute.Set) {
			if g != nil {
				g.Record(ctx, v, metric.WithAttributeSet(set))
			}
		}
	default:
		b.errs = append(b.errs, fmt.Errorf("instrument %s has no kind", def.Name))
		record = func(context.Context, float64, attribute.Set) {}
	}
	b.byName[def.Name] = builtInstrument{kind: def.Kind, unit: def.Unit, record: record}
	return record
}

func float64CounterOptions(opts []metric.InstrumentOption) []metric.Float64CounterOption {
	out := make([]metric.Float64CounterOption, 0, len(opts))
	for _, o := range opts {
		out = append(out, o)
	}
	return out
}

// record feeds one fact to its instruments.
func (f *fact) record(ctx context.Context, m ports.Measurements, labels []ports.Label) {
	for i := range f.recorders {
		r := &f.recorders[i]
		v, ok := valueOf(r.def, m)
		if !ok {
			continue
		}
		r.record(ctx, v, metricAttributes(f.constant, labels, r.def))
	}
}

// valueOf picks the first present, finite source measurement, converted to
// the instrument's unit; a counter of facts defaults to 1.
func valueOf(def *metricDef, m ports.Measurements) (float64, bool) {
	for _, s := range def.From {
		v, ok := m[s.Key]
		if !ok {
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, false
		}
		return v * s.Scale, true
	}
	if def.CountsFact {
		return 1, true
	}
	return 0, false
}

// StartSpan starts the span "docket.<operation>" as a child of any span in
// ctx, except a dispatcher poll and a vehicle, which begin traces of their
// own (linked to a span in ctx, such as the one around an engine's Start).
// Allow-listed labels become span attributes; ending the span records the
// operation's catalog metrics.
func (t *Telemetry) StartSpan(ctx context.Context, operation string, labels ...ports.Label) (context.Context, ports.Span) {
	if ctx == nil {
		ctx = context.Background()
	}
	name := canonicalName(operation)
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(spanAttributes(labels)...)}
	if rootOperations[name] {
		if parent := trace.SpanContextFromContext(ctx); parent.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: parent}))
		}
		opts = append(opts, trace.WithNewRoot())
	}
	ctx, s := t.tracer.Start(ctx, canonicalPrefix+name, opts...)
	return ctx, &span{
		ctx:     ctx,
		span:    s,
		fact:    t.facts[name],
		labels:  append([]ports.Label(nil), labels...),
		started: time.Now(),
	}
}

// span is an open operation span. End is safe to call more than once and
// from any goroutine; only the first call counts.
type span struct {
	ctx     context.Context
	span    trace.Span
	fact    *fact
	labels  []ports.Label
	started time.Time
	ended   atomic.Bool
}

// End closes the span with a bounded result ("" and non-words become
// "other") and records the operation's metrics. The span's own elapsed
// time replaces any "duration" measurement the caller passes.
func (s *span) End(result string, m ports.Measurements) {
	if !s.ended.CompareAndSwap(false, true) {
		return
	}
	elapsed := time.Since(s.started)
	result = boundedValue(result)
	s.span.SetAttributes(attribute.String(attributePrefix+keyResult, result))
	s.span.SetAttributes(measurementAttributes(m)...)
	if errorResult(result) {
		s.span.SetStatus(codes.Error, result)
	}
	if s.fact != nil {
		measured := make(ports.Measurements, len(m)+1)
		for k, v := range m {
			measured[k] = v
		}
		measured["duration"] = float64(elapsed)
		labels := append(slices.Clip(s.labels), ports.Label{Key: keyResult, Value: result})
		s.fact.record(s.ctx, measured, labels)
	}
	s.span.End()
}

// Emit records a fact: its catalog metrics, and an event "docket.<name>"
// on the span in ctx when that span is recording. A "duration" measurement
// is a time.Duration in nanoseconds; names ending in _ms (duration_ms,
// elapsed_ms, claim_held_ms) are milliseconds.
func (t *Telemetry) Emit(ctx context.Context, name string, m ports.Measurements, labels ...ports.Label) {
	if ctx == nil {
		ctx = context.Background()
	}
	name = canonicalName(name)
	if f := t.facts[name]; f != nil {
		f.record(ctx, m, labels)
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() && !spanlessFacts[name] {
		attrs := append(spanAttributes(labels), measurementAttributes(m)...)
		s.AddEvent(canonicalPrefix+name, trace.WithAttributes(attrs...))
	}
}

var (
	// rootOperations begin a trace of their own: they run for the life of
	// an engine's loop, not within the call that started it.
	rootOperations = map[string]bool{ports.FactDispatcherPoll: true, ports.FactVehicle: true}
	// spanlessFacts are recorded as metrics only, never as an event on
	// whatever span the context carries.
	spanlessFacts = map[string]bool{ports.FactDispatcherState: true}
)

// Committed counts a committed transition by checkpoint type and
// disposition, records a retry's delay, and adds a
// "docket.lifecycle.committed" event to the span in ctx.
func (t *Telemetry) Committed(ctx context.Context, f ports.CommittedFact) {
	if ctx == nil {
		ctx = context.Background()
	}
	labels := []ports.Label{
		{Key: keyCheckpointType, Value: string(f.CheckpointType)},
		{Key: keyDisposition, Value: string(f.Disposition)},
	}
	t.commits.Add(ctx, 1, metric.WithAttributeSet(metricAttributes(t.constant, labels, &commitsDef)))
	retry := f.CheckpointType == run.CheckpointRetryScheduled
	if retry && f.RetryDelay >= 0 {
		t.retryDelay.Record(ctx, f.RetryDelay.Seconds(), metric.WithAttributeSet(attribute.NewSet(t.constant...)))
	}
	if s := trace.SpanFromContext(ctx); s.IsRecording() {
		attrs := append(spanAttributes(labels),
			attribute.Int64(attributePrefix+"checkpoint_seq", f.CheckpointSeq),
			attribute.Int64(attributePrefix+"step", int64(f.Step)))
		if retry {
			attrs = append(attrs, attribute.Float64(attributePrefix+"retry_delay_ms", float64(f.RetryDelay)/float64(time.Millisecond)))
		}
		s.AddEvent(canonicalPrefix+ports.FactLifecycleCommitted, trace.WithAttributes(attrs...))
	}
}
