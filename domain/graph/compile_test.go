package graph_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// Spec §12 case 15.
func TestEdgeToUnknownNodeIsAnInvalidGraph(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Edges["e_ghost"] = edge("e_ghost", "copy", "ghost")

	c, err := graph.Compile(g, standardImpls(), graph.Options{})
	assert.Nil(t, c)
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
	var ce *graph.CompileError
	require.ErrorAs(t, err, &ce)
	d, ok := findDiagnostic(ce.Diagnostics, graph.CodeUnknownEdgeTarget, path("edges", "e_ghost", "to"))
	require.True(t, ok, ce.Diagnostics)
	assert.Equal(t, "e_ghost", d.PublicID)
	assert.Contains(t, d.Message, `"ghost"`)
}

// Spec §12 case 43: one invalid_policy per bad key.
func TestEachBadNodePolicyKeyHasItsOwnDiagnostic(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Nodes["copy"].Policies = map[string]any{
		"timeout_ms": "slow",
		"retry":      map[string]any{"max_attempts": int64(0), "backoff_ms": int64(-1), "jitter": true},
		"on_error":   "route",
		"custom":     "host-owned", // open content, ignored
	}
	ds := graph.Verify(g, standardImpls(), graph.Options{})
	assert.Equal(t, 3, countCode(ds, graph.CodeInvalidPolicy), ds)
	for _, key := range []string{"timeout_ms", "retry", "on_error"} {
		d, ok := findDiagnostic(ds, graph.CodeInvalidPolicy, path("nodes", "copy", "policies", key))
		require.True(t, ok, key)
		assert.Equal(t, "copy", d.PublicID)
	}
	retry, _ := findDiagnostic(ds, graph.CodeInvalidPolicy, path("nodes", "copy", "policies", "retry"))
	assert.Contains(t, retry.Message, "max_attempts")
	assert.Contains(t, retry.Message, "backoff_ms")
	assert.Contains(t, retry.Message, "jitter")
	assert.Len(t, retry.Metadata["reasons"], 3)
}

func TestValidNodePoliciesCompile(t *testing.T) {
	t.Parallel()
	for _, policies := range []map[string]any{
		nil,
		{},
		{"retry": map[string]any{}},
		{"timeout_ms": int64(5000), "retry": map[string]any{"max_attempts": int64(3), "backoff_ms": int64(10)}},
		{"timeout_ms": nil, "retry": nil},
		{"custom": "host-owned"},
	} {
		g := linearGraph()
		g.Nodes["copy"].Policies = policies
		mustCompile(t, g, standardImpls(), graph.Options{})
	}
}

// Spec §12 case 43: a barrier makes its target reachable only when all its
// sources are.
func TestBarrierTargetReachableOnlyWhenAllSourcesAre(t *testing.T) {
	t.Parallel()
	build := func(startToRight bool) *graph.Graph {
		g := fanOutGraph()
		delete(g.Edges, "e_right")
		if startToRight {
			g.Edges["e_start_right"] = edge("e_start_right", graph.Start, "right")
		}
		return g
	}

	ds := graph.Verify(build(false), standardImpls(), graph.Options{})
	_, rightUnreachable := findDiagnostic(ds, graph.CodeUnreachableNode, path("nodes", "right"))
	_, combineUnreachable := findDiagnostic(ds, graph.CodeUnreachableNode, path("nodes", "combine"))
	assert.True(t, rightUnreachable)
	assert.True(t, combineUnreachable, "a barrier with an unreachable source cannot fire")
	assert.Equal(t, 2, countCode(ds, graph.CodeUnreachableNode))
	assert.Zero(t, countCode(ds, graph.CodeDeadEndNode), "unreachable nodes are not also dead ends")

	assert.Empty(t, graph.Verify(build(true), standardImpls(), graph.Options{}))
}

// Spec §12 case 43: an invalid limit suppresses unbounded_cycle.
func TestInvalidLimitSuppressesCycleWarnings(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Edges["e_loop"] = edge("e_loop", "copy", "copy")
	g.Policies = map[string]any{"max_supersteps": "ten"}

	ds := graph.Verify(g, standardImpls(), graph.Options{})
	_, ok := findDiagnostic(ds, graph.CodeInvalidPolicy, path("policies", "max_supersteps"))
	assert.True(t, ok)
	assert.Zero(t, countCode(ds, graph.CodeUnboundedCycle))
	assert.Zero(t, countCode(ds, graph.CodeUnguardedCycle))
}

