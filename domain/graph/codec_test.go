package graph_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// wireExampleJSON is the rich example document of spec §3.
const wireExampleJSON = `{"schema_version": 1, "id": "review-loop", "name": "Review loop",
 "inputs": {"topic": {"kind": "input", "required": true,
            "schema": {"type": "string", "constraints": {"min_length": 1}}}},
 "fields": {
   "draft":  {"kind": "state", "schema": {"type": "string"}},
   "log":    {"kind": "state", "schema": {"type": "list", "item": {"type": "string"}},
              "reducer": {"type": "append", "opts": {"max_length": 50}}},
   "review": {"kind": "state", "schema": {"type": "object", "constraints": {"open": true},
              "fields": {"status": {"type": "enum", "values": ["approved", "rejected"], "required": true}}}}},
 "outputs": {"final_draft": {"source": "draft"}},
 "nodes": {
   "writer":   {"implementation": {"type": "module", "implementation": "app.writer"},
                "config": {"to": "draft", "temperature": 0.5},
                "policies": {"timeout_ms": 1500, "retry": {"max_attempts": 3, "backoff_ms": 200}}},
   "reviewer": {"implementation": {"type": "module", "implementation": "app.reviewer"},
                "branches": {"decision": ["edge_ok", "edge_revise"]}},
   "left":  {"implementation": {"type": "module", "implementation": "app.left"}},
   "right": {"implementation": {"type": "module", "implementation": "app.right"}}},
 "edges": {
   "edge_start":  {"from": "$start", "to": "writer"},
   "edge_review": {"from": "writer", "to": "reviewer"},
   "edge_ok":     {"from": "reviewer", "to": "left", "guard": {"op": "equals",
                   "args": [{"$guard": {"op": "path", "args": ["review", ["status"]]}}, "approved"]}},
   "edge_revise": {"from": "reviewer", "to": "writer", "guard": {"op": "not", "args": [{"op": "equals",
                   "args": [{"$guard": {"op": "path", "args": ["review", ["status"]]}}, "approved"]}]}},
   "edge_right":  {"from": "reviewer", "to": "right", "guard": {"op": "all", "args": [
                   {"op": "changed", "args": ["review"]}, {"op": "version_at_least", "args": ["draft", 1]}]}},
   "edge_join":   {"from": ["left", "right"], "to": "$finish"}},
 "policies": {"max_supersteps": 20}, "metadata": {"owner": "team-a"}}`

func wireDecodeMap(t testing.TB, doc string) map[string]any {
	t.Helper()
	v, err := value.DecodeJSON([]byte(doc))
	require.NoError(t, err)
	m, ok := v.(map[string]any)
	require.True(t, ok, "document is not an object")
	return m
}

func TestRichDocumentRoundTripsThroughTheWireMap(t *testing.T) {
	t.Parallel()
	want := wireDecodeMap(t, wireExampleJSON)

	g, err := graph.FromMap(wireDecodeMap(t, wireExampleJSON))
	require.NoError(t, err)
	got, err := g.ToMap()
	require.NoError(t, err)
	assert.Equal(t, want, got)

	again, err := graph.FromMap(got)
	require.NoError(t, err)
	assert.Equal(t, g, again)
}

func TestRichDocumentRoundTripsThroughJSONBytes(t *testing.T) {
	t.Parallel()
	g, err := graph.Parse([]byte(wireExampleJSON))
	require.NoError(t, err)

	data, err := json.Marshal(g)
	require.NoError(t, err)
	canonical, err := value.Canonical(wireDecodeMap(t, wireExampleJSON))
	require.NoError(t, err)
	assert.Equal(t, string(canonical), string(data), "MarshalJSON writes the canonical form")

	var back graph.Graph
	require.NoError(t, json.Unmarshal(data, &back))
	assert.Equal(t, g, &back)
}

func TestFromMapReadsRecordsAsTyped(t *testing.T) {
	t.Parallel()
	g, err := graph.Parse([]byte(wireExampleJSON))
	require.NoError(t, err)

	assert.Equal(t, 1, g.SchemaVersion)
	assert.Equal(t, "review-loop", g.ID)
	assert.Equal(t, "Review loop", g.Name)

	topic := g.Inputs["topic"]
	require.NotNil(t, topic)
	assert.Equal(t, "topic", topic.ID, "record IDs come from the map keys")
	assert.Equal(t, graph.KindInput, topic.Kind)
	assert.True(t, topic.Required)
	assert.Equal(t, map[string]any{"min_length": int64(1)}, topic.Schema.Constraints)

	log := g.Fields["log"]
	require.NotNil(t, log.Reducer)
	assert.Equal(t, reducer.Append, log.Reducer.Type)
	assert.Equal(t, map[string]any{"max_length": int64(50)}, log.Reducer.Opts)

	writer := g.Nodes["writer"]
	assert.Equal(t, graph.Implementation{Type: graph.ImplementationModule, Ref: "app.writer"}, writer.Implementation)
	assert.Equal(t, 0.5, writer.Config["temperature"], "floats stay floats")
	assert.Equal(t, int64(1500), writer.Policies["timeout_ms"], "integers stay integers")
	assert.Equal(t, map[string][]string{"decision": {"edge_ok", "edge_revise"}}, g.Nodes["reviewer"].Branches)

	assert.Equal(t, &graph.Edge{ID: "edge_start", From: []string{graph.Start}, To: "writer"}, g.Edges["edge_start"])
	join := g.Edges["edge_join"]
	assert.True(t, join.Barrier)
	assert.Equal(t, []string{"left", "right"}, join.From)

	ok := g.Edges["edge_ok"].Guard
	require.NotNil(t, ok)
	assert.Equal(t, &graph.Guard{Op: graph.OpEquals, Args: []any{
		&graph.Guard{Op: graph.OpPath, Args: []any{"review", []any{"status"}}},
		"approved",
	}}, ok, "a $guard wrapper loads as a nested guard")

	assert.Equal(t, "draft", g.Outputs["final_draft"].Source)
	assert.Equal(t, map[string]any{"max_supersteps": int64(20)}, g.Policies)
	assert.Equal(t, map[string]any{"owner": "team-a"}, g.Metadata)
}

