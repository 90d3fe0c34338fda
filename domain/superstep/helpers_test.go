package superstep_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

var t0 = time.Date(2026, 7, 9, 12, 0, 0, 0, time.UTC)

// ---- graph documents ------------------------------------------------------

// doc builds a graph wire document; compile turns it into a runtime graph.
type doc struct{ m map[string]any }

func newDoc(id string) *doc {
	return &doc{m: map[string]any{
		"schema_version": int64(1), "id": id,
		"inputs": map[string]any{}, "fields": map[string]any{}, "outputs": map[string]any{},
		"nodes": map[string]any{}, "edges": map[string]any{},
	}}
}

func (d *doc) section(name string) map[string]any { return d.m[name].(map[string]any) }

func (d *doc) input(id string, s map[string]any, extra map[string]any) *doc {
	f := map[string]any{"kind": "input", "schema": s}
	maps.Copy(f, extra)
	d.section("inputs")[id] = f
	return d
}

func (d *doc) field(id string, s map[string]any, extra map[string]any) *doc {
	f := map[string]any{"kind": "state", "schema": s}
	maps.Copy(f, extra)
	d.section("fields")[id] = f
	return d
}

func (d *doc) node(id string, policies map[string]any) *doc {
	n := map[string]any{"implementation": map[string]any{"type": "module", "implementation": "test.node"}}
	if policies != nil {
		n["policies"] = policies
	}
	d.section("nodes")[id] = n
	return d
}

func (d *doc) nodes(ids ...string) *doc {
	for _, id := range ids {
		d.node(id, nil)
	}
	return d
}

// edge adds an edge; from is a string, or a []any for a barrier edge.
func (d *doc) edge(id string, from any, to string, guard map[string]any) *doc {
	e := map[string]any{"from": from, "to": to}
	if guard != nil {
		e["guard"] = guard
	}
	d.section("edges")[id] = e
	return d
}

func (d *doc) output(id, source string) *doc {
	d.section("outputs")[id] = map[string]any{"source": source}
	return d
}

func (d *doc) policy(key string, v any) *doc {
	p, _ := d.m["policies"].(map[string]any)
	if p == nil {
		p = map[string]any{}
		d.m["policies"] = p
	}
	p[key] = v
	return d
}

type anyImpl struct{}

func (anyImpl) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

func (d *doc) compile(t testing.TB, opts graph.Options) *graph.Compiled {
	t.Helper()
	g, err := graph.FromMap(d.m)
	require.NoError(t, err)
	opts.Profile = graph.ProfileRun
	c, err := graph.Compile(g, anyImpl{}, opts)
	require.NoError(t, err)
	return c
}

func str() map[string]any       { return map[string]any{"type": "string"} }
func float() map[string]any     { return map[string]any{"type": "float"} }
func integer() map[string]any   { return map[string]any{"type": "integer"} }
func boolean() map[string]any   { return map[string]any{"type": "boolean"} }
func objectMap() map[string]any { return map[string]any{"type": "map"} }
func listOf(item map[string]any) map[string]any {
	return map[string]any{"type": "list", "item": item}
}

func guardOp(op string, args ...any) map[string]any { return map[string]any{"op": op, "args": args} }
func pathRef(field string, segs ...any) map[string]any {
	return map[string]any{"$guard": guardOp("path", field, segs)}
}

// ---- node behaviours ------------------------------------------------------

type behavior func(a superstep.Activation) superstep.Result

func update(m map[string]any) superstep.Result {
	return superstep.Result{Outcome: superstep.OutcomeUpdate, Update: m}
}

func failure(reason string, retryable bool) superstep.Result {
	return superstep.Result{Outcome: superstep.OutcomeFailure, Reason: reason, Retryable: retryable}
}

func echo() behavior {
	return func(superstep.Activation) superstep.Result { return update(map[string]any{}) }
}

func write(field string, v any) behavior {
	return func(superstep.Activation) superstep.Result { return update(map[string]any{field: v}) }
}