func TestInvalidLimitIsReportedOnAcyclicGraphs(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Policies = map[string]any{"max_supersteps": int64(-3)}
	_, err := graph.Compile(g, standardImpls(), graph.Options{MaxSupersteps: 5})
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
}

// Spec §12 case 43: a bounded guarded self-loop verifies clean.
func TestBoundedGuardedSelfLoopVerifiesClean(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Edges["e_loop"] = &graph.Edge{ID: "e_loop", From: []string{"copy"}, To: "copy",
		Guard: &graph.Guard{Op: graph.OpNot, Args: []any{&graph.Guard{Op: graph.OpExists, Args: []any{"result"}}}}}
	g.Policies = map[string]any{"max_supersteps": int64(10)}

	assert.Empty(t, graph.Verify(g, standardImpls(), graph.Options{}))
	c := mustCompile(t, g, standardImpls(), graph.Options{})
	assert.Equal(t, 10, c.MaxSupersteps)
}

func TestCycleWarningsFollowTheEffectiveLimit(t *testing.T) {
	t.Parallel()
	loop := func(policies map[string]any) *graph.Graph {
		g := fanOutGraph()
		g.Policies = policies
		g.Edges["e_back"] = edge("e_back", "combine", "source") // cycle source→left/right→combine→source
		return g
	}

	ds := graph.Verify(loop(nil), standardImpls(), graph.Options{})
	d, ok := findDiagnostic(ds, graph.CodeUnboundedCycle, path("policies", "max_supersteps"))
	require.True(t, ok, ds)
	assert.Equal(t, []any{"combine", "left", "right", "source"}, d.Metadata["nodes"])

	// An explicit null policy counts as unset, and the runtime default bounds the cycle.
	ds = graph.Verify(loop(map[string]any{"max_supersteps": nil}), standardImpls(), graph.Options{MaxSupersteps: 7})
	assert.Zero(t, countCode(ds, graph.CodeUnboundedCycle))
	d, ok = findDiagnostic(ds, graph.CodeUnguardedCycle, path("nodes", "combine"))
	require.True(t, ok, ds)
	assert.Equal(t, []any{"combine", "left", "right", "source"}, d.Metadata["nodes"])
	assert.Equal(t, 7, mustCompile(t, loop(nil), standardImpls(), graph.Options{MaxSupersteps: 7}).MaxSupersteps)
}

func TestDeadEndWarningsCountBarrierSources(t *testing.T) {
	t.Parallel()
	// left and right reach $finish only through the barrier: neither is a dead end.
	ds := graph.Verify(fanOutGraph(), standardImpls(), graph.Options{})
	assert.Zero(t, countCode(ds, graph.CodeDeadEndNode))

	g := fanOutGraph()
	g.Nodes["cycle_a"] = node("cycle_a", "app.echo")
	g.Edges["e_a"] = edge("e_a", "source", "cycle_a")
	g.Edges["e_a_loop"] = &graph.Edge{ID: "e_a_loop", From: []string{"cycle_a"}, To: "cycle_a",
		Guard: &graph.Guard{Op: graph.OpChanged, Args: []any{"count"}}}
	ds = graph.Verify(g, standardImpls(), graph.Options{})
	_, ok := findDiagnostic(ds, graph.CodeDeadEndNode, path("nodes", "cycle_a"))
	assert.True(t, ok, "a node that only loops on itself cannot reach $finish")
}

func TestOrphanedFieldsScanConfigValuesNotKeys(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Fields["by_key"] = &graph.Field{ID: "by_key", Kind: graph.KindState, Schema: str()}
	g.Fields["by_value"] = &graph.Field{ID: "by_value", Kind: graph.KindState, Schema: str()}
	g.Fields["by_guard"] = &graph.Field{ID: "by_guard", Kind: graph.KindState, Schema: str()}
	g.Nodes["copy"].Config["by_key"] = map[string]any{"nested": []any{"by_value"}}
	g.Edges["e_finish"].Guard = &graph.Guard{Op: graph.OpEquals, Args: []any{"value", "by_guard"}}

	ds := graph.Verify(g, standardImpls(), graph.Options{})
	assert.Equal(t, []string{graph.CodeOrphanedField}, codes(ds))
	assert.Equal(t, path("fields", "by_key"), ds[0].Path)
}