func TestToMapWrapsNestedGuardsInPlainArgumentPositions(t *testing.T) {
	t.Parallel()
	g := wireMinimalGraph()
	g.Edges = map[string]*graph.Edge{"e": {
		From: []string{graph.Start}, To: graph.Finish,
		Guard: graph.Any(
			graph.Equals(graph.Path("review", "status"), graph.Path("expected", -1)),
			graph.Exists(graph.Path("review")),
		),
	}}
	m, err := g.ToMap()
	require.NoError(t, err)

	guard := m["edges"].(map[string]any)["e"].(map[string]any)["guard"]
	assert.Equal(t, map[string]any{"op": "any", "args": []any{
		map[string]any{"op": "equals", "args": []any{
			map[string]any{"$guard": map[string]any{"op": "path", "args": []any{"review", []any{"status"}}}},
			map[string]any{"$guard": map[string]any{"op": "path", "args": []any{"expected", []any{int64(-1)}}}},
		}},
		map[string]any{"op": "exists", "args": []any{
			map[string]any{"$guard": map[string]any{"op": "path", "args": []any{"review", []any{}}}},
		}},
	}}, guard, "all/any/not take guards directly; other ops wrap them")

	back, err := graph.FromMap(m)
	require.NoError(t, err)
	again, err := back.ToMap()
	require.NoError(t, err)
	assert.Equal(t, m, again)
}

func TestPlainMapArgumentsStayValues(t *testing.T) {
	t.Parallel()
	doc := `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"equals","args":["review",{"status":"x"}]}}}}`
	g, err := graph.Parse([]byte(doc))
	require.NoError(t, err)
	assert.Equal(t, []any{"review", map[string]any{"status": "x"}}, g.Edges["e"].Guard.Args)
}

// wireDollarKeyDocuments hold a "$" key in open content: FromMap rejects them
// as invalid_document, and so must the published JSON Schema.
var wireDollarKeyDocuments = map[string]struct {
	doc  string
	path string
}{
	"graph metadata":    {`{"schema_version":1,"id":"g","metadata":{"$tag":1}}`, "metadata.$tag"},
	"node config":       {`{"schema_version":1,"id":"g","nodes":{"n":{"config":{"a":[{"$x":1}]}}}}`, "nodes.n.config.a[0].$x"},
	"field default":     {`{"schema_version":1,"id":"g","fields":{"f":{"default":{"$x":1}}}}`, "fields.f.default.$x"},
	"schema field":      {`{"schema_version":1,"id":"g","fields":{"f":{"schema":{"type":"object","fields":{"$x":{"type":"string"}}}}}}`, "fields.f.schema.fields.$x"},
	"guard value":       {`{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"equals","args":["f",{"$x":1}]}}}}`, "edges.e.guard.args[1].$x"},
	"guard in a list":   {`{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"exists","args":[[{"$guard":{"op":"path","args":[]}}]]}}}}`, "edges.e.guard.args[0][0].$guard"},
	"extra wrapper key": {`{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"equals","args":[{"$guard":{"op":"path","args":["f",[]]},"extra":1},"x"]}}}}`, "edges.e.guard.args[0]"},
	"branch group":      {`{"schema_version":1,"id":"g","nodes":{"n":{"branches":{"$g":["e"]}}}}`, "nodes.n.branches.$g"},
	"implementation":    {`{"schema_version":1,"id":"g","nodes":{"n":{"implementation":{"type":"llm","$x":1}}}}`, "nodes.n.implementation.$x"},
}

func TestDollarKeysInOpenContent(t *testing.T) {
	t.Parallel()
	dollar := map[string]any{"$tag": int64(1)}
	nested := map[string]any{"ok": []any{map[string]any{"$deep": true}}}

	dumps := map[string]struct {
		graph *graph.Graph
		path  string
	}{
		"graph metadata": {wireGraphWith(func(g *graph.Graph) { g.Metadata = dollar }), "metadata.$tag"},
		"graph policies": {wireGraphWith(func(g *graph.Graph) { g.Policies = nested }), "policies.ok[0].$deep"},
		"node config": {wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"writer": {Config: dollar}}
		}), "nodes.writer.config.$tag"},
		"field default": {wireGraphWith(func(g *graph.Graph) {
			g.Fields = map[string]*graph.Field{"f": {Kind: graph.KindState, Default: nested}}
		}), "fields.f.default.ok[0].$deep"},
		"reducer options": {wireGraphWith(func(g *graph.Graph) {
			g.Fields = map[string]*graph.Field{"f": {Reducer: &reducer.Reducer{Type: reducer.Merge, Opts: dollar}}}
		}), "fields.f.reducer.opts.$tag"},
		"schema default": {wireGraphWith(func(g *graph.Graph) {
			g.Inputs = map[string]*graph.Field{"i": {Schema: &schema.Schema{Type: schema.TypeMap, HasDefault: true, Default: dollar}}}
		}), "inputs.i.schema.default.$tag"},
		"guard value": {wireGraphWith(func(g *graph.Graph) {
			g.Edges = map[string]*graph.Edge{"e": {Guard: &graph.Guard{Op: graph.OpEquals, Args: []any{"f", dollar}}}}
		}), "edges.e.guard.args[1].$tag"},
		"branch group": {wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"n": {Branches: map[string][]string{"$group": {"e"}}}}
		}), "nodes.n.branches.$group"},
		"passthrough implementation": {wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"n": {Implementation: graph.Implementation{Raw: dollar}}}
		}), "nodes.n.implementation.$tag"},
	}
	for name, tc := range dumps {
		t.Run("dump of "+name+" is non_durable_value", func(t *testing.T) {
			t.Parallel()
			_, err := tc.graph.ToMap()
			docErr := requireWireError(t, err, graph.CodeNonDurableValue)
			assert.Equal(t, tc.path, docErr.Path)
			assert.ErrorIs(t, err, value.ErrNotPortable)
		})
	}

	for name, tc := range wireDollarKeyDocuments {
		t.Run("load of "+name+" is invalid_document", func(t *testing.T) {
			t.Parallel()
			_, err := graph.Parse([]byte(tc.doc))
			docErr := requireWireError(t, err, graph.CodeInvalidDocument)
			assert.Equal(t, tc.path, docErr.Path)
		})
	}
}

