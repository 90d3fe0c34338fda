package cli

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/pgtest"
)

// ownNodesRun has an engine with a node the CLI does not know (as an
// application's own worker would) publish a graph of it on the CLI's
// schema and drive a run of it until it waits for its interrupt "question".
func ownNodesRun(t *testing.T) (*cli, *engine.Engine, *run.Run) {
	t.Helper()
	c, db, sch := onDatabase(t)
	ctx := context.Background()
	reg := node.NewRegistry().MustRegister("acme.ask", node.New(schema.Object(map[string]*schema.Schema{"topic": schema.String()}),
		func(_ context.Context, in node.Input) (node.Output, error) {
			if answer, ok := in.State["answer"]; ok {
				return node.Update(map[string]any{"out": answer}), nil
			}
			return node.Interrupt(node.InterruptRequest{ID: "question", ResumeChannel: "answer", Schema: schema.String()}), nil
		}))
	e, r := appNodeRun(t, db, sch, reg, graph.New("acme-review").
		State("answer", schema.String()).
		State("out", schema.String()).
		Node("ask", "acme.ask", graph.Config(map[string]any{"topic": "refund"})))
	r, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusWaiting, r.Status)
	return c, e, r
}

// appNodeRun runs, on a manual engine of the CLI's schema, one run of the
// graph b declares around its only node "ask" (started from graph.Start,
// ending at graph.Finish, with the output "out"), whose implementation
// only reg (the application, not the CLI) registers, until it rests.
func appNodeRun(t *testing.T, db *pgtest.Database, sch string, reg *node.Registry, b *graph.Builder) (*engine.Engine, *run.Run) {
	t.Helper()
	e, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: reg})
	require.NoError(t, err)
	g, err := b.Edge("edge_start_ask", graph.Start, "ask").
		Edge("edge_ask_finish", "ask", graph.Finish).
		Output("out", "").
		Build()
	require.NoError(t, err)
	return e, startAndDrain(t, e, g)
}

// startAndDrain publishes g on e, starts a run of it without input and
// drives it until it rests.
func startAndDrain(t *testing.T, e *engine.Engine, g *graph.Graph) *run.Run {
	t.Helper()
	ctx := context.Background()
	ref, err := e.SaveGraph(ctx, g)
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, nil)
	require.NoError(t, err)
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	return r
}

// TestInterruptsResolveAnswersARunOfNodesTheCLIDoesNotKnow: an answer runs
// no node, so the CLI answers the interrupts of any workflow, not only of
// the example graph; the interrupt's schema still judges the answer.
func TestInterruptsResolveAnswersARunOfNodesTheCLIDoesNotKnow(t *testing.T) {
	t.Parallel()
	c, e, r := ownNodesRun(t)
	var open []interruptJSON
	c.okJSON(&open, "interrupts", "list", r.ID)
	require.Len(t, open, 1)
	c.fails(ExitUsage, "interrupts", "resolve", r.ID, "question", "--value", "42")
	res := c.fails(ExitUsage, "interrupts", "resolve", r.ID, "question", "--value", "yes")
	assert.Contains(t, res.stderr, "not valid JSON")
	assert.Contains(t, res.stderr, "a plain string is given with --string yes", "the answer was meant as a string")
	res = c.fails(ExitUsage, "interrupts", "resolve", r.ID, "question", "--value", `{"a":`)
	assert.NotContains(t, res.stderr, "--string", "malformed JSON was meant as JSON")
	c.fails(ExitNotFound, "interrupts", "resolve", r.ID, "no-such-interrupt", "--string", "yes")
	var resolved runJSON
	c.okJSON(&resolved, "interrupts", "resolve", r.ID, "question", "--string", "yes")
	assert.Equal(t, "running", string(resolved.Status))
	c.fails(ExitConflict, "interrupts", "resolve", r.ID, "question", "--string", "again")

	ctx := context.Background()
	_, err := e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	done, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
	assert.Equal(t, "yes", done.Output["out"], "the node saw the CLI's answer")
}