func TestEmptyGraphCompilesWithoutTopologyDiagnostics(t *testing.T) {
	t.Parallel()
	g := &graph.Graph{SchemaVersion: 1, ID: "empty"}
	assert.Empty(t, graph.Verify(g, nil, graph.Options{}))
	c := mustCompile(t, g, nil, graph.Options{})
	assert.Equal(t, "empty", c.GraphID)
	assert.Empty(t, c.Channels)
	assert.Empty(t, c.NodeIDs)
	assert.Empty(t, c.StartEdges)
}

func TestStartToFinishOnlyGraphCompiles(t *testing.T) {
	t.Parallel()
	g := &graph.Graph{SchemaVersion: 1, ID: "noop", Edges: map[string]*graph.Edge{
		"e": edge("e", graph.Start, graph.Finish),
	}}
	c := mustCompile(t, g, nil, graph.Options{})
	assert.Equal(t, []string{"e"}, c.StartEdges)
	assert.Equal(t, []string{graph.Start}, c.Edges["e"].From)
}

func TestGraphWithoutFinishEdgeStillCompiles(t *testing.T) {
	t.Parallel()
	g := fanOutGraph()
	delete(g.Edges, "e_done")
	g.Nodes["combine"].Branches = nil
	c, err := graph.Compile(g, standardImpls(), graph.Options{})
	require.NoError(t, err)
	assert.NotNil(t, c)
	ds := graph.Verify(g, standardImpls(), graph.Options{})
	assert.Equal(t, []string{graph.CodeNoTerminalEdge}, codes(ds))
}

func TestNilRegistryCompilesGraphsWithoutNodes(t *testing.T) {
	t.Parallel()
	g := &graph.Graph{SchemaVersion: 1, ID: "inputs-only",
		Inputs:  map[string]*graph.Field{"x": {Schema: str()}},
		Outputs: map[string]*graph.Output{"x": {}},
	}
	c := mustCompile(t, g, nil, graph.Options{})
	require.Len(t, c.Outputs, 1)
	assert.Equal(t, "input:x", c.Outputs[0].SourceChannel)
	assert.Equal(t, str(), c.Outputs[0].Schema, "an output without a schema inherits its source's")

	g2 := linearGraph()
	g2.Nodes["other"] = node("other", "app.echo")
	g2.Edges["e_other"] = edge("e_other", graph.Start, "other")
	ds := graph.Verify(g2, nil, graph.Options{})
	assert.Equal(t, 2, countCode(ds, graph.CodeInvalidNodeImplementation), "one per node")
}

// Spec §12 case 43: the config schema is fetched once per distinct ref per
// compile, even with several nodes using it.
func TestConfigSchemaFetchedOncePerImplementation(t *testing.T) {
	t.Parallel()
	impls := standardImpls()
	g := fanOutGraph() // four nodes, all app.echo
	mustCompile(t, g, impls, graph.Options{})
	assert.Equal(t, 1, impls.callsFor("app.echo"))

	graph.Verify(g, impls, graph.Options{})
	assert.Equal(t, 2, impls.callsFor("app.echo"), "once more per compile")

	panicking := standardImpls()
	panicking.panics["app.echo"] = true
	ds := graph.Verify(g, panicking, graph.Options{})
	assert.Equal(t, 1, panicking.callsFor("app.echo"))
	assert.Equal(t, 4, countCode(ds, graph.CodeInvalidNodeConfigSchema), "every node using the ref is reported")
	for _, d := range ds {
		if d.Code == graph.CodeInvalidNodeConfigSchema {
			assert.Contains(t, d.Message, "config schema exploded")
		}
	}
}

