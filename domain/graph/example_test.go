package graph_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// Example_builder mirrors docs/graph.md; keep the two in step.
func Example_builder() {
	g, err := reviewLoop()
	if err != nil {
		panic(err)
	}
	_, err = graph.Compile(g, nil, graph.Options{})
	fmt.Println(err != nil)
	for _, d := range graph.Verify(g, nil, graph.Options{}) {
		if d.Severity == graph.SeverityError {
			fmt.Println(d.Code, graph.FormatPath(d.Path))
		}
	}
	// Output:
	// true
	// invalid_node_implementation /nodes/reviewer/implementation
	// invalid_node_implementation /nodes/writer/implementation
}

// Example_document holds the JSON example of docs/graph.md to the graph
// Example_builder builds: the same document, read from the page.
func Example_document() {
	page, err := os.ReadFile("../../docs/graph.md")
	if err != nil {
		panic(err)
	}
	_, rest, _ := strings.Cut(string(page), "\n```json\n")
	block, _, _ := strings.Cut(rest, "\n```\n")
	parsed, err := graph.Parse([]byte(block))
	if err != nil {
		panic(err)
	}
	built, err := reviewLoop()
	if err != nil {
		panic(err)
	}
	a, _ := json.Marshal(parsed)
	b, _ := json.Marshal(built)
	fmt.Println(string(a) == string(b))
	// Output:
	// true
}

// reviewLoop is the graph of docs/graph.md's builder example, as the page
// shows it.
func reviewLoop() (*graph.Graph, error) {
	return graph.New("review-loop").
		Input("topic", schema.String().WithConstraint("min_length", 1), graph.Required()).
		State("draft", schema.String()).
		State("log", schema.List(schema.String()), graph.Reducer(reducer.Append, map[string]any{"max_length": 50})).
		State("review", schema.Object(map[string]*schema.Schema{"status": schema.Enum("approved", "rejected")}).AsOpen()).
		Node("writer", "app.writer", graph.Timeout(1500), graph.Retry(3, 200)).
		Node("reviewer", "app.reviewer").
		Edge("edge_start", graph.Start, "writer").
		Edge("edge_review", "writer", "reviewer").
		Edge("edge_ok", "reviewer", graph.Finish, graph.When(graph.Equals(graph.Path("review", "status"), "approved"))).
		Output("final_draft", "draft").
		MaxSupersteps(20).
		Build()
}
