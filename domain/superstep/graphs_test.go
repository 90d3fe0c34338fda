package superstep_test

import (
	"testing"

	"github.com/docketgo/docket/domain/graph"
)

// The graphs of spec §12.

// mlGraph: input value:string!, field result, $start→copy→$finish.
func mlGraph(t testing.TB) *graph.Compiled {
	return newDoc("ml").
		input("value", str(), map[string]any{"required": true}).
		field("result", str(), nil).
		nodes("copy").
		edge("edge_start", "$start", "copy", nil).
		edge("edge_finish", "copy", "$finish", nil).
		output("result", "result").
		compile(t, graph.Options{})
}

func mlNodes() map[string]behavior {
	return map[string]behavior{"copy": copyField("value", "result")}
}

// seGraph: $start→writer→reviewer→$finish, output draft.
func seGraph(t testing.TB) *graph.Compiled {
	return newDoc("se").
		field("draft", str(), nil).
		nodes("writer", "reviewer").
		edge("edge_start", "$start", "writer", nil).
		edge("edge_review", "writer", "reviewer", nil).
		edge("edge_finish", "reviewer", "$finish", nil).
		output("draft", "draft").
		compile(t, graph.Options{})
}

// foDoc: $start→source→{left,right}.
func foDoc() *doc {
	return newDoc("fo").
		nodes("source", "left", "right").
		edge("edge_start", "$start", "source", nil).
		edge("edge_left", "source", "left", nil).
		edge("edge_right", "source", "right", nil)
}

// msGraph: FO + [left,right]→combine→$finish.
func msGraph(t testing.TB) *graph.Compiled {
	return foDoc().
		nodes("combine").
		edge("edge_combine_ready", []any{"left", "right"}, "combine", nil).
		edge("edge_finish", "combine", "$finish", nil).
		compile(t, graph.Options{})
}

// ccDoc: count float default 0.0; increment→decide; decide→increment while
// count != 10.0; decide→$finish when equal.
func ccDoc() *doc {
	done := guardOp("equals", pathRef("count"), 10.0)
	return newDoc("cc").
		field("count", float(), map[string]any{"default": 0.0}).
		nodes("increment", "decide").
		edge("edge_start", "$start", "increment", nil).
		edge("edge_decide", "increment", "decide", nil).
		edge("edge_loop", "decide", "increment", guardOp("not", done)).
		edge("edge_done", "decide", "$finish", done).
		output("count", "count")
}

func ccNodes() map[string]behavior {
	return map[string]behavior{"increment": increment("count"), "decide": echo()}
}

// irGraph: $start→gate(InterruptOnce decision→applied)→$finish.
func irGraph(t testing.TB) *graph.Compiled {
	return newDoc("ir").
		field("decision", str(), nil).
		field("applied", str(), nil).
		nodes("gate").
		edge("edge_start", "$start", "gate", nil).
		edge("edge_finish", "gate", "$finish", nil).
		output("applied", "applied").
		compile(t, graph.Options{})
}

func irNodes() map[string]behavior {
	return map[string]behavior{"gate": interruptOnce("decision", "applied")}
}

// parallelRetryDoc: $start fans out to flaky and steady.
func parallelRetryDoc(maxAttempts, backoffMS int64) *doc {
	return newDoc("parallel-retry").
		field("flaky_out", str(), nil).
		field("steady_out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": maxAttempts, "backoff_ms": backoffMS}}).
		nodes("steady").
		edge("edge_start_flaky", "$start", "flaky", nil).
		edge("edge_start_steady", "$start", "steady", nil).
		edge("edge_flaky_finish", "flaky", "$finish", nil).
		edge("edge_steady_finish", "steady", "$finish", nil).
		output("flaky_out", "flaky_out").
		output("steady_out", "steady_out")
}

func parallelRetryNodes(failures int) map[string]behavior {
	return map[string]behavior{
		"flaky":  flaky(failures, "flaky_out", "flaky done"),
		"steady": write("steady_out", "steady done"),
	}
}
