package inline_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// The test nodes of spec §12, registered under these references.
const (
	refCopyInput         = "test.copy_input"
	refEcho              = "test.echo"
	refWriteValue        = "test.write_value"
	refIncrement         = "test.increment"
	refInterruptOnce     = "test.interrupt_once"
	refInterruptWhileEmp = "test.interrupt_while_empty"
	refFlaky             = "test.flaky"
	refAlwaysFails       = "test.always_fails"
	refPanics            = "test.panics"
	refExits             = "test.exits"
	refAwaits            = "test.awaits"
	refBadReturn         = "test.bad_return"
	refBlocking          = "test.blocking"
)

var frozenNow = time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)

// attemptRecord is one node attempt as the node saw it.
type attemptRecord struct {
	NodeID         string
	Attempt        int
	IdempotencyKey string
	State          map[string]any
}

// kit is one test's registry, recorders and deterministic options.
type kit struct {
	t        *testing.T
	registry *node.Registry

	mu       sync.Mutex
	attempts []attemptRecord
	sleeps   []time.Duration
	ids      int
}

func newKit(t *testing.T) *kit {
	t.Helper()
	k := &kit{t: t, registry: node.NewRegistry()}
	k.registerTestNodes()
	return k
}

func (k *kit) record(in node.Input) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.attempts = append(k.attempts, attemptRecord{
		NodeID: in.Task.NodeID, Attempt: in.Task.Attempt, IdempotencyKey: in.Task.IdempotencyKey,
		State: value.Clone(in.State).(map[string]any),
	})
}

// attemptsOf returns the recorded attempts of one node, in call order.
func (k *kit) attemptsOf(nodeID string) []attemptRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []attemptRecord
	for _, a := range k.attempts {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	return out
}

func (k *kit) allAttempts() []attemptRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.attempts)
}

func (k *kit) recordedSleeps() []time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.sleeps)
}

// options are the deterministic defaults: the kit's registry, a frozen
// clock, a recording sleeper that never sleeps, and counting IDs.
func (k *kit) options(extra ...inline.Option) []inline.Option {
	base := []inline.Option{
		inline.WithRegistry(k.registry),
		inline.WithClock(func() time.Time { return frozenNow }),
		inline.WithSleeper(func(_ context.Context, d time.Duration) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.sleeps = append(k.sleeps, d)
			return nil
		}),
		inline.WithIDGenerator(func(prefix string) string {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.ids++
			return fmt.Sprintf("%s%d", prefix, k.ids)
		}),
	}
	return append(base, extra...)
}

func obj(fields map[string]*schema.Schema) *schema.Schema { return schema.Object(fields) }

func (k *kit) registerTestNodes() {
	reqString := schema.String().AsRequired()
	k.registry.
		// CopyInput writes {to: state[from]} (nil when from is absent).
		MustRegister(refCopyInput, node.New(obj(map[string]*schema.Schema{"from": reqString, "to": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				return node.Update(map[string]any{in.Config["to"].(string): in.State[in.Config["from"].(string)]}), nil
			})).
		// Echo writes nothing.
		MustRegister(refEcho, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Update(nil), nil
		})).
		// WriteValue writes {field: value} for any portable value.
		MustRegister(refWriteValue, node.New(obj(map[string]*schema.Schema{"field": reqString}).AsOpen(),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				return node.Update(map[string]any{in.Config["field"].(string): in.Config["value"]}), nil
			})).
		// Increment writes (state[field] or 0) + 1.
		MustRegister(refIncrement, node.New(obj(map[string]*schema.Schema{"field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
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
		MustRegister(refInterruptOnce, node.New(obj(map[string]*schema.Schema{"resume_field": reqString, "write_field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				resume := in.Config["resume_field"].(string)
				v, ok := in.State[resume]
				if !ok {
					return node.Interrupt(node.InterruptRequest{ResumeChannel: resume, Schema: schema.String()}), nil
				}
				return node.Update(map[string]any{in.Config["write_field"].(string): v}), nil
			})).
		// InterruptWhileEmpty asks (no schema) while the resume field is
		// null, [] or {}, then copies it.
		MustRegister(refInterruptWhileEmp, node.New(obj(map[string]*schema.Schema{"resume_field": reqString, "write_field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
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
		MustRegister(refFlaky, node.New(obj(map[string]*schema.Schema{
			"failures": schema.Float().AsRequired(), "field": reqString, "value": reqString,
		}), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			failures, _ := in.Config["failures"].(float64)
			if n, ok := in.Config["failures"].(int64); ok {
				failures = float64(n)
			}
			if float64(in.Task.Attempt) <= failures {
				return node.Output{}, fmt.Errorf("flaky attempt %d", in.Task.Attempt)
			}
			return node.Update(map[string]any{in.Config["field"].(string): in.Config["value"]}), nil
		})).
		MustRegister(refAlwaysFails, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Output{}, errors.New("always_fails")
		})).
		MustRegister(refPanics, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			panic("node exploded")
		})).
		// Exits kills its own goroutine, the Go analogue of an untrappable exit.
		MustRegister(refExits, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			runtime.Goexit()
			return node.Output{}, nil
		})).
		// Awaits uses the reserved late-completion shape, unsupported here.
		MustRegister(refAwaits, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Output{}, node.Permanent(errors.New("unsupported_await"))
		})).
		MustRegister(refBadReturn, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Output{}, nil
		})).
		// Blocking waits until its deadline.
		MustRegister(refBlocking, node.New(obj(nil), func(ctx context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			<-ctx.Done()
			return node.Output{}, ctx.Err()
		}))
}

