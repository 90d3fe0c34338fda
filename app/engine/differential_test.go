package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// The differential tests run each spec §12 scenario twice, through the
// inline runner (app/inline) and through the durable engine (ModeManual,
// DrainRuns) on the memory adapter and on PostgreSQL, driving signals the
// same way, and require the same computation: final run, every checkpoint
// (type, seq, time, metadata, retained events, the run it committed) and
// the node attempts (idempotency key, attempt, snapshot).
//
// Nothing is normalised away except what the durable path legitimately
// adds or represents differently, each named where it is handled:
//   - identity needs no normalisation: both paths get the same run id and a
//     counting id generator, so task ids, idempotency keys and interrupt
//     ids must match byte for byte;
//   - time needs none either: the durable side runs on a manual clock
//     shared with its store and the inline side on its own clock started at
//     the same instant; a park is served on both by moving the clock to its
//     wake (the inline sleeper; the durable driver moving the shared clock
//     to the stored wake_at before draining again), so every timestamp must
//     be equal. Times are compared as UTC instants;
//   - a drain-budget yield (park(immediate, drain_budget) instead of
//     continue) is undone by diffUnyield, only in that exact form;
//   - a durable vehicle that finds nothing due hands its claim back
//     (vehicle.Deferred) where the inline runner sleeps an uncommitted
//     park: neither commits anything, so histories need no change;
//   - continuing a committed run durably is a claim (resume floor = claim
//     time), never the saved init (run_initialized {"resumed": true}) that
//     inline.ResumeInline commits; so a "crash" or "resume" scenario
//     compares a durable restart with the inline run continued by
//     StepInline (case 41 below). Case 29 commits a saved init on purpose,
//     on both paths.
func TestDifferentialDurableMatchesInline(t *testing.T) {
	t.Parallel()
	// Each backend gets its own scenario list: some graphs are builders
	// made once, and a builder is built by one test only.
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		for i, sc := range diffScenarios() {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				clock := newDiffClock(epoch)
				runDiffScenario(t, i, sc, memory.New(memory.Options{Clock: clock}), clock)
			})
		}
	})

	// One schema for every scenario, run one after another: every scenario
	// leaves its run resting (waiting or terminal, never due), so the next
	// one's drains claim only their own run; the shared clock only moves
	// forward and each inline side starts where it stands.
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		clock := newDiffClock(epoch)
		store := diffPostgresStore(t, clock)
		for i, sc := range diffScenarios() {
			t.Run(sc.name, func(t *testing.T) {
				runDiffScenario(t, i, sc, store, clock)
			})
		}
	})
}

func runDiffScenario(t *testing.T, index int, sc diffScenario, store ports.Backend, clock *diffClock) {
	t.Helper()
	g := build(t, sc.graph())
	runID := fmt.Sprintf("run_diff_%02d", index)
	in := newDiffInline(t, sc, g, clock.Now(), runID)
	du := newDiffDurable(t, sc, g, store, clock, runID)

	in.start(sc.start)
	du.start(sc.start)
	require.Equal(t, diffRun(in.r), diffRun(du.fetch()), "the run after the first drive")
	for i, a := range sc.actions {
		inlineErr := in.do(a)
		durableErr := du.do(a)
		diffSameSignalError(t, inlineErr, durableErr)
		require.Equal(t, diffRun(in.r), diffRun(du.fetch()), "the run after action %d", i)
	}

	yields := diffCompareHistories(t, in, du)
	if sc.limits.drainMoments > 0 {
		assert.Positive(t, yields, "the moment budget made the vehicle yield")
	} else {
		assert.Zero(t, yields, "no budget, no yield")
	}
	assert.Equal(t, sc.want, in.r.Status, "the scenario's outcome")
	if sc.wantTypes != nil {
		assert.Equal(t, sc.wantTypes, diffTypesOf(in.cps), "the scenario's checkpoints")
	}
	if sc.wantWaits != nil {
		assert.Equal(t, sc.wantWaits, du.waits, "the scenario's parks")
	}
}

