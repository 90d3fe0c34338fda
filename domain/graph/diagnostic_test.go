package graph_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

func TestFixturesVerifyClean(t *testing.T) {
	t.Parallel()
	assert.Empty(t, graph.Verify(linearGraph(), standardImpls(), graph.Options{}))
	assert.Empty(t, graph.Verify(fanOutGraph(), standardImpls(), graph.Options{}))
}

// TestEveryDiagnosticCode triggers each compiler diagnostic from a document
// problem and checks its severity, path and public ID.
func TestEveryDiagnosticCode(t *testing.T) {
	t.Parallel()
	objectConfig := &schema.Schema{Type: schema.TypeObject, Fields: map[string]*schema.Schema{
		"from": {Type: schema.TypeString, Required: true},
		"to":   {Type: schema.TypeString, Required: true},
	}}
	guardOn := func(g *graph.Graph, guard *graph.Guard) { g.Edges["e_finish"].Guard = guard }
	pathGuard := func(field string, segments any) *graph.Guard {
		return &graph.Guard{Op: graph.OpPath, Args: []any{field, segments}}
	}

	cases := []struct {
		name     string
		mutate   func(g *graph.Graph)
		impls    graph.Implementations
		noImpls  bool // compile with a nil registry
		code     string
		path     []any
		severity graph.Severity
		publicID string
	}{
		{name: "open content that is not portable cannot be encoded", code: graph.CodeNonDurableGraphValue,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Config["handle"] = struct{}{} },
			path:   path("nodes", "copy", "config")},
		{name: "a reserved key in metadata cannot be encoded", code: graph.CodeNonDurableGraphValue,
			mutate: func(g *graph.Graph) { g.Metadata = map[string]any{"$owner": "x"} },
			path:   path("metadata")},
		{name: "a nil record cannot be encoded", code: graph.CodeNonDurableGraphValue,
			mutate: func(g *graph.Graph) { g.Edges["e_nil"] = nil },
			path:   path("edges", "e_nil")},
		{name: "a newer schema version is unsupported", code: graph.CodeUnsupportedSchemaVersion,
			mutate: func(g *graph.Graph) { g.SchemaVersion = 2 },
			path:   path("schema_version")},
		{name: "the graph ID must be a public ID", code: graph.CodeInvalidPublicID,
			mutate: func(g *graph.Graph) { g.ID = "-linear" },
			path:   path("id")},
		{name: "record IDs must be public IDs", code: graph.CodeInvalidPublicID,
			mutate: func(g *graph.Graph) {
				g.Outputs["bad id"] = &graph.Output{ID: "bad id", Source: "result"}
			},
			path: path("outputs", "bad id"), publicID: "bad id"},
		{name: "endpoints are reserved IDs", code: graph.CodeReservedID,
			mutate: func(g *graph.Graph) {
				g.Fields["$finish"] = &graph.Field{ID: "$finish", Kind: graph.KindState, Schema: str()}
			},
			path: path("fields", "$finish"), publicID: "$finish"},
		{name: "inputs and fields share one namespace", code: graph.CodeDuplicateStateID,
			mutate: func(g *graph.Graph) {
				g.Fields["value"] = &graph.Field{ID: "value", Kind: graph.KindState, Schema: str()}
			},
			path: path("fields", "value"), publicID: "value"},
		{name: "the graph name must be UTF-8 text", code: graph.CodeInvalidDocument,
			mutate: func(g *graph.Graph) { g.Name = "bad\xff" },
			path:   path("name")},
		{name: "max_supersteps must be a positive integer", code: graph.CodeInvalidPolicy,
			mutate: func(g *graph.Graph) { g.Policies = map[string]any{"max_supersteps": int64(0)} },
			path:   path("policies", "max_supersteps")},
		{name: "max_supersteps may not be a float", code: graph.CodeInvalidPolicy,
			mutate: func(g *graph.Graph) { g.Policies = map[string]any{"max_supersteps": 5.0} },
			path:   path("policies", "max_supersteps")},
		{name: "node timeout_ms must be positive", code: graph.CodeInvalidPolicy,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Policies = map[string]any{"timeout_ms": int64(0)} },
			path:   path("nodes", "copy", "policies", "timeout_ms"), publicID: "copy"},
		{name: "node retry rejects unknown keys", code: graph.CodeInvalidPolicy,
			mutate: func(g *graph.Graph) {
				g.Nodes["copy"].Policies = map[string]any{"retry": map[string]any{"jitter": true}}
			},
			path: path("nodes", "copy", "policies", "retry"), publicID: "copy"},
		{name: "node on_error is reserved", code: graph.CodeInvalidPolicy,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Policies = map[string]any{"on_error": "route"} },
			path:   path("nodes", "copy", "policies", "on_error"), publicID: "copy"},
		{name: "a field's kind must match its section", code: graph.CodeInvalidField,
			mutate: func(g *graph.Graph) { g.Fields["result"].Kind = graph.KindInput },
			path:   path("fields", "result"), publicID: "result"},
		{name: "a field's ID must match its key", code: graph.CodeInvalidField,
			mutate: func(g *graph.Graph) { g.Inputs["value"].ID = "other" },
			path:   path("inputs", "value"), publicID: "value"},
		{name: "every field needs a schema", code: graph.CodeMissingFieldSchema,
			mutate: func(g *graph.Graph) { g.Fields["result"].Schema = nil },
			path:   path("fields", "result", "schema"), publicID: "result"},
		{name: "a field schema must be valid", code: graph.CodeInvalidSchema,
			mutate: func(g *graph.Graph) { g.Fields["result"].Schema = &schema.Schema{Type: schema.TypeList} },
			path:   path("fields", "result", "schema"), publicID: "result"},
		{name: "an output schema must be valid", code: graph.CodeInvalidSchema,
			mutate: func(g *graph.Graph) { g.Outputs["result"].Schema = &schema.Schema{Type: "text"} },
			path:   path("outputs", "result", "schema"), publicID: "result"},
		{name: "a field default must match the schema", code: graph.CodeInvalidFieldDefault,
			mutate: func(g *graph.Graph) { g.Fields["result"].Default = int64(3) },
			path:   path("fields", "result", "default"), publicID: "result"},
		{name: "reducer types are a closed set", code: graph.CodeInvalidReducer,
			mutate: func(g *graph.Graph) { g.Fields["result"].Reducer = &reducer.Reducer{Type: "concat"} },
			path:   path("fields", "result", "reducer"), publicID: "result"},
		{name: "reducer options are checked", code: graph.CodeInvalidReducer,
			mutate: func(g *graph.Graph) {
				g.Fields["result"].Schema = &schema.Schema{Type: schema.TypeList, Item: str()}
				g.Fields["result"].Reducer = &reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"max_length": int64(0)}}
			},
			path: path("fields", "result", "reducer"), publicID: "result"},
		{name: "sum needs a numeric schema", code: graph.CodeReducerSchemaMismatch,
			mutate: func(g *graph.Graph) { g.Fields["result"].Reducer = &reducer.Reducer{Type: reducer.Sum} },
			path:   path("fields", "result", "reducer"), publicID: "result"},
		{name: "appending to a list of lists is ambiguous", code: graph.CodeAmbiguousListWrite, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) {
				g.Fields["result"].Schema = &schema.Schema{Type: schema.TypeList, Item: &schema.Schema{Type: schema.TypeList, Item: str()}}
				g.Fields["result"].Reducer = &reducer.Reducer{Type: reducer.Append}
				g.Outputs = nil
			},
			path: path("fields", "result", "reducer"), publicID: "result"},
		{name: "an output's ID must match its key", code: graph.CodeInvalidRecord,
			mutate: func(g *graph.Graph) { g.Outputs["result"].ID = "renamed" },
			path:   path("outputs", "result"), publicID: "result"},
		{name: "a node label must be UTF-8 text", code: graph.CodeInvalidRecord,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Label = "\xfe" },
			path:   path("nodes", "copy"), publicID: "copy"},
		{name: "an edge handle must be UTF-8 text", code: graph.CodeInvalidRecord,
			mutate: func(g *graph.Graph) { g.Edges["e_finish"].SourceHandle = "\xfe" },
			path:   path("edges", "e_finish"), publicID: "e_finish"},
		{name: "an output needs a known source", code: graph.CodeUnknownOutputSource,
			mutate: func(g *graph.Graph) { g.Outputs["result"].Source = "ghost" },
			path:   path("outputs", "result", "source"), publicID: "result"},
		{name: "an output schema must fit its source", code: graph.CodeIncompatibleOutputSchema,
			mutate: func(g *graph.Graph) { g.Outputs["result"].Schema = &schema.Schema{Type: schema.TypeInteger} },
			path:   path("outputs", "result", "schema"), publicID: "result"},
		{name: "a node needs an implementation", code: graph.CodeMissingNodeImplementation,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Implementation = graph.Implementation{} },
			path:   path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "a module implementation needs a registry ID", code: graph.CodeMissingNodeImplementation,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Implementation = module("") },
			path:   path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "passthrough implementations do not run", code: graph.CodeUnsupportedNodeImplementation,
			mutate: func(g *graph.Graph) {
				g.Nodes["copy"].Implementation = graph.Implementation{Raw: map[string]any{"type": "http", "url": "x"}}
			},
			path: path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "only module implementations run", code: graph.CodeUnsupportedNodeImplementation,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Implementation = graph.Implementation{Type: "script", Ref: "x"} },
			path:   path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "a module must be registered", code: graph.CodeInvalidNodeImplementation,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Implementation = module("app.missing") },
			path:   path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "without a registry every module is unknown", code: graph.CodeInvalidNodeImplementation,
			noImpls: true, mutate: func(*graph.Graph) {},
			path: path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "a panicking config schema is reported", code: graph.CodeInvalidNodeConfigSchema,
			impls: func() graph.Implementations {
				f := standardImpls()
				f.panics["app.copy"] = true
				return f
			}(),
			mutate: func(*graph.Graph) {},
			path:   path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "an invalid config schema is reported", code: graph.CodeInvalidNodeConfigSchema,
			impls:  newImpls(map[string]*schema.Schema{"app.copy": {Type: schema.TypeList}}),
			mutate: func(*graph.Graph) {},
			path:   path("nodes", "copy", "implementation"), publicID: "copy"},
		{name: "config must match the config schema", code: graph.CodeInvalidNodeConfig,
			impls:  newImpls(map[string]*schema.Schema{"app.copy": objectConfig}),
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Config = map[string]any{"from": "value", "extra": true} },
			path:   path("nodes", "copy", "config"), publicID: "copy"},
		{name: "an edge source must be a node", code: graph.CodeUnknownEdgeSource,
			mutate: func(g *graph.Graph) { g.Edges["e_ghost"] = edge("e_ghost", "ghost", "copy") },
			path:   path("edges", "e_ghost", "from"), publicID: "e_ghost"},
		{name: "a single-source edge has one source", code: graph.CodeUnknownEdgeSource,
			mutate: func(g *graph.Graph) { g.Edges["e_finish"].From = nil },
			path:   path("edges", "e_finish", "from"), publicID: "e_finish"},
		{name: "an edge target must be a node", code: graph.CodeUnknownEdgeTarget,
			mutate: func(g *graph.Graph) { g.Edges["e_finish"].To = "ghost" },
			path:   path("edges", "e_finish", "to"), publicID: "e_finish"},
		{name: "$finish is never a source", code: graph.CodeInvalidFinishEndpoint,
			mutate: func(g *graph.Graph) { g.Edges["e_back"] = edge("e_back", graph.Finish, "copy") },
			path:   path("edges", "e_back", "from"), publicID: "e_back"},
		{name: "$start is never a target", code: graph.CodeInvalidStartEndpoint,
			mutate: func(g *graph.Graph) { g.Edges["e_finish"].To = graph.Start },
			path:   path("edges", "e_finish", "to"), publicID: "e_finish"},
		{name: "$start is never a barrier source", code: graph.CodeInvalidStartEndpoint,
			mutate: func(g *graph.Graph) { g.Edges["e_join"] = barrier("e_join", "copy", graph.Start, "copy") },
			path:   path("edges", "e_join", "from"), publicID: "e_join"},
		{name: "a barrier needs sources", code: graph.CodeEmptyEdgeSources,
			mutate: func(g *graph.Graph) { g.Edges["e_join"] = barrier("e_join", "copy") },
			path:   path("edges", "e_join", "from"), publicID: "e_join"},
		{name: "a barrier lists each source once", code: graph.CodeDuplicateEdgeSource,
			mutate: func(g *graph.Graph) { g.Edges["e_join"] = barrier("e_join", graph.Finish, "copy", "copy") },
			path:   path("edges", "e_join", "from"), publicID: "e_join"},
		{name: "unknown guard operators are rejected", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) { guardOn(g, &graph.Guard{Op: "xor", Args: []any{"value"}}) },
			path:   path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "all takes guards only", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) { guardOn(g, &graph.Guard{Op: graph.OpAll, Args: []any{"value"}}) },
			path:   path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "version_at_least needs a non-negative version", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) {
				guardOn(g, &graph.Guard{Op: graph.OpVersionAtLeast, Args: []any{"result", int64(-1)}})
			},
			path: path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "a top-level path is rejected at compile time", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) { guardOn(g, pathGuard("result", []any{})) },
			path:   path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "a reference that is a non-path guard is rejected at compile time", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) {
				guardOn(g, &graph.Guard{Op: graph.OpExists, Args: []any{&graph.Guard{Op: graph.OpChanged, Args: []any{"result"}}}})
			},
			path: path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "a reference that is not a string or path is rejected", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) { guardOn(g, &graph.Guard{Op: graph.OpExists, Args: []any{int64(1)}}) },
			path:   path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "an equals value that is a non-path guard is rejected at compile time", code: graph.CodeInvalidGuard,
			mutate: func(g *graph.Graph) {
				guardOn(g, &graph.Guard{Op: graph.OpEquals, Args: []any{"result", &graph.Guard{Op: graph.OpExists, Args: []any{"value"}}}})
			},
			path: path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "a branch lists known edges", code: graph.CodeUnknownBranchEdge,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Branches = map[string][]string{"decision": {"ghost"}} },
			path:   path("nodes", "copy", "branches", "decision"), publicID: "copy"},
		{name: "a branch lists the node's own edges", code: graph.CodeBranchEdgeSourceMismatch,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Branches = map[string][]string{"decision": {"e_start"}} },
			path:   path("nodes", "copy", "branches", "decision"), publicID: "copy"},
		{name: "an edge sits in one branch position", code: graph.CodeDuplicateBranchEdge,
			mutate: func(g *graph.Graph) {
				g.Nodes["copy"].Branches = map[string][]string{"a": {"e_finish"}, "b": {"e_finish"}}
			},
			path: path("nodes", "copy", "branches"), publicID: "copy"},
		{name: "an unguarded branch edge is a warning", code: graph.CodeUnguardedBranchEdge, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) { g.Nodes["copy"].Branches = map[string][]string{"decision": {"e_finish"}} },
			path:   path("nodes", "copy", "branches", "decision"), publicID: "e_finish"},
		{name: "guards name known fields", code: graph.CodeUnknownGuardField,
			mutate: func(g *graph.Graph) { guardOn(g, &graph.Guard{Op: graph.OpChanged, Args: []any{"ghost"}}) },
			path:   path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "path fields inside equals values are checked too", code: graph.CodeUnknownGuardField,
			mutate: func(g *graph.Graph) {
				guardOn(g, &graph.Guard{Op: graph.OpEquals, Args: []any{"result", pathGuard("ghost", []any{})}})
			},
			path: path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "path segments are a list", code: graph.CodeInvalidGuardPath,
			mutate: func(g *graph.Graph) {
				guardOn(g, &graph.Guard{Op: graph.OpExists, Args: []any{pathGuard("result", "status")}})
			},
			path: path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "path segments are keys or indexes", code: graph.CodeInvalidGuardPath,
			mutate: func(g *graph.Graph) {
				guardOn(g, &graph.Guard{Op: graph.OpExists, Args: []any{pathGuard("result", []any{"a", 1.5})}})
			},
			path: path("edges", "e_finish", "guard"), publicID: "e_finish"},
		{name: "a graph with nodes needs an entry point", code: graph.CodeNoEntrypoint,
			mutate: func(g *graph.Graph) { delete(g.Edges, "e_start") },
			path:   path("edges")},
		{name: "every node must be reachable", code: graph.CodeUnreachableNode,
			mutate: func(g *graph.Graph) {
				g.Nodes["stranded"] = node("stranded", "app.echo")
				g.Edges["e_stranded"] = edge("e_stranded", "stranded", graph.Finish)
			},
			path: path("nodes", "stranded"), publicID: "stranded"},
		{name: "a cycle without a limit may run forever", code: graph.CodeUnboundedCycle, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) { g.Edges["e_loop"] = edge("e_loop", "copy", "copy") },
			path:   path("policies", "max_supersteps")},
		{name: "a bounded cycle without a guard only stops at the limit", code: graph.CodeUnguardedCycle, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) {
				g.Edges["e_loop"] = edge("e_loop", "copy", "copy")
				g.Policies = map[string]any{"max_supersteps": int64(5)}
			},
			path: path("nodes", "copy"), publicID: "copy"},
		{name: "no edge to $finish is one warning", code: graph.CodeNoTerminalEdge, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) { delete(g.Edges, "e_finish") },
			path:   path("edges")},
		{name: "a node that cannot reach $finish is a dead end", code: graph.CodeDeadEndNode, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) {
				g.Nodes["trap"] = node("trap", "app.echo")
				g.Edges["e_trap"] = edge("e_trap", "copy", "trap")
			},
			path: path("nodes", "trap"), publicID: "trap"},
		{name: "a state field named nowhere is orphaned", code: graph.CodeOrphanedField, severity: graph.SeverityWarning,
			mutate: func(g *graph.Graph) {
				g.Fields["unused"] = &graph.Field{ID: "unused", Kind: graph.KindState, Schema: str()}
			},
			path: path("fields", "unused"), publicID: "unused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := linearGraph()
			tc.mutate(g)
			impls := tc.impls
			if impls == nil && !tc.noImpls {
				impls = standardImpls()
			}
			ds := graph.Verify(g, impls, graph.Options{})
			d, ok := findDiagnostic(ds, tc.code, tc.path)
			require.Truef(t, ok, "want %s at %v, got %v", tc.code, tc.path, ds)
			want := tc.severity
			if want == "" {
				want = graph.SeverityError
			}
			assert.Equal(t, want, d.Severity)
			assert.Equal(t, tc.publicID, d.PublicID)
			assert.NotEmpty(t, d.Message)

			_, err := graph.Compile(g, impls, graph.Options{})
			if want == graph.SeverityError {
				var ce *graph.CompileError
				require.ErrorAs(t, err, &ce)
				assert.True(t, errors.Is(err, graph.ErrInvalidGraph))
				assert.Equal(t, ds, ce.Diagnostics, "Compile and Verify report the same diagnostics")
			} else {
				assert.NoError(t, err, "warnings never block compilation")
			}
		})
	}
}