// build finishes a builder, failing the test on builder errors.
func build(t *testing.T, b *graph.Builder) *graph.Graph {
	t.Helper()
	g, err := b.Build()
	require.NoError(t, err)
	return g
}

func (k *kit) compile(g *graph.Graph) *graph.Compiled {
	k.t.Helper()
	c, err := graph.Compile(g, k.registry, graph.Options{Profile: graph.ProfileRun})
	require.NoError(k.t, err)
	return c
}

func cfg(kv ...any) graph.RecordOption {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return graph.Config(m)
}

// --- the graphs of spec §12 ------------------------------------------------

// minimalLinear (ML): input value -> copy -> $finish, output result.
func minimalLinear() *graph.Builder {
	return graph.New("minimal-linear").
		Input("value", schema.String(), graph.Required()).
		State("result", schema.String()).
		Node("copy", refCopyInput, cfg("from", "value", "to", "result")).
		Edge("edge_start_copy", graph.Start, "copy").
		Edge("edge_copy_finish", "copy", graph.Finish).
		Output("result", "")
}

// simpleEdge (SE): $start -> writer -> reviewer -> $finish, output draft.
func simpleEdge() *graph.Builder {
	return graph.New("simple-edge").
		Input("topic", schema.String(), graph.Required()).
		State("draft", schema.String()).
		State("review", schema.Map()).
		Node("writer", refEcho).
		Node("reviewer", refEcho).
		Edge("edge_start_writer", graph.Start, "writer").
		Edge("edge_writer_reviewer", "writer", "reviewer").
		Edge("edge_reviewer_finish", "reviewer", graph.Finish).
		Output("draft", "")
}

// fanOut (FO): $start -> source -> {left, right}; no finish edge.
func fanOut(id string) *graph.Builder {
	return graph.New(id).
		Input("value", schema.String()).
		State("left_out", schema.String()).
		State("right_out", schema.String()).
		Node("source", refEcho).
		Node("left", refEcho).
		Node("right", refEcho).
		Edge("edge_start_source", graph.Start, "source").
		Edge("edge_source_left", "source", "left").
		Edge("edge_source_right", "source", "right")
}

// multiSource (MS): FO + [left, right] -> combine -> $finish.
func multiSource() *graph.Builder {
	return fanOut("multi-source-edge").
		Node("combine", refEcho).
		Join("edge_combine_ready", []string{"left", "right"}, "combine").
		Edge("edge_combine_finish", "combine", graph.Finish)
}

// cycleCounter (CC): increment <-> decide until count == 10.0.
func cycleCounter(withPolicy bool, limit int) *graph.Builder {
	b := graph.New("cycle-counter").
		State("count", schema.Float(), graph.Default(0.0)).
		Node("increment", refIncrement, cfg("field", "count")).
		Node("decide", refEcho).
		Edge("edge_start_increment", graph.Start, "increment").
		Edge("edge_increment_decide", "increment", "decide").
		Edge("edge_loop", "decide", "increment", graph.When(graph.Not(graph.Equals(graph.Path("count"), 10.0)))).
		Edge("edge_done", "decide", graph.Finish, graph.When(graph.Equals(graph.Path("count"), 10.0)))
	if withPolicy {
		b = b.MaxSupersteps(limit)
	}
	return b
}

// interruptReview (IR): $start -> gate (asks for decision, writes applied) -> $finish.
func interruptReview() *graph.Builder {
	return graph.New("interrupt-review").
		State("decision", schema.String()).
		State("applied", schema.String()).
		Node("gate", refInterruptOnce, cfg("resume_field", "decision", "write_field", "applied")).
		Edge("edge_start_gate", graph.Start, "gate").
		Edge("edge_gate_finish", "gate", graph.Finish)
}

