package inline_test

import (
	"context"
	"fmt"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
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