func TestNonDurableValueIsTheOnlyDiagnostic(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.SchemaVersion = 9                             // would be an error too
	g.Nodes["copy"].Config["when"] = make(chan int) // not portable
	g.Edges["e_finish"].To = "ghost"                // would be an error too
	ds := graph.Verify(g, standardImpls(), graph.Options{})
	require.Len(t, ds, 1)
	assert.Equal(t, graph.CodeNonDurableGraphValue, ds[0].Code)
	assert.Equal(t, path("nodes", "copy", "config"), ds[0].Path)
}

func TestVerifyReportsEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.ID = "bad id"
	g.Fields["result"].Schema = nil
	g.Outputs["result"].Source = "ghost"
	g.Outputs["result"].Schema = &schema.Schema{Type: "no-such-type"} // reported beside the unknown source
	g.Nodes["copy"].Policies = map[string]any{"timeout_ms": "slow", "on_error": "x"}
	g.Edges["e_finish"].To = "ghost"
	g.Edges["e_extra"] = edge("e_extra", "nowhere", "copy")

	ds := graph.Verify(g, standardImpls(), graph.Options{})
	assert.Equal(t, []string{
		graph.CodeInvalidPublicID,
		graph.CodeMissingFieldSchema,
		graph.CodeUnknownOutputSource,
		graph.CodeInvalidSchema,
		graph.CodeInvalidPolicy, // on_error
		graph.CodeInvalidPolicy, // timeout_ms
		graph.CodeUnknownEdgeSource,
		graph.CodeUnknownEdgeTarget,
		graph.CodeNoTerminalEdge, // the only $finish edge now targets a ghost
	}, codes(ds))
	assert.Equal(t, ds, graph.Verify(g, standardImpls(), graph.Options{}), "diagnostic order is stable")
}