func TestSchemaDefaultAbsentAndNullRoundTripDistinctly(t *testing.T) {
	t.Parallel()
	g := wireMinimalGraph()
	g.Fields = map[string]*graph.Field{
		"absent":  {ID: "absent", Kind: graph.KindState, Schema: schema.String()},
		"null":    {ID: "null", Kind: graph.KindState, Schema: schema.String().WithDefault(nil)},
		"present": {ID: "present", Kind: graph.KindState, Schema: schema.String().WithDefault("x")},
	}
	m, err := g.ToMap()
	require.NoError(t, err)
	fields := m["fields"].(map[string]any)
	assert.NotContains(t, fields["absent"].(map[string]any)["schema"], "default")
	nullSchema := fields["null"].(map[string]any)["schema"].(map[string]any)
	assert.Contains(t, nullSchema, "default")
	assert.Nil(t, nullSchema["default"])

	data, err := json.Marshal(g)
	require.NoError(t, err)
	back, err := graph.Parse(data)
	require.NoError(t, err)
	assert.False(t, back.Fields["absent"].Schema.HasDefault)
	assert.True(t, back.Fields["null"].Schema.HasDefault)
	assert.Nil(t, back.Fields["null"].Schema.Default)
	assert.Equal(t, g, back)
}

func TestToMapOmitsEmptyContent(t *testing.T) {
	t.Parallel()
	g := &graph.Graph{
		ID:       "g",
		Inputs:   map[string]*graph.Field{},
		Policies: map[string]any{},
		Fields: map[string]*graph.Field{"f": {
			Kind: graph.KindState, Label: "", Required: false, Metadata: map[string]any{},
		}},
		Nodes: map[string]*graph.Node{"n": {Config: map[string]any{}, Branches: map[string][]string{}}},
		Edges: map[string]*graph.Edge{"e": {}},
	}
	m, err := g.ToMap()
	require.NoError(t, err)
	assert.Equal(t, map[string]any{
		"schema_version": int64(1), // the zero version writes as the current one
		"id":             "g",
		"fields":         map[string]any{"f": map[string]any{"kind": "state"}},
		"nodes":          map[string]any{"n": map[string]any{}},
		"edges":          map[string]any{"e": map[string]any{}},
	}, m)
}

func TestFieldKindIsKeptAsWritten(t *testing.T) {
	t.Parallel()
	// A kind that does not match its section is the compiler's to report.
	g, err := graph.Parse([]byte(`{"schema_version":1,"id":"g","inputs":{"a":{"kind":"state"},"b":{}},"fields":{"c":{}}}`))
	require.NoError(t, err)
	assert.Equal(t, graph.KindState, g.Inputs["a"].Kind)
	assert.Equal(t, graph.KindInput, g.Inputs["b"].Kind, "a missing kind takes the section's")
	assert.Equal(t, graph.KindState, g.Fields["c"].Kind)
}

func TestEdgeSourcesOnTheWire(t *testing.T) {
	t.Parallel()
	g := wireMinimalGraph()
	g.Edges = map[string]*graph.Edge{
		"single":         {From: []string{"a"}, To: "b"},
		"one_source_bar": {From: []string{"a"}, Barrier: true, To: "b"},
		"barrier":        {From: []string{"a", "b"}, Barrier: true, To: "c"},
		"empty_barrier":  {Barrier: true, To: "c"},
		"no_source":      {To: "c"},
	}
	m, err := g.ToMap()
	require.NoError(t, err)
	edges := m["edges"].(map[string]any)
	from := func(id string) any { return edges[id].(map[string]any)["from"] }
	assert.Equal(t, "a", from("single"))
	assert.Equal(t, []any{"a"}, from("one_source_bar"), "a barrier is a list even with one source")
	assert.Equal(t, []any{"a", "b"}, from("barrier"))
	assert.Equal(t, []any{}, from("empty_barrier"), "left for the compiler's empty_edge_sources")
	assert.Nil(t, from("no_source"))

	back, err := graph.FromMap(m)
	require.NoError(t, err)
	for id := range g.Edges {
		g.Edges[id].ID = id
	}
	assert.Equal(t, g, back)
}

func TestImplementationsOnTheWire(t *testing.T) {
	t.Parallel()
	t.Run("module and passthrough implementations round-trip", func(t *testing.T) {
		t.Parallel()
		g := wireMinimalGraph()
		g.Nodes = map[string]*graph.Node{
			"mod":   {ID: "mod", Implementation: graph.Implementation{Type: graph.ImplementationModule, Ref: "app.x"}},
			"llm":   {ID: "llm", Implementation: graph.Implementation{Raw: map[string]any{"type": "llm", "model": "fast", "temperature": 0.5}}},
			"empty": {ID: "empty", Implementation: graph.Implementation{Raw: map[string]any{}}},
			"none":  {ID: "none"},
		}
		m, err := g.ToMap()
		require.NoError(t, err)
		nodes := m["nodes"].(map[string]any)
		assert.Equal(t, map[string]any{"type": "module", "implementation": "app.x"}, nodes["mod"].(map[string]any)["implementation"])
		assert.Equal(t, map[string]any{"type": "llm", "model": "fast", "temperature": 0.5}, nodes["llm"].(map[string]any)["implementation"])
		assert.NotContains(t, nodes["none"], "implementation")
		back, err := graph.FromMap(m)
		require.NoError(t, err)
		assert.Equal(t, g, back)
	})
	t.Run("a passthrough map cannot use the module tag", func(t *testing.T) {
		t.Parallel()
		g := wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"n": {Implementation: graph.Implementation{Raw: map[string]any{"type": "module", "handler": "x"}}}}
		})
		_, err := g.ToMap()
		docErr := requireWireError(t, err, graph.CodeInvalidDocument)
		assert.Equal(t, "nodes.n.implementation", docErr.Path)
	})
	t.Run("a module implementation map takes only type and implementation", func(t *testing.T) {
		t.Parallel()
		_, err := graph.Parse([]byte(`{"schema_version":1,"id":"g","nodes":{"n":{"implementation":{"type":"module","implementation":"x","function":"call"}}}}`))
		docErr := requireWireError(t, err, graph.CodeInvalidDocument)
		assert.Equal(t, "nodes.n.implementation.function", docErr.Path)
	})
}