// A schema that contains itself is easy to build in Go (a tree of trees)
// and has no wire form: it is a diagnostic, never an endless walk that
// overflows the compiling process's stack.
func TestSchemasThatContainThemselvesAreDiagnostics(t *testing.T) {
	t.Parallel()
	tree := &schema.Schema{Type: schema.TypeObject}
	tree.Fields = map[string]*schema.Schema{"children": {Type: schema.TypeList, Item: tree}}
	assert.True(t, tree.ContainsItself())
	shared := str()
	assert.False(t, (&schema.Schema{Type: schema.TypeObject, Fields: map[string]*schema.Schema{"a": shared, "b": shared}}).ContainsItself(),
		"a child shared by two fields is no cycle")

	impls := newImpls(map[string]*schema.Schema{"app.copy": tree})
	ds := graph.Verify(linearGraph(), impls, graph.Options{})
	d, ok := findDiagnostic(ds, graph.CodeInvalidNodeConfigSchema, path("nodes", "copy", "implementation"))
	require.True(t, ok, "diagnostics: %v", codes(ds))
	assert.Contains(t, d.Metadata["error"], "contains itself")

	g := linearGraph()
	g.Fields["result"].Schema = tree
	ds = graph.Verify(g, standardImpls(), graph.Options{})
	_, ok = findDiagnostic(ds, graph.CodeNonDurableGraphValue, path("fields", "result", "schema"))
	assert.True(t, ok, "diagnostics: %v", codes(ds))
	_, err := graph.Hash(g)
	assert.ErrorContains(t, err, "contains itself")
}

func TestConfigDefaultsAreMaterialized(t *testing.T) {
	t.Parallel()
	configSchema := &schema.Schema{Type: schema.TypeObject, Fields: map[string]*schema.Schema{
		"from":        {Type: schema.TypeString, Required: true},
		"to":          {Type: schema.TypeString, Required: true},
		"temperature": {Type: schema.TypeFloat, Default: 0.5, HasDefault: true},
		"style":       {Type: schema.TypeString, Default: "plain", HasDefault: true},
		"note":        {Type: schema.TypeString, Default: nil, HasDefault: true},
		"extra":       {Type: schema.TypeString},
	}}
	impls := newImpls(map[string]*schema.Schema{"app.copy": configSchema})
	g := linearGraph()
	g.Nodes["copy"].Config["style"] = "fancy"

	c := mustCompile(t, g, impls, graph.Options{})
	want := map[string]any{"from": "value", "to": "result", "style": "fancy", "temperature": 0.5, "note": nil}
	assert.Equal(t, want, c.Nodes["copy"].Config)
	assert.Equal(t, want, c.Effective.Nodes["copy"].Config)
	assert.Equal(t, map[string]any{"from": "value", "to": "result", "style": "fancy"}, g.Nodes["copy"].Config, "input not mutated")

	hash, err := graph.Hash(c.Effective)
	require.NoError(t, err)
	assert.Equal(t, c.Hash, hash, "the hash covers the effective document")
	authored, err := graph.Hash(linearGraph())
	require.NoError(t, err)
	assert.NotEqual(t, authored, c.Hash, "materialized defaults change the hash")

	// A stored effective document is compiled as is: a default added to the
	// node type later does not change the published version.
	later := configSchema.Clone()
	later.Fields["added_later"] = &schema.Schema{Type: schema.TypeInteger, Default: int64(1), HasDefault: true}
	stored := mustCompile(t, c.Effective, newImpls(map[string]*schema.Schema{"app.copy": later}), graph.Options{EffectiveDocument: true})
	assert.Equal(t, c.Hash, stored.Hash)
	assert.NotContains(t, stored.Nodes["copy"].Config, "added_later")
}

func TestNilConfigSchemaAcceptsAnyConfig(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Nodes["copy"].Config = map[string]any{"anything": []any{int64(1), "two", map[string]any{"three": 3.0}}}
	mustCompile(t, g, standardImpls(), graph.Options{})
}

func TestConfigIsValidatedAgainstTheEffectiveConfig(t *testing.T) {
	t.Parallel()
	configSchema := &schema.Schema{Type: schema.TypeObject, Fields: map[string]*schema.Schema{
		"mode": {Type: schema.TypeString, Required: true, Default: "fast", HasDefault: true},
	}}
	g := linearGraph()
	g.Nodes["copy"].Config = nil
	c := mustCompile(t, g, newImpls(map[string]*schema.Schema{"app.copy": configSchema}), graph.Options{})
	assert.Equal(t, map[string]any{"mode": "fast"}, c.Nodes["copy"].Config, "a required key is satisfied by its default")

	_, err := graph.Compile(g, newImpls(map[string]*schema.Schema{"app.copy": configSchema}), graph.Options{EffectiveDocument: true})
	require.ErrorIs(t, err, graph.ErrInvalidGraph, "without materialization the required key is missing")
}