func TestCompileErrorListsEveryDiagnostic(t *testing.T) {
	t.Parallel()
	g := linearGraph()
	g.Edges["e_finish"].To = "ghost"
	g.Fields["unused"] = &graph.Field{ID: "unused", Kind: graph.KindState, Schema: str()}

	_, err := graph.Compile(g, standardImpls(), graph.Options{})
	require.ErrorIs(t, err, graph.ErrInvalidGraph)
	lines := strings.Split(err.Error(), "\n")
	assert.Equal(t, []string{
		"invalid graph: 1 error(s)",
		`unknown_edge_target at /edges/e_finish/to: edge "e_finish" targets unknown node "ghost"; add the node or fix the target`,
		`no_terminal_edge at /edges: no edge leads to $finish; runs end only by quiescence, so add an edge to $finish if the graph has a natural end (warning)`,
		`orphaned_field at /fields/unused: state field "unused" is not named by any output, guard or node config value; delete it unless node code reads or writes it (node code is not scanned, so such a field is reported too) (warning)`,
	}, lines)
}

func TestFormatPathEscapesJSONPointerTokens(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "/", graph.FormatPath(nil))
	assert.Equal(t, "/nodes/a~1b/policies/x~0y/3", graph.FormatPath([]any{"nodes", "a/b", "policies", "x~y", 3}))
}

func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, opts := range []graph.Options{{MaxSupersteps: -1}, {Profile: "draft"}} {
		_, err := graph.Compile(linearGraph(), standardImpls(), opts)
		assert.ErrorIs(t, err, graph.ErrInvalidOptions)
		assert.NotErrorIs(t, err, graph.ErrInvalidGraph)
		ds := graph.Verify(linearGraph(), standardImpls(), opts)
		require.Len(t, ds, 1)
		assert.Equal(t, graph.CodeInvalidOptions, ds[0].Code)
	}
	for _, p := range []graph.Profile{"", graph.ProfilePublish, graph.ProfileRun} {
		mustCompile(t, linearGraph(), standardImpls(), graph.Options{Profile: p})
	}
}

func TestNilGraphIsAnInvalidDocument(t *testing.T) {
	t.Parallel()
	_, err := graph.Compile(nil, nil, graph.Options{})
	var ce *graph.CompileError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Diagnostics, 1)
	assert.Equal(t, graph.CodeInvalidDocument, ce.Diagnostics[0].Code)
}