// wireMalformedDocuments are rejected by FromMap; the published JSON Schema must
// reject them too (except the ones that are not JSON objects).
var wireMalformedDocuments = []struct {
	name string
	doc  string
	code string
	path string
}{
	{"missing schema_version", `{"id":"g"}`, graph.CodeInvalidDocument, "schema_version"},
	{"newer schema_version", `{"schema_version":2,"id":"g"}`, graph.CodeUnsupportedSchemaVersion, "schema_version"},
	{"float schema_version", `{"schema_version":1.0,"id":"g"}`, graph.CodeInvalidDocument, "schema_version"},
	{"zero schema_version", `{"schema_version":0,"id":"g"}`, graph.CodeInvalidDocument, "schema_version"},
	{"missing id", `{"schema_version":1}`, graph.CodeInvalidDocument, "id"},
	{"numeric id", `{"schema_version":1,"id":7}`, graph.CodeInvalidDocument, "id"},
	{"unknown top-level key", `{"schema_version":1,"id":"g","diagnostics":[]}`, graph.CodeInvalidDocument, "diagnostics"},
	{"name not a string", `{"schema_version":1,"id":"g","name":["x"]}`, graph.CodeInvalidDocument, "name"},
	{"nodes not a map", `{"schema_version":1,"id":"g","nodes":[]}`, graph.CodeInvalidDocument, "nodes"},
	{"node not a map", `{"schema_version":1,"id":"g","nodes":{"n":"x"}}`, graph.CodeInvalidDocument, "nodes.n"},
	{"unknown node key", `{"schema_version":1,"id":"g","nodes":{"writer":{"bogus":1}}}`, graph.CodeInvalidDocument, "nodes.writer.bogus"},
	{"node policies not a map", `{"schema_version":1,"id":"g","nodes":{"writer":{"policies":[1]}}}`, graph.CodeInvalidDocument, "nodes.writer.policies"},
	{"branch group not a list", `{"schema_version":1,"id":"g","nodes":{"n":{"branches":{"d":"e"}}}}`, graph.CodeInvalidDocument, "nodes.n.branches.d"},
	{"branch edge not a string", `{"schema_version":1,"id":"g","nodes":{"n":{"branches":{"d":["e",1]}}}}`, graph.CodeInvalidDocument, "nodes.n.branches.d[1]"},
	{"implementation not a map", `{"schema_version":1,"id":"g","nodes":{"n":{"implementation":"app.x"}}}`, graph.CodeInvalidDocument, "nodes.n.implementation"},
	{"module without registry ID", `{"schema_version":1,"id":"g","nodes":{"n":{"implementation":{"type":"module"}}}}`, graph.CodeInvalidDocument, "nodes.n.implementation.implementation"},
	{"unknown field key", `{"schema_version":1,"id":"g","fields":{"f":{"kind":"state","reducers":{}}}}`, graph.CodeInvalidDocument, "fields.f.reducers"},
	{"unknown field kind", `{"schema_version":1,"id":"g","fields":{"f":{"kind":"output"}}}`, graph.CodeInvalidDocument, "fields.f.kind"},
	{"required not a boolean", `{"schema_version":1,"id":"g","inputs":{"i":{"required":"yes"}}}`, graph.CodeInvalidDocument, "inputs.i.required"},
	{"unknown schema key", `{"schema_version":1,"id":"g","inputs":{"i":{"schema":{"type":"string","format":"x"}}}}`, graph.CodeInvalidDocument, "inputs.i.schema"},
	{"unknown schema type", `{"schema_version":1,"id":"g","inputs":{"i":{"schema":{"type":"text"}}}}`, graph.CodeInvalidDocument, "inputs.i.schema"},
	{"bad nested schema", `{"schema_version":1,"id":"g","inputs":{"i":{"schema":{"type":"list","item":{"type":"x"}}}}}`, graph.CodeInvalidDocument, "inputs.i.schema.item"},
	{"reducer not a map", `{"schema_version":1,"id":"g","fields":{"f":{"reducer":"append"}}}`, graph.CodeInvalidDocument, "fields.f.reducer"},
	{"unknown reducer type", `{"schema_version":1,"id":"g","fields":{"f":{"reducer":{"type":"concat"}}}}`, graph.CodeInvalidDocument, "fields.f.reducer.type"},
	{"unknown reducer key", `{"schema_version":1,"id":"g","fields":{"f":{"reducer":{"type":"sum","options":{}}}}}`, graph.CodeInvalidDocument, "fields.f.reducer.options"},
	{"unknown output key", `{"schema_version":1,"id":"g","outputs":{"o":{"from":"x"}}}`, graph.CodeInvalidDocument, "outputs.o.from"},
	{"unknown edge key", `{"schema_version":1,"id":"g","edges":{"e":{"when":{}}}}`, graph.CodeInvalidDocument, "edges.e.when"},
	{"from not a string or list", `{"schema_version":1,"id":"g","edges":{"e":{"from":3}}}`, graph.CodeInvalidDocument, "edges.e.from"},
	{"from list with a number", `{"schema_version":1,"id":"g","edges":{"e":{"from":["a",2]}}}`, graph.CodeInvalidDocument, "edges.e.from[1]"},
	{"to is a list", `{"schema_version":1,"id":"g","edges":{"e":{"to":["a"]}}}`, graph.CodeInvalidDocument, "edges.e.to"},
	{"guard not a map", `{"schema_version":1,"id":"g","edges":{"e":{"guard":"changed"}}}`, graph.CodeInvalidDocument, "edges.e.guard"},
	{"unknown guard key", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"changed","args":["x"],"negate":true}}}}`, graph.CodeInvalidDocument, "edges.e.guard.negate"},
	{"unknown guard op", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"nope","args":[]}}}}`, graph.CodeInvalidDocument, "edges.e.guard.op"},
	{"missing guard op", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"args":[]}}}}`, graph.CodeInvalidDocument, "edges.e.guard.op"},
	{"guard args not a list", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"changed","args":"x"}}}}`, graph.CodeInvalidDocument, "edges.e.guard.args"},
	{"non-guard inside all", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"all","args":["x"]}}}}`, graph.CodeInvalidDocument, "edges.e.guard.args[0]"},
	{"wrapped guard inside not", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"not","args":[{"$guard":{"op":"changed","args":["x"]}}]}}}}`, graph.CodeInvalidDocument, "edges.e.guard.args[0].$guard"},
	{"bad wrapped guard", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"exists","args":[{"$guard":{"op":"path","args":["f",[]],"x":1}}]}}}}`, graph.CodeInvalidDocument, "edges.e.guard.args[0].$guard.x"},
	{"wrapper around a non-guard", `{"schema_version":1,"id":"g","edges":{"e":{"guard":{"op":"exists","args":[{"$guard":"f"}]}}}}`, graph.CodeInvalidDocument, "edges.e.guard.args[0].$guard"},
	{"not json", `{"schema_version":1,`, graph.CodeInvalidDocument, ""},
	{"not an object", `[1]`, graph.CodeInvalidDocument, ""},
}

func TestFromMapRejectsMalformedDocuments(t *testing.T) {
	t.Parallel()
	for _, tc := range wireMalformedDocuments {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, err := graph.Parse([]byte(tc.doc))
			assert.Nil(t, g)
			docErr := requireWireError(t, err, tc.code)
			assert.Equal(t, tc.path, docErr.Path)
			assert.NotEmpty(t, docErr.Message)
		})
	}
}

func TestDocumentErrorSaysCodePathAndReason(t *testing.T) {
	t.Parallel()
	_, err := graph.Parse([]byte(`{"schema_version":1,"id":"g","nodes":{"writer":{"policies":"fast"}}}`))
	require.Error(t, err)
	assert.Equal(t, `invalid_document: nodes.writer.policies: must be a map, got "fast"`, err.Error())
	assert.ErrorIs(t, err, graph.ErrInvalidDocument)
}

// A document with several problems has every one of them named, in
// sorted-key order, each with its code and path.
func TestParseNamesEveryProblemOfADocument(t *testing.T) {
	t.Parallel()
	_, err := graph.Parse([]byte(`{
		"schema_version": 0, "id": 7, "colour": "blue",
		"fields": {"f": {"kind": "output", "reducer": {"type": "max"}}, "g": 3},
		"nodes": {"n": {"label": 1, "implementation": {"type": "module"}, "branches": {"ok": ["e", 2]}}},
		"edges": {"e": {"from": 3, "to": ["x"], "guard": {"op": "nope", "args": "y"}}}
	}`))
	require.Error(t, err)
	var all graph.DocumentErrors
	require.ErrorAs(t, err, &all)
	var paths []string
	for _, de := range all {
		assert.Equal(t, graph.CodeInvalidDocument, de.Code)
		assert.NotEmpty(t, de.Message)
		paths = append(paths, de.Path)
	}
	assert.Equal(t, []string{
		"schema_version", "colour", "id",
		"fields.f.kind", "fields.f.reducer.type", "fields.g",
		"nodes.n.label", "nodes.n.implementation.implementation", "nodes.n.branches.ok[1]",
		"edges.e.from", "edges.e.to", "edges.e.guard.op", "edges.e.guard.args",
	}, paths)
	var first *graph.DocumentError
	require.ErrorAs(t, err, &first)
	assert.Equal(t, "schema_version", first.Path)
	assert.ErrorIs(t, err, graph.ErrInvalidDocument)
	assert.Len(t, strings.Split(err.Error(), "\n"), len(paths), "one line a problem")

	// A newer schema version stops the reading: its other keys may mean
	// what this version cannot know.
	_, err = graph.Parse([]byte(`{"schema_version": 99, "id": 7, "colour": "blue"}`))
	require.ErrorAs(t, err, &first)
	assert.Equal(t, graph.CodeUnsupportedSchemaVersion, first.Code)
	assert.NotErrorAs(t, err, &all)
}

func TestToMapRejectsWhatFromMapCannotRead(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		graph *graph.Graph
		code  string
		path  string
	}{
		"non-portable config": {wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"n": {Config: map[string]any{"at": struct{}{}}}}
		}), graph.CodeNonDurableValue, "nodes.n.config.at"},
		"NaN default": {wireGraphWith(func(g *graph.Graph) {
			g.Fields = map[string]*graph.Field{"f": {Default: math.NaN()}}
		}), graph.CodeNonDurableValue, "fields.f.default"},
		"invalid UTF-8 label": {wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"n": {Label: "\xff"}}
		}), graph.CodeNonDurableValue, "nodes.n.label"},
		"unknown field kind": {wireGraphWith(func(g *graph.Graph) {
			g.Fields = map[string]*graph.Field{"f": {Kind: "output"}}
		}), graph.CodeInvalidDocument, "fields.f.kind"},
		"unknown reducer type": {wireGraphWith(func(g *graph.Graph) {
			g.Fields = map[string]*graph.Field{"f": {Reducer: &reducer.Reducer{Type: "concat"}}}
		}), graph.CodeInvalidDocument, "fields.f.reducer.type"},
		"unknown schema type": {wireGraphWith(func(g *graph.Graph) {
			g.Outputs = map[string]*graph.Output{"o": {Schema: &schema.Schema{Type: "text"}}}
		}), graph.CodeInvalidDocument, "outputs.o.schema"},
		"unknown guard op": {wireGraphWith(func(g *graph.Graph) {
			g.Edges = map[string]*graph.Edge{"e": {Guard: &graph.Guard{Op: "xor"}}}
		}), graph.CodeInvalidDocument, "edges.e.guard.op"},
		"non-guard inside all": {wireGraphWith(func(g *graph.Graph) {
			g.Edges = map[string]*graph.Edge{"e": {Guard: &graph.Guard{Op: graph.OpAll, Args: []any{"x"}}}}
		}), graph.CodeInvalidDocument, "edges.e.guard.args[0]"},
		"nil nested guard": {wireGraphWith(func(g *graph.Graph) {
			g.Edges = map[string]*graph.Edge{"e": {Guard: graph.Not(nil)}}
		}), graph.CodeInvalidDocument, "edges.e.guard.args[0]"},
		"nil record": {wireGraphWith(func(g *graph.Graph) {
			g.Outputs = map[string]*graph.Output{"o": nil}
		}), graph.CodeInvalidDocument, "outputs.o"},
		"newer schema version": {wireGraphWith(func(g *graph.Graph) { g.SchemaVersion = 2 }),
			graph.CodeUnsupportedSchemaVersion, "schema_version"},
		"non-module implementation type": {wireGraphWith(func(g *graph.Graph) {
			g.Nodes = map[string]*graph.Node{"n": {Implementation: graph.Implementation{Type: "script", Ref: "x"}}}
		}), graph.CodeInvalidDocument, "nodes.n.implementation"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := tc.graph.ToMap()
			assert.Nil(t, m)
			docErr := requireWireError(t, err, tc.code)
			assert.Equal(t, tc.path, docErr.Path)
		})
	}
}

func TestToMapSharesNothingWithTheGraph(t *testing.T) {
	t.Parallel()
	g, err := graph.Parse([]byte(wireExampleJSON))
	require.NoError(t, err)
	m, err := g.ToMap()
	require.NoError(t, err)
	m["nodes"].(map[string]any)["writer"].(map[string]any)["config"].(map[string]any)["to"] = "changed"
	m["edges"].(map[string]any)["edge_ok"].(map[string]any)["guard"].(map[string]any)["args"].([]any)[1] = "changed"
	assert.Equal(t, "draft", g.Nodes["writer"].Config["to"])
	assert.Equal(t, "approved", g.Edges["edge_ok"].Guard.Args[1])
}

// ---------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------

func TestRandomDocumentsRoundTrip(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		g := wireGenGraph().Draw(t, "graph")
		m, err := g.ToMap()
		require.NoError(t, err)

		back, err := graph.FromMap(m)
		require.NoError(t, err)
		require.Equal(t, g, back, "FromMap(ToMap(g)) == g")

		again, err := back.ToMap()
		require.NoError(t, err)
		require.Equal(t, m, again, "ToMap(FromMap(m)) == m")

		data, err := value.Canonical(m)
		require.NoError(t, err)
		decoded, err := value.DecodeJSON(data)
		require.NoError(t, err)
		reencoded, err := value.Canonical(decoded)
		require.NoError(t, err)
		require.Equal(t, string(data), string(reencoded), "canonical bytes are stable")

		parsed, err := graph.Parse(data)
		require.NoError(t, err)
		require.Equal(t, g, parsed, "the JSON bytes carry the whole document")
	})
}

func TestWhatToMapWritesFromMapReads(t *testing.T) {
	t.Parallel()
	// Documents with arbitrary (also invalid) kinds, ops and types: ToMap
	// either refuses them or writes something FromMap reads back.
	rapid.Check(t, func(t *rapid.T) {
		g := wireGenGraph().Draw(t, "graph")
		if ids := value.SortedKeys(g.Fields); len(ids) > 0 {
			kind := rapid.SampledFrom([]string{"input", "state", "", "bogus"}).Draw(t, "kind")
			g.Fields[ids[0]].Kind = graph.FieldKind(kind)
		}
		if ids := value.SortedKeys(g.Edges); len(ids) > 0 {
			op := rapid.SampledFrom([]string{graph.OpAll, graph.OpPath, "xor"}).Draw(t, "op")
			g.Edges[ids[0]].Guard = &graph.Guard{Op: op, Args: []any{"x"}}
		}
		g.SchemaVersion = rapid.SampledFrom([]int{-1, 0, 1, 2}).Draw(t, "schema version")
		if ids := value.SortedKeys(g.Nodes); len(ids) > 0 {
			typ := rapid.SampledFrom([]string{"", graph.ImplementationModule, "script"}).Draw(t, "implementation type")
			g.Nodes[ids[0]].Implementation.Type = typ
		}
		m, err := g.ToMap()
		if err != nil {
			require.ErrorIs(t, err, graph.ErrInvalidDocument)
			return
		}
		_, err = graph.FromMap(m)
		require.NoError(t, err)
	})
}

// ---------------------------------------------------------------------------
// Fuzzing
// ---------------------------------------------------------------------------

func FuzzParseGraph(f *testing.F) {
	f.Add([]byte(wireExampleJSON))
	f.Add([]byte(`{"schema_version":1,"id":"g"}`))
	f.Add([]byte(`{"schema_version":2,"id":"g"}`))
	f.Add([]byte(`{"schema_version":1,"id":"g","fields":{"f":{"kind":"state","schema":{"type":"string","default":null}}}}`))
	f.Add([]byte(`{"schema_version":1,"id":"g","edges":{"e":{"from":[],"guard":{"op":"equals","args":[{"$guard":{"op":"path","args":["f",[0,-1,"k"]]}},1.0]}}}}`))
	f.Add([]byte(`{"schema_version":1,"id":"g","nodes":{"n":{"implementation":{"type":"llm","x":[1,2.5,{"y":null}]},"branches":{"b":["e"]}}}}`))
	f.Add([]byte(`{"schema_version":1,"id":"g","metadata":{"$x":1}}`))
	f.Add([]byte(`{"schema_version":1,"id":"g","inputs":{"i":{"kind":"input","required":true,"default":false,"reducer":{"type":"sum","opts":{}}}}}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"schema_version":1,"id":"\u00e9\ud83d\ude00","name":"\u0000"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := graph.Parse(data)
		if err != nil {
			var docErr *graph.DocumentError
			require.ErrorAs(t, err, &docErr)
			require.ErrorIs(t, err, graph.ErrInvalidDocument)
			return
		}
		m, err := g.ToMap()
		require.NoError(t, err, "every parsed document can be written")
		back, err := graph.FromMap(m)
		require.NoError(t, err)
		require.Equal(t, g, back)
		again, err := back.ToMap()
		require.NoError(t, err)
		require.Equal(t, m, again)
	})
}

