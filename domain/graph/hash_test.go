package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// defaultsImpls has one implementation with config defaults (so the
// effective document differs from the authored one) and one without.
func defaultsImpls() *fakeImpls {
	return newImpls(map[string]*schema.Schema{
		"app.echo": nil,
		"app.defaults": {Type: schema.TypeObject, Constraints: map[string]any{"open": true}, Fields: map[string]*schema.Schema{
			"level": {Type: schema.TypeInteger, Default: int64(2), HasDefault: true},
			"note":  {Type: schema.TypeString, Default: nil, HasDefault: true},
		}},
	})
}

func drawText(t *rapid.T, label string) string {
	if rapid.Bool().Draw(t, label+"?") {
		return ""
	}
	return rapid.StringN(1, 8, 32).Draw(t, label)
}

func drawKey(t *rapid.T, label string) string {
	return rapid.StringMatching(`k_[a-z0-9]{0,4}`).Draw(t, label)
}

// drawValue draws a portable value; floats are finite and ints and floats
// are both common, so the int/float distinction is exercised.
func drawValue(t *rapid.T, depth int, label string) any {
	kinds := 7
	if depth >= 2 {
		kinds = 5
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, label+".kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, label+".bool")
	case 2:
		return rapid.Int64().Draw(t, label+".int")
	case 3:
		return rapid.Float64Range(-1e12, 1e12).Draw(t, label+".float")
	case 4:
		return rapid.StringN(0, 6, 24).Draw(t, label+".string")
	case 5:
		n := rapid.IntRange(0, 3).Draw(t, label+".len")
		out := make([]any, n)
		for i := range out {
			out[i] = drawValue(t, depth+1, fmt.Sprintf("%s[%d]", label, i))
		}
		return out
	default:
		return drawMap(t, depth+1, label)
	}
}

func drawMap(t *rapid.T, depth int, label string) map[string]any {
	n := rapid.IntRange(0, 3).Draw(t, label+".size")
	if n == 0 {
		return nil
	}
	out := map[string]any{}
	for i := 0; i < n; i++ {
		out[drawKey(t, fmt.Sprintf("%s.key%d", label, i))] = drawValue(t, depth, fmt.Sprintf("%s.val%d", label, i))
	}
	return out
}

