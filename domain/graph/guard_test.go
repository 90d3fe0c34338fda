package graph_test

import (
	"errors"
	"testing"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func evalView() graph.View {
	return graph.View{
		Values: map[string]any{
			"draft":   "hello",
			"count":   int64(10),
			"big":     int64(1<<53 + 1),
			"ratio":   1.0,
			"nothing": nil,
			"tags":    []any{"a", "b", "c"},
			"review": map[string]any{
				"status": "approved",
				"scores": []any{int64(1), int64(2), int64(3)},
				"nested": []any{map[string]any{"k": "v"}},
			},
		},
		Versions: map[string]int64{"draft": 2, "review": 1},
		Changed:  map[string]bool{"review": true},
	}
}

func TestGuardEvaluation(t *testing.T) {
	t.Parallel()
	yes, no := graph.Changed("review"), graph.Changed("draft")
	cases := []struct {
		name  string
		guard *graph.Guard
		want  bool
	}{
		{"a nil guard passes", nil, true},

		{"changed holds for a changed field", graph.Changed("review"), true},
		{"changed fails for an unchanged field", graph.Changed("draft"), false},
		{"changed fails for an unknown field", graph.Changed("ghost"), false},

		{"version_at_least holds at the version", graph.VersionAtLeast("draft", 2), true},
		{"version_at_least fails above the version", graph.VersionAtLeast("draft", 3), false},
		{"an unwritten field has version 0", graph.VersionAtLeast("ghost", 0), true},
		{"an unwritten field is below version 1", graph.VersionAtLeast("ghost", 1), false},

		{"exists holds for a written field", graph.Exists("draft"), true},
		{"exists holds for a written null", graph.Exists("nothing"), true},
		{"exists fails for an unwritten field", graph.Exists("ghost"), false},
		{"exists follows a map key", graph.Exists(graph.Path("review", "status")), true},
		{"exists follows keys and indices", graph.Exists(graph.Path("review", "nested", 0, "k")), true},
		{"a missing key is missing", graph.Exists(graph.Path("review", "verdict")), false},
		{"a negative index counts from the end", graph.Exists(graph.Path("tags", -3)), true},
		{"a negative index past the start is missing", graph.Exists(graph.Path("tags", -4)), false},
		{"an index past the end is missing", graph.Exists(graph.Path("tags", 3)), false},
		{"a string segment on a list is missing", graph.Exists(graph.Path("tags", "0")), false},
		{"an integer segment on a map is missing", graph.Exists(graph.Path("review", 0)), false},
		{"a segment into a scalar is missing", graph.Exists(graph.Path("draft", "x")), false},
		{"a segment into null is missing", graph.Exists(graph.Path("nothing", "x")), false},
		{"a float segment is missing", graph.Exists(&graph.Guard{Op: graph.OpPath, Args: []any{"tags", []any{1.0}}}), false},
		{"no segments means the whole value", graph.Exists(graph.Path("draft")), true},
		{"a path into an unwritten field is missing", graph.Exists(graph.Path("ghost")), false},

		{"equals compares a field", graph.Equals("draft", "hello"), true},
		{"equals fails on a different value", graph.Equals("draft", "bye"), false},
		{"equals compares integers with floats", graph.Equals("count", 10.0), true},
		{"equals compares floats with integers", graph.Equals("ratio", 1), true},
		{"equals compares integers beyond float precision exactly", graph.Equals("big", float64(1<<53)), false},
		{"equals compares containers numerically at depth", graph.Equals(graph.Path("review", "scores"), []any{1.0, int64(2), 3.0}), true},
		{"equals compares maps deeply", graph.Equals(graph.Path("review", "nested", -1), map[string]any{"k": "v"}), true},
		{"equals matches a written null", graph.Equals("nothing", nil), true},
		{"an unwritten field equals nothing, not even null", graph.Equals("ghost", nil), false},
		{"equals reads through a path", graph.Equals(graph.Path("tags", -1), "c"), true},
		{"a missing path equals nothing", graph.Equals(graph.Path("review", "verdict"), nil), false},
		{"the compared value may be a path", graph.Equals(graph.Path("review", "scores", 0), graph.Path("review", "scores", -3)), true},
		{"paths that resolve differently are unequal", graph.Equals(graph.Path("tags", 0), graph.Path("tags", 1)), false},
		{"a missing compared path is unequal", graph.Equals("draft", graph.Path("ghost")), false},

		{"all of nothing holds", graph.All(), true},
		{"all holds when every guard holds", graph.All(yes, yes), true},
		{"all fails when one guard fails", graph.All(yes, no), false},
		{"any of nothing fails", graph.Any(), false},
		{"any holds when one guard holds", graph.Any(no, yes), true},
		{"any fails when every guard fails", graph.Any(no, no), false},
		{"not negates", graph.Not(no), true},
		{"guards nest", graph.Not(graph.All(yes, graph.Any(no, graph.Equals(graph.Path("review", "status"), "rejected")))), true},
	}
	view := evalView()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.guard.Eval(view)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestGuardRuntimeErrors(t *testing.T) {
	t.Parallel()
	broken := graph.Exists(42)
	cases := []struct {
		name   string
		guard  *graph.Guard
		reason string
	}{
		{"a top-level path", graph.Path("review", "status"), "reference, not a condition"},
		{"a reference that is a number", graph.Exists(42), "must be a field ID or a path"},
		{"a reference that is a non-path guard", graph.Exists(graph.Changed("draft")), "must be a field ID or a path"},
		{"an equals reference that is a list", graph.Equals([]any{"draft"}, "x"), "must be a field ID or a path"},
		{"an equals value that is a non-path guard", graph.Equals("draft", graph.Changed("draft")), "may be a path"},
		{"an unknown op", &graph.Guard{Op: "xor"}, `unknown guard op "xor"`},
		{"not with two guards", &graph.Guard{Op: graph.OpNot, Args: []any{graph.Changed("a"), graph.Changed("b")}}, "exactly one guard"},
		{"not of a value", &graph.Guard{Op: graph.OpNot, Args: []any{true}}, "must be a guard"},
		{"all of a value", &graph.Guard{Op: graph.OpAll, Args: []any{true}}, "must be a guard"},
		{"a nil nested guard", graph.Any(nil), "must be a guard"},
		{"changed of a number", &graph.Guard{Op: graph.OpChanged, Args: []any{int64(1)}}, "must be a field ID"},
		{"changed without a field", &graph.Guard{Op: graph.OpChanged}, "takes [field]"},
		{"version_at_least with a float", &graph.Guard{Op: graph.OpVersionAtLeast, Args: []any{"draft", 1.0}}, "integer >= 0"},
		{"version_at_least below zero", graph.VersionAtLeast("draft", -1), "integer >= 0"},
		{"version_at_least of a number", &graph.Guard{Op: graph.OpVersionAtLeast, Args: []any{int64(1), int64(1)}}, "must be a field ID"},
		{"exists with two references", &graph.Guard{Op: graph.OpExists, Args: []any{"a", "b"}}, "takes [ref]"},
		{"equals with one argument", &graph.Guard{Op: graph.OpEquals, Args: []any{"draft"}}, "takes [ref, value]"},
		{"a path without segments list", graph.Exists(&graph.Guard{Op: graph.OpPath, Args: []any{"draft", "x"}}), "must be a list"},
		{"a path on a non-string field", graph.Exists(&graph.Guard{Op: graph.OpPath, Args: []any{int64(1), []any{}}}), "must be a field ID"},
		{"a path with one argument", graph.Exists(&graph.Guard{Op: graph.OpPath, Args: []any{"draft"}}), "takes [field, segments]"},
		{"a broken guard after a deciding one in all", graph.All(graph.Changed("draft"), broken), "must be a field ID or a path"},
		{"a broken guard after a deciding one in any", graph.Any(graph.Changed("review"), broken), "must be a field ID or a path"},
		{"a broken guard under not is not negated", graph.Not(broken), "must be a field ID or a path"},
		{"a broken reference even when the value path is missing", graph.Equals(42, graph.Path("ghost")), "must be a field ID or a path"},
	}
	view := evalView()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.guard.Eval(view)
			assert.False(t, got)
			var guardErr *graph.GuardError
			require.True(t, errors.As(err, &guardErr), "want a *graph.GuardError, got %v", err)
			require.NotEmpty(t, guardErr.Reasons)
			assert.Contains(t, guardErr.Reasons[0], tc.reason)
			assert.Contains(t, err.Error(), tc.reason)
		})
	}
}

func TestGuardEvaluationStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	first := graph.Exists(42)
	second := graph.Path("x")
	_, err := graph.All(graph.Changed("review"), first, second).Eval(evalView())
	var guardErr *graph.GuardError
	require.ErrorAs(t, err, &guardErr)
	assert.Len(t, guardErr.Reasons, 1)
	assert.Contains(t, guardErr.Reasons[0], "field ID or a path", "the left-most error is reported")
}

func TestGuardsLoadedFromTheWireEvaluate(t *testing.T) {
	t.Parallel()
	g, err := graph.Parse([]byte(wireExampleJSON))
	require.NoError(t, err)
	view := graph.View{
		Values:   map[string]any{"review": map[string]any{"status": "approved"}, "draft": "d"},
		Versions: map[string]int64{"draft": 1, "review": 1},
		Changed:  map[string]bool{"review": true},
	}
	for edge, want := range map[string]bool{"edge_ok": true, "edge_revise": false, "edge_right": true, "edge_join": true} {
		got, err := g.Edges[edge].Guard.Eval(view)
		require.NoError(t, err, edge)
		assert.Equal(t, want, got, edge)
	}
}

func TestGuardEvaluationDoesNotAllocate(t *testing.T) {
	guard := graph.All(
		graph.Any(graph.Changed("review"), graph.Not(graph.Exists("ghost"))),
		graph.VersionAtLeast("draft", 1),
		graph.Equals(graph.Path("review", "scores", -1), 3.0),
		graph.Equals(graph.Path("tags", 0), graph.Path("tags", -3)),
	)
	view := evalView()
	ok, err := guard.Eval(view)
	require.NoError(t, err)
	require.True(t, ok)
	allocs := testing.AllocsPerRun(200, func() { _, _ = guard.Eval(view) })
	assert.Zero(t, allocs)
}

