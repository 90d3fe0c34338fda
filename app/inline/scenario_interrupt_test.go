package inline_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

// waitingRun drives the IR graph to its open interrupt.
func waitingRun(t *testing.T, k *kit, g *graph.Graph) (*run.Run, []run.Checkpoint, string) {
	t.Helper()
	r, cps, err := inline.RunInline(context.Background(), g, nil, k.options()...)
	require.NoError(t, err)
	require.Equal(t, run.StatusWaiting, r.Status)
	id, _ := onlyKey(t, r.Interrupts)
	return r, cps, id
}

// Spec §12 cases 32–38: interrupts (during retry parks too), their
// resolution and its errors, parallel work beside an interrupt, and
// cancellation.
func TestScenariosInterruptsAndSignals(t *testing.T) { inBothModes(t, scenariosInterruptsAndSignals) }

func scenariosInterruptsAndSignals(t *testing.T, newKit func(*testing.T) *kit) {
	t.Parallel()
	ctx := context.Background()

	t.Run("case 32/an interrupt resolved mid-park leaves the parked snapshot stable", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("interrupt-during-park").
			State("answer", schema.String()).
			State("asked", schema.String()).
			State("trigger", schema.String()).
			State("out", schema.String()).
			Node("asker", refInterruptOnce, cfg("resume_field", "answer", "write_field", "asked")).
			Node("prep", refWriteValue, cfg("field", "trigger", "value", "go")).
			Node("flaky", refFlaky, cfg("failures", 1.0, "field", "out", "value", "done"), graph.Retry(2, 0)).
			Edge("edge_start_asker", graph.Start, "asker").
			Edge("edge_start_prep", graph.Start, "prep").
			Edge("edge_prep_flaky", "prep", "flaky").
			Edge("edge_asker_finish", "asker", graph.Finish).
			Edge("edge_flaky_finish", "flaky", graph.Finish))

		r0, _, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxSteps(1))...)
		require.NoError(t, err)
		interruptID, _ := onlyKey(t, r0.Interrupts)
		assert.Equal(t, run.StatusRunning, r0.Status)

		parked, cps, err := inline.StepInline(ctx, g, r0, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRetryScheduled}, types(cps))
		assert.Len(t, parked.ActiveTasks, 1)

		done, cps, err := inline.ResolveInterruptInline(ctx, g, parked, interruptID, "42", k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, done.Status)
		flaky := k.attemptsOf("flaky")
		require.Len(t, flaky, 2)
		assert.Equal(t, flaky[0].State, flaky[1].State, "the retry sees the snapshot its superstep planned")
		assert.NotContains(t, flaky[1].State, "answer")
		asked, _ := fieldValue(done, "asked")
		out, _ := fieldValue(done, "out")
		assert.Equal(t, "42", asked)
		assert.Equal(t, "done", out)
	})

	t.Run("case 33/an interrupting node parks the run as waiting", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, interruptReview())
		r, cps, id := waitingRun(t, k, g)
		requireWellFormed(t, cps)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointInterruptRequested}, types(cps))
		in := r.Interrupts[id]
		assert.Equal(t, id, in.ID)
		assert.Equal(t, run.InterruptOpen, in.Status)
		assert.Equal(t, "gate", in.NodeID)
		assert.Equal(t, "decision", in.ResumeChannel)
		assert.Equal(t, frozenNow, in.CreatedAt)
		assert.Equal(t, []string{"gate"}, r.PendingNodes)
		last := cps[1]
		assert.Equal(t, run.StatusWaiting, last.Run.Status, "waiting commits in the interrupt's own checkpoint")
		assert.Equal(t, "external", last.Metadata.Map()["wake_disposition"])
		assert.Equal(t, run.ReasonAwaitingInterrupts, last.Metadata.Map()["park_reason"])
		requested := eventsOf(one(last), run.EventInterruptRequested)
		require.Len(t, requested, 1)
		assert.Equal(t, portable(t, map[string]any{"attempt": 1, "interrupt_id": id, "resume_channel": "decision"}), any(requested[0].Payload))
		assert.Equal(t, portable(t, []any{map[string]any{
			"task_id": requested[0].TaskID, "node_id": "gate", "attempted": 1, "outcome": "interrupted", "next_scheduled_attempt": nil,
		}}), last.Metadata.Map()["node_attempts"])

		step, err := superstep.Advance(k.compile(g), r, superstep.Env{Now: frozenNow})
		require.NoError(t, err)
		assert.Equal(t, superstep.Wait, step.Kind)
		assert.Equal(t, []string{id}, step.InterruptIDs)

		same, cps, err := inline.StepInline(ctx, g, r, k.options()...)
		require.NoError(t, err)
		assert.Same(t, r, same, "a waiting run is returned unchanged")
		assert.Empty(t, cps)
	})

	t.Run("case 34/resolving the interrupt re-runs the node and completes", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, interruptReview())
		r, _, id := waitingRun(t, k, g)
		done, cps, err := inline.ResolveInterruptInline(ctx, g, r, id, "approved", k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, done.Status)
		decision, _ := fieldValue(done, "decision")
		applied, _ := fieldValue(done, "applied")
		assert.Equal(t, "approved", decision)
		assert.Equal(t, "approved", applied)
		assert.Equal(t, run.InterruptResolved, done.Interrupts[id].Status)
		assert.Equal(t, frozenNow, done.Interrupts[id].ResolvedAt)
		assert.NotContains(t, done.PendingNodes, "gate")
		assert.Equal(t, []run.CheckpointType{run.CheckpointInterruptResolved, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, types(cps))
		gate := k.attemptsOf("gate")
		require.Len(t, gate, 2)
		assert.Equal(t, 1, gate[1].Attempt, "the node re-runs as a new task")
		assert.NotEqual(t, gate[0].IdempotencyKey, gate[1].IdempotencyKey)
	})

	t.Run("case 35/resolution errors", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, interruptReview())
		r, _, id := waitingRun(t, k, g)

		_, cps, err := inline.ResolveInterruptInline(ctx, g, r, id, 42, k.options()...)
		assert.ErrorIs(t, err, superstep.ErrInvalidInput, "the value fails the interrupt's string schema")
		assert.Empty(t, cps)
		_, _, err = inline.ResolveInterruptInline(ctx, g, r, "nope", "x", k.options()...)
		assert.ErrorIs(t, err, superstep.ErrNotFound)

		// Resolved but not yet re-run: the interrupt_resolved checkpoint.
		_, cps, err = inline.ResolveInterruptInline(ctx, g, r, id, "approved", k.options(inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		resolved := cps[0].Run
		require.Equal(t, run.StatusRunning, resolved.Status)
		_, _, err = inline.ResolveInterruptInline(ctx, g, resolved, id, "again", k.options()...)
		assert.ErrorIs(t, err, superstep.ErrAlreadyResolved)

		done, _, err := inline.ResolveInterruptInline(ctx, g, r, id, "approved", k.options()...)
		require.NoError(t, err)
		_, _, err = inline.ResolveInterruptInline(ctx, g, done, id, "again", k.options()...)
		assert.ErrorIs(t, err, superstep.ErrInactiveRun)
		_, _, err = inline.ResolveInterruptInline(ctx, g, done, "nope", "again", k.options()...)
		assert.ErrorIs(t, err, superstep.ErrInactiveRun, "terminal status is checked before the lookup")

		created := r.Clone()
		created.Status = run.StatusCreated
		_, _, err = inline.ResolveInterruptInline(ctx, g, created, id, "x", k.options()...)
		assert.ErrorIs(t, err, superstep.ErrInvalidRun)
	})

	t.Run("case 36/the resolution moment is deterministic", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, interruptReview())
		c := k.compile(g)
		r, _, id := waitingRun(t, k, g)
		env := superstep.Env{Now: frozenNow}

		first, err := superstep.ResolveInterrupt(c, r, id, "approved", env)
		require.NoError(t, err)
		second, err := superstep.ResolveInterrupt(c, r, id, "approved", env)
		require.NoError(t, err)
		assert.Equal(t, first, second)
		assert.Equal(t, []run.EventType{run.EventInterruptResolved, run.EventChannelUpdated, run.EventCheckpointCommitted}, eventTypes(first.Events))
		assert.Equal(t, r.CheckpointSeq+1, first.Run.CheckpointSeq)
		assert.Equal(t, r.EventSeq+3, first.Run.EventSeq)
		assert.Equal(t, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}, first.Disposition)

		// Through the runner the same moment is the first checkpoint.
		_, cps, err := inline.ResolveInterruptInline(ctx, g, r, id, "approved", k.options(inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		require.Len(t, cps, 1)
		assert.Equal(t, first.Checkpoint(), cps[0])

		earliest := frozenNow.Add(30 * time.Second)
		withTasks := func(timers map[string]time.Time, untimed ...string) *run.Run {
			parked := r.Clone()
			parked.ActiveTasks = map[string]run.TaskState{}
			parked.Timers = map[string]run.Timer{}
			for task, at := range timers {
				parked.ActiveTasks[task] = run.TaskState{TaskID: task, NodeID: task, Attempt: 2}
				parked.Timers[task] = run.Timer{Kind: run.TimerRetry, FiresAt: at}
			}
			for _, task := range untimed {
				parked.ActiveTasks[task] = run.TaskState{TaskID: task, NodeID: task, Attempt: 2}
			}
			return parked
		}
		cases := []struct {
			name string
			run  *run.Run
			want run.Disposition
		}{
			{"every timer in the future wakes at the earliest", withTasks(map[string]time.Time{"near": earliest, "far": frozenNow.Add(90 * time.Second)}),
				run.Disposition{Kind: run.DispositionAt, At: earliest, Reason: run.ReasonInterruptResolved}},
			{"a due timer wakes now", withTasks(map[string]time.Time{"due": frozenNow, "far": frozenNow.Add(90 * time.Second)}),
				run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}},
			{"an untimed task wakes now", withTasks(map[string]time.Time{"far": frozenNow.Add(90 * time.Second)}, "untimed"),
				run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}},
		}
		for _, tc := range cases {
			m, err := superstep.ResolveInterrupt(c, tc.run, id, "approved", env)
			require.NoError(t, err, tc.name)
			assert.Equal(t, tc.want, m.Disposition, tc.name)
			assert.Equal(t, string(tc.want.Kind), m.Metadata.Map()["wake_disposition"], tc.name)
		}
	})

	t.Run("case 37/an interrupt beside runnable work keeps the run running", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("interrupt-with-parallel-work").
			State("decision", schema.String()).
			State("applied", schema.String()).
			Node("gate", refInterruptOnce, cfg("resume_field", "decision", "write_field", "applied")).
			Node("worker", refEcho).
			Node("after_worker", refEcho).
			Edge("edge_start_gate", graph.Start, "gate").
			Edge("edge_start_worker", graph.Start, "worker").
			Edge("edge_worker_after", "worker", "after_worker"))
		r, cps, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxSteps(1))...)
		require.NoError(t, err)
		require.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointInterruptRequested}, types(cps))
		assert.Equal(t, run.StatusRunning, r.Status)
		assert.Equal(t, "continue", cps[1].Metadata.Map()["wake_disposition"])

		// The same moment computed directly can be yielded and keeps its type.
		c := k.compile(g)
		start, err := superstep.Start(c, superstep.StartParams{RunID: "run_yield"}, superstep.Env{Now: frozenNow})
		require.NoError(t, err)
		step, err := superstep.Advance(c, start.Run, superstep.Env{Now: frozenNow})
		require.NoError(t, err)
		results, err := (&executor.Executor{Nodes: k.registry}).Execute(ctx, start.Run.ID, step.Activations)
		require.NoError(t, err)
		m, err := superstep.Settle(c, start.Run, step, results, superstep.Env{Now: frozenNow, NewInterruptID: func() string { return "interrupt_x" }})
		require.NoError(t, err)
		require.Equal(t, run.DispositionContinue, m.Disposition.Kind)
		yielded, err := run.Yield(m, run.ReasonDrainBudget)
		require.NoError(t, err)
		assert.Equal(t, run.CheckpointInterruptRequested, yielded.CheckpointType)
		assert.Equal(t, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget}, yielded.Disposition)
		assert.Equal(t, "interrupt_requested", yielded.Metadata.Map()["checkpoint_type"])
		assert.Equal(t, yielded.Metadata, yielded.Events[len(yielded.Events)-1].Metadata)
	})

	t.Run("case 38/cancellation", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		review, retrying := build(t, interruptReview()), build(t, parallelRetry(1, 3, 0))
		waiting, _, _ := waitingRun(t, k, review)
		parked, _, err := inline.StepInline(ctx, retrying, mustInit(t, k, retrying), k.options()...)
		require.NoError(t, err)
		require.NotEmpty(t, parked.ActiveTasks)
		env := superstep.Env{Now: frozenNow.Add(time.Hour)}

		for _, tc := range []struct {
			name string
			run  *run.Run
			g    *graph.Graph
		}{
			{"waiting", waiting, review},
			{"running with a parked superstep", parked, retrying},
		} {
			name := tc.name
			m, err := superstep.Cancel(tc.run, env)
			require.NoError(t, err, name)
			assert.Equal(t, []run.EventType{run.EventRunCancelled, run.EventCheckpointCommitted}, eventTypes(m.Events), name)
			assert.Equal(t, run.StatusCancelled, m.Run.Status, name)
			assert.Equal(t, run.CheckpointRunCancelled, m.CheckpointType, name)
			assert.Equal(t, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCancelled}, m.Disposition, name)
			assert.Equal(t, env.Now, m.Run.FinishedAt, name)
			assert.Empty(t, m.Run.ActiveTasks, name)
			assert.Empty(t, m.Run.PendingWrites, name)
			assert.Empty(t, m.Run.Timers, name)

			again, err := superstep.Cancel(m.Run, env)
			assert.NoError(t, err, name)
			assert.Nil(t, again, "cancelling a cancelled run changes nothing")

			// A cancelled run stays put: the runner neither resumes nor steps it.
			same, cps, err := inline.ResumeInline(ctx, tc.g, m.Run, k.options()...)
			assert.NoError(t, err, name)
			assert.Same(t, m.Run, same, name)
			assert.Empty(t, cps, name)
			same, cps, err = inline.StepInline(ctx, tc.g, m.Run, k.options()...)
			assert.NoError(t, err, name)
			assert.Same(t, m.Run, same, name)
			assert.Empty(t, cps, name)
		}

		done, _, err := inline.RunInline(ctx, build(t, minimalLinear()), map[string]any{"value": "x"}, k.options()...)
		require.NoError(t, err)
		_, err = superstep.Cancel(done, env)
		assert.ErrorIs(t, err, superstep.ErrInactiveRun)
		failed, _, err := inline.RunInline(ctx, build(t, singleNode("fails", refAlwaysFails)), nil, k.options()...)
		require.NoError(t, err)
		_, err = superstep.Cancel(failed, env)
		assert.ErrorIs(t, err, superstep.ErrInactiveRun)
		created := waiting.Clone()
		created.Status = run.StatusCreated
		_, err = superstep.Cancel(created, env)
		assert.ErrorIs(t, err, superstep.ErrInvalidRun)
	})
}

// mustInit commits only the initialization of a new run of g.
func mustInit(t *testing.T, k *kit, g *graph.Graph) *run.Run {
	t.Helper()
	r, _, err := inline.RunInline(context.Background(), g, nil, k.options(inline.WithMaxSteps(0))...)
	require.NoError(t, err)
	return r
}