// TestInterruptsResolvePrintsTheAnswerCanonically: the text confirmation
// writes the answer as JSON output does, so a float answer keeps its ".0"
// and is not shown as the integer 4, a value of another type.
func TestInterruptsResolvePrintsTheAnswerCanonically(t *testing.T) {
	t.Parallel()
	c, db, sch := onDatabase(t)
	reg := node.NewRegistry().MustRegister("acme.score", node.New(nil,
		func(_ context.Context, in node.Input) (node.Output, error) {
			if score, ok := in.State["score"]; ok {
				return node.Update(map[string]any{"out": score}), nil
			}
			return node.Interrupt(node.InterruptRequest{ID: "score", ResumeChannel: "score", Schema: schema.Float()}), nil
		}))
	_, r := appNodeRun(t, db, sch, reg, graph.New("acme-score").
		State("score", schema.Float()).
		State("out", schema.Float()).
		Node("ask", "acme.score"))

	res := c.ok("interrupts", "resolve", r.ID, "score", "--value", "4.0")
	assert.Contains(t, res.stdout, "resolved with 4.0;")
}

// branchInterruptRun drives, on a manual engine of the CLI's schema, a run
// whose branch "ask" opens the interrupt "question" while its other
// branch (prep, then slow) is still at work: slow fails and waits an hour
// to retry, so the run stays running with the interrupt open.
func branchInterruptRun(t *testing.T) (*cli, *engine.Engine, *run.Run) {
	t.Helper()
	c, db, sch := onDatabase(t)
	ctx := context.Background()
	reg := node.NewRegistry().
		MustRegister("acme.ask", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
			if answer, ok := in.State["answer"]; ok {
				return node.Update(map[string]any{"out": answer}), nil
			}
			return node.Interrupt(node.InterruptRequest{ID: "question", ResumeChannel: "answer", Schema: schema.String()}), nil
		})).
		MustRegister("acme.prep", node.New(nil, func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"prepared": "yes"}), nil
		})).
		MustRegister("acme.slow", node.New(nil, func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, errors.New("ledger busy")
		}))
	e, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: reg})
	require.NoError(t, err)
	g, err := graph.New("acme-branches").
		State("answer", schema.String()).
		State("prepared", schema.String()).
		State("out", schema.String()).
		Node("ask", "acme.ask").
		Node("prep", "acme.prep").
		Node("slow", "acme.slow", graph.Retry(3, 3_600_000)).
		Edge("edge_start_ask", graph.Start, "ask").
		Edge("edge_start_prep", graph.Start, "prep").
		Edge("edge_prep_slow", "prep", "slow").
		Edge("edge_ask_finish", "ask", graph.Finish).
		Edge("edge_slow_finish", "slow", graph.Finish).
		Output("out", "").
		Build()
	require.NoError(t, err)
	r, err := e.FetchRun(ctx, startAndDrain(t, e, g).ID)
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, r.Status, "the slow branch is still at work")
	require.Equal(t, run.InterruptOpen, r.Interrupts["question"].Status)
	return c, e, r
}

// TestInterruptsListShowsOpenInterruptsOfRunningRuns: an interrupt one
// branch opened while another branch still works can be answered, so the
// list without a run id shows it, not only those of waiting runs.
func TestInterruptsListShowsOpenInterruptsOfRunningRuns(t *testing.T) {
	t.Parallel()
	c, _, r := branchInterruptRun(t)
	var open []interruptJSON
	c.okJSON(&open, "interrupts", "list")
	require.Len(t, open, 1)
	assert.Equal(t, r.ID, open[0].RunID)
	assert.Equal(t, "question", open[0].ID)
	assert.Contains(t, c.ok("interrupts", "list").stdout, "question")

	var resolved runJSON
	c.okJSON(&resolved, "interrupts", "resolve", r.ID, "question", "--string", "yes")
	c.okJSON(&open, "interrupts", "list")
	assert.Empty(t, open, "an answered interrupt is no longer listed")
}

// TestInterruptsListFindsAnOlderRunBelowManyNewerOnes: the list without a
// run id shows an older run's open interrupt with the default --limit,
// however many newer running runs have none.
func TestInterruptsListFindsAnOlderRunBelowManyNewerOnes(t *testing.T) {
	t.Parallel()
	c, e, r := branchInterruptRun(t)
	ctx := context.Background()
	g, err := graph.New("acme-busy").
		State("out", schema.String()).
		Node("prep", "acme.prep").
		Edge("edge_start_prep", graph.Start, "prep").
		Edge("edge_prep_finish", "prep", graph.Finish).
		Build()
	require.NoError(t, err)
	ref, err := e.SaveGraph(ctx, g)
	require.NoError(t, err)
	for range 60 { // more than the default --limit of 50, never driven
		_, err := e.StartRun(ctx, ref, nil)
		require.NoError(t, err)
	}

	var open []interruptJSON
	res := c.ok("interrupts", "list", "--json")
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &open), res.stdout)
	require.Len(t, open, 1)
	assert.Equal(t, r.ID, open[0].RunID)
	assert.Equal(t, "question", open[0].ID)
	assert.NotContains(t, res.stderr, "raise --limit", "no run with an open interrupt was left out")
}

