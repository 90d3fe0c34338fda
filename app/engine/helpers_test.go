package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/ports"
)

// Test node references (the nodes of spec §12 the durable scenarios use).
const (
	refCopyInput     = "test.copy_input"
	refEcho          = "test.echo"
	refIncrement     = "test.increment"
	refInterruptOnce = "test.interrupt_once"
	refFlaky         = "test.flaky"
	refAlwaysFails   = "test.always_fails"
	refGated         = "test.gated"
)

var epoch = time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)

// manualClock only moves when told to; the store and every engine of a
// test share one, so "now" agrees everywhere.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func newManualClock() *manualClock { return &manualClock{now: epoch} }

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// kit is one test's node registry and node-side recorders.
type kit struct {
	registry *node.Registry

	mu       sync.Mutex
	attempts map[string][]node.Task // by node id
	// gate holds test.gated attempts until released.
	gateStarted chan node.Task
	gateRelease chan struct{}
}

func newKit() *kit {
	k := &kit{
		registry:    node.NewRegistry(),
		attempts:    map[string][]node.Task{},
		gateStarted: make(chan node.Task, 64),
		gateRelease: make(chan struct{}),
	}
	k.register()
	return k
}

func (k *kit) record(in node.Input) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.attempts[in.Task.NodeID] = append(k.attempts[in.Task.NodeID], in.Task)
}

func (k *kit) attemptsOf(nodeID string) []node.Task {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]node.Task(nil), k.attempts[nodeID]...)
}

// releaseGate lets every held and future test.gated attempt finish.
func (k *kit) releaseGate() { close(k.gateRelease) }

func obj(fields map[string]*schema.Schema) *schema.Schema { return schema.Object(fields) }

func (k *kit) register() {
	reqString := schema.String().AsRequired()
	k.registry.
		MustRegister(refCopyInput, node.New(obj(map[string]*schema.Schema{"from": reqString, "to": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				return node.Update(map[string]any{in.Config["to"].(string): in.State[in.Config["from"].(string)]}), nil
			})).
		MustRegister(refEcho, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Update(nil), nil
		})).
		MustRegister(refIncrement, node.New(obj(map[string]*schema.Schema{"field": reqString}),
			func(_ context.Context, in node.Input) (node.Output, error) {
				k.record(in)
				f := in.Config["field"].(string)
				v, _ := in.State[f].(float64)
				return node.Update(map[string]any{f: v + 1}), nil
			})).
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
		MustRegister(refFlaky, node.New(obj(map[string]*schema.Schema{
			"failures": schema.Float().AsRequired(), "field": reqString, "value": reqString,
		}), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			failures, _ := in.Config["failures"].(float64)
			if float64(in.Task.Attempt) <= failures {
				return node.Output{}, fmt.Errorf("flaky attempt %d", in.Task.Attempt)
			}
			return node.Update(map[string]any{in.Config["field"].(string): in.Config["value"]}), nil
		})).
		MustRegister(refAlwaysFails, node.New(obj(nil), func(_ context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			return node.Output{}, errors.New("always_fails")
		})).
		// Gated reports its start and waits for the test to release it
		// (or for its deadline), then writes out = "gated".
		MustRegister(refGated, node.New(obj(nil), func(ctx context.Context, in node.Input) (node.Output, error) {
			k.record(in)
			k.gateStarted <- in.Task
			select {
			case <-k.gateRelease:
				return node.Update(map[string]any{"out": "gated"}), nil
			case <-ctx.Done():
				return node.Output{}, ctx.Err()
			}
		}))
}