// Spec §12 case 43: the hash.
func TestHashShapeAndSensitivity(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, linearGraph(), standardImpls(), graph.Options{})
	assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), c.Hash)
	assert.Equal(t, "linear@"+c.Hash[:12], c.ID)
	assert.Equal(t, "linear", c.GraphID)

	changes := map[string]func(g *graph.Graph){
		"edge label":       func(g *graph.Graph) { g.Edges["e_finish"].Label = "done" },
		"node label":       func(g *graph.Graph) { g.Nodes["copy"].Label = "Copy" },
		"field desc":       func(g *graph.Graph) { g.Fields["result"].Description = "the copy" },
		"handle":           func(g *graph.Graph) { g.Edges["e_start"].TargetHandle = "in" },
		"graph metadata":   func(g *graph.Graph) { g.Metadata = map[string]any{"owner": "team-a"} },
		"node metadata":    func(g *graph.Graph) { g.Nodes["copy"].Metadata = map[string]any{"x": int64(1)} },
		"int vs float":     func(g *graph.Graph) { g.Nodes["copy"].Config["n"] = int64(1) },
		"branches":         func(g *graph.Graph) { g.Nodes["copy"].Branches = map[string][]string{"exit": {"e_finish"}} },
		"graph name":       func(g *graph.Graph) { g.Name = "Other" },
		"graph policy":     func(g *graph.Graph) { g.Policies = map[string]any{"max_supersteps": int64(3)} },
		"required flag":    func(g *graph.Graph) { g.Inputs["value"].Required = false },
		"explicit reducer": func(g *graph.Graph) { g.Fields["result"].Reducer = &reducer.Reducer{Type: reducer.LastValue} },
	}
	float := linearGraph()
	float.Nodes["copy"].Config["n"] = 1.0
	floatHash := mustCompile(t, float, standardImpls(), graph.Options{}).Hash
	for name, change := range changes {
		g := linearGraph()
		change(g)
		changed := mustCompile(t, g, standardImpls(), graph.Options{})
		assert.NotEqual(t, c.Hash, changed.Hash, name)
		if name == "int vs float" {
			assert.NotEqual(t, floatHash, changed.Hash, "ints and floats hash differently")
		}
	}

	// Compile options other than the document never change the hash.
	assert.Equal(t, c.Hash, mustCompile(t, linearGraph(), standardImpls(), graph.Options{MaxSupersteps: 9, Profile: graph.ProfileRun}).Hash)
}

func TestUnsetWireDefaultsDoNotChangeTheHash(t *testing.T) {
	t.Parallel()
	explicit := mustCompile(t, linearGraph(), standardImpls(), graph.Options{})

	implicit := linearGraph()
	implicit.SchemaVersion = 0
	implicit.Inputs["value"].ID, implicit.Inputs["value"].Kind = "", ""
	implicit.Outputs["result"].Source, implicit.Outputs["result"].ID = "", ""
	implicit.Nodes["copy"].ID = ""
	implicit.Edges["e_start"].ID = ""
	assert.Equal(t, explicit.Hash, mustCompile(t, implicit, standardImpls(), graph.Options{}).Hash)
}

// Spec §4.2: compiling twice gives equal runtime graphs.
func TestCompilingTwiceGivesEqualResults(t *testing.T) {
	t.Parallel()
	for _, build := range []func() *graph.Graph{linearGraph, fanOutGraph} {
		first := mustCompile(t, build(), standardImpls(), graph.Options{MaxSupersteps: 4})
		second := mustCompile(t, build(), standardImpls(), graph.Options{MaxSupersteps: 4})
		assert.Equal(t, first, second)
		g := build()
		assert.Equal(t, mustCompile(t, g, standardImpls(), graph.Options{}), mustCompile(t, g, standardImpls(), graph.Options{}))
	}
}