// ---------------------------------------------------------------------------
// Helpers and generators
// ---------------------------------------------------------------------------

func wireMinimalGraph() *graph.Graph { return &graph.Graph{SchemaVersion: 1, ID: "g"} }

func wireGraphWith(edit func(*graph.Graph)) *graph.Graph {
	g := wireMinimalGraph()
	edit(g)
	return g
}

func requireWireError(t *testing.T, err error, code string) *graph.DocumentError {
	t.Helper()
	require.Error(t, err)
	var docErr *graph.DocumentError
	require.True(t, errors.As(err, &docErr), "want a *graph.DocumentError, got %T: %v", err, err)
	require.Equal(t, code, docErr.Code, "error: %v", err)
	require.ErrorIs(t, err, graph.ErrInvalidDocument)
	return docErr
}

func wireGenID() *rapid.Generator[string] { return rapid.StringMatching(`[a-z][a-z0-9_]{0,6}`) }

func wireGenText() *rapid.Generator[string] {
	return rapid.OneOf(rapid.Just(""), rapid.String(), rapid.SampledFrom([]string{"$start", "$finish", "é", "a.b"}))
}

func wireGenFloat() *rapid.Generator[float64] {
	return rapid.OneOf(rapid.Float64Range(-1e9, 1e9), rapid.SampledFrom([]float64{0, 1, -2, 0.5, 1e21, 1e-7}))
}

