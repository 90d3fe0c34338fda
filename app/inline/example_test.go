package inline_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

// Example is the README's quickstart: define a node, build a graph, run it.
// Keep the two in step.
func Example() {
	ctx := context.Background()

	g, err := graph.New("greet").
		Input("name", schema.String(), graph.Required()).
		State("greeting", schema.String()).
		Node("hello", "example.hello").
		Edge("start", graph.Start, "hello").
		Edge("done", "hello", graph.Finish).
		Output("greeting", "greeting").
		Build()
	if err != nil {
		panic(err)
	}

	reg := node.NewRegistry()
	reg.MustRegister("example.hello", node.Func(func(ctx context.Context, state map[string]any) (map[string]any, error) {
		return map[string]any{"greeting": "hello, " + state["name"].(string)}, nil
	}))

	r, checkpoints, err := inline.RunInline(ctx, g, map[string]any{"name": "Ada"}, inline.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.Output["greeting"], len(checkpoints))
	// Output: done hello, Ada 3
}

// A node that honours its context can run on the caller's goroutine: the
// call then costs no goroutine handoff, and a node that overruns its
// timeout still fails its attempt with a timeout once it returns.
func ExampleOnCallingGoroutine() {
	g, err := graph.New("wait").
		State("answer", schema.String()).
		Node("ask", "example.ask", graph.Timeout(10)).
		Edge("start", graph.Start, "ask").
		Edge("done", "ask", graph.Finish).
		Output("answer", "answer").
		Build()
	if err != nil {
		panic(err)
	}
	reg := node.NewRegistry()
	reg.MustRegister("example.ask", node.Func(func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		<-ctx.Done() // the answer never comes; the attempt's deadline ends it
		return nil, ctx.Err()
	}))

	r, _, err := inline.RunInline(context.Background(), g, nil,
		inline.WithRegistry(reg), inline.OnCallingGoroutine())
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.Failure.Code, r.Failure.Details["errors"])
	// Output: failed node_failed map[ask:timeout: the attempt ran past its limit of 10ms (the node's timeout_ms)]
}

// The inline runner's interrupt round trip of docs/runtime.md: the run
// waits for an answer, ResolveInterruptInline folds it into the resume
// field, and the interrupting node runs again and sees it.
func ExampleResolveInterruptInline() {
	ctx := context.Background()
	g, err := graph.New("approve").
		State("approval", schema.Enum("approved", "rejected")).
		State("decision", schema.String()).
		Node("ask", "example.ask").
		Edge("start", graph.Start, "ask").
		Edge("done", "ask", graph.Finish).
		Output("decision", "decision").
		Build()
	if err != nil {
		panic(err)
	}
	reg := node.NewRegistry()
	reg.MustRegister("example.ask", node.New(nil, func(ctx context.Context, in node.Input) (node.Output, error) {
		answer, ok := in.State["approval"]
		if !ok {
			return node.Interrupt(node.InterruptRequest{ID: "approval", ResumeChannel: "approval",
				Schema: schema.Enum("approved", "rejected").AsRequired()}), nil
		}
		return node.Update(map[string]any{"decision": "manager " + answer.(string)}), nil
	}))

	r, _, err := inline.RunInline(ctx, g, nil, inline.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.Interrupts["approval"].Status)
	_, _, err = inline.ResolveInterruptInline(ctx, g, r, "approval", "maybe", inline.WithRegistry(reg))
	fmt.Println(errors.Is(err, superstep.ErrInvalidInput))
	r, _, err = inline.ResolveInterruptInline(ctx, g, r, "approval", "approved", inline.WithRegistry(reg))
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Status, r.Output["decision"])
	// Output:
	// waiting open
	// true
	// done manager approved
}
