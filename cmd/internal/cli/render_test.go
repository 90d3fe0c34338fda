package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

// TestRenderMarksNodesThatRanAfterTheirEventsArePruned: the run document
// records the edges that fired, so graph render --run still marks the
// nodes they fired from once pruning took the run's events; a node whose
// completion fired only its edge to $finish is known from its event alone.
func TestRenderMarksNodesThatRanAfterTheirEventsArePruned(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)
	ctx := context.Background()
	step := func(field string) node.Node {
		return node.Func(func(context.Context, map[string]any) (map[string]any, error) {
			return map[string]any{field: "yes"}, nil
		})
	}
	reg := node.NewRegistry().
		MustRegister("acme.left", step("left")).
		MustRegister("acme.right", step("right")).
		MustRegister("acme.join", step("joined")).
		MustRegister("acme.close", step("closed"))
	e, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: reg})
	require.NoError(t, err)
	g, err := graph.New("acme-join").
		State("left", schema.String()).
		State("right", schema.String()).
		State("joined", schema.String()).
		State("closed", schema.String()).
		Node("left", "acme.left").
		Node("right", "acme.right").
		Node("join", "acme.join").
		Node("close", "acme.close").
		Edge("start_left", graph.Start, "left").
		Edge("start_right", graph.Start, "right").
		Join("both", []string{"left", "right"}, "join").
		Edge("join_close", "join", "close").
		Edge("close_finish", "close", graph.Finish).
		Output("closed", "").
		Build()
	require.NoError(t, err)
	r := startAndDrain(t, e, g)
	r, err = e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusDone, r.Status)

	before := c.ok("graph", "render", "--run", r.ID, "--format", "text").stdout
	for _, n := range []string{"left", "right", "join", "close"} {
		assert.Contains(t, before, n+" ✓", "with its events")
	}

	c.ok("prune", "--event-retention", "0s", "--run-retention", "30d")
	var left eventPageJSON
	c.okJSON(&left, "runs", "events", r.ID)
	require.Empty(t, left.Events, "the run's events are pruned")

	after := c.ok("graph", "render", "--run", r.ID, "--format", "text").stdout
	for _, n := range []string{"left", "right", "join"} {
		assert.Contains(t, after, n+" ✓", "from the document")
	}
	assert.NotContains(t, after, "close ✓", "only its pruned event said it completed")
	mermaid := c.ok("graph", "render", "--run", r.ID).stdout
	assert.Contains(t, mermaid, "class n_left,n_right,n_join completed")
	assert.Contains(t, mermaid, "n_join ==>", "the fired edge is still drawn bold")
}

// TestRenderRefusesARunOfAnotherGraph: a run drawn over another graph
// would mark none of its nodes and put its status on a graph it never ran;
// the mistake is said instead.
func TestRenderRefusesARunOfAnotherGraph(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var started runJSON
	c.okJSON(&started, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)

	other := graphFile(t, `{"schema_version":1,"id":"other","nodes":{"a":{"implementation":{"type":"module","implementation":"demo.intake"}}},
		"edges":{"s":{"from":"$start","to":"a"},"f":{"from":"a","to":"$finish"}}}`)
	res := c.fails(ExitUsage, "graph", "render", other, "--run", started.RunID, "--format", "text")
	assert.Contains(t, res.stderr, `is a run of graph "`+demo.GraphID+`", not of "other"`)
	assert.Empty(t, res.stdout)

	c.ok("graph", "render", demoGraphFile(t), "--run", started.RunID, "--format", "text")
	c.ok("graph", "render", demo.GraphID, "--run", started.RunID, "--format", "text")
}
