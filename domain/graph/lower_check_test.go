package graph

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/schema"
)

type registry map[string]*schema.Schema

func (r registry) ConfigSchema(ref string) (*schema.Schema, bool) {
	s, ok := r[ref]
	return s, ok
}

// loweredFixture compiles $start -> a -> $finish with one input, one field
// and one output, and returns the lowered graph for corruption.
func loweredFixture(t *testing.T) *Compiled {
	t.Helper()
	g := &Graph{
		SchemaVersion: 1,
		ID:            "check",
		Inputs:        map[string]*Field{"in": {Schema: &schema.Schema{Type: schema.TypeString}}},
		Fields:        map[string]*Field{"out": {Schema: &schema.Schema{Type: schema.TypeString}}},
		Outputs:       map[string]*Output{"out": {}},
		Nodes:         map[string]*Node{"a": {Implementation: Implementation{Type: ImplementationModule, Ref: "app.a"}}},
		Edges: map[string]*Edge{
			"e_start":  {From: []string{Start}, To: "a"},
			"e_finish": {From: []string{"a"}, To: Finish},
		},
	}
	c, diags := compile(g, registry{"app.a": nil}, Options{})
	require.False(t, hasErrors(diags), diags)
	require.Empty(t, checkLowered(c))
	return c
}

// The self-checks guard the runtime against lowering bugs; they cannot be
// reached from a document, so these tests corrupt a lowered graph.
func TestLoweringSelfChecks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		corrupt func(c *Compiled)
		code    string
		path    []any
	}{
		{name: "a runtime ID used twice collides", code: CodeRuntimeIDCollision, path: []any{},
			corrupt: func(c *Compiled) { c.Outputs[0].RuntimeID = "node:a" }},
		{name: "a channel stored under another key is an invariant failure", code: CodeLoweringInvariantFailed, path: []any{},
			corrupt: func(c *Compiled) {
				c.Channels["state:copy"] = &Channel{ID: "state:out", PublicID: "out", Kind: ChannelState}
			}},
		{name: "a subscription to a missing channel", code: CodeMissingRuntimeChannel, path: []any{"nodes", "a"},
			corrupt: func(c *Compiled) { c.Nodes["a"].Subscribe = append(c.Nodes["a"].Subscribe, "edge:ghost") }},
		{name: "an output of a missing channel", code: CodeMissingRuntimeChannel, path: []any{"outputs", "out"},
			corrupt: func(c *Compiled) { c.Outputs[0].SourceChannel = "state:ghost" }},
		{name: "an outgoing edge that was not lowered", code: CodeLoweringInvariantFailed, path: []any{"nodes", "a"},
			corrupt: func(c *Compiled) { c.Nodes["a"].OutgoingEdges = []string{"e_finish", "ghost"} }},
		{name: "an outgoing edge whose channel is missing", code: CodeLoweringInvariantFailed, path: []any{"nodes", "a"},
			corrupt: func(c *Compiled) { delete(c.Channels, "edge:e_finish") }},
		{name: "a node that maps back to nothing", code: CodeLoweringInvariantFailed, path: []any{"nodes", "a"},
			corrupt: func(c *Compiled) { delete(c.Metadata[MetaRuntimeToPublic].(map[string]any), "node:a") }},
		{name: "a channel that maps back to nothing", code: CodeLoweringInvariantFailed, path: []any{},
			corrupt: func(c *Compiled) { delete(c.Metadata[MetaRuntimeToPublic].(map[string]any), "input:in") }},
		{name: "a start edge to a missing node", code: CodeLoweringInvariantFailed, path: []any{"edges", "e_start"},
			corrupt: func(c *Compiled) { c.Edges["e_start"].To = "ghost" }},
		{name: "a subscribed finish edge", code: CodeLoweringInvariantFailed, path: []any{"edges", "e_finish"},
			corrupt: func(c *Compiled) { c.Nodes["a"].Subscribe = append(c.Nodes["a"].Subscribe, "edge:e_finish") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := loweredFixture(t)
			tc.corrupt(c)
			diags := checkLowered(c)
			require.NotEmpty(t, diags)
			found := false
			for _, d := range diags {
				if d.Code == tc.code && assert.ObjectsAreEqual(tc.path, d.Path) {
					found = true
					assert.Equal(t, SeverityError, d.Severity)
					assert.NotEmpty(t, d.RuntimeID)
				}
			}
			assert.Truef(t, found, "want %s at %v in %v", tc.code, tc.path, diags)
		})
	}
}