// drawGraph draws a document that compiles: a chain $start -> n0 -> … ->
// $finish, plus extra (possibly cyclic, possibly guarded) edges, barrier
// edges, branches, labels, metadata, configs, policies and defaults.
func drawGraph(t *rapid.T) *graph.Graph {
	n := rapid.IntRange(1, 5).Draw(t, "nodes")
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i)
	}
	g := &graph.Graph{
		SchemaVersion: 1,
		ID:            "g-" + rapid.StringMatching(`[a-z0-9]{1,6}`).Draw(t, "graph id"),
		Name:          drawText(t, "name"),
		Description:   drawText(t, "description"),
		Inputs: map[string]*graph.Field{
			"in": {ID: "in", Kind: graph.KindInput, Schema: str(), Required: rapid.Bool().Draw(t, "required"),
				Label: drawText(t, "input label"), Metadata: drawMap(t, 0, "input metadata")},
		},
		Fields: map[string]*graph.Field{
			"f0": {ID: "f0", Kind: graph.KindState, Schema: str(), Description: drawText(t, "f0 description")},
			"f1": {ID: "f1", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeList, Item: str()},
				Reducer: &reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"max_length": rapid.Int64Range(1, 9).Draw(t, "max_length")}}},
		},
		Outputs: map[string]*graph.Output{
			"out": {ID: "out", Source: "f0", Label: drawText(t, "output label")},
			"f1":  {ID: "f1"},
		},
		Nodes:    map[string]*graph.Node{},
		Edges:    map[string]*graph.Edge{},
		Metadata: drawMap(t, 0, "graph metadata"),
	}
	if rapid.Bool().Draw(t, "has f0 default") {
		g.Fields["f0"].Default = rapid.StringN(0, 4, 16).Draw(t, "f0 default")
	}
	if rapid.Bool().Draw(t, "has limit") {
		g.Policies = map[string]any{"max_supersteps": rapid.Int64Range(1, 100).Draw(t, "limit"), "other": drawValue(t, 1, "policy")}
	}
	guards := []func() *graph.Guard{
		func() *graph.Guard { return &graph.Guard{Op: graph.OpChanged, Args: []any{"f0"}} },
		func() *graph.Guard {
			return &graph.Guard{Op: graph.OpVersionAtLeast, Args: []any{"f1", rapid.Int64Range(0, 5).Draw(t, "version")}}
		},
		func() *graph.Guard {
			return &graph.Guard{Op: graph.OpEquals, Args: []any{
				&graph.Guard{Op: graph.OpPath, Args: []any{"f1", []any{rapid.Int64Range(-2, 2).Draw(t, "index")}}},
				drawValue(t, 1, "equals value")}}
		},
		func() *graph.Guard {
			return &graph.Guard{Op: graph.OpNot, Args: []any{&graph.Guard{Op: graph.OpExists, Args: []any{"in"}}}}
		},
		func() *graph.Guard {
			return &graph.Guard{Op: graph.OpAny, Args: []any{
				&graph.Guard{Op: graph.OpEquals, Args: []any{"f0", &graph.Guard{Op: graph.OpPath, Args: []any{"in", []any{}}}}},
				&graph.Guard{Op: graph.OpAll, Args: []any{}},
			}}
		},
	}
	drawGuard := func(label string) *graph.Guard {
		if rapid.Bool().Draw(t, label+"?") {
			return nil
		}
		return guards[rapid.IntRange(0, len(guards)-1).Draw(t, label)]()
	}
	for i, id := range ids {
		ref := rapid.SampledFrom([]string{"app.echo", "app.defaults"}).Draw(t, id+" ref")
		config := drawMap(t, 0, id+" config")
		if config == nil {
			config = map[string]any{}
		}
		config["k_writes"] = "f0" // keeps f0 referenced
		g.Nodes[id] = &graph.Node{
			ID: id, Implementation: module(ref), Label: drawText(t, id+" label"),
			Config: config, Metadata: drawMap(t, 0, id+" metadata"),
		}
		if rapid.Bool().Draw(t, id+" policies") {
			g.Nodes[id].Policies = map[string]any{
				"timeout_ms": rapid.Int64Range(1, 5000).Draw(t, id+" timeout"),
				"retry":      map[string]any{"max_attempts": rapid.Int64Range(1, 5).Draw(t, id+" attempts")},
			}
		}
		from := graph.Start
		if i > 0 {
			from = ids[i-1]
		}
		eid := "chain" + id
		g.Edges[eid] = &graph.Edge{ID: eid, From: []string{from}, To: id, Guard: drawGuard(eid + " guard"),
			SourceHandle: drawText(t, eid+" handle")}
	}
	g.Edges["finish"] = &graph.Edge{ID: "finish", From: []string{ids[n-1]}, To: graph.Finish}
	for i := range rapid.IntRange(0, 3).Draw(t, "extra edges") {
		eid := fmt.Sprintf("extra%d", i)
		from := rapid.SampledFrom(ids).Draw(t, eid+" from")
		to := rapid.SampledFrom(append(slices.Clone(ids), graph.Finish)).Draw(t, eid+" to")
		e := &graph.Edge{ID: eid, From: []string{from}, To: to, Guard: drawGuard(eid + " guard"), Label: drawText(t, eid+" label")}
		if rapid.Bool().Draw(t, eid+" barrier") {
			sources := rapid.SliceOfNDistinct(rapid.SampledFrom(ids), 1, n, func(s string) string { return s }).Draw(t, eid+" sources")
			e.From, e.Barrier = sources, true
		}
		g.Edges[eid] = e
		if !e.Barrier && e.Guard != nil && rapid.Bool().Draw(t, eid+" branch") {
			g.Nodes[from].Branches = map[string][]string{"decide": {eid}}
		}
	}
	return g
}

