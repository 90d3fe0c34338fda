package graph_test

import (
	"errors"
	"testing"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func buildReviewLoop() *graph.Builder {
	status := graph.Path("review", "status")
	return graph.New("review-loop").
		Name("Review loop").
		Input("topic", schema.String().WithConstraint(schema.ConstraintMinLength, 1), graph.Required()).
		State("draft", schema.String()).
		State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, map[string]any{"max_length": 50})).
		State("review", schema.Object(map[string]*schema.Schema{
			"status": schema.Enum("approved", "rejected").AsRequired(),
		}).AsOpen()).
		Output("final_draft", "draft").
		Node("writer", "app.writer",
			graph.Config(map[string]any{"to": "draft", "temperature": 0.5}),
			graph.Timeout(1500), graph.Retry(3, 200)).
		Node("reviewer", "app.reviewer", graph.Branch("decision", "edge_ok", "edge_revise")).
		Node("left", "app.left").
		Node("right", "app.right").
		Edge("edge_start", graph.Start, "writer").
		Edge("edge_review", "writer", "reviewer").
		Edge("edge_ok", "reviewer", "left", graph.When(graph.Equals(status, "approved"))).
		Edge("edge_revise", "reviewer", "writer", graph.When(graph.Not(graph.Equals(status, "approved")))).
		Edge("edge_right", "reviewer", "right", graph.When(graph.All(graph.Changed("review"), graph.VersionAtLeast("draft", 1)))).
		Join("edge_join", []string{"left", "right"}, graph.Finish).
		MaxSupersteps(20).
		Metadata("owner", "team-a")
}

func TestBuilderProducesTheWireExample(t *testing.T) {
	t.Parallel()
	g, err := buildReviewLoop().Build()
	require.NoError(t, err)

	m, err := g.ToMap()
	require.NoError(t, err)
	assert.Equal(t, wireDecodeMap(t, wireExampleJSON), m)

	parsed, err := graph.Parse([]byte(wireExampleJSON))
	require.NoError(t, err)
	assert.Equal(t, parsed, g, "the builder's document equals the parsed one, record by record")
}

func TestBuilderNormalizesGoValues(t *testing.T) {
	t.Parallel()
	g, err := graph.New("g").
		Policy("budget", uint8(3)).
		State("tags", schema.List(schema.String()), graph.Default([]string{"a", "b"}), graph.Metadata("order", []int{2, 1})).
		Node("n", "app.n", graph.Config(map[string]any{"sizes": map[string]int{"s": 1}}), graph.Policy("weights", []float32{0.5})).
		Edge("e", graph.Start, "n", graph.When(graph.Equals(graph.Path("tags", 0), 7))).
		Build()
	require.NoError(t, err)

	assert.Equal(t, int64(3), g.Policies["budget"])
	assert.Equal(t, []any{"a", "b"}, g.Fields["tags"].Default)
	assert.Equal(t, []any{int64(2), int64(1)}, g.Fields["tags"].Metadata["order"])
	assert.Equal(t, map[string]any{"s": int64(1)}, g.Nodes["n"].Config["sizes"])
	assert.Equal(t, []any{0.5}, g.Nodes["n"].Policies["weights"])
	assert.Equal(t, []any{
		&graph.Guard{Op: graph.OpPath, Args: []any{"tags", []any{int64(0)}}},
		int64(7),
	}, g.Edges["e"].Guard.Args)

	_, err = g.ToMap()
	assert.NoError(t, err, "a built document is always writable")
}

func TestBuilderReachesEveryRecordFeature(t *testing.T) {
	t.Parallel()
	g, err := graph.New("g").
		Description("all the parts").
		Input("i", schema.Integer(), graph.Label("I"), graph.Description("an input"), graph.Default(int64(4))).
		State("s", schema.Float(), graph.Reducer(reducer.Sum, nil)).
		Node("p", "", graph.Passthrough(map[string]any{"type": "llm"}), graph.Label("P"), graph.Metadata("x", true)).
		Edge("e", "p", graph.Finish, graph.SourceHandle("out"), graph.TargetHandle("in"), graph.Label("E"), graph.Description("d")).
		Join("single", []string{"p"}, "p").
		Output("o", "", graph.OutputSchema(schema.Integer()), graph.Label("O"), graph.Description("out"), graph.Metadata("m", 1)).
		Build()
	require.NoError(t, err)

	assert.Equal(t, "all the parts", g.Description)
	assert.Equal(t, &graph.Field{ID: "i", Kind: graph.KindInput, Label: "I", Description: "an input", Schema: schema.Integer(), Default: int64(4)}, g.Inputs["i"])
	assert.Equal(t, &reducer.Reducer{Type: reducer.Sum}, g.Fields["s"].Reducer)
	assert.Equal(t, graph.Implementation{Raw: map[string]any{"type": "llm"}}, g.Nodes["p"].Implementation)
	assert.Equal(t, &graph.Edge{ID: "e", From: []string{"p"}, To: graph.Finish, Label: "E", Description: "d", SourceHandle: "out", TargetHandle: "in"}, g.Edges["e"])
	assert.Equal(t, &graph.Edge{ID: "single", From: []string{"p"}, Barrier: true, To: "p"}, g.Edges["single"])
	assert.Equal(t, &graph.Output{ID: "o", Label: "O", Description: "out", Schema: schema.Integer(), Metadata: map[string]any{"m": int64(1)}}, g.Outputs["o"])

	m, err := g.ToMap()
	require.NoError(t, err)
	back, err := graph.FromMap(m)
	require.NoError(t, err)
	assert.Equal(t, g, back)
}

func TestBuildReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	_, err := graph.New("g").
		Metadata("when", struct{}{}).
		Input("topic", schema.String(), graph.Timeout(10)).
		Input("topic", schema.String()).
		Node("n", "app.n", graph.Config(map[string]any{"$secret": 1}), graph.Required()).
		Edge("e", graph.Start, "n", graph.When(graph.Equals("topic", make(chan int)))).
		Output("o", "topic", graph.When(graph.Changed("topic"))).
		Build()
	requireNonPortableBuildErrors(t, err,
		`graph metadata "when"`,
		`input "topic": option Timeout applies to nodes only`,
		`input "topic": declared more than once`,
		`node "n" config: non-portable value at $secret`,
		`node "n": option Required applies to inputs only`,
		`edge "e" guard: argument 1 of "equals"`,
		`output "o": option When applies to edges only`,
	)
}

// requireNonPortableBuildErrors checks that err is a Build error naming a
// non-portable value among exactly the problems wants names, each of them.
func requireNonPortableBuildErrors(t *testing.T, err error, wants ...string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, graph.ErrBuild)
	assert.ErrorIs(t, err, value.ErrNotPortable)
	var joined interface{ Unwrap() []error }
	require.True(t, errors.As(err, &joined))
	assert.Len(t, joined.Unwrap(), len(wants))
	for _, want := range wants {
		assert.ErrorContains(t, err, want)
	}
}

func TestBuildReturnsIndependentDocuments(t *testing.T) {
	t.Parallel()
	config := map[string]any{"tone": "clear"}
	b := graph.New("g").Node("n", "app.n", graph.Config(config))
	config["tone"] = "changed after the call"

	first, err := b.Build()
	require.NoError(t, err)
	assert.Equal(t, "clear", first.Nodes["n"].Config["tone"], "values are read when the option is made")

	first.Nodes["n"].Config["tone"] = "edited"
	second, err := b.Node("m", "app.m").Build()
	require.NoError(t, err)
	assert.Equal(t, "clear", second.Nodes["n"].Config["tone"], "a build shares nothing with earlier builds")
	assert.NotContains(t, first.Nodes, "m")
}

// A schema that contains itself (easy to build in Go) is a Build error,
// not a walk that overflows the building process's stack.
func TestBuildReportsSchemasThatContainThemselves(t *testing.T) {
	t.Parallel()
	tree := &schema.Schema{Type: schema.TypeObject}
	tree.Fields = map[string]*schema.Schema{"children": {Type: schema.TypeList, Item: tree}}
	_, err := graph.New("g").
		Input("root", tree).
		State("copy", schema.Map()).
		Output("o", "copy", graph.OutputSchema(tree)).
		Build()
	assert.ErrorIs(t, err, graph.ErrBuild)
	assert.ErrorContains(t, err, `input "root" schema: contains itself`)
	assert.ErrorContains(t, err, `output "o" schema: contains itself`)
}

// A guard that contains itself (as easy to build in Go as such a schema)
// is reported by Build, Compile and ToMap, not walked until the stack
// overflows and the process dies.
func TestGuardsThatContainThemselvesAreReported(t *testing.T) {
	t.Parallel()
	loop := &graph.Guard{Op: graph.OpNot}
	loop.Args = []any{graph.All(graph.Changed("s"), loop)}
	_, err := graph.New("g").
		State("s", schema.String()).
		Node("n", "app.n").
		Edge("e", graph.Start, "n", graph.When(loop)).
		Build()
	assert.ErrorIs(t, err, graph.ErrBuild)
	assert.ErrorContains(t, err, `edge "e" guard: contains itself`)

	g, err := graph.New("g").State("s", schema.String()).Node("n", "app.n").Edge("e", graph.Start, "n").Build()
	require.NoError(t, err)
	g.Edges["e"].Guard = loop
	_, err = g.ToMap()
	var docErr *graph.DocumentError
	require.ErrorAs(t, err, &docErr)
	assert.Equal(t, "edges.e.guard", docErr.Path)

	diags := graph.Verify(g, nil, graph.Options{})
	require.Len(t, diags, 1)
	assert.Equal(t, graph.CodeNonDurableGraphValue, diags[0].Code)
	assert.Equal(t, "/edges/e/guard", graph.FormatPath(diags[0].Path))

	// A guard used twice side by side is shared, not recursive.
	twice := graph.Changed("s")
	_, err = graph.New("g").Edge("e", graph.Start, "n", graph.When(graph.All(twice, graph.Not(twice)))).Build()
	assert.NoError(t, err)
}