func TestCompileDoesNotMutateItsInput(t *testing.T) {
	t.Parallel()
	configSchema := &schema.Schema{Type: schema.TypeObject, Fields: map[string]*schema.Schema{
		"level": {Type: schema.TypeInteger, Default: int64(2), HasDefault: true},
	}, Constraints: map[string]any{"open": true}}
	build := func() *graph.Graph {
		g := fanOutGraph()
		g.SchemaVersion = 0                             // filled in the effective copy
		g.Outputs["log"].Source = ""                    // filled in the effective copy
		g.Nodes["left"].Config = map[string]any{"n": 3} // an int, normalized in the copy
		g.Nodes["left"].Policies = map[string]any{"retry": map[string]any{"max_attempts": 2}}
		g.Edges["e_done"].Guard = &graph.Guard{Op: graph.OpEquals, Args: []any{
			&graph.Guard{Op: graph.OpPath, Args: []any{"log", []string{"x"}}}, 1}}
		return g
	}
	impls := newImpls(map[string]*schema.Schema{"app.echo": configSchema})
	g := build()
	c := mustCompile(t, g, impls, graph.Options{})
	assert.Equal(t, build(), g)

	// The compiled graph shares nothing mutable with the input.
	c.Nodes["left"].Config["n"] = "changed"
	c.Effective.Nodes["left"].Config["n"] = "changed"
	c.Edges["e_done"].Guard.Args[1] = "changed"
	assert.Equal(t, build(), g)
	graph.Verify(g, impls, graph.Options{})
	assert.Equal(t, build(), g)
}

func TestLoweringFanOutAndBarrier(t *testing.T) {
	t.Parallel()
	c := mustCompile(t, fanOutGraph(), standardImpls(), graph.Options{MaxSupersteps: 99})

	assert.Equal(t, []string{"flag", "topic"}, c.InputIDs)
	assert.Equal(t, []string{"count", "done", "log"}, c.FieldIDs)
	assert.Equal(t, []string{"combine", "left", "right", "source"}, c.NodeIDs)
	assert.Equal(t, []string{"e_start"}, c.StartEdges)
	assert.Equal(t, 10, c.MaxSupersteps, "the graph policy wins over the runtime default")
	assert.Equal(t, "fan-out", c.Effective.ID)

	lastValue := reducer.Reducer{Type: reducer.LastValue}
	assert.Equal(t, map[string]*graph.Channel{
		"input:flag": {ID: "input:flag", PublicID: "flag", Kind: graph.ChannelInput,
			Schema: &schema.Schema{Type: schema.TypeBoolean}, Reducer: lastValue, Default: false, HasDefault: true},
		"input:topic": {ID: "input:topic", PublicID: "topic", Kind: graph.ChannelInput,
			Schema: str(), Reducer: lastValue, Default: "general", HasDefault: true},
		"state:count": {ID: "state:count", PublicID: "count", Kind: graph.ChannelState,
			Schema: &schema.Schema{Type: schema.TypeInteger}, Reducer: lastValue},
		"state:done": {ID: "state:done", PublicID: "done", Kind: graph.ChannelState,
			Schema: &schema.Schema{Type: schema.TypeBoolean}, Reducer: lastValue, Default: false, HasDefault: true},
		"state:log": {ID: "state:log", PublicID: "log", Kind: graph.ChannelState,
			Schema:  &schema.Schema{Type: schema.TypeList, Item: str()},
			Reducer: reducer.Reducer{Type: reducer.Append}, Default: []any{}, HasDefault: true},
		"edge:e_start": {ID: "edge:e_start", PublicID: "e_start", Kind: graph.ChannelEphemeral},
		"edge:e_left":  {ID: "edge:e_left", PublicID: "e_left", Kind: graph.ChannelEphemeral},
		"edge:e_right": {ID: "edge:e_right", PublicID: "e_right", Kind: graph.ChannelEphemeral},
		"edge:e_join": {ID: "edge:e_join", PublicID: "e_join", Kind: graph.ChannelBarrier,
			Sources: []string{"left", "right"}},
		"edge:e_done": {ID: "edge:e_done", PublicID: "e_done", Kind: graph.ChannelEphemeral},
	}, c.Channels)

	assert.Equal(t, &graph.RuntimeNode{ID: "source", RuntimeID: "node:source", Implementation: "app.echo",
		Config: map[string]any{"writes": []any{"count", "done"}}, Subscribe: []string{"edge:e_start"},
		OutgoingEdges: []string{"e_left", "e_right"}}, c.Nodes["source"])
	assert.Equal(t, []string{"edge:e_left"}, c.Nodes["left"].Subscribe)
	assert.Equal(t, []string{"e_join"}, c.Nodes["left"].OutgoingEdges)
	assert.Equal(t, []string{"e_join"}, c.Nodes["right"].OutgoingEdges)
	assert.Equal(t, []string{"edge:e_join"}, c.Nodes["combine"].Subscribe)
	assert.Equal(t, []string{"e_done"}, c.Nodes["combine"].OutgoingEdges)

	assert.Equal(t, &graph.RuntimeEdge{ID: "e_start", ChannelID: "edge:e_start", From: []string{"$start"}, To: "source"}, c.Edges["e_start"])
	assert.Equal(t, &graph.RuntimeEdge{ID: "e_join", ChannelID: "edge:e_join", From: []string{"right", "left"}, To: "combine", Barrier: true}, c.Edges["e_join"])
	assert.Equal(t, &graph.RuntimeEdge{ID: "e_done", ChannelID: "edge:e_done", From: []string{"combine"}, To: "$finish",
		Guard: &graph.Guard{Op: graph.OpExists, Args: []any{"log"}}}, c.Edges["e_done"])

	assert.Equal(t, []*graph.RuntimeOutput{
		{ID: "log", RuntimeID: "output:log", SourceChannel: "state:log", Schema: &schema.Schema{Type: schema.TypeList, Item: str()}},
		{ID: "topic", RuntimeID: "output:topic", SourceChannel: "input:topic", Schema: str()},
	}, c.Outputs)

	meta := c.Metadata
	assert.Equal(t, map[string]any{"combine": "node:combine", "left": "node:left", "right": "node:right", "source": "node:source"},
		meta[graph.MetaPublicToRuntime].(map[string]any)["nodes"])
	assert.Equal(t, map[string]any{"kind": "edge", "id": "e_join"}, meta[graph.MetaRuntimeToPublic].(map[string]any)["edge:e_join"])
	assert.Equal(t, map[string]any{"kind": "field", "id": "log"}, meta[graph.MetaRuntimeToPublic].(map[string]any)["state:log"])
	assert.Equal(t, map[string]any{"kind": "activation_channel", "public_edge_id": "e_done"}, meta[graph.MetaGenerated].(map[string]any)["edge:e_done"])
	assert.Equal(t, map[string]any{"combine": map[string]any{"exit": []any{"e_done"}}}, meta[graph.MetaBranches])
}