func copyField(from, to string) behavior {
	return func(a superstep.Activation) superstep.Result {
		return update(map[string]any{to: a.Snapshot[from]})
	}
}

func alwaysFails() behavior {
	return func(superstep.Activation) superstep.Result { return failure("always_fails", true) }
}

// flaky fails retryably while attempt <= failures, then writes field=v.
func flaky(failures int, field string, v any) behavior {
	return func(a superstep.Activation) superstep.Result {
		if a.Attempt <= failures {
			return failure(fmt.Sprintf("flaky attempt %d", a.Attempt), true)
		}
		return update(map[string]any{field: v})
	}
}

// interruptOnce asks for resume (a string) while it is missing, then copies
// it into out.
func interruptOnce(resume, out string) behavior {
	return func(a superstep.Activation) superstep.Result {
		v, ok := a.Snapshot[resume]
		if !ok || v == nil {
			return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{
				ResumeChannel: resume, Schema: schema.String(), Metadata: map[string]any{"question": "approve?"},
			}}
		}
		return update(map[string]any{out: v})
	}
}

func increment(field string) behavior {
	return func(a superstep.Activation) superstep.Result {
		n, _ := a.Snapshot[field].(float64)
		return update(map[string]any{field: n + 1})
	}
}

// ---- driver -----------------------------------------------------------------

type call struct {
	node     string
	attempt  int
	key      string
	taskID   string
	hash     string
	snapshot map[string]any
}

// harness drives a run the way the inline runner does, with fabricated node
// results, and checks the moment invariants at every commit.
type harness struct {
	t        testing.TB
	g        *graph.Compiled
	nodes    map[string]behavior
	now      time.Time
	tick     time.Duration // clock advance per transition
	floor    time.Time
	ids      int
	calls    []call
	sleeps   []time.Duration
	moments  []*run.Moment
	maxSteps int
}

func newHarness(t testing.TB, g *graph.Compiled, nodes map[string]behavior) *harness {
	return &harness{t: t, g: g, nodes: nodes, now: t0, maxSteps: 200}
}

func (h *harness) env() superstep.Env {
	return superstep.Env{Now: h.now, ResumeFloor: h.floor, NewInterruptID: func() string {
		h.ids++
		return fmt.Sprintf("interrupt_%04d", h.ids)
	}}
}

func (h *harness) start(input map[string]any) *run.Run {
	h.t.Helper()
	m, err := superstep.Start(h.g, superstep.StartParams{RunID: "run_1", Input: input}, h.env())
	require.NoError(h.t, err)
	return h.accept(nil, m)
}

// accept checks m against the committed run it was proposed from and
// returns the new committed run.
func (h *harness) accept(prev *run.Run, m *run.Moment) *run.Run {
	h.t.Helper()
	checkMoment(h.t, prev, m)
	h.moments = append(h.moments, m)
	h.now = h.now.Add(h.tick)
	return m.Run
}

// tb is what checkMoment needs from *testing.T and *rapid.T alike.
type tb interface {
	require.TestingT
	Helper()
}

func checkMoment(t tb, prev *run.Run, m *run.Moment) {
	t.Helper()
	var seq, events int64
	if prev != nil {
		seq, events = prev.CheckpointSeq, prev.EventSeq
	}
	require.Equal(t, seq+1, m.Run.CheckpointSeq, "checkpoint seq advances by one")
	// Every moment is stamped with the time it was proposed at: the run's
	// update, each event and, on a terminal run, its end; the start stays.
	require.True(t, m.Run.UpdatedAt.Equal(m.ProposedAt), "updated_at %v is the proposal's time %v", m.Run.UpdatedAt, m.ProposedAt)
	if prev != nil && prev.CheckpointSeq > 0 {
		require.True(t, m.Run.StartedAt.Equal(prev.StartedAt), "started_at never changes")
	}
	if m.Run.Status.Terminal() {
		require.True(t, m.Run.FinishedAt.Equal(m.ProposedAt), "a terminal run ends at its proposal's time")
	}
	for _, e := range m.Events {
		require.True(t, e.Timestamp.Equal(m.ProposedAt), "event %s is stamped at the proposal's time", e.Type)
	}
	require.NotEmpty(t, m.Events)
	for i, e := range m.Events {
		require.Equal(t, events+int64(i)+1, e.Seq, "event seqs are contiguous")
		require.Equal(t, m.Run.ID, e.RunID)
	}
	last := m.Events[len(m.Events)-1]
	require.Equal(t, run.EventCheckpointCommitted, last.Type)
	require.Equal(t, m.Metadata, last.Metadata)
	require.Equal(t, last.Seq, m.Run.EventSeq)
	for _, e := range m.Events[:len(m.Events)-1] {
		require.NotEqual(t, run.EventCheckpointCommitted, e.Type)
	}
	require.NoError(t, m.Run.Validate())
}