// TestInterruptsOfAFinishedRunAreClosed: a finished run takes no answer,
// so an interrupt it never had answered is shown closed, not open, and
// answering it is a conflict that says why.
func TestInterruptsOfAFinishedRunAreClosed(t *testing.T) {
	t.Parallel()
	c, _, r := ownNodesRun(t)
	c.ok("runs", "cancel", r.ID)

	var shown runJSON
	c.okJSON(&shown, "runs", "show", r.ID)
	require.Len(t, shown.Interrupts, 1)
	assert.Equal(t, "closed", shown.Interrupts[0].Status)
	assert.Regexp(t, `question\s+ask\s+closed`, c.ok("runs", "show", r.ID).stdout)

	var open []interruptJSON
	c.okJSON(&open, "interrupts", "list", r.ID)
	assert.Empty(t, open)

	res := c.fails(ExitConflict, "interrupts", "resolve", r.ID, "question", "--string", "yes")
	assert.Contains(t, res.stderr, "is cancelled")
}

// TestRunsStartStartsARunOfNodesTheCLIDoesNotKnow: starting a run runs no
// node, so the CLI starts runs of any published workflow, not only of the
// example graph; the graph's input schema still judges the input, and the
// application's worker drives the run.
func TestRunsStartStartsARunOfNodesTheCLIDoesNotKnow(t *testing.T) {
	t.Parallel()
	c, e, r := ownNodesRun(t)
	c.fails(ExitUsage, "runs", "start", r.GraphID, "--input", `{"ticket":"T-1"}`)
	var started runJSON
	c.okJSON(&started, "runs", "start", r.GraphID)
	assert.Equal(t, "running", string(started.Status))
	assert.Equal(t, r.GraphHash, started.GraphHash)

	ctx := context.Background()
	_, err := e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	second, err := e.FetchRun(ctx, started.RunID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusWaiting, second.Status, "the application's worker drove the run the CLI started")
}

// TestRunsShowStateShowsTheWrittenFieldsOnlyWhenAsked: whoever answers an
// interrupt may need the run's state; it is shown with --state only.
func TestRunsShowStateShowsTheWrittenFieldsOnlyWhenAsked(t *testing.T) {
	t.Parallel()
	c, _, r := branchInterruptRun(t)
	var shown map[string]any
	require.NoError(t, jsonUnmarshal(c.ok("runs", "show", r.ID, "--json").stdout, &shown))
	assert.NotContains(t, shown, "state")
	assert.NotContains(t, c.ok("runs", "show", r.ID).stdout, "prepared")

	var withState runJSON
	c.okJSON(&withState, "runs", "show", r.ID, "--state")
	assert.Equal(t, jsonMap{"prepared": "yes"}, withState.State, "the written field, not the unwritten answer or out")
	assert.Regexp(t, `state\s+\{"prepared":"yes"\}`, c.ok("runs", "show", r.ID, "--state").stdout)
}

// TestRunsAwaitUntilFinishedWaitsThroughInterrupts: a script awaiting the
// end of a run whose question a person answers elsewhere gets its end, not
// the waiting run.
func TestRunsAwaitUntilFinishedWaitsThroughInterrupts(t *testing.T) {
	t.Parallel()
	c, e, r := ownNodesRun(t)
	c.fails(ExitTimeout, "runs", "await", r.ID, "--until-finished", "--timeout", "50ms")

	awaited := make(chan result, 1)
	go func() { awaited <- c.run("runs", "await", r.ID, "--until-finished", "--timeout", "1m", "--json") }()
	c.ok("interrupts", "resolve", r.ID, "question", "--string", "yes")
	_, err := e.DrainRuns(context.Background(), 0)
	require.NoError(t, err)
	res := <-awaited
	require.Equal(t, ExitOK, res.code, res.stderr)
	var done runJSON
	require.NoError(t, jsonUnmarshal(res.stdout, &done))
	assert.Equal(t, run.StatusDone, done.Status)
	assert.Equal(t, jsonMap{"out": "yes"}, done.Output)
}
