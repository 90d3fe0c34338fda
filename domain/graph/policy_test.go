package graph_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
)

func TestResolvePolicies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		policies map[string]any
		want     graph.NodePolicy
	}{
		{name: "nothing set gives one attempt and no timeout", policies: nil, want: graph.NodePolicy{MaxAttempts: 1}},
		{name: "an empty retry keeps the defaults", policies: map[string]any{"retry": map[string]any{}}, want: graph.NodePolicy{MaxAttempts: 1}},
		{name: "null values count as absent", policies: map[string]any{"timeout_ms": nil, "retry": map[string]any{"max_attempts": nil}},
			want: graph.NodePolicy{MaxAttempts: 1}},
		{name: "the full surface", policies: map[string]any{
			"timeout_ms": int64(1500), "retry": map[string]any{"max_attempts": int64(3), "backoff_ms": int64(200)}},
			want: graph.NodePolicy{TimeoutMS: 1500, MaxAttempts: 3, BackoffMS: 200}},
		{name: "Go ints from a hand-built runtime graph are accepted", policies: map[string]any{
			"timeout_ms": 10, "retry": map[string]any{"max_attempts": 2}},
			want: graph.NodePolicy{TimeoutMS: 10, MaxAttempts: 2}},
		{name: "unknown keys are open content", policies: map[string]any{"custom": "x"}, want: graph.NodePolicy{MaxAttempts: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := graph.ResolvePolicies(tc.policies)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestResolvePoliciesRejectsBadValues(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		policies map[string]any
		reasons  int
		contains string
	}{
		{name: "zero timeout", policies: map[string]any{"timeout_ms": int64(0)}, reasons: 1, contains: "timeout_ms"},
		{name: "float timeout", policies: map[string]any{"timeout_ms": 100.0}, reasons: 1, contains: "100.0"},
		{name: "string timeout", policies: map[string]any{"timeout_ms": "fast"}, reasons: 1, contains: "fast"},
		{name: "retry not a map", policies: map[string]any{"retry": int64(3)}, reasons: 1, contains: "retry"},
		{name: "zero attempts", policies: map[string]any{"retry": map[string]any{"max_attempts": int64(0)}}, reasons: 1, contains: "max_attempts"},
		{name: "negative backoff", policies: map[string]any{"retry": map[string]any{"backoff_ms": int64(-1)}}, reasons: 1, contains: "backoff_ms"},
		{name: "string attempts", policies: map[string]any{"retry": map[string]any{"max_attempts": "three"}}, reasons: 1, contains: "three"},
		{name: "unknown retry key", policies: map[string]any{"retry": map[string]any{"jitter": true}}, reasons: 1, contains: "jitter"},
		{name: "reserved on_error", policies: map[string]any{"on_error": "route"}, reasons: 1, contains: "on_error"},
		{name: "one reason per bad key", policies: map[string]any{
			"on_error": nil, "timeout_ms": int64(-1), "retry": map[string]any{"max_attempts": int64(0), "extra": 1}},
			reasons: 3, contains: "extra"},
		{name: "non-portable policies", policies: map[string]any{"timeout_ms": struct{}{}}, reasons: 1, contains: "portable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := graph.ResolvePolicies(tc.policies)
			var pe *graph.PolicyError
			require.ErrorAs(t, err, &pe)
			assert.Len(t, pe.Reasons, tc.reasons)
			assert.Contains(t, err.Error(), tc.contains)
		})
	}
}