func wireGenScalar() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.Int64(), func(i int64) any { return i }),
		rapid.Map(wireGenFloat(), func(f float64) any { return f }),
		rapid.Map(wireGenText(), func(s string) any { return s }),
	)
}

func wireGenValue(depth int) *rapid.Generator[any] {
	if depth <= 0 {
		return wireGenScalar()
	}
	return rapid.OneOf(
		wireGenScalar(),
		rapid.Map(rapid.SliceOfN(wireGenValue(depth-1), 0, 3), func(l []any) any { return append([]any{}, l...) }),
		rapid.Map(rapid.MapOfN(wireGenKey(), wireGenValue(depth-1), 0, 3), func(m map[string]any) any {
			if m == nil {
				m = map[string]any{}
			}
			return m
		}),
	)
}

func wireGenKey() *rapid.Generator[string] {
	return rapid.StringMatching(`[a-z_][a-z0-9_.]{0,5}|`)
}

// wireGenOpen draws an open map in normal form: nil when empty.
func wireGenOpen() *rapid.Generator[map[string]any] {
	return rapid.Custom(func(t *rapid.T) map[string]any {
		m := rapid.MapOfN(wireGenKey(), wireGenValue(2), 0, 3).Draw(t, "open")
		if len(m) == 0 {
			return nil
		}
		return m
	})
}