// execute runs the activations of an execute step through the behaviours.
func (h *harness) execute(step superstep.Step) []superstep.Result {
	h.t.Helper()
	results := make([]superstep.Result, len(step.Activations))
	for i, a := range step.Activations {
		h.calls = append(h.calls, call{node: a.NodeID, attempt: a.Attempt, key: a.IdempotencyKey, taskID: a.TaskID, hash: a.InputHash(), snapshot: a.Snapshot})
		b, ok := h.nodes[a.NodeID]
		require.True(h.t, ok, "no behaviour for node %s", a.NodeID)
		results[i] = b(a)
	}
	return results
}

// advance proposes one moment (planning, executing and settling); nil when
// the step has nothing to commit.
func (h *harness) advance(r *run.Run) (superstep.Step, *run.Moment) {
	h.t.Helper()
	step, err := superstep.Advance(h.g, r, h.env())
	require.NoError(h.t, err)
	switch step.Kind {
	case superstep.Commit:
		return step, step.Moment
	case superstep.Execute:
		m, err := superstep.Settle(h.g, r, step, h.execute(step), h.env())
		require.NoError(h.t, err)
		return step, m
	}
	return step, nil
}

// drive advances until the run is terminal, waits or parks externally.
func (h *harness) drive(r *run.Run) *run.Run {
	h.t.Helper()
	for range h.maxSteps {
		if r.Status.Terminal() {
			return r
		}
		step, m := h.advance(r)
		if m == nil {
			switch step.Kind {
			case superstep.Park:
				h.sleeps = append(h.sleeps, step.Wait)
				h.floor = step.ResumeAt
				continue
			default:
				return r
			}
		}
		prev := r
		r = h.accept(prev, m)
		switch m.Disposition.Kind {
		case run.DispositionAt:
			h.sleeps = append(h.sleeps, max(0, m.Disposition.At.Sub(r.UpdatedAt)))
			h.floor = m.Disposition.At
		case run.DispositionExternal, run.DispositionTerminal:
			return r
		}
	}
	h.t.Fatalf("run did not settle in %d advances", h.maxSteps)
	return nil
}

func (h *harness) types() []run.CheckpointType {
	out := make([]run.CheckpointType, len(h.moments))
	for i, m := range h.moments {
		out[i] = m.CheckpointType
	}
	return out
}

func eventTypes(m *run.Moment) []run.EventType {
	out := make([]run.EventType, len(m.Events))
	for i, e := range m.Events {
		out[i] = e.Type
	}
	return out
}

func eventsOf(m *run.Moment, typ run.EventType) []run.Event {
	var out []run.Event
	for _, e := range m.Events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// Checkpoint type shorthands.
const (
	cpInit      = run.CheckpointRunInitialized
	cpStep      = run.CheckpointStepCommitted
	cpRetry     = run.CheckpointRetryScheduled
	cpInterrupt = run.CheckpointInterruptRequested
	cpResolved  = run.CheckpointInterruptResolved
	cpDone      = run.CheckpointRunCompleted
	cpFailed    = run.CheckpointRunFailed
	cpCancelled = run.CheckpointRunCancelled
)

// channelOf is r's channel id, the zero Channel when r does not hold it.
func channelOf(r *run.Run, id string) run.Channel {
	c, _ := r.Channels.Get(id)
	return c
}
