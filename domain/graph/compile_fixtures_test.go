package graph_test

import (
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// fakeImpls is a node registry for tests: it counts ConfigSchema calls per
// ref and panics for the refs listed in panics.
type fakeImpls struct {
	schemas map[string]*schema.Schema // a registered ref may map to nil (any config)
	panics  map[string]bool

	mu    sync.Mutex
	calls map[string]int
}

func newImpls(schemas map[string]*schema.Schema) *fakeImpls {
	return &fakeImpls{schemas: schemas, panics: map[string]bool{}, calls: map[string]int{}}
}

func (f *fakeImpls) ConfigSchema(ref string) (*schema.Schema, bool) {
	f.mu.Lock()
	f.calls[ref]++
	f.mu.Unlock()
	if f.panics[ref] {
		panic("config schema exploded")
	}
	s, ok := f.schemas[ref]
	return s, ok
}

func (f *fakeImpls) callsFor(ref string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[ref]
}

// standardImpls registers the implementations the fixtures use; none has a
// config schema.
func standardImpls() *fakeImpls {
	return newImpls(map[string]*schema.Schema{"app.copy": nil, "app.echo": nil})
}

func str() *schema.Schema { return &schema.Schema{Type: schema.TypeString} }

func module(ref string) graph.Implementation {
	return graph.Implementation{Type: graph.ImplementationModule, Ref: ref}
}

func edge(id, from, to string) *graph.Edge {
	return &graph.Edge{ID: id, From: []string{from}, To: to}
}

func barrier(id, to string, from ...string) *graph.Edge {
	return &graph.Edge{ID: id, From: from, Barrier: true, To: to}
}

func node(id, ref string) *graph.Node {
	return &graph.Node{ID: id, Implementation: module(ref)}
}

// linearGraph is spec graph ML: input value, field result,
// $start -> copy -> $finish, output result. It verifies without
// diagnostics. Each call returns a fresh document.
func linearGraph() *graph.Graph {
	return &graph.Graph{
		SchemaVersion: 1,
		ID:            "linear",
		Name:          "Linear",
		Inputs: map[string]*graph.Field{
			"value": {ID: "value", Kind: graph.KindInput, Schema: str(), Required: true},
		},
		Fields: map[string]*graph.Field{
			"result": {ID: "result", Kind: graph.KindState, Schema: str()},
		},
		Outputs: map[string]*graph.Output{
			"result": {ID: "result", Source: "result"},
		},
		Nodes: map[string]*graph.Node{
			"copy": {ID: "copy", Implementation: module("app.copy"), Config: map[string]any{"from": "value", "to": "result"}},
		},
		Edges: map[string]*graph.Edge{
			"e_start":  edge("e_start", graph.Start, "copy"),
			"e_finish": edge("e_finish", "copy", graph.Finish),
		},
	}
}

// fanOutGraph is spec graph MS: $start -> source -> {left, right},
// [left, right] -> combine -> $finish, with a few fields and an output.
func fanOutGraph() *graph.Graph {
	return &graph.Graph{
		SchemaVersion: 1,
		ID:            "fan-out",
		Inputs: map[string]*graph.Field{
			"topic": {ID: "topic", Kind: graph.KindInput, Schema: str(), Default: "general"},
			"flag":  {ID: "flag", Kind: graph.KindInput, Schema: &schema.Schema{Type: schema.TypeBoolean}, Default: false},
		},
		Fields: map[string]*graph.Field{
			"log": {ID: "log", Kind: graph.KindState,
				Schema:  &schema.Schema{Type: schema.TypeList, Item: str()},
				Reducer: &reducer.Reducer{Type: reducer.Append}},
			"done":  {ID: "done", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeBoolean}, Default: false},
			"count": {ID: "count", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeInteger}},
		},
		Outputs: map[string]*graph.Output{
			"log":   {ID: "log", Source: "log"},
			"topic": {ID: "topic", Source: "topic"},
		},
		Nodes: map[string]*graph.Node{
			"source":  {ID: "source", Implementation: module("app.echo"), Config: map[string]any{"writes": []any{"count", "done"}}},
			"left":    node("left", "app.echo"),
			"right":   node("right", "app.echo"),
			"combine": {ID: "combine", Implementation: module("app.echo"), Branches: map[string][]string{"exit": {"e_done"}}},
		},
		Edges: map[string]*graph.Edge{
			"e_start": edge("e_start", graph.Start, "source"),
			"e_left":  edge("e_left", "source", "left"),
			"e_right": edge("e_right", "source", "right"),
			"e_join":  barrier("e_join", "combine", "right", "left"),
			"e_done": {ID: "e_done", From: []string{"combine"}, To: graph.Finish,
				Guard: &graph.Guard{Op: graph.OpExists, Args: []any{"log"}}},
		},
		Policies: map[string]any{"max_supersteps": int64(10)},
	}
}

// findDiagnostic returns the first diagnostic with code and path.
func findDiagnostic(ds []graph.Diagnostic, code string, path []any) (graph.Diagnostic, bool) {
	for _, d := range ds {
		if d.Code == code && slices.Equal(d.Path, path) {
			return d, true
		}
	}
	return graph.Diagnostic{}, false
}

func codes(ds []graph.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Code
	}
	return out
}

func countCode(ds []graph.Diagnostic, code string) int {
	n := 0
	for _, d := range ds {
		if d.Code == code {
			n++
		}
	}
	return n
}

func mustCompile(t *testing.T, g *graph.Graph, impls graph.Implementations, opts graph.Options) *graph.Compiled {
	t.Helper()
	c, err := graph.Compile(g, impls, opts)
	require.NoError(t, err)
	require.NotNil(t, c)
	return c
}

func path(segments ...string) []any {
	out := make([]any, len(segments))
	for i, s := range segments {
		out[i] = s
	}
	return out
}