func wireGenSchema(depth int) *rapid.Generator[*schema.Schema] {
	return rapid.Custom(func(t *rapid.T) *schema.Schema {
		types := []schema.Type{schema.TypeString, schema.TypeFloat, schema.TypeInteger, schema.TypeBoolean,
			schema.TypeMap, schema.TypeList, schema.TypeObject, schema.TypeEnum}
		s := &schema.Schema{Type: rapid.SampledFrom(types).Draw(t, "type")}
		if depth > 0 && s.Type == schema.TypeObject {
			names := rapid.SliceOfNDistinct(wireGenID(), 0, 2, rapid.ID[string]).Draw(t, "fields")
			for _, name := range names {
				if s.Fields == nil {
					s.Fields = map[string]*schema.Schema{}
				}
				s.Fields[name] = wireGenSchema(depth-1).Draw(t, "field")
			}
		}
		if depth > 0 && s.Type == schema.TypeList {
			s.Item = wireGenSchema(depth-1).Draw(t, "item")
		}
		if s.Type == schema.TypeEnum {
			s.Values = rapid.SliceOfN(wireGenScalar(), 1, 3).Draw(t, "values")
		}
		s.Required = rapid.Bool().Draw(t, "required")
		if rapid.Bool().Draw(t, "has default") {
			s.HasDefault = true
			s.Default = wireGenValue(1).Draw(t, "default")
		}
		s.Constraints = wireGenOpen().Draw(t, "constraints")
		s.Metadata = wireGenOpen().Draw(t, "metadata")
		return s
	})
}

func wireGenGuard(depth int) *rapid.Generator[*graph.Guard] {
	return rapid.Custom(func(t *rapid.T) *graph.Guard {
		ops := []string{graph.OpChanged, graph.OpVersionAtLeast, graph.OpExists, graph.OpEquals, graph.OpPath}
		if depth > 0 {
			ops = append(ops, graph.OpAll, graph.OpAny, graph.OpNot)
		}
		g := &graph.Guard{Op: rapid.SampledFrom(ops).Draw(t, "op")}
		n := rapid.IntRange(0, 3).Draw(t, "arity")
		for i := 0; i < n; i++ {
			var arg any
			switch {
			case g.Op == graph.OpAll || g.Op == graph.OpAny || g.Op == graph.OpNot:
				arg = wireGenGuard(depth-1).Draw(t, "guard")
			case depth > 0 && rapid.Bool().Draw(t, "nested"):
				arg = wireGenGuard(depth-1).Draw(t, "nested guard")
			case g.Op == graph.OpPath && i == 1:
				arg = append([]any{}, rapid.SliceOfN(rapid.OneOf(
					rapid.Map(wireGenKey(), func(s string) any { return s }),
					rapid.Map(rapid.Int64Range(-3, 3), func(i int64) any { return i }),
				), 0, 3).Draw(t, "segments")...)
			default:
				arg = wireGenValue(1).Draw(t, "arg")
			}
			g.Args = append(g.Args, arg)
		}
		return g
	})
}

func wireGenField(kind graph.FieldKind) *rapid.Generator[*graph.Field] {
	return rapid.Custom(func(t *rapid.T) *graph.Field {
		f := &graph.Field{
			Kind:        kind,
			Label:       wireGenText().Draw(t, "label"),
			Description: wireGenText().Draw(t, "description"),
			Required:    rapid.Bool().Draw(t, "required"),
			Default:     wireGenValue(2).Draw(t, "default"),
			Metadata:    wireGenOpen().Draw(t, "metadata"),
		}
		if rapid.Bool().Draw(t, "has schema") {
			f.Schema = wireGenSchema(2).Draw(t, "schema")
		}
		if rapid.Bool().Draw(t, "has reducer") {
			types := []reducer.Type{reducer.LastValue, reducer.FirstValue, reducer.Append, reducer.Union, reducer.Merge, reducer.Sum}
			f.Reducer = &reducer.Reducer{Type: rapid.SampledFrom(types).Draw(t, "reducer"), Opts: wireGenOpen().Draw(t, "opts")}
		}
		return f
	})
}

func wireGenNode() *rapid.Generator[*graph.Node] {
	return rapid.Custom(func(t *rapid.T) *graph.Node {
		n := &graph.Node{
			Label:       wireGenText().Draw(t, "label"),
			Description: wireGenText().Draw(t, "description"),
			Config:      wireGenOpen().Draw(t, "config"),
			Policies:    wireGenOpen().Draw(t, "policies"),
			Metadata:    wireGenOpen().Draw(t, "metadata"),
		}
		switch rapid.IntRange(0, 2).Draw(t, "implementation") {
		case 1:
			n.Implementation = graph.Implementation{Type: graph.ImplementationModule, Ref: wireGenText().Draw(t, "ref")}
		case 2:
			raw := rapid.MapOfN(wireGenKey(), wireGenValue(1), 0, 3).Draw(t, "raw")
			if raw == nil {
				raw = map[string]any{}
			}
			if raw["type"] == graph.ImplementationModule {
				delete(raw, "type")
			}
			n.Implementation = graph.Implementation{Raw: raw}
		}
		for _, group := range rapid.SliceOfNDistinct(wireGenKey(), 0, 2, rapid.ID[string]).Draw(t, "groups") {
			if n.Branches == nil {
				n.Branches = map[string][]string{}
			}
			ids := rapid.SliceOfN(wireGenID(), 0, 3).Draw(t, "edges")
			if len(ids) == 0 {
				ids = nil
			}
			n.Branches[group] = ids
		}
		return n
	})
}