func cfg(kv ...any) graph.RecordOption {
	m := map[string]any{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return graph.Config(m)
}

func build(t *testing.T, b *graph.Builder) *graph.Graph {
	t.Helper()
	g, err := b.Build()
	require.NoError(t, err)
	return g
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

// multiSource (MS): $start -> source -> {left, right} -> [left, right] ->
// combine -> $finish.
func multiSource() *graph.Builder {
	return graph.New("multi-source-edge").
		Input("value", schema.String()).
		Node("source", refEcho).
		Node("left", refEcho).
		Node("right", refEcho).
		Node("combine", refEcho).
		Edge("edge_start_source", graph.Start, "source").
		Edge("edge_source_left", "source", "left").
		Edge("edge_source_right", "source", "right").
		Join("edge_combine_ready", []string{"left", "right"}, "combine").
		Edge("edge_combine_finish", "combine", graph.Finish)
}

// cycleCounter (CC): increment <-> decide until count == 10.0.
func cycleCounter() *graph.Builder {
	return graph.New("cycle-counter").
		State("count", schema.Float(), graph.Default(0.0)).
		Node("increment", refIncrement, cfg("field", "count")).
		Node("decide", refEcho).
		Edge("edge_start_increment", graph.Start, "increment").
		Edge("edge_increment_decide", "increment", "decide").
		Edge("edge_loop", "decide", "increment", graph.When(graph.Not(graph.Equals(graph.Path("count"), 10.0)))).
		Edge("edge_done", "decide", graph.Finish, graph.When(graph.Equals(graph.Path("count"), 10.0))).
		MaxSupersteps(50)
}

// interruptReview (IR): $start -> gate (asks for decision, writes
// applied) -> $finish.
func interruptReview() *graph.Builder {
	return graph.New("interrupt-review").
		State("decision", schema.String()).
		State("applied", schema.String()).
		Node("gate", refInterruptOnce, cfg("resume_field", "decision", "write_field", "applied")).
		Edge("edge_start_gate", graph.Start, "gate").
		Edge("edge_gate_finish", "gate", graph.Finish)
}

// retrying: $start -> flaky (fails `failures` times) -> $finish.
func retrying(failures float64, maxAttempts, backoffMS int) *graph.Builder {
	return graph.New("retrying").
		State("out", schema.String()).
		Node("flaky", refFlaky, cfg("failures", failures, "field", "out", "value", "done"), graph.Retry(maxAttempts, backoffMS)).
		Edge("edge_start_flaky", graph.Start, "flaky").
		Edge("edge_flaky_finish", "flaky", graph.Finish).
		Output("out", "")
}

// single: $start -> node (ref) -> $finish.
func single(id, ref string, opts ...graph.RecordOption) *graph.Builder {
	return graph.New(id).
		State("out", schema.String()).
		Node("node", ref, opts...).
		Edge("edge_start_node", graph.Start, "node").
		Edge("edge_node_finish", "node", graph.Finish).
		Output("out", "")
}

// --- engines ---------------------------------------------------------------

// fastDispatch is a dispatcher configuration that polls often enough for
// tests that rely on polling alone.
func fastDispatch() engine.DispatcherConfig {
	return engine.DispatcherConfig{PollInterval: 5 * time.Millisecond, DrainTimeout: 5 * time.Second}
}

// startEngine builds and starts an engine, stopping it at cleanup.
func startEngine(t *testing.T, cfg engine.Config) *engine.Engine {
	t.Helper()
	e, err := engine.New(cfg)
	require.NoError(t, err)
	require.NoError(t, e.Start(context.Background()))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	return e
}

const awaitLimit = 10 * time.Second

// await waits for the run to wait or finish, failing the test otherwise.
func await(t *testing.T, c *engine.Client, runID string) *run.Run {
	t.Helper()
	r, err := c.AwaitRun(context.Background(), runID, awaitLimit)
	require.NoError(t, err)
	return r
}

// allEvents reads every retained event of a run.
func allEvents(t *testing.T, c *engine.Client, runID string) []run.Event {
	t.Helper()
	var out []run.Event
	after := int64(0)
	for {
		page, err := c.ListEvents(context.Background(), runID, ports.ListEventsParams{AfterSeq: after})
		require.NoError(t, err)
		out = append(out, page.Events...)
		if !page.HasMore {
			return out
		}
		after = page.NextAfterSeq
	}
}

// checkpointTypes lists the checkpoint types of a run's history, read from
// its checkpoint_committed events.
func checkpointTypes(events []run.Event) []run.CheckpointType {
	var out []run.CheckpointType
	for _, e := range events {
		if e.Type == run.EventCheckpointCommitted {
			out = append(out, run.CheckpointType(e.Metadata.Map()["checkpoint_type"].(string)))
		}
	}
	return out
}

// requireHistory checks what every durable history guarantees: contiguous
// event seqs from 1, one checkpoint_committed per checkpoint with
// contiguous checkpoint seqs, and exactly one terminal event when the run
// is terminal (none otherwise).
func requireHistory(t *testing.T, r *run.Run, events []run.Event) {
	t.Helper()
	require.NotEmpty(t, events)
	terminal := 0
	cp := int64(0)
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "event seqs are contiguous")
		switch e.Type {
		case run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled:
			terminal++
		case run.EventCheckpointCommitted:
			cp++
			require.EqualValues(t, cp, e.Metadata.Map()["checkpoint_seq"], "checkpoint seqs are contiguous")
		}
	}
	require.Equal(t, r.EventSeq, events[len(events)-1].Seq)
	require.Equal(t, r.CheckpointSeq, cp)
	if r.Status.Terminal() {
		require.Equal(t, 1, terminal, "exactly one terminal event")
	} else {
		require.Zero(t, terminal)
	}
}

