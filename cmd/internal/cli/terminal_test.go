package cli

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
)

// TestTextOutputNeverWritesTerminalControls: ids and values come from
// whoever started a run or wrote a node, so text output shows their
// control characters (an ANSI escape that would retitle or clear the
// reader's terminal, a carriage return that would overwrite a line) as
// visible escapes instead of writing them raw; JSON keeps the same value.
func TestTextOutputNeverWritesTerminalControls(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	evil := "run_\x1b]0;owned\a\x1b[2J\r\u009b31m"
	c.ok("runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--run-id", evil)
	c.ok("runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":10.0}`, "--run-id", "run_\x1b[0a")
	forged := "run_b\nrun_forged  loan-review@0  done"
	c.ok("runs", "start", demo.GraphID, "--input", `{"customer":"Eve","amount":10.0}`, "--run-id", forged)

	clean := func(what string, res result) {
		t.Helper()
		for _, out := range []string{res.stdout, res.stderr} {
			assert.False(t, strings.ContainsAny(out, "\x1b\a\r\u009b"), "%s wrote a control character: %q", what, out)
		}
	}
	res := c.ok("runs", "list")
	clean("runs list", res)
	assert.NotContains(t, res.stdout, "\nrun_forged", "a newline in an id starts no row of its own")
	assert.NotContains(t, c.ok("runs", "show", forged).stdout, "\nrun_forged")
	clean("runs list (cursor line)", c.ok("runs", "list", "--limit", "1"))
	res = c.ok("runs", "show", evil)
	clean("runs show", res)
	assert.Contains(t, res.stdout, `\u001b]0;owned`, "the id is still shown")
	clean("runs events (more line)", c.ok("runs", "events", evil, "--limit", "1"))
	clean("events tail", c.ok("events", "tail", evil))
	clean("runs cancel", c.ok("runs", "cancel", evil))
	clean("runs retry", c.ok("runs", "retry", evil))
	clean("runs show (missing)", c.fails(ExitNotFound, "runs", "show", evil+"x"))
	res = c.run("runs", "show", evil+"\u009b", "--json")
	assert.Equal(t, ExitNotFound, res.code)
	clean("runs show (missing, --json)", res)

	var shown runJSON
	c.okJSON(&shown, "runs", "show", evil)
	require.Equal(t, evil, shown.RunID, "JSON output keeps the id as it is")
}

// TestRunsShowTellsWhyARunFailed: the failure's details (each failed
// node's own error) are what says why a run failed; the text form shows
// them as the JSON form does, not only the generic failure message.
func TestRunsShowTellsWhyARunFailed(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)
	reg := node.NewRegistry().MustRegister("acme.fail", node.New(nil,
		func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, errors.New("ledger unreachable")
		}))
	_, r := appNodeRun(t, db, sch, reg, graph.New("acme-fail").
		State("out", schema.String()).
		Node("ask", "acme.fail"))

	var shown runJSON
	c.okJSON(&shown, "runs", "show", r.ID)
	require.NotNil(t, shown.Failure)
	require.Contains(t, compactJSON(shown.Failure.Details), "ledger unreachable")
	assert.Contains(t, c.ok("runs", "show", r.ID).stdout, "ledger unreachable")
}

// TestRunsAwaitSaysWhyARunFailedAndWhatAWaitingRunWaitsFor: the text form
// of an awaited run's outcome is enough to act on without a second
// command: a failed run's node errors, a waiting run's open interrupts
// with the command that answers them.
func TestRunsAwaitSaysWhyARunFailedAndWhatAWaitingRunWaitsFor(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)
	reg := node.NewRegistry().MustRegister("acme.fail", node.New(nil,
		func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, errors.New("ledger unreachable")
		}))
	_, failed := appNodeRun(t, db, sch, reg, graph.New("acme-fail").
		State("out", schema.String()).
		Node("ask", "acme.fail"))
	out := c.ok("runs", "await", failed.ID).stdout
	assert.Contains(t, out, "failure: node_failed")
	assert.Contains(t, out, "ledger unreachable")

	c, _, waiting := ownNodesRun(t)
	out = c.ok("runs", "await", waiting.ID).stdout
	assert.Contains(t, out, "run "+waiting.ID+": waiting\n")
	assert.Contains(t, out, "interrupt question of node ask")
	assert.Contains(t, out, "docket interrupts resolve "+waiting.ID+" question --string TEXT\n",
		"a string answer is not JSON: the command gives it with --string")
}

// TestAwaitedInterruptsSayHowTheirAnswerIsGiven: the command printed for
// an open interrupt gives the answer with the flag that takes it, and an
// enum's values, so that pasting it with a value works the first time.
func TestAwaitedInterruptsSayHowTheirAnswerIsGiven(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)
	for _, tc := range []struct {
		schema *schema.Schema
		want   string
		kind   string // the ANSWER column of interrupts list and runs show
	}{
		{schema.Enum("approved", "rejected"), `--string TEXT (one of "approved", "rejected")`, `one of "approved", "rejected"`},
		{schema.Enum(1, 2), `--value JSON (one of 1, 2)`, `one of 1, 2`},
		{schema.Float(), `--value JSON`, `float`},
	} {
		ask := tc.schema
		reg := node.NewRegistry().MustRegister("acme.ask", node.New(nil,
			func(context.Context, node.Input) (node.Output, error) {
				return node.Interrupt(node.InterruptRequest{ID: "decision", ResumeChannel: "decision", Schema: ask}), nil
			}))
		_, r := appNodeRun(t, db, sch, reg, graph.New("acme-decide").
			State("decision", ask).
			State("out", schema.String()).
			Node("ask", "acme.ask"))
		out := c.ok("runs", "await", r.ID).stdout
		assert.Contains(t, out, "docket interrupts resolve "+r.ID+" decision "+tc.want+"\n")

		// What the answer may be is shown where the open interrupts are.
		list := strings.Split(c.ok("interrupts", "list", r.ID).stdout, "\n")
		require.GreaterOrEqual(t, len(list), 2)
		assert.Contains(t, list[0], "ANSWER")
		assert.Contains(t, list[1], "  "+tc.kind+"  ")
		assert.Contains(t, c.ok("runs", "show", r.ID).stdout, "  "+tc.kind+"  ")
	}
}

// TestDoneRunsAlwaysHaveAnOutputInJSON: a script reads the output of a
// done run without checking for it, so a run of a graph that declares no
// outputs has "output": {}; a run that is not done has none.
func TestDoneRunsAlwaysHaveAnOutputInJSON(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)
	ctx := context.Background()
	reg := node.NewRegistry().MustRegister("acme.noop", node.New(nil,
		func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"note": "seen"}), nil
		}))
	e, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: reg})
	require.NoError(t, err)
	g, err := graph.New("acme-quiet").
		State("note", schema.String()).
		Node("noop", "acme.noop").
		Edge("edge_start_noop", graph.Start, "noop").
		Edge("edge_noop_finish", "noop", graph.Finish).
		Build()
	require.NoError(t, err)
	ref, err := e.SaveGraph(ctx, g)
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, nil)
	require.NoError(t, err)
	assert.NotContains(t, c.ok("runs", "show", r.ID, "--json").stdout, `"output"`, "a running run has no output yet")
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)

	for _, args := range [][]string{{"runs", "show", r.ID}, {"runs", "await", r.ID}} {
		var doc map[string]any
		require.NoError(t, jsonUnmarshal(c.ok(append(args, "--json")...).stdout, &doc))
		require.Equal(t, "done", doc["status"])
		assert.Equal(t, map[string]any{}, doc["output"], "docket %v", args)
	}
}

// TestAnAwaitThatTimesOutSaysWhyTheRunDidNotMove: a run no worker claimed,
// or one workers handed back for lack of its nodes, is said to be so when
// a wait for it runs out, rather than only that it is still running.
func TestAnAwaitThatTimesOutSaysWhyTheRunDidNotMove(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)

	// A worker without the graph's nodes hands its run back.
	ctx := context.Background()
	reg := node.NewRegistry().MustRegister("acme.step", node.New(nil,
		func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"out": "x"}), nil
		}))
	app, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: reg})
	require.NoError(t, err)
	g, err := graph.New("acme-own").State("out", schema.String()).Node("step", "acme.step").
		Edge("s", graph.Start, "step").Edge("f", "step", graph.Finish).Build()
	require.NoError(t, err)
	ref, err := app.SaveGraph(ctx, g)
	require.NoError(t, err)
	r, err := app.StartRun(ctx, ref, nil)
	require.NoError(t, err)
	lacking, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: node.NewRegistry()})
	require.NoError(t, err)
	_, err = lacking.DrainRuns(ctx, 0)
	require.ErrorIs(t, err, engine.ErrDrainStopped, "the run is handed back")

	res := c.fails(ExitTimeout, "runs", "await", r.ID, "--timeout", "10ms")
	assert.Contains(t, res.stderr, "workers handed it back 1 time(s)")
	assert.NotContains(t, res.stderr, "no worker has claimed it")

	// A run no worker claimed.
	c.ok("graph", "publish", "--example")
	res = c.fails(ExitTimeout, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "10ms")
	assert.Contains(t, res.stderr, "no worker has claimed it")
	assert.Contains(t, res.stdout, "started, not awaited to its end")
}
