package otel

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"

	"github.com/docketgo/docket/ports"
)

func TestBoundedValueKeepsWordsOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"ok", "ok"},
		{"stale_fence", "stale_fence"},
		{"max_claim_attempts", "max_claim_attempts"},
		{"", "other"},
		{"_leading", "other"},
		{"Upper", "other"},
		{"run-1", "other"},
		{"3f2a9c1e", "other"},
		{"0b1c6a0e-8a41-4bd5-9a52-5d3f0c7e2b11", "other"},
		{"with space", "other"},
		{"dotted.value", "other"},
		{"é", "other"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), "other"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, boundedValue(tt.in), "boundedValue(%q)", tt.in)
	}
}

func TestCanonicalNameAcceptsSpecPrefixesAndRejectsIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"dispatcher.poll", "dispatcher.poll"},
		{"docket.dispatcher.poll", "dispatcher.poll"},
		{"docket.postgres.dispatcher.poll", "dispatcher.poll"},
		{"docket.checkpoint.observer.failure", "checkpoint.observer.failure"},
		{"node.execution", "node.attempt"},
		{"engine.start_run", "engine.start_run"},
		{"", "other"},
		{"dispatcher..poll", "other"},
		{"dispatcher.poll.", "other"},
		{"run-42.poll", "other"},
		{"0b1c6a0e-8a41-4bd5-9a52-5d3f0c7e2b11", "other"},
		{strings.Repeat("a.", 70) + "a", "other"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, canonicalName(tt.in), "canonicalName(%q)", tt.in)
	}
}

func TestSpanAttributesFollowTheAllowList(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 200) // 400 bytes
	got := spanAttributes([]ports.Label{
		{Key: "result", Value: "ok"},
		{Key: "source", Value: "run-9"},
		{Key: "run_id", Value: "run-9"},
		{Key: "task_id", Value: long},
		{Key: "attempt", Value: "3"},
		{Key: "step", Value: "three"},
		{Key: "tenant", Value: "acme"},
		{Key: "scope_key", Value: "acme"},
		{Key: "claim_token", Value: "secret"},
		{Key: "budget", Value: ""},
		{Key: "result", Value: "stale_fence"},
	})
	want := []attribute.KeyValue{
		attribute.String("docket.result", "stale_fence"),
		attribute.String("docket.source", "other"),
		attribute.String("docket.run_id", "run-9"),
		attribute.String("docket.task_id", strings.Repeat("é", 128)),
		attribute.Int64("docket.attempt", 3),
	}
	assert.Equal(t, want, got)
}

func TestMetricAttributesKeepOnlyDeclaredBoundedKeys(t *testing.T) {
	t.Parallel()
	def := &metricDef{Labels: []string{"stage", "result", "run_id"}, Fixed: &fixedAttribute{Key: "class", Value: "ready"}}
	set := metricAttributes(nil, []ports.Label{
		{Key: "stage", Value: "commit"},
		{Key: "result", Value: "0b1c6a0e-8a41"},
		{Key: "run_id", Value: "run-1"},
		{Key: "reason", Value: "undeclared"},
	}, def)
	assert.Equal(t, []attribute.KeyValue{
		attribute.String("docket.class", "ready"),
		attribute.String("docket.result", "other"),
		attribute.String("docket.stage", "commit"),
	}, set.ToSlice(), "run_id is declared but not on the allow-list; reason is allowed but not declared")
}

func TestMeasurementAttributesAreAllowListedNumbers(t *testing.T) {
	t.Parallel()
	zero := 0.0
	got := measurementAttributes(ports.Measurements{
		"leases":        2,
		"claim_held_ms": 1.5,
		"duration":      1e9,
		"secret":        7,
		"demand":        zero / zero,
	})
	assert.Equal(t, []attribute.KeyValue{
		attribute.Float64("docket.claim_held_ms", 1.5),
		attribute.Int64("docket.leases", 2),
	}, got, "duration is the span's own timing, never an attribute")
}
