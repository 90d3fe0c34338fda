package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

func TestGuardTextReadsLikeAnExpression(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		guard *graph.Guard
		want  string
	}{
		"equals a path":         {graph.Equals(graph.Path("route"), "manual"), `route == "manual"`},
		"equals a field":        {graph.Equals("count", 10.0), `count == 10`},
		"not equals":            {graph.Not(graph.Equals("route", "auto")), `route != "auto"`},
		"not of something else": {graph.Not(graph.Exists("x")), `not (exists(x))`},
		"nested path":           {graph.Equals(graph.Path("user", "tags", -1), true), `user.tags[-1] == true`},
		"all and any": {graph.All(graph.Changed("a"), graph.Any(graph.Exists("b"), graph.VersionAtLeast("c", 2))),
			`changed(a) and (exists(b) or version(c) >= 2)`},
		"empty all":            {graph.All(), "true"},
		"empty any":            {graph.Any(), "false"},
		"path compared":        {graph.Equals("a", graph.Path("b")), `a == b`},
		"structured literal":   {graph.Equals("a", map[string]any{"k": []any{"v", nil}}), `a == {"k": ["v", null]}`},
		"nil guard renders ''": {nil, ""},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, GuardText(tc.guard))
		})
	}
}

func demoGraph(t *testing.T) *graph.Graph {
	t.Helper()
	g, err := demo.Graph()
	require.NoError(t, err)
	return g
}

func TestRenderingIsDeterministic(t *testing.T) {
	t.Parallel()
	g := demoGraph(t)
	for _, f := range Formats() {
		first, err := Render(f, g, nil)
		require.NoError(t, err)
		for range 5 {
			again, err := Render(f, demoGraph(t), nil)
			require.NoError(t, err)
			assert.Equal(t, first, again, f)
		}
	}
	_, err := Render("png", g, nil)
	assert.Error(t, err)
}

func TestMermaidDrawsJoinsGuardsAndSafeIDs(t *testing.T) {
	t.Parallel()
	g, err := graph.New("ids").
		State("x", schema.String()).
		Node("end", "n.end", graph.Label(`say "hi"`)).
		Node("a-b", "n.ab").
		Node("a_b", "n.ab").
		Edge("s", graph.Start, "end").
		Edge("e1", "end", "a-b", graph.When(graph.Exists("x"))).
		Edge("e2", "end", "a_b").
		Join("j", []string{"a-b", "a_b"}, graph.Finish).
		Build()
	require.NoError(t, err)
	m := Mermaid(g, nil)
	assert.Contains(t, m, `n_end["say #quot;hi#quot;"]`, "a keyword id is prefixed; quotes are escaped")
	assert.Contains(t, m, "n_a_2d_b[", "distinct ids stay distinct")
	assert.Contains(t, m, "n_a__b[")
	assert.Contains(t, m, `n_end -->|"exists(x)"| n_a_2d_b`)
	assert.Contains(t, m, "n_a_2d_b --> j_j\n    n_a__b --> j_j\n    j_j --> finish_")
	d := DOT(g, nil)
	assert.Contains(t, d, `"end" [label="say \"hi\""];`)
	assert.Contains(t, d, `"join:j" -> "$finish";`)
}

// A run that retried its credit check and now waits for the manager.
func waitingRun() (*run.Run, []run.Event) {
	r := &run.Run{
		ID: "run_1", Status: run.StatusWaiting,
		Interrupts: map[string]run.Interrupt{"approval": {ID: "approval", NodeID: "manager_approval", Status: run.InterruptOpen}},
	}
	events := []run.Event{
		{Type: run.EventNodeCompleted, NodeID: "intake"},
		{Type: run.EventEdgeTriggered, Payload: map[string]any{"edge_id": "to_credit"}},
		{Type: run.EventNodeFailed, NodeID: "credit_check", Payload: map[string]any{"permanent": false}},
		{Type: run.EventNodeCompleted, NodeID: "credit_check"},
		{Type: run.EventNodeCompleted, NodeID: "fraud_check"},
		{Type: run.EventEdgeTriggered, Payload: map[string]any{"edge_id": "checks_done"}},
		{Type: run.EventNodeCompleted, NodeID: "decide"},
		{Type: run.EventEdgeTriggered, Payload: map[string]any{"edge_id": "needs_manager"}},
	}
	return r, events
}

func TestOverlayFollowsTheRun(t *testing.T) {
	t.Parallel()
	r, events := waitingRun()
	o := OverlayOf(demoGraph(t), r, events)
	assert.Equal(t, map[string]NodeState{
		"intake": NodeCompleted, "credit_check": NodeCompleted, "fraud_check": NodeCompleted,
		"decide": NodeCompleted, "manager_approval": NodeWaiting,
	}, o.Nodes, "a retried attempt that then succeeded is completed")
	assert.Equal(t, map[string]bool{"to_credit": true, "checks_done": true, "needs_manager": true}, o.Edges)

	r.Status = run.StatusFailed
	r.Interrupts = nil
	r.Failure = &run.Failure{Code: "node_failed", NodeID: "decide"}
	r.ActiveTasks = map[string]run.TaskState{"t": {NodeID: "summarize", Status: run.TaskRetryScheduled}}
	o = OverlayOf(demoGraph(t), r, events)
	assert.Equal(t, NodeFailed, o.Nodes["decide"], "the failing node wins over its history")
	assert.Equal(t, NodeRetrying, o.Nodes["summarize"])
}