func FuzzGuardEval(f *testing.F) {
	f.Add([]byte(`{"guard":{"op":"equals","args":[{"$guard":{"op":"path","args":["review",["status"]]}},"approved"]},"values":{"review":{"status":"approved"}}}`))
	f.Add([]byte(`{"guard":{"op":"all","args":[{"op":"changed","args":["a"]},{"op":"version_at_least","args":["a",1]}]},"versions":{"a":1},"changed":["a"]}`))
	f.Add([]byte(`{"guard":{"op":"exists","args":[{"$guard":{"op":"path","args":["l",[-1,0,"k"]]}}]},"values":{"l":[[{"k":null}]]}}`))
	f.Add([]byte(`{"guard":{"op":"path","args":["a",[]]}}`))
	f.Add([]byte(`{"guard":{"op":"equals","args":["n",{"$guard":{"op":"not","args":[]}}]},"values":{"n":1.0}}`))
	f.Add([]byte(`{"guard":{"op":"not","args":[{"op":"equals","args":[1,2]}]}}`))
	f.Add([]byte(`{"guard":{"op":"version_at_least","args":["a",-5]},"versions":{"a":9223372036854775807}}`))
	f.Add([]byte(`{"guard":{"op":"any"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := value.DecodeJSON(data)
		if err != nil {
			return
		}
		doc, ok := raw.(map[string]any)
		if !ok {
			return
		}
		g, err := graph.FromMap(map[string]any{
			"schema_version": int64(1), "id": "g",
			"edges": map[string]any{"e": map[string]any{"guard": doc["guard"]}},
		})
		if err != nil {
			return
		}
		view := graph.View{Versions: map[string]int64{}, Changed: map[string]bool{}}
		view.Values, _ = doc["values"].(map[string]any)
		if versions, ok := doc["versions"].(map[string]any); ok {
			for k, v := range versions {
				if n, ok := v.(int64); ok {
					view.Versions[k] = n
				}
			}
		}
		if changed, ok := doc["changed"].([]any); ok {
			for _, c := range changed {
				if s, ok := c.(string); ok {
					view.Changed[s] = true
				}
			}
		}
		result, err := g.Edges["e"].Guard.Eval(view)
		if err != nil {
			var guardErr *graph.GuardError
			require.ErrorAs(t, err, &guardErr)
			require.NotEmpty(t, guardErr.Reasons)
			require.False(t, result)
		}
	})
}