// Keys the caller names are part of the wire document too: a reserved or
// non-UTF-8 key is a Build error, never a built document ToMap refuses.
func TestBuildReportsKeysTheWireFormRefuses(t *testing.T) {
	t.Parallel()
	_, err := graph.New("g").
		Metadata("$owner", "a").
		Policy("$budget", 1).
		Metadata("\xff", 1).
		State("s", schema.String(), graph.Metadata("$m", 1)).
		Node("n", "app.n", graph.Policy("$q", 1), graph.Branch("$b", "e")).
		Build()
	requireNonPortableBuildErrors(t, err,
		`graph metadata "$owner": non-portable value at $owner`,
		`graph policy "$budget": non-portable value at $budget`,
		`graph metadata "\xff": non-portable value`,
		`state field "s" metadata "$m": non-portable value at $m`,
		`node "n" policy "$q": non-portable value at $q`,
		`node "n" branch "$b": non-portable value at $b`,
	)
}

// required applies to inputs and a reducer to state fields: elsewhere the
// runtime ignores them, so the builder reports them as misplaced options
// instead of building a document that promises what no run enforces.
func TestBuildReportsRequiredOnStateAndReducerOnInput(t *testing.T) {
	t.Parallel()
	_, err := graph.New("g").
		State("draft", schema.String(), graph.Required()).
		Input("tags", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		Build()
	assert.ErrorIs(t, err, graph.ErrBuild)
	assert.ErrorContains(t, err, `state field "draft": option Required applies to inputs only`)
	assert.ErrorContains(t, err, `input "tags": option Reducer applies to state fields only`)
}

// A passthrough map tagged "type": "module" has no wire form (the tag is
// reserved for registry references): Build reports it rather than build a
// document that json.Marshal refuses.
func TestBuildReportsAPassthroughTaggedModule(t *testing.T) {
	t.Parallel()
	_, err := graph.New("g").
		Node("n", "", graph.Passthrough(map[string]any{"type": "module", "implementation": "app.n"})).
		Build()
	assert.ErrorIs(t, err, graph.ErrBuild)
	assert.ErrorContains(t, err, `node "n" implementation: a passthrough implementation cannot use "type": "module"`)
}

// A schema written as a struct literal holds Go values as the schema
// package's constructors would not leave them (int, []string): the builder
// normalizes them, as Compile does, instead of refusing an int as "not
// portable".
func TestBuildNormalizesSchemaLiterals(t *testing.T) {
	t.Parallel()
	g, err := graph.New("g").
		Input("size", &schema.Schema{Type: schema.TypeInteger, Default: 3, HasDefault: true, Constraints: map[string]any{"min": 1}}).
		State("tone", &schema.Schema{Type: schema.TypeEnum, Values: []any{"calm", 2}, Metadata: map[string]any{"tags": []string{"a"}}}).
		Output("o", "size", graph.OutputSchema(&schema.Schema{Type: schema.TypeInteger, Constraints: map[string]any{"min": uint8(1)}})).
		Build()
	require.NoError(t, err)

	parsed, err := graph.Parse([]byte(`{"schema_version": 1, "id": "g",
	 "inputs": {"size": {"kind": "input", "schema": {"type": "integer", "default": 3, "constraints": {"min": 1}}}},
	 "fields": {"tone": {"kind": "state", "schema": {"type": "enum", "values": ["calm", 2], "metadata": {"tags": ["a"]}}}},
	 "outputs": {"o": {"source": "size", "schema": {"type": "integer", "constraints": {"min": 1}}}}}`))
	require.NoError(t, err)
	assert.Equal(t, parsed, g)

	_, err = graph.New("g").
		State("s", &schema.Schema{Type: schema.TypeMap, Default: struct{}{}, HasDefault: true}).
		Build()
	assert.ErrorIs(t, err, value.ErrNotPortable)
	assert.ErrorContains(t, err, `state field "s" schema: non-portable value at default`)
}