func diffPostgresStore(t *testing.T, clock *diffClock) ports.Backend {
	t.Helper()
	s := newPGSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := s.config.Copy()
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: s.schema, Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// Checkpoint type shorthands for the scenario table.
const (
	diffCPInit      = run.CheckpointRunInitialized
	diffCPStep      = run.CheckpointStepCommitted
	diffCPRetry     = run.CheckpointRetryScheduled
	diffCPAsk       = run.CheckpointInterruptRequested
	diffCPResolved  = run.CheckpointInterruptResolved
	diffCPCompleted = run.CheckpointRunCompleted
	diffCPFailed    = run.CheckpointRunFailed
	diffCPCancelled = run.CheckpointRunCancelled
)

func diffTypes(types ...run.CheckpointType) []run.CheckpointType { return types }

var (
	diffContinueToRest = diffAction{kind: diffContinue}
	diffOneStep        = diffAction{kind: diffStep}
	diffCancelRun      = diffAction{kind: diffCancel}
	diffRestartEngine  = diffAction{kind: diffRestart}
)

func diffResolveWith(v any) diffAction { return diffAction{kind: diffResolve, value: v} }

func diffScenarios() []diffScenario {
	strs := schema.List(schema.String())
	premium := graph.Equals(graph.Path("user", "premium_user"), true)
	guarded := func() *graph.Builder {
		return graph.New("guarded-edge").
			Input("user", schema.Map(), graph.Required()).
			State("plan", schema.String()).
			Node("fetch", diffRefEcho).Node("premium_step", diffRefEcho).Node("standard_step", diffRefEcho).
			Edge("edge_start_fetch", graph.Start, "fetch").
			Edge("edge_premium", "fetch", "premium_step", graph.When(premium)).
			Edge("edge_standard", "fetch", "standard_step", graph.When(graph.Not(premium)))
	}
	isolation := func() *graph.Builder {
		return graph.New("same-step-isolation").
			State("x", schema.String(), graph.Default("old")).
			State("y", schema.String()).
			Node("writer", diffRefWriteValue, cfg("field", "x", "value", "new")).
			Node("reader", diffRefCopyInput, cfg("from", "x", "to", "y")).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_start_reader", graph.Start, "reader")
	}
	blocking := func(policies ...graph.RecordOption) func() *graph.Builder {
		return func() *graph.Builder {
			return graph.New("blocking-timeout").
				State("out", schema.String()).
				Node("slow", diffRefBlocking, policies...).
				Edge("start", graph.Start, "slow").
				Edge("finish", "slow", graph.Finish)
		}
	}
	interruptDuringPark := func() *graph.Builder {
		return graph.New("interrupt-during-park").
			State("answer", schema.String()).
			State("asked", schema.String()).
			State("trigger", schema.String()).
			State("out", schema.String()).
			Node("asker", diffRefInterruptOnce, cfg("resume_field", "answer", "write_field", "asked")).
			Node("prep", diffRefWriteValue, cfg("field", "trigger", "value", "go")).
			Node("flaky", diffRefFlaky, cfg("failures", 1.0, "field", "out", "value", "done"), graph.Retry(2, 60_000)).
			Edge("edge_start_asker", graph.Start, "asker").
			Edge("edge_start_prep", graph.Start, "prep").
			Edge("edge_prep_flaky", "prep", "flaky").
			Edge("edge_asker_finish", "asker", graph.Finish).
			Edge("edge_flaky_finish", "flaky", graph.Finish)
	}
	interruptBesideWork := func() *graph.Builder {
		return graph.New("interrupt-with-parallel-work").
			State("decision", schema.String()).
			State("applied", schema.String()).
			Node("gate", diffRefInterruptOnce, cfg("resume_field", "decision", "write_field", "applied")).
			Node("worker", diffRefEcho).
			Node("after_worker", diffRefEcho).
			Edge("edge_start_gate", graph.Start, "gate").
			Edge("edge_start_worker", graph.Start, "worker").
			Edge("edge_worker_after", "worker", "after_worker")
	}
	fixed := func(b *graph.Builder) func() *graph.Builder { return func() *graph.Builder { return b } }

	return []diffScenario{
		{name: "case 01/minimal linear completes with its output", graph: diffMinimalLinear,
			input: map[string]any{"value": "hello"}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPCompleted)},
		{name: "case 03/simple edge runs two supersteps", graph: diffSimpleEdge,
			input: map[string]any{"topic": "graphs"}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 04/fan-out ends without a finish edge", graph: func() *graph.Builder { return diffFanOut("fanout") },
			input: map[string]any{"value": "x"}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 05/a multi-source edge waits for every source", graph: diffMultiSource,
			input: map[string]any{"value": "x"}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 06/barrier completions are sticky across supersteps", graph: fixed(graph.New("sticky-barrier").
			Node("a", diffRefEcho).Node("b0", diffRefEcho).Node("b", diffRefEcho).Node("join", diffRefEcho).
			Edge("edge_start_a", graph.Start, "a").
			Edge("edge_start_b0", graph.Start, "b0").
			Edge("edge_b0_b", "b0", "b").
			Join("edge_join", []string{"a", "b"}, "join").
			Edge("edge_join_finish", "join", graph.Finish)),
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 07 and 09/same-step writes are invisible and change tracking is write-based", graph: isolation,
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPCompleted)},
		{name: "case 08/same-step last_value writes resolve to the last node ID", graph: fixed(graph.New("write-conflict").
			State("out", schema.String()).
			Node("a_writer", diffRefWriteValue, cfg("field", "out", "value", "from_a")).
			Node("b_writer", diffRefWriteValue, cfg("field", "out", "value", "from_b")).
			Edge("edge_start_a", graph.Start, "a_writer").
			Edge("edge_start_b", graph.Start, "b_writer").
			Output("out", "")),
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPCompleted)},
		{name: "case 10/a premium user takes the premium branch", graph: guarded,
			input: map[string]any{"user": map[string]any{"premium_user": true}}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 10/a standard user takes the standard branch", graph: guarded,
			input: map[string]any{"user": map[string]any{"premium_user": false}}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 10/a missing path makes the guard false", graph: guarded,
			input: map[string]any{"user": map[string]any{}}, want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 11/a guarded cycle counts to ten", graph: func() *graph.Builder { return diffCycleCounter(true, 50) },
			want: run.StatusDone},
		{name: "case 12/the graph's superstep limit fails the run", graph: func() *graph.Builder { return diffCycleCounter(true, 3) },
			want: run.StatusFailed},
		{name: "case 13/a runtime superstep limit bounds a graph without one", graph: func() *graph.Builder { return diffCycleCounter(false, 0) },
			limits: diffLimits{maxSupersteps: 3}, want: run.StatusFailed},
		{name: "case 16/a permanent failure commits no write from its superstep", graph: fixed(graph.New("parallel-failure").
			State("ok_out", schema.String()).
			Node("ok_node", diffRefWriteValue, cfg("field", "ok_out", "value", "committed")).
			Node("failing_node", diffRefAlwaysFails).
			Node("should_not_run", diffRefEcho).
			Edge("edge_start_ok", graph.Start, "ok_node").
			Edge("edge_start_failing", graph.Start, "failing_node").
			Join("edge_join", []string{"ok_node", "failing_node"}, "should_not_run").
			Edge("edge_join_finish", "should_not_run", graph.Finish)),
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 17/a panicking node fails the run", graph: func() *graph.Builder { return diffSingleNode("crashing", diffRefPanics) },
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 17/an exiting node fails the run", graph: func() *graph.Builder { return diffSingleNode("crashing", diffRefExits) },
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 18/an await return fails without retry", graph: func() *graph.Builder {
			return diffSingleNode("reserved-return", diffRefAwaits, graph.Retry(3, 0))
		}, want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 18/a malformed return fails without retry", graph: func() *graph.Builder {
			return diffSingleNode("reserved-return", diffRefBadReturn, graph.Retry(3, 0))
		}, want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 19/a write to an unknown field fails the run", graph: fixed(graph.New("bad-write").
			State("out", schema.String()).
			Node("writer", diffRefWriteValue, cfg("field", "nope", "value", "x")).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_writer_finish", "writer", graph.Finish)),
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 20/a schema-invalid write leaves the field unwritten", graph: fixed(graph.New("schema-violation").
			State("out", schema.Float()).
			Node("writer", diffRefWriteValue, cfg("field", "out", "value", "not a number")).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_writer_finish", "writer", graph.Finish)),
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 21/a flaky node retries twice then completes", graph: func() *graph.Builder { return diffRetryThenContinue(3, 0) },
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPRetry, diffCPStep, diffCPCompleted)},
		{name: "case 22/exhausting the retry budget fails the run", graph: func() *graph.Builder { return diffRetryThenContinue(2, 0) },
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPFailed)},
		{name: "case 23/retry backoffs are served at their deadlines", graph: func() *graph.Builder { return diffRetryThenContinue(3, 25) },
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPRetry, diffCPStep, diffCPCompleted),
			wantWaits: []time.Duration{25 * time.Millisecond, 25 * time.Millisecond}},
		{name: "case 25/a sibling's result parks as a pending write", graph: func() *graph.Builder { return diffParallelRetry(1, 3, 0) },
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPStep, diffCPCompleted)},
		{name: "case 26/carried pending siblings are listed once", graph: func() *graph.Builder { return diffParallelRetry(2, 3, 0) },
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPRetry, diffCPStep, diffCPCompleted)},
		{name: "case 27/a restart during backoff resumes the parked attempt", graph: func() *graph.Builder { return diffParallelRetry(1, 3, 60_000) },
			start: diffToPark, actions: []diffAction{diffRestartEngine, diffContinueToRest},
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPStep, diffCPCompleted), wantWaits: []time.Duration{time.Minute}},
		{name: "case 28/a permanent failure after a park discards parked results", graph: func() *graph.Builder { return diffParallelRetry(5, 2, 0) },
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPFailed)},
		{name: "case 29/a corrupted pending write fails the run", graph: func() *graph.Builder { return diffParallelRetry(1, 3, 60_000) },
			start: diffToPark, actions: []diffAction{{kind: diffCorruptPending}, diffContinueToRest},
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPInit, diffCPFailed), wantWaits: []time.Duration{time.Minute}},
		{name: "case 30/heterogeneous backoffs park at the earliest deadline", graph: fixed(graph.New("two-backoffs").
			State("fast_out", schema.String()).
			State("slow_out", schema.String()).
			Node("fast", diffRefFlaky, cfg("failures", 1.0, "field", "fast_out", "value", "fast done"), graph.Retry(2, 10)).
			Node("slow", diffRefFlaky, cfg("failures", 1.0, "field", "slow_out", "value", "slow done"), graph.Retry(2, 50)).
			Edge("edge_start_fast", graph.Start, "fast").
			Edge("edge_start_slow", graph.Start, "slow").
			Edge("edge_fast_finish", "fast", graph.Finish).
			Edge("edge_slow_finish", "slow", graph.Finish)),
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPRetry, diffCPStep, diffCPCompleted),
			wantWaits: []time.Duration{10 * time.Millisecond, 40 * time.Millisecond}},
		{name: "case 32 and 36/an interrupt resolved mid-park wakes at the retry deadline", graph: interruptDuringPark,
			start: diffToPark, actions: []diffAction{diffResolveWith("42")},
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPAsk, diffCPRetry, diffCPResolved, diffCPStep, diffCPStep, diffCPCompleted),
			wantWaits: []time.Duration{time.Minute}},
		{name: "case 33/an interrupting node parks the run as waiting", graph: diffInterruptReview,
			want: run.StatusWaiting, wantTypes: diffTypes(diffCPInit, diffCPAsk)},
		{name: "case 34 and 36/resolving the interrupt re-runs the node and completes", graph: diffInterruptReview,
			actions: []diffAction{diffResolveWith("approved")},
			want:    run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPAsk, diffCPResolved, diffCPStep, diffCPCompleted)},
		{name: "case 37/an interrupt beside runnable work keeps the run running", graph: interruptBesideWork,
			want: run.StatusWaiting, wantTypes: diffTypes(diffCPInit, diffCPAsk, diffCPStep)},
		{name: "case 37/a yielded interrupt checkpoint keeps its type", graph: interruptBesideWork,
			limits: diffLimits{drainMoments: 1}, want: run.StatusWaiting, wantTypes: diffTypes(diffCPInit, diffCPAsk, diffCPStep)},
		{name: "case 38/cancelling a waiting run", graph: diffInterruptReview,
			actions: []diffAction{diffCancelRun},
			want:    run.StatusCancelled, wantTypes: diffTypes(diffCPInit, diffCPAsk, diffCPCancelled)},
		{name: "case 38/cancelling a run parked for a retry absorbs its superstep", graph: func() *graph.Builder { return diffParallelRetry(1, 3, 60_000) },
			start: diffToPark, actions: []diffAction{diffCancelRun},
			want: run.StatusCancelled, wantTypes: diffTypes(diffCPInit, diffCPRetry, diffCPCancelled)},
		{name: "case 38/cancelling a done run is an inactive run", graph: diffMinimalLinear,
			input: map[string]any{"value": "x"}, actions: []diffAction{diffCancelRun},
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPCompleted)},
		{name: "case 39/append accumulates across supersteps", graph: fixed(graph.New("append-chain").
			State("messages", strs, graph.Reducer(reducer.Append, nil)).
			Node("first", diffRefWriteValue, cfg("field", "messages", "value", "one")).
			Node("second", diffRefWriteValue, cfg("field", "messages", "value", []string{"two", "three"})).
			Edge("edge_start_first", graph.Start, "first").
			Edge("edge_first_second", "first", "second").
			Edge("edge_second_finish", "second", graph.Finish).
			Output("messages", "")),
			want: run.StatusDone},
		{name: "case 39/same-step appends fold in node order after the default", graph: fixed(graph.New("append-conflict").
			State("log", strs, graph.Default([]string{"seed"}), graph.Reducer(reducer.Append, nil)).
			Node("b_writer", diffRefWriteValue, cfg("field", "log", "value", "from_b")).
			Node("a_writer", diffRefWriteValue, cfg("field", "log", "value", "from_a")).
			Edge("edge_start_a", graph.Start, "a_writer").
			Edge("edge_start_b", graph.Start, "b_writer").
			Output("log", "")),
			want: run.StatusDone},
		{name: "case 39/an unwritten append field reads as its zero", graph: fixed(graph.New("zero-snapshot").
			State("messages", strs, graph.Reducer(reducer.Append, nil)).
			State("copy", strs).
			Node("reader", diffRefCopyInput, cfg("from", "messages", "to", "copy")).
			Edge("edge_start_reader", graph.Start, "reader").
			Edge("edge_reader_finish", "reader", graph.Finish).
			Output("copy", "")),
			want: run.StatusDone},
		{name: "case 39/sum adds and merge folds maps", graph: fixed(graph.New("sum-merge").
			State("total", schema.Integer(), graph.Reducer(reducer.Sum, nil)).
			State("meta", schema.Map(), graph.Reducer(reducer.Merge, nil)).
			Node("a_step", diffRefWriteValue, cfg("field", "total", "value", 2)).
			Node("b_step", diffRefWriteValue, cfg("field", "total", "value", 3)).
			Node("meta_a", diffRefWriteValue, cfg("field", "meta", "value", map[string]any{"a": 1})).
			Node("meta_b", diffRefWriteValue, cfg("field", "meta", "value", map[string]any{"b": 2})).
			Edge("edge_start_a", graph.Start, "a_step").
			Edge("edge_start_b", graph.Start, "b_step").
			Edge("edge_start_ma", graph.Start, "meta_a").
			Edge("edge_start_mb", graph.Start, "meta_b").
			Output("total", "").
			Output("meta", "")),
			want: run.StatusDone},
		{name: "case 39/first_value keeps the first committed write", graph: fixed(graph.New("first-value").
			State("winner", schema.String(), graph.Reducer(reducer.FirstValue, nil)).
			Node("early", diffRefWriteValue, cfg("field", "winner", "value", "first")).
			Node("late", diffRefWriteValue, cfg("field", "winner", "value", "second")).
			Edge("edge_start_early", graph.Start, "early").
			Edge("edge_early_late", "early", "late").
			Edge("edge_late_finish", "late", graph.Finish).
			Output("winner", "")),
			want: run.StatusDone},
		{name: "case 39/an invalid append item fails the run", graph: fixed(graph.New("append-invalid-item").
			State("messages", strs, graph.Reducer(reducer.Append, nil)).
			Node("writer", diffRefWriteValue, cfg("field", "messages", "value", 42)).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_writer_finish", "writer", graph.Finish)),
			want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 39/a resolution folds through append", graph: fixed(graph.New("append-interrupt").
			State("answers", strs, graph.Reducer(reducer.Append, nil)).
			State("applied", strs).
			Node("gate", diffRefInterruptWhileEmp, cfg("resume_field", "answers", "write_field", "applied")).
			Edge("edge_start_gate", graph.Start, "gate").
			Edge("edge_gate_finish", "gate", graph.Finish).
			Output("applied", "")),
			actions: []diffAction{diffResolveWith("yes")},
			want:    run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPAsk, diffCPResolved, diffCPStep, diffCPCompleted)},
		{name: "case 40/the host maximum bounds a node without timeout_ms", graph: blocking(),
			limits: diffLimits{maxAttemptElapsed: 20 * time.Millisecond}, want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 40/an explicit timeout below the maximum wins", graph: blocking(graph.Timeout(15)),
			limits: diffLimits{maxAttemptElapsed: 100 * time.Millisecond}, want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		{name: "case 40/a self-killing node fails and its sibling barrier still settles", graph: fixed(graph.New("self-kill").
			Node("ok", diffRefEcho).
			Node("kill", diffRefExits).
			Node("slow", diffRefBlocking, graph.Timeout(15)).
			Edge("ok_start", graph.Start, "ok").
			Edge("kill_start", graph.Start, "kill").
			Edge("slow_start", graph.Start, "slow").
			Join("finish", []string{"kill", "ok", "slow"}, graph.Finish)),
			limits: diffLimits{maxAttemptElapsed: 100 * time.Millisecond}, want: run.StatusFailed, wantTypes: diffTypes(diffCPInit, diffCPFailed)},
		// Inline case 41 resumes with ResumeInline, which commits a saved
		// init; the durable equivalent of stopping after one step and going
		// on elsewhere is an engine whose budget ends its drive after one
		// moment, then a fresh engine claiming the run.
		{name: "case 41/a run stopped after one step is finished by another engine", graph: diffSimpleEdge,
			input: map[string]any{"topic": "graphs"}, limits: diffLimits{drainMoments: 1},
			start: diffInitOnly, actions: []diffAction{diffOneStep, diffRestartEngine, diffContinueToRest},
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "case 42/one transition at a time", graph: diffSimpleEdge,
			input: map[string]any{"topic": "graphs"}, limits: diffLimits{drainMoments: 1},
			start: diffInitOnly, actions: []diffAction{diffOneStep, diffOneStep, diffOneStep, diffOneStep},
			want: run.StatusDone, wantTypes: diffTypes(diffCPInit, diffCPStep, diffCPStep, diffCPCompleted)},
		{name: "drain budget yields change only the disposition", graph: func() *graph.Builder { return diffCycleCounter(true, 50) },
			limits: diffLimits{drainMoments: 3}, want: run.StatusDone},
	}
}