// The run document keeps the edges that fired and the sources a join has
// seen: without any event (all pruned) they still mark the nodes that ran.
func TestOverlayReadsTheDocumentWithoutEvents(t *testing.T) {
	t.Parallel()
	r := &run.Run{ID: "run_1", Status: run.StatusRunning,
		Channels: run.ChannelsOf(map[string]run.Channel{
			"state:route":      {Value: "auto", Version: 1},
			"edge:start":       {Version: 1},
			"edge:to_credit":   {Version: 1},
			"edge:to_fraud":    {Version: 1},
			"edge:checks_done": {Version: 0}, // a join that has not fired
		}),
		BarrierSeen: map[string][]string{"edge:checks_done": {"fraud_check"}},
		ActiveTasks: map[string]run.TaskState{"t": {NodeID: "credit_check", Status: run.TaskRunning}},
	}
	o := OverlayOf(demoGraph(t), r, nil)
	assert.Equal(t, map[string]NodeState{"intake": NodeCompleted, "fraud_check": NodeCompleted, "credit_check": NodeRunning}, o.Nodes)
	assert.Equal(t, map[string]bool{"start": true, "to_credit": true, "to_fraud": true}, o.Edges)
}

func TestOverlayInEveryFormat(t *testing.T) {
	t.Parallel()
	g := demoGraph(t)
	r, events := waitingRun()
	o := OverlayOf(demoGraph(t), r, events)
	m := Mermaid(g, o)
	assert.Contains(t, m, "%% run run_1: waiting")
	assert.Contains(t, m, "class n_intake,n_credit__check,n_fraud__check,n_decide completed")
	assert.Contains(t, m, "class n_manager__approval waiting")
	assert.Contains(t, m, `n_decide ==>|"route == #quot;manual#quot;"| n_manager__approval`, "fired edges are thick")
	assert.Contains(t, m, `n_decide -->|"route != #quot;manual#quot;"| n_auto__approve`)

	d := DOT(g, o)
	assert.Contains(t, d, `"manager_approval" [label="manager approval (interrupt)", style="rounded,filled", fillcolor="#dbe9ff"`)
	assert.Contains(t, d, `"decide" -> "manager_approval" [label="route == \"manual\"", penwidth=2.5];`)

	text := Text(g, o)
	assert.Contains(t, text, "└─▶ manager_approval ⏸")
	assert.Contains(t, text, "credit_check ✓ + fraud_check ✓ ══▶ decide ✓   (join: waits for all)")
}

func TestTextDrawsAJoinRightAfterItsLastSource(t *testing.T) {
	t.Parallel()
	lines := strings.Split(Text(demoGraph(t), nil), "\n")
	join, decide := -1, -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "credit_check + fraud_check ══▶ decide"):
			join = i
		case l == "decide":
			decide = i
		}
	}
	require.Positive(t, join)
	assert.Equal(t, join+1, decide, "the join sits between the checks and decide's branches:\n%s", strings.Join(lines, "\n"))
}

func TestAnEdgeWithoutASourceIsDrawnInEveryFormat(t *testing.T) {
	t.Parallel()
	// A draft document may name no source for an edge; the compiler
	// reports it, and render still draws what the file says.
	g, err := graph.Parse([]byte(`{"schema_version": 1, "id": "draft",
	  "nodes": {"a": {"implementation": {"type": "module", "implementation": "x"}},
	            "b": {"implementation": {"type": "module", "implementation": "x"}}},
	  "edges": {"start": {"from": "$start", "to": "a"}, "loose": {"to": "b"}, "stray": {"from": "ghost", "to": "b"}}}`))
	require.NoError(t, err)
	require.Empty(t, g.Edges["loose"].From)
	for _, f := range Formats() {
		var out string
		require.NotPanics(t, func() { out, err = Render(f, g, nil) }, f)
		require.NoError(t, err)
		want := noSource
		if f == FormatMermaid {
			want = mermaidID(noSource) + " --> n_b"
		}
		assert.Contains(t, out, want, "%s draws the sourceless edge:\n%s", f, out)
	}
	text := Text(g, nil)
	assert.Contains(t, text, noSource+"\n  └─▶ b", "text draws the sourceless edge:\n%s", text)
	assert.Contains(t, text, "ghost\n  └─▶ b", "text draws an edge whose source is not a node:\n%s", text)
}

// Every format shows a node's policies, its attempt timeout as well as its
// retries, wherever the node is drawn: a join's target as much as an
// edge's.
func TestEveryFormatShowsANodesTimeoutAndRetries(t *testing.T) {
	t.Parallel()
	g, err := graph.New("policies").
		Node("fetch", "n.fetch", graph.Timeout(5000), graph.Retry(3, 200)).
		Node("check", "n.check", graph.Timeout(750)).
		Node("merge", "n.merge", graph.Label("Merge"), graph.Timeout(1200)).
		Edge("s_fetch", graph.Start, "fetch").
		Edge("s_check", graph.Start, "check").
		Join("both", []string{"fetch", "check"}, "merge").
		Edge("done", "merge", graph.Finish).
		Build()
	require.NoError(t, err)
	const fetch, check, merge = "retries: up to 3 attempts, 200ms backoff; timeout: 5000ms per attempt",
		"timeout: 750ms per attempt", "timeout: 1200ms per attempt"
	for _, f := range Formats() {
		out, err := Render(f, g, nil)
		require.NoError(t, err)
		for _, want := range []string{fetch, check, merge} {
			assert.Contains(t, out, want, "%s:\n%s", f, out)
		}
	}
	text := Text(g, nil)
	assert.Contains(t, text, "fetch + check ══▶ merge   (join: waits for all); \"Merge\"; "+merge+"\n")
}