func TestLoweringLimitFallsBackToTheRuntimeDefault(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	assert.Equal(t, 0, mustCompile(t, g, standardImpls(), graph.Options{}).MaxSupersteps)
	assert.Equal(t, 6, mustCompile(t, g, standardImpls(), graph.Options{MaxSupersteps: 6}).MaxSupersteps)
	g.Policies = map[string]any{"max_supersteps": nil}
	assert.Equal(t, 6, mustCompile(t, g, standardImpls(), graph.Options{MaxSupersteps: 6}).MaxSupersteps)
}

func TestStateDefaultsAndReducerZeros(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Fields["flag"] = &graph.Field{ID: "flag", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeBoolean}, Default: false}
	g.Fields["total"] = &graph.Field{ID: "total", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeInteger}, Reducer: &reducer.Reducer{Type: reducer.Sum}}
	g.Fields["meta"] = &graph.Field{ID: "meta", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeMap}, Reducer: &reducer.Reducer{Type: reducer.Merge}}
	g.Fields["seeded"] = &graph.Field{ID: "seeded", Kind: graph.KindState, Schema: &schema.Schema{Type: schema.TypeList, Item: str()},
		Reducer: &reducer.Reducer{Type: reducer.Append}, Default: []any{"seed"}}
	g.Fields["first"] = &graph.Field{ID: "first", Kind: graph.KindState, Schema: str(), Reducer: &reducer.Reducer{Type: reducer.FirstValue}}
	g.Nodes["copy"].Config["uses"] = []any{"flag", "total", "meta", "seeded", "first"}
	c := mustCompile(t, g, standardImpls(), graph.Options{})

	cases := map[string]struct {
		def        any
		hasDefault bool
	}{
		"state:flag":   {false, true}, // kept on purpose: the reference drops a false state default
		"state:total":  {int64(0), true},
		"state:meta":   {map[string]any{}, true},
		"state:seeded": {[]any{"seed"}, true},
		"state:first":  {nil, false},
		"state:result": {nil, false},
	}
	for id, want := range cases {
		ch := c.Channels[id]
		require.NotNil(t, ch, id)
		assert.Equal(t, want.def, ch.Default, id)
		assert.Equal(t, want.hasDefault, ch.HasDefault, id)
	}
	assert.Equal(t, reducer.FirstValue, c.Channels["state:first"].Reducer.Type)
	assert.True(t, c.Channels["input:value"].Required)
}