// Spec §12 case 40, third part: a node timeout above the host maximum. The
// paths differ by design (spec §7.4 and §10): the inline runner is the
// entry point and refuses the graph before any run exists; a durable host
// cannot refuse a run another host may execute, so the run starts and each
// incompatible host hands its claim back without poisoning. Neither path
// runs a node or commits past initialization.
func TestDifferentialTimeoutAboveTheHostMaximumRunsNowhere(t *testing.T) {
	t.Parallel()
	g := build(t, graph.New("incompatible-timeout").
		Node("first", diffRefBlocking).
		Node("dormant", diffRefBlocking, graph.Timeout(101)).
		Edge("start", graph.Start, "first").
		Edge("dormant_start", graph.Start, "dormant").
		Join("finish", []string{"dormant", "first"}, graph.Finish))
	limits := diffLimits{maxAttemptElapsed: 100 * time.Millisecond}
	sc := diffScenario{name: "incompatible", limits: limits}

	in := newDiffInline(t, sc, g, epoch, "run_incompatible")
	r, cps, err := inline.RunInline(context.Background(), g, nil, in.options()...)
	require.ErrorIs(t, err, superstep.ErrIncompatibleExecutionPolicy)
	assert.Nil(t, r)
	assert.Empty(t, cps)
	assert.Empty(t, in.kit.recorded())

	for _, backend := range []struct {
		name  string
		store func(t *testing.T, clock *diffClock) ports.Backend
	}{
		{"memory", func(_ *testing.T, clock *diffClock) ports.Backend { return memory.New(memory.Options{Clock: clock}) }},
		{"postgres", diffPostgresStore},
	} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clock := newDiffClock(epoch)
			du := newDiffDurable(t, sc, g, backend.store(t, clock), clock, "run_incompatible")
			du.start(diffInitOnly)
			_, err := du.e.DrainRuns(ctx, 0)
			var stopped *engine.DrainStoppedError
			require.ErrorAs(t, err, &stopped)
			assert.Equal(t, vehicle.HostIncompatible, stopped.Outcome.Kind)
			assert.ErrorIs(t, err, superstep.ErrIncompatibleExecutionPolicy)

			info, err := du.e.InspectRun(ctx, "run_incompatible")
			require.NoError(t, err)
			assert.Equal(t, run.StatusRunning, info.Run.Status)
			assert.EqualValues(t, 1, info.Run.CheckpointSeq, "nothing committed past initialization")
			assert.False(t, info.Poisoned(), "an incompatible host does not poison the run")
			assert.True(t, info.WakeAt.After(clock.Now()), "the claim was handed back for later")
			assert.Empty(t, du.attempts(), "no node ran")
		})
	}
}