// rebuilt deep-copies g, inserting every map's keys in the reverse of
// sorted order, so any dependence on map insertion order would show.
func rebuilt(g *graph.Graph) *graph.Graph {
	c := *g
	c.Inputs = reversedRecords(g.Inputs, func(f *graph.Field) *graph.Field {
		x := *f
		x.Metadata = reversedMap(f.Metadata)
		return &x
	})
	c.Fields = reversedRecords(g.Fields, func(f *graph.Field) *graph.Field {
		x := *f
		x.Metadata = reversedMap(f.Metadata)
		return &x
	})
	c.Outputs = reversedRecords(g.Outputs, func(o *graph.Output) *graph.Output { x := *o; return &x })
	c.Nodes = reversedRecords(g.Nodes, func(n *graph.Node) *graph.Node {
		x := *n
		x.Config, x.Policies, x.Metadata = reversedMap(n.Config), reversedMap(n.Policies), reversedMap(n.Metadata)
		return &x
	})
	c.Edges = reversedRecords(g.Edges, func(e *graph.Edge) *graph.Edge { x := *e; return &x })
	c.Policies, c.Metadata = reversedMap(g.Policies), reversedMap(g.Metadata)
	return &c
}

func reversedRecords[R any](m map[string]*R, copyRecord func(*R) *R) map[string]*R {
	if m == nil {
		return nil
	}
	out := make(map[string]*R, len(m))
	for _, k := range reverseSortedKeys(m) {
		out[k] = copyRecord(m[k])
	}
	return out
}

func reversedMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for _, k := range reverseSortedKeys(m) {
		v := m[k]
		if nested, ok := v.(map[string]any); ok {
			v = reversedMap(nested)
		}
		out[k] = v
	}
	return out
}

func reverseSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Sort(sort.Reverse(sort.StringSlice(keys)))
	return keys
}

func TestHashIsIndependentOfMapInsertionOrder(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		h1, err := graph.Hash(g)
		require.NoError(t, err)
		h2, err := graph.Hash(rebuilt(g))
		require.NoError(t, err)
		assert.Equal(t, h1, h2)

		c1, err := graph.Compile(g, defaultsImpls(), graph.Options{})
		require.NoError(t, err)
		c2, err := graph.Compile(rebuilt(g), defaultsImpls(), graph.Options{})
		require.NoError(t, err)
		assert.Equal(t, c1, c2, "the whole compiled graph is independent of map order")
	})
}

func TestHashSurvivesAJSONRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		want, err := graph.Hash(g)
		require.NoError(t, err)

		data, err := json.Marshal(g)
		require.NoError(t, err)
		// Re-encode the text: whitespace and layout must not matter either.
		var indented bytes.Buffer
		require.NoError(t, json.Indent(&indented, data, "", "  "))

		for _, text := range [][]byte{data, indented.Bytes()} {
			var back graph.Graph
			require.NoError(t, json.Unmarshal(text, &back))
			got, err := graph.Hash(&back)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		}
	})
}

func TestEffectiveDocumentRoundTripsToTheSameHash(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		c, err := graph.Compile(g, defaultsImpls(), graph.Options{})
		require.NoError(t, err)

		data, err := c.Effective.MarshalJSON()
		require.NoError(t, err)
		var stored graph.Graph
		require.NoError(t, stored.UnmarshalJSON(data))

		got, err := graph.Hash(&stored)
		require.NoError(t, err)
		assert.Equal(t, c.Hash, got)

		again, err := graph.Compile(&stored, defaultsImpls(), graph.Options{EffectiveDocument: true})
		require.NoError(t, err)
		assert.Equal(t, c.Hash, again.Hash)
		assert.Equal(t, c.Channels, again.Channels)
		assert.Equal(t, c.Nodes, again.Nodes)
		assert.Equal(t, c.Edges, again.Edges)
		assert.Equal(t, c.Outputs, again.Outputs)

		// Materializing again is idempotent: the defaults are already there.
		authored, err := graph.Compile(&stored, defaultsImpls(), graph.Options{})
		require.NoError(t, err)
		assert.Equal(t, c.Hash, authored.Hash)
	})
}