func wireGenEdge() *rapid.Generator[*graph.Edge] {
	return rapid.Custom(func(t *rapid.T) *graph.Edge {
		e := &graph.Edge{
			To:           wireGenText().Draw(t, "to"),
			Label:        wireGenText().Draw(t, "label"),
			Description:  wireGenText().Draw(t, "description"),
			SourceHandle: wireGenText().Draw(t, "source handle"),
			TargetHandle: wireGenText().Draw(t, "target handle"),
			Metadata:     wireGenOpen().Draw(t, "metadata"),
		}
		switch rapid.IntRange(0, 2).Draw(t, "from") {
		case 1:
			e.From = []string{wireGenText().Draw(t, "source")}
		case 2:
			e.Barrier = true
			e.From = rapid.SliceOfN(wireGenID(), 0, 3).Draw(t, "sources")
			if len(e.From) == 0 {
				e.From = nil
			}
		}
		if rapid.Bool().Draw(t, "guarded") {
			e.Guard = wireGenGuard(2).Draw(t, "guard")
		}
		return e
	})
}

func wireGenOutput() *rapid.Generator[*graph.Output] {
	return rapid.Custom(func(t *rapid.T) *graph.Output {
		o := &graph.Output{
			Source:      wireGenText().Draw(t, "source"),
			Label:       wireGenText().Draw(t, "label"),
			Description: wireGenText().Draw(t, "description"),
			Metadata:    wireGenOpen().Draw(t, "metadata"),
		}
		if rapid.Bool().Draw(t, "has schema") {
			o.Schema = wireGenSchema(1).Draw(t, "schema")
		}
		return o
	})
}

func wireGenCollection[R any](gen *rapid.Generator[*R], setID func(*R, string)) *rapid.Generator[map[string]*R] {
	return rapid.Custom(func(t *rapid.T) map[string]*R {
		ids := rapid.SliceOfNDistinct(wireGenID(), 0, 3, rapid.ID[string]).Draw(t, "ids")
		if len(ids) == 0 {
			return nil
		}
		out := make(map[string]*R, len(ids))
		for _, id := range ids {
			r := gen.Draw(t, id)
			setID(r, id)
			out[id] = r
		}
		return out
	})
}

// wireGenGraph draws documents in normal form (empty maps and lists are nil,
// IDs repeat their keys), the form FromMap returns.
func wireGenGraph() *rapid.Generator[*graph.Graph] {
	return rapid.Custom(func(t *rapid.T) *graph.Graph {
		return &graph.Graph{
			SchemaVersion: 1,
			ID:            wireGenText().Draw(t, "id"),
			Name:          wireGenText().Draw(t, "name"),
			Description:   wireGenText().Draw(t, "description"),
			Inputs:        wireGenCollection(wireGenField(graph.KindInput), func(f *graph.Field, id string) { f.ID = id }).Draw(t, "inputs"),
			Fields:        wireGenCollection(wireGenField(graph.KindState), func(f *graph.Field, id string) { f.ID = id }).Draw(t, "fields"),
			Outputs:       wireGenCollection(wireGenOutput(), func(o *graph.Output, id string) { o.ID = id }).Draw(t, "outputs"),
			Nodes:         wireGenCollection(wireGenNode(), func(n *graph.Node, id string) { n.ID = id }).Draw(t, "nodes"),
			Edges:         wireGenCollection(wireGenEdge(), func(e *graph.Edge, id string) { e.ID = id }).Draw(t, "edges"),
			Policies:      wireGenOpen().Draw(t, "policies"),
			Metadata:      wireGenOpen().Draw(t, "metadata"),
		}
	})
}

func TestParseRefusesWhatJSONCannotCarryFaithfully(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		"{\"schema_version\":1,\"id\":\"g\",\"name\":\"a\xffb\"}",
		"{\"schema_version\":1,\"id\":\"g\",\"metadata\":{\"\xff\":1,\"\xfe\":2}}",
		`{"schema_version":1,"id":"g","description":"\udc00"}`,
		// I-JSON: a repeated name would silently lose the first member.
		`{"schema_version":1,"id":"g","metadata":{"a":1,"a":2}}`,
	} {
		_, err := graph.Parse([]byte(doc))
		var de *graph.DocumentError
		require.ErrorAs(t, err, &de, doc)
		assert.Equal(t, graph.CodeInvalidDocument, de.Code)
	}
}

// Open content may nest up to value.MaxDepth below its own key, but the
// JSON parser counts from the document's root: whatever ToMap writes must
// still parse, and a stored graph must load again.
func TestWhatMarshalJSONWritesParseReadsAtTheNestingLimit(t *testing.T) {
	t.Parallel()
	for depth := value.MaxDepth - 4; depth <= value.MaxDepth; depth++ {
		for _, leaf := range []any{"x", []any{}} {
			var deep any = leaf
			for range depth {
				deep = []any{deep}
			}
			for name, g := range map[string]*graph.Graph{
				"metadata": {SchemaVersion: 1, ID: "g", Metadata: map[string]any{"deep": deep}},
				"default":  {SchemaVersion: 1, ID: "g", Fields: map[string]*graph.Field{"f": {ID: "f", Kind: graph.KindState, Default: deep}}},
				"guard": {SchemaVersion: 1, ID: "g", Edges: map[string]*graph.Edge{"e": {ID: "e",
					Guard: &graph.Guard{Op: graph.OpNot, Args: []any{&graph.Guard{Op: graph.OpEquals, Args: []any{"f", deep}}}}}}},
			} {
				data, err := g.MarshalJSON()
				if err != nil {
					requireWireError(t, err, graph.CodeNonDurableValue)
					if name == "metadata" {
						// Publishing it would have stored bytes that never load again.
						_, err = graph.Compile(g, nil, graph.Options{})
						var ce *graph.CompileError
						require.ErrorAs(t, err, &ce)
						assert.Equal(t, graph.CodeNonDurableGraphValue, ce.Diagnostics[0].Code)
					}
					continue
				}
				_, err = graph.Parse(data)
				require.NoError(t, err, "%s nested %d deep: MarshalJSON wrote a document Parse refuses", name, depth)
			}
			// FromMap refuses what Parse would.
			_, err := graph.FromMap(map[string]any{"schema_version": int64(1), "id": "g", "metadata": map[string]any{"deep": deep}})
			if _, parseErr := graph.Parse(mustCanonical(t, map[string]any{"schema_version": int64(1), "id": "g", "metadata": map[string]any{"deep": deep}})); parseErr != nil {
				requireWireError(t, err, graph.CodeInvalidDocument)
			} else {
				require.NoError(t, err)
			}
		}
	}
}

func mustCanonical(t *testing.T, v any) []byte {
	t.Helper()
	b, err := value.Canonical(v)
	require.NoError(t, err)
	return b
}