// Spec §12 case 24 asks for a hand-edited runtime graph with an invalid
// policy; a durable engine only runs stored documents it compiles itself,
// so the hand-edited compiled graph has no durable form. Its document form
// is refused identically by both entry points, before any run exists.
func TestDifferentialInvalidPoliciesAreRefusedByBothEntryPoints(t *testing.T) {
	t.Parallel()
	for name, policy := range map[string]graph.RecordOption{
		"max_attempts 0": graph.Policy("retry", map[string]any{"max_attempts": 0}),
		"on_error":       graph.Policy("on_error", "route"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := build(t, diffSingleNode("bad-policy", diffRefEcho, policy))
			in := newDiffInline(t, diffScenario{}, g, epoch, "run_bad_policy")
			_, cps, inlineErr := inline.RunInline(context.Background(), g, nil, in.options()...)
			assert.Empty(t, cps)

			// SaveGraph compiles before it touches storage: one backend
			// stands for all.
			clock := newDiffClock(epoch)
			du := newDiffDurable(t, diffScenario{}, g, memory.New(memory.Options{Clock: clock}), clock, "run_bad_policy")
			_, durableErr := du.e.SaveGraph(context.Background(), g)

			var a, b *graph.CompileError
			require.True(t, errors.As(inlineErr, &a), "inline: %v", inlineErr)
			require.True(t, errors.As(durableErr, &b), "durable: %v", durableErr)
			assert.Equal(t, diffDiagnosticCodes(a), diffDiagnosticCodes(b))
			assert.Contains(t, diffDiagnosticCodes(a), "invalid_policy")
		})
	}
}

func diffDiagnosticCodes(e *graph.CompileError) []string {
	out := make([]string, len(e.Diagnostics))
	for i, d := range e.Diagnostics {
		out[i] = d.Code
	}
	return out
}