// parallelRetry: flaky and steady in one superstep, both to $finish.
func parallelRetry(failures float64, maxAttempts, backoffMS int) *graph.Builder {
	return graph.New("parallel-retry").
		State("flaky_out", schema.String()).
		State("steady_out", schema.String()).
		Node("flaky", refFlaky, cfg("failures", failures, "field", "flaky_out", "value", "flaky done"),
			graph.Retry(maxAttempts, backoffMS)).
		Node("steady", refWriteValue, cfg("field", "steady_out", "value", "steady done")).
		Edge("edge_start_flaky", graph.Start, "flaky").
		Edge("edge_start_steady", graph.Start, "steady").
		Edge("edge_flaky_finish", "flaky", graph.Finish).
		Edge("edge_steady_finish", "steady", graph.Finish).
		Output("flaky_out", "").
		Output("steady_out", "")
}

// retryThenContinue: $start -> flaky (fails twice) -> $finish.
func retryThenContinue(maxAttempts, backoffMS int) *graph.Builder {
	return graph.New("retry-then-continue").
		State("out", schema.String()).
		Node("flaky", refFlaky, cfg("failures", 2.0, "field", "out", "value", "done"), graph.Retry(maxAttempts, backoffMS)).
		Edge("edge_start_flaky", graph.Start, "flaky").
		Edge("edge_flaky_finish", "flaky", graph.Finish).
		Output("out", "")
}

// singleNode: $start -> node (ref) -> $finish with optional node options.
func singleNode(id, ref string, opts ...graph.RecordOption) *graph.Builder {
	return graph.New(id).
		State("out", schema.String()).
		Node("node", ref, opts...).
		Edge("edge_start_node", graph.Start, "node").
		Edge("edge_node_finish", "node", graph.Finish)
}

// --- assertions ------------------------------------------------------------

func types(cps []run.Checkpoint) []run.CheckpointType {
	out := make([]run.CheckpointType, len(cps))
	for i, cp := range cps {
		out[i] = cp.Type
	}
	return out
}

// requireWellFormed checks what every accepted checkpoint sequence
// guarantees: contiguous checkpoint and event seqs, and a final
// checkpoint_committed event carrying the checkpoint's metadata.
func requireWellFormed(t *testing.T, cps []run.Checkpoint) {
	t.Helper()
	if len(cps) == 0 {
		return
	}
	nextEvent := cps[0].Events[0].Seq
	for i, cp := range cps {
		require.Equal(t, cps[0].Seq+int64(i), cp.Seq, "checkpoint seqs are contiguous")
		require.Equal(t, cp.Seq, cp.Run.CheckpointSeq)
		require.NotEmpty(t, cp.Events)
		committed := 0
		for _, e := range cp.Events {
			require.Equal(t, nextEvent, e.Seq, "event seqs are contiguous across checkpoints")
			require.Equal(t, cp.Run.ID, e.RunID)
			nextEvent++
			if e.Type == run.EventCheckpointCommitted {
				committed++
			}
		}
		last := cp.Events[len(cp.Events)-1]
		require.Equal(t, 1, committed, "one checkpoint_committed event per checkpoint")
		require.Equal(t, run.EventCheckpointCommitted, last.Type, "the checkpoint fact is last")
		require.Equal(t, cp.Metadata, last.Metadata)
		require.Equal(t, cp.Run.EventSeq, last.Seq)
		require.Equal(t, string(cp.Type), cp.Metadata["checkpoint_type"])
	}
}

func fieldValue(r *run.Run, field string) (any, bool) {
	c, ok := r.Channels[graph.StatePrefix+field]
	return c.Value, ok
}

func eventsOf(cps []run.Checkpoint, typ run.EventType) []run.Event {
	var out []run.Event
	for _, cp := range cps {
		for _, e := range cp.Events {
			if e.Type == typ {
				out = append(out, e)
			}
		}
	}
	return out
}

func one(cp run.Checkpoint) []run.Checkpoint { return []run.Checkpoint{cp} }

func completedNodes(cps []run.Checkpoint) []string {
	var out []string
	for _, e := range eventsOf(cps, run.EventNodeCompleted) {
		out = append(out, e.NodeID)
	}
	return out
}

func findCheckpoints(cps []run.Checkpoint, typ run.CheckpointType) []run.Checkpoint {
	var out []run.Checkpoint
	for _, cp := range cps {
		if cp.Type == typ {
			out = append(out, cp)
		}
	}
	return out
}

// portable normalizes an expected Go value so it compares equal to runtime
// values (int -> int64, []string -> []any).
func portable(t *testing.T, v any) any {
	t.Helper()
	n, err := value.Normalize(v)
	require.NoError(t, err)
	return n
}

func onlyKey[V any](t *testing.T, m map[string]V) (string, V) {
	t.Helper()
	require.Len(t, m, 1)
	for k, v := range m {
		return k, v
	}
	panic("unreachable")
}

func assertFailedWith(t *testing.T, r *run.Run, code string) {
	t.Helper()
	require.NotNil(t, r)
	require.Equal(t, run.StatusFailed, r.Status)
	require.NotNil(t, r.Failure)
	assert.Equal(t, code, r.Failure.Code)
}
