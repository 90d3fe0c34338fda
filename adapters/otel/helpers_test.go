package otel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	docketotel "github.com/docketgo/docket/adapters/otel"
)

// harness wires a Telemetry to the SDK's in-memory span exporter and a
// manual metric reader.
type harness struct {
	tel    *docketotel.Telemetry
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func newHarness(t *testing.T) *harness {
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
	return &harness{tel: tel, spans: spans, reader: reader}
}

func (h *harness) collect(t *testing.T) metricdata.ResourceMetrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(context.Background(), &rm))
	return rm
}

// span returns the only exported span named name.
func (h *harness) span(t *testing.T, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range h.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "exactly one span named %s", name)
	return found[0]
}

// point is one exported data point in a comparable form.
type point struct {
	Attrs map[string]string
	Value float64 // sum, gauge value, or histogram sum
	Count uint64  // histogram count (0 otherwise)
}

// metricOf returns the metric named name.
func metricOf(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	t.Helper()
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	require.Failf(t, "metric not exported", "no metric named %s", name)
	return metricdata.Metrics{}
}

// pointsOf returns the data points of metric name (only non-empty ones).
func pointsOf(t *testing.T, rm metricdata.ResourceMetrics, name string) []point {
	t.Helper()
	return pointsOfMetric(t, metricOf(t, rm, name))
}

func pointsOfMetric(t *testing.T, m metricdata.Metrics) []point {
	t.Helper()
	var out []point
	switch data := m.Data.(type) {
	case metricdata.Sum[float64]:
		for _, dp := range data.DataPoints {
			out = append(out, point{Attrs: attrMap(dp.Attributes), Value: dp.Value})
		}
	case metricdata.Gauge[float64]:
		for _, dp := range data.DataPoints {
			out = append(out, point{Attrs: attrMap(dp.Attributes), Value: dp.Value})
		}
	case metricdata.Histogram[float64]:
		for _, dp := range data.DataPoints {
			out = append(out, point{Attrs: attrMap(dp.Attributes), Value: dp.Sum, Count: dp.Count})
		}
	default:
		require.Failf(t, "unexpected aggregation", "%s has %T", m.Name, m.Data)
	}
	return out
}

// pointWith returns the point of metric name whose attributes are attrs.
func pointWith(t *testing.T, rm metricdata.ResourceMetrics, name string, attrs map[string]string) point {
	t.Helper()
	pts := pointsOf(t, rm, name)
	for _, p := range pts {
		if fmt.Sprint(p.Attrs) == fmt.Sprint(attrs) {
			return p
		}
	}
	require.Failf(t, "point not exported", "%s has no point with %v; points: %v", name, attrs, pts)
	return point{}
}

func attrMap(set attribute.Set) map[string]string {
	out := map[string]string{}
	for _, kv := range set.ToSlice() {
		out[string(kv.Key)] = kv.Value.String()
	}
	return out
}

func spanAttrs(s tracetest.SpanStub) map[string]attribute.Value {
	out := map[string]attribute.Value{}
	for _, kv := range s.Attributes {
		out[string(kv.Key)] = kv.Value
	}
	return out
}

// exportedText renders every exported span and metric as text (both JSON
// and Go's %+v), which is what a token search looks through.
func (h *harness) exportedText(t *testing.T) string {
	t.Helper()
	spans := h.spans.GetSpans()
	rm := h.collect(t)
	spansJSON, err := json.Marshal(spans)
	require.NoError(t, err)
	metricsJSON, err := json.Marshal(rm)
	require.NoError(t, err)
	return fmt.Sprintf("%s\n%s\n%+v\n%+v", spansJSON, metricsJSON, spans, rm)
}
