package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

// The loop docs/runtime.md shows for awaiting a run that asks runs a run
// with two questions to its end, and the page shows exactly this code.
func TestRuntimeDocsAwaitLoopDrivesARunThatAsksToItsEnd(t *testing.T) {
	t.Parallel()
	nodes := node.NewRegistry()
	nodes.MustRegister("doc.ask", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
		answers, _ := in.State["answers"].([]any)
		if len(answers) < 2 {
			return node.Interrupt(node.InterruptRequest{
				ID: "question_" + string(rune('a'+len(answers))), ResumeChannel: "answers",
			}), nil
		}
		return node.Update(map[string]any{"summary": len(answers)}), nil
	}))
	g, err := graph.New("doc-asks").
		State("answers", schema.List(schema.String()), graph.Reducer("append", nil)).
		State("summary", schema.Integer()).
		Node("ask", "doc.ask").
		Edge("start", graph.Start, "ask").
		Edge("again", "ask", "ask", graph.When(graph.Not(graph.Exists(graph.Path("summary"))))).
		Output("summary", "summary").
		MaxSupersteps(10).
		Build()
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{
		Backend: memory.New(memory.Options{}), Nodes: nodes,
		Dispatcher: engine.DispatcherConfig{PollInterval: 10 * time.Millisecond},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, eng.Start(ctx))
	t.Cleanup(func() { _ = eng.Stop(context.Background()) })
	ref, err := eng.SaveGraph(ctx, g)
	require.NoError(t, err)
	r, err := eng.StartRun(ctx, ref, nil)
	require.NoError(t, err)

	answerFor := func(in run.Interrupt) any { return "answer to " + in.ID }
	err = awaitLoop(ctx, eng, r, answerFor, &r)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, r.Status)
	assert.EqualValues(t, 2, r.Output["summary"])

	doc, err := os.ReadFile("../../docs/runtime.md")
	require.NoError(t, err)
	src, err := os.ReadFile("runtime_doc_test.go")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(src), "\t// runtime.md begin\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "\t// runtime.md end\n")
	require.True(t, ok)
	var want strings.Builder
	for _, line := range strings.SplitAfter(block, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	assert.Contains(t, string(doc), "```go\n"+want.String()+"```",
		"docs/runtime.md's await loop must match awaitLoop in app/engine/runtime_doc_test.go")
}

// awaitLoop is the loop of docs/runtime.md; it leaves the last run in out.
func awaitLoop(ctx context.Context, eng *engine.Engine, r *run.Run, answerFor func(run.Interrupt) any, out **run.Run) error {
	var err error
	defer func() { *out = r }()
	// runtime.md begin
	for {
		r, err = eng.AwaitRun(ctx, r.ID, time.Minute)
		if err != nil || r.Status.Terminal() {
			break
		}
		for _, in := range r.OpenInterrupts() {
			if r, err = eng.ResolveInterrupt(ctx, r.ID, in.ID, answerFor(in)); err != nil {
				return err
			}
		}
	}
	// runtime.md end
	return err
}
