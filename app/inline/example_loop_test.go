package inline_test

import (
	"context"
	"fmt"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// An agentic session: a model drafts an answer, a person approves it or
// asks for a revision (at most three drafts), then two tools run side by
// side and a join summarizes. The engine runs the same graph durably;
// only the driver differs.
//
// The review node asks again on every pass of the loop. Its resume field
// still holds the answer to the previous draft when a new draft arrives,
// so "is the decision set?" is not enough: the decision is current when
// its field was written at least as often as the draft's (every draft
// gets one answer), which Task.SourceVersions tells. Each question gets a
// new interrupt ID, since an ID may be used once per run.
//
// Guards have no "less than": the loop is bounded by the draft field's
// version (how many times it was written), and max_supersteps bounds the
// run whatever the guards say.
func Example_agentSession() {
	ctx := context.Background()
	const maxDrafts = 3
	proceed := graph.Any(
		graph.Equals(graph.Path("decision"), "approve"),
		graph.VersionAtLeast("draft", maxDrafts),
	)
	g, err := graph.New("agent-session").
		Input("prompt", schema.String(), graph.Required()).
		State("draft", schema.String()).
		State("decision", schema.Enum("approve", "revise")).
		State("search", schema.String()).
		State("chars", schema.Integer()).
		State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, nil)).
		State("summary", schema.String()).
		Node("llm", "agent.llm").
		Node("review", "agent.review").
		Node("search", "agent.search").
		Node("count", "agent.count").
		Node("summarize", "agent.summarize").
		Edge("start", graph.Start, "llm").
		Edge("to_review", "llm", "review").
		Edge("revise", "review", "llm", graph.When(graph.Not(proceed))).
		Edge("to_search", "review", "search", graph.When(proceed)).   // fan-out:
		Edge("to_count", "review", "count", graph.When(proceed)).     //   both fire
		Join("tools_done", []string{"search", "count"}, "summarize"). // waits for both
		Edge("finish", "summarize", graph.Finish).
		Output("summary", "").
		Output("log", "").
		MaxSupersteps(30).
		Build()
	if err != nil {
		panic(err)
	}

	// fakeLLM stands in for a model call.
	fakeLLM := func(_ context.Context, prompt string, turn int64) (string, error) {
		return fmt.Sprintf("draft %d about %s", turn, prompt), nil
	}
	reg := node.NewRegistry()
	reg.MustRegister("agent.llm", node.New(nil, func(ctx context.Context, in node.Input) (node.Output, error) {
		// State values are portable: strings, int64, float64, []any, map[string]any.
		text, err := fakeLLM(ctx, in.State["prompt"].(string), in.Task.SourceVersions.Get("draft")+1)
		if err != nil {
			return node.Output{}, err // retried as the node's retry policy allows
		}
		return node.Update(map[string]any{"draft": text, "log": []string{"llm: " + text}}), nil
	}))
	reg.MustRegister("agent.review", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
		v := in.Task.SourceVersions
		if v.Get("decision") < v.Get("draft") { // no answer to this draft yet
			return node.Interrupt(node.InterruptRequest{
				ID:            fmt.Sprintf("review-%d", v.Get("draft")),
				ResumeChannel: "decision",
				// AsRequired: without it a null answer would be accepted.
				Schema:   schema.Enum("approve", "revise").AsRequired(),
				Metadata: map[string]any{"draft": in.State["draft"]},
			}), nil
		}
		return node.Update(map[string]any{"log": []string{"human: " + in.State["decision"].(string)}}), nil
	}))
	reg.MustRegister("agent.search", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
		return map[string]any{"search": "3 results about " + state["prompt"].(string)}, nil
	}))
	reg.MustRegister("agent.count", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
		return map[string]any{"chars": len(state["draft"].(string))}, nil
	}))
	reg.MustRegister("agent.summarize", node.Func(func(_ context.Context, state map[string]any) (map[string]any, error) {
		return map[string]any{"summary": fmt.Sprintf("%v; %v; %v characters", state["draft"], state["search"], state["chars"])}, nil
	}))

	r, _, err := inline.RunInline(ctx, g, map[string]any{"prompt": "durable agents"}, inline.WithRegistry(reg))
	answers := []string{"revise", "revise", "revise"} // never approved: the third draft goes on
	for err == nil && !r.Status.Terminal() {
		for _, in := range r.OpenInterrupts() {
			fmt.Println("asked", in.ID, "about", in.Metadata["draft"])
			r, _, err = inline.ResolveInterruptInline(ctx, g, r, in.ID, answers[0], inline.WithRegistry(reg))
			answers = answers[1:]
		}
	}
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.Output["summary"])
	for _, line := range r.Output["log"].([]any) {
		fmt.Println(line)
	}
	// Output:
	// asked review-1 about draft 1 about durable agents
	// asked review-2 about draft 2 about durable agents
	// asked review-3 about draft 3 about durable agents
	// done draft 3 about durable agents; 3 results about durable agents; 28 characters
	// llm: draft 1 about durable agents
	// human: revise
	// llm: draft 2 about durable agents
	// human: revise
	// llm: draft 3 about durable agents
	// human: revise
}
