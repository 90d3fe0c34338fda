// Package scenario holds the spec §12 test nodes and graphs shared by the inline and durable test suites; it is not part of the public API.
package scenario

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
)

// The test nodes of spec §12 are registered under these references.
const (
	RefCopyInput           = "test.copy_input"
	RefEcho                = "test.echo"
	RefWriteValue          = "test.write_value"
	RefIncrement           = "test.increment"
	RefInterruptOnce       = "test.interrupt_once"
	RefInterruptWhileEmpty = "test.interrupt_while_empty"
	RefFlaky               = "test.flaky"
	RefAlwaysFails         = "test.always_fails"
	RefPanics              = "test.panics"
	RefExits               = "test.exits"
	RefAwaits              = "test.awaits"
	RefBadReturn           = "test.bad_return"
	RefBlocking            = "test.blocking"
)

// RegisterNodes registers every test node in registry. Each node calls
// record with its input before doing anything else, so a suite can see
// every attempt exactly as the node saw it.
func RegisterNodes(registry *node.Registry, record func(node.Input)) {
	reqString := schema.String().AsRequired()
	registry.
		// CopyInput writes {to: state[from]} (nil when from is absent).
		MustRegister(RefCopyInput, node.New(schema.Object(map[string]*schema.Schema{"from": reqString, "to": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				record(in)
				return node.Update(map[string]any{in.Config["to"].(string): in.State[in.Config["from"].(string)]}), nil
			})).
		// Echo writes nothing.
		MustRegister(RefEcho, node.New(schema.Object(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			return node.Update(nil), nil
		})).
		// WriteValue writes {field: value} for any portable value.
		MustRegister(RefWriteValue, node.New(schema.Object(map[string]*schema.Schema{"field": reqString}).AsOpen(),
			func(_ context.Context, in node.Input) (node.Output, error) {
				record(in)
				return node.Update(map[string]any{in.Config["field"].(string): in.Config["value"]}), nil
			})).
		// Increment writes (state[field] or 0) + 1.
		MustRegister(RefIncrement, node.New(schema.Object(map[string]*schema.Schema{"field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				record(in)
				f := in.Config["field"].(string)
				switch v := in.State[f].(type) {
				case float64:
					return node.Update(map[string]any{f: v + 1}), nil
				case int64:
					return node.Update(map[string]any{f: v + 1}), nil
				default:
					return node.Update(map[string]any{f: 1}), nil
				}
			})).
		// InterruptOnce asks (string schema) while the resume field is
		// absent, then copies it into the write field.
		MustRegister(RefInterruptOnce, node.New(schema.Object(map[string]*schema.Schema{"resume_field": reqString, "write_field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				record(in)
				resume := in.Config["resume_field"].(string)
				v, ok := in.State[resume]
				if !ok {
					return node.Interrupt(node.InterruptRequest{ResumeChannel: resume, Schema: schema.String()}), nil
				}
				return node.Update(map[string]any{in.Config["write_field"].(string): v}), nil
			})).
		// InterruptWhileEmpty asks (no schema) while the resume field is
		// null, [] or {}, then copies it.
		MustRegister(RefInterruptWhileEmpty, node.New(schema.Object(map[string]*schema.Schema{"resume_field": reqString, "write_field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				record(in)
				resume := in.Config["resume_field"].(string)
				v := in.State[resume]
				empty := v == nil
				switch x := v.(type) {
				case []any:
					empty = len(x) == 0
				case map[string]any:
					empty = len(x) == 0
				}
				if empty {
					return node.Interrupt(node.InterruptRequest{ResumeChannel: resume}), nil
				}
				return node.Update(map[string]any{in.Config["write_field"].(string): v}), nil
			})).
		// Flaky fails while attempt <= failures, then writes {field: value}.
		MustRegister(RefFlaky, node.New(schema.Object(map[string]*schema.Schema{
			"failures": schema.Float().AsRequired(), "field": reqString, "value": reqString,
		}), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			failures, _ := in.Config["failures"].(float64)
			if n, ok := in.Config["failures"].(int64); ok {
				failures = float64(n)
			}
			if float64(in.Task.Attempt) <= failures {
				return node.Output{}, fmt.Errorf("flaky attempt %d", in.Task.Attempt)
			}
			return node.Update(map[string]any{in.Config["field"].(string): in.Config["value"]}), nil
		})).
		MustRegister(RefAlwaysFails, node.New(schema.Object(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			return node.Output{}, errors.New("always_fails")
		})).
		MustRegister(RefPanics, node.New(schema.Object(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			panic("node exploded")
		})).
		// Exits kills its own goroutine, the Go analogue of an untrappable exit.
		MustRegister(RefExits, node.New(schema.Object(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			runtime.Goexit()
			return node.Output{}, nil
		})).
		// Awaits uses the reserved late-completion shape, unsupported here.
		MustRegister(RefAwaits, node.New(schema.Object(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			return node.Output{}, node.Permanent(errors.New("unsupported_await"))
		})).
		MustRegister(RefBadReturn, node.New(schema.Object(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			record(in)
			return node.Output{}, nil
		})).
		// Blocking waits until its deadline.
		MustRegister(RefBlocking, node.New(schema.Object(nil), func(ctx context.Context, in node.Input) (node.Output, error) {
			record(in)
			<-ctx.Done()
			return node.Output{}, ctx.Err()
		}))
}

// Config builds a node's config from alternating keys and values.
func Config(kv ...any) graph.RecordOption {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return graph.Config(m)
}

// MinimalLinear (ML): input value -> copy -> $finish, output result.
func MinimalLinear() *graph.Builder {
	return graph.New("minimal-linear").
		Input("value", schema.String(), graph.Required()).
		State("result", schema.String()).
		Node("copy", RefCopyInput, Config("from", "value", "to", "result")).
		Edge("edge_start_copy", graph.Start, "copy").
		Edge("edge_copy_finish", "copy", graph.Finish).
		Output("result", "")
}

// SimpleEdge (SE): $start -> writer -> reviewer -> $finish, output draft.
func SimpleEdge() *graph.Builder {
	return graph.New("simple-edge").
		Input("topic", schema.String(), graph.Required()).
		State("draft", schema.String()).
		State("review", schema.Map()).
		Node("writer", RefEcho).
		Node("reviewer", RefEcho).
		Edge("edge_start_writer", graph.Start, "writer").
		Edge("edge_writer_reviewer", "writer", "reviewer").
		Edge("edge_reviewer_finish", "reviewer", graph.Finish).
		Output("draft", "")
}

// FanOut (FO): $start -> source -> {left, right}; no finish edge.
func FanOut(id string) *graph.Builder {
	return graph.New(id).
		Input("value", schema.String()).
		State("left_out", schema.String()).
		State("right_out", schema.String()).
		Node("source", RefEcho).
		Node("left", RefEcho).
		Node("right", RefEcho).
		Edge("edge_start_source", graph.Start, "source").
		Edge("edge_source_left", "source", "left").
		Edge("edge_source_right", "source", "right")
}

// MultiSource (MS): FO + [left, right] -> combine -> $finish.
func MultiSource() *graph.Builder {
	return FanOut("multi-source-edge").
		Node("combine", RefEcho).
		Join("edge_combine_ready", []string{"left", "right"}, "combine").
		Edge("edge_combine_finish", "combine", graph.Finish)
}

// CycleCounter (CC): increment <-> decide until count == 10.0, with a
// superstep limit when withPolicy is set.
func CycleCounter(withPolicy bool, limit int) *graph.Builder {
	b := graph.New("cycle-counter").
		State("count", schema.Float(), graph.Default(0.0)).
		Node("increment", RefIncrement, Config("field", "count")).
		Node("decide", RefEcho).
		Edge("edge_start_increment", graph.Start, "increment").
		Edge("edge_increment_decide", "increment", "decide").
		Edge("edge_loop", "decide", "increment", graph.When(graph.Not(graph.Equals(graph.Path("count"), 10.0)))).
		Edge("edge_done", "decide", graph.Finish, graph.When(graph.Equals(graph.Path("count"), 10.0)))
	if withPolicy {
		b = b.MaxSupersteps(limit)
	}
	return b
}

// InterruptReview (IR): $start -> gate (asks for decision, writes applied) -> $finish.
func InterruptReview() *graph.Builder {
	return graph.New("interrupt-review").
		State("decision", schema.String()).
		State("applied", schema.String()).
		Node("gate", RefInterruptOnce, Config("resume_field", "decision", "write_field", "applied")).
		Edge("edge_start_gate", graph.Start, "gate").
		Edge("edge_gate_finish", "gate", graph.Finish)
}

// ParallelRetry: flaky and steady in one superstep, both to $finish.
func ParallelRetry(failures float64, maxAttempts, backoffMS int) *graph.Builder {
	return graph.New("parallel-retry").
		State("flaky_out", schema.String()).
		State("steady_out", schema.String()).
		Node("flaky", RefFlaky, Config("failures", failures, "field", "flaky_out", "value", "flaky done"),
			graph.Retry(maxAttempts, backoffMS)).
		Node("steady", RefWriteValue, Config("field", "steady_out", "value", "steady done")).
		Edge("edge_start_flaky", graph.Start, "flaky").
		Edge("edge_start_steady", graph.Start, "steady").
		Edge("edge_flaky_finish", "flaky", graph.Finish).
		Edge("edge_steady_finish", "steady", graph.Finish).
		Output("flaky_out", "").
		Output("steady_out", "")
}

// RetryThenContinue: $start -> flaky (fails twice) -> $finish.
func RetryThenContinue(maxAttempts, backoffMS int) *graph.Builder {
	return graph.New("retry-then-continue").
		State("out", schema.String()).
		Node("flaky", RefFlaky, Config("failures", 2.0, "field", "out", "value", "done"), graph.Retry(maxAttempts, backoffMS)).
		Edge("edge_start_flaky", graph.Start, "flaky").
		Edge("edge_flaky_finish", "flaky", graph.Finish).
		Output("out", "")
}

// SingleNode: $start -> node (ref) -> $finish with optional node options.
func SingleNode(id, ref string, opts ...graph.RecordOption) *graph.Builder {
	return graph.New(id).
		State("out", schema.String()).
		Node("node", ref, opts...).
		Edge("edge_start_node", graph.Start, "node").
		Edge("edge_node_finish", "node", graph.Finish)
}