// recorder is an observer collecting committed checkpoints.
type recorder struct {
	mu      sync.Mutex
	commits []observeCommit
}

type observeCommit struct {
	runID string
	seq   int64
	ctype run.CheckpointType
	owner ports.OwnerScope
}

func (r *recorder) seen() []observeCommit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]observeCommit(nil), r.commits...)
}

func (r *recorder) ObserveCheckpoint(_ context.Context, c observe.Commit) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.commits = append(r.commits, observeCommit{runID: c.Checkpoint.Run.ID, seq: c.Checkpoint.Seq, ctype: c.Checkpoint.Type, owner: c.Owner})
	return nil
}

// telemetryLog records emitted facts; waitFact blocks until one matches.
type telemetryLog struct {
	ports.NopTelemetry
	mu    sync.Mutex
	facts []fact
	added chan struct{}
}

type fact struct {
	name   string
	m      ports.Measurements
	labels map[string]string
}

func newTelemetryLog() *telemetryLog { return &telemetryLog{added: make(chan struct{}, 1)} }

func (l *telemetryLog) Emit(_ context.Context, name string, m ports.Measurements, labels ...ports.Label) {
	f := fact{name: name, m: m, labels: map[string]string{}}
	for _, lb := range labels {
		f.labels[lb.Key] = lb.Value
	}
	l.mu.Lock()
	l.facts = append(l.facts, f)
	l.mu.Unlock()
	select {
	case l.added <- struct{}{}:
	default:
	}
}

func (l *telemetryLog) matching(name string, labels map[string]string) []fact {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []fact
	for _, f := range l.facts {
		if f.name != name {
			continue
		}
		ok := true
		for k, v := range labels {
			if f.labels[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, f)
		}
	}
	return out
}

// waitFact waits until a fact with name and labels was emitted.
func (l *telemetryLog) waitFact(t *testing.T, name string, labels map[string]string) fact {
	t.Helper()
	deadline := time.After(awaitLimit)
	for {
		if fs := l.matching(name, labels); len(fs) > 0 {
			return fs[0]
		}
		select {
		case <-l.added:
		case <-time.After(5 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no %s fact with labels %v", name, labels)
		}
	}
}

// eventually polls cond every few milliseconds until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(awaitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitStarted waits for the next test.gated attempt to start.
func (k *kit) waitStarted(t *testing.T) node.Task {
	t.Helper()
	select {
	case task := <-k.gateStarted:
		return task
	case <-time.After(awaitLimit):
		t.Fatal("no gated attempt started")
		return node.Task{}
	}
}
