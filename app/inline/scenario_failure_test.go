package inline_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

// Spec §12 cases 16–31: permanent failures, write validation, retries,
// retry parks, crash recovery and backoff timing.
func TestScenariosFailureAndRetry(t *testing.T) { inBothModes(t, scenariosFailureAndRetry) }

func scenariosFailureAndRetry(t *testing.T, newKit func(*testing.T) *kit) {
	t.Parallel()
	ctx := context.Background()

	t.Run("case 16/a permanent failure commits no write from its superstep", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("parallel-failure").
			State("ok_out", schema.String()).
			Node("ok_node", refWriteValue, cfg("field", "ok_out", "value", "committed")).
			Node("failing_node", refAlwaysFails).
			Node("should_not_run", refEcho).
			Edge("edge_start_ok", graph.Start, "ok_node").
			Edge("edge_start_failing", graph.Start, "failing_node").
			Join("edge_join", []string{"ok_node", "failing_node"}, "should_not_run").
			Edge("edge_join_finish", "should_not_run", graph.Finish))
		r, cps, err := inline.RunInline(ctx, g, nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assertFailedWith(t, r, "node_failed")
		assert.Equal(t, 0, r.Step)
		_, written := fieldValue(r, "ok_out")
		assert.False(t, written)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRunFailed}, types(cps))
		assert.Equal(t, "failing_node", r.Failure.NodeID)
		assert.Equal(t, []any{"failing_node"}, r.Failure.Details["nodes"])
		assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["failing_node"], "always_fails")
		last := cps[len(cps)-1]
		var permanent []string
		for _, e := range eventsOf(one(last), run.EventNodeFailed) {
			if e.Payload["permanent"] == true {
				permanent = append(permanent, e.NodeID)
			}
		}
		assert.Equal(t, []string{"failing_node"}, permanent)
		assert.Empty(t, eventsOf(one(last), run.EventNodeCompleted))
		assert.Empty(t, k.attemptsOf("should_not_run"))
	})

	t.Run("case 17/panicking and exiting nodes fail the run", func(t *testing.T) {
		t.Parallel()
		for ref, reason := range map[string]string{refPanics: "node exploded", refExits: "exited"} {
			k := newKit(t)
			if ref == refExits && k.onCallingGoroutine() {
				// As a plain call would, runtime.Goexit ends the caller.
				requireEndsItsGoroutine(t, func() {
					_, _, _ = inline.RunInline(ctx, build(t, singleNode("crashing", ref)), nil, k.options()...)
				})
				continue
			}
			r, cps, err := inline.RunInline(ctx, build(t, singleNode("crashing", ref)), nil, k.options()...)
			require.NoError(t, err, ref)
			assertFailedWith(t, r, "node_failed")
			assert.Equal(t, run.CheckpointRunFailed, cps[len(cps)-1].Type, ref)
			assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["node"], reason, ref)
		}
	})

	t.Run("case 18/reserved and malformed returns fail without retry", func(t *testing.T) {
		t.Parallel()
		for ref, marker := range map[string]string{refAwaits: "unsupported_await", refBadReturn: "invalid_node_return"} {
			k := newKit(t)
			r, cps, err := inline.RunInline(ctx, build(t, singleNode("reserved-return", ref, graph.Retry(3, 0))), nil, k.options()...)
			require.NoError(t, err, ref)
			assertFailedWith(t, r, "node_failed")
			failed := eventsOf(cps, run.EventNodeFailed)
			require.Len(t, failed, 1, ref)
			assert.Equal(t, int64(1), failed[0].Payload["attempt"], ref)
			assert.Equal(t, true, failed[0].Payload["permanent"], ref)
			assert.Contains(t, failed[0].Payload["reason"], marker, ref)
			assert.Len(t, k.attemptsOf("node"), 1, ref)
		}
	})

	t.Run("case 19/a write to an unknown field fails the run", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, graph.New("bad-write").
			State("out", schema.String()).
			Node("writer", refWriteValue, cfg("field", "nope", "value", "x")).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_writer_finish", "writer", graph.Finish)), nil, k.options()...)
		require.NoError(t, err)
		assertFailedWith(t, r, "node_failed")
		failed := eventsOf(one(cps[len(cps)-1]), run.EventRunFailed)
		require.Len(t, failed, 1)
		assert.Equal(t, "writer", failed[0].NodeID)
		assert.Equal(t, "node_failed", failed[0].Payload["reason"])
		assert.Equal(t, r.Failure.Message, failed[0].Payload["message"])
		assert.Equal(t, []any{"writer"}, failed[0].Payload["nodes"])
		assert.Contains(t, failed[0].Payload["errors"].(map[string]any)["writer"], "unknown field")
	})

	t.Run("case 20/a schema-invalid write fails the run and leaves the field unwritten", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, _, err := inline.RunInline(ctx, build(t, graph.New("schema-violation").
			State("out", schema.Float()).
			Node("writer", refWriteValue, cfg("field", "out", "value", "not a number")).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_writer_finish", "writer", graph.Finish)), nil, k.options()...)
		require.NoError(t, err)
		assertFailedWith(t, r, "node_failed")
		_, written := fieldValue(r, "out")
		assert.False(t, written)
	})

	t.Run("case 21/flaky node retries twice then completes", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, retryThenContinue(3, 0)), nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, map[string]any{"out": "done"}, r.Output)
		assert.Empty(t, r.ActiveTasks)
		assert.Empty(t, r.PendingWrites)
		assert.Empty(t, r.Timers)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled,
			run.CheckpointRetryScheduled, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, types(cps))
		assert.Equal(t, [][2]any{{int64(1), false}, {int64(2), false}}, attemptOutcomes(eventsOf(findCheckpoints(cps, run.CheckpointRetryScheduled), run.EventNodeFailed)))

		for i, park := range findCheckpoints(cps, run.CheckpointRetryScheduled) {
			i++
			assert.Equal(t, run.StatusRunning, park.Run.Status)
			assert.Equal(t, 0, park.Run.Step)
			taskID, task := onlyKey(t, park.Run.ActiveTasks)
			assert.Equal(t, park.Run.ID+":0:flaky", taskID)
			assert.Equal(t, i+1, task.Attempt)
			assert.Equal(t, run.TaskRetryScheduled, task.Status)
			assert.Equal(t, run.IdempotencyKey(taskID, i+1), task.IdempotencyKey)
			var failed []int
			for _, f := range task.Failures {
				failed = append(failed, f.Attempt)
			}
			assert.Equal(t, seq(1, i), failed)
			assert.Equal(t, run.TimerRetry, park.Run.Timers[taskID].Kind)
		}
		step := findCheckpoints(cps, run.CheckpointStepCommitted)[0]
		assert.Empty(t, eventsOf(one(step), run.EventNodeFailed))
		completed := eventsOf(one(step), run.EventNodeCompleted)
		require.Len(t, completed, 1)
		assert.Equal(t, int64(3), completed[0].Payload["attempt"])
	})

	t.Run("case 22/exhausting the retry budget makes the failure permanent", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, retryThenContinue(2, 0)), nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assertFailedWith(t, r, "node_failed")
		assert.Equal(t, "flaky", r.Failure.NodeID)
		assert.Empty(t, r.ActiveTasks, "a terminal failure absorbs the superstep")
		assert.Empty(t, r.PendingWrites)
		assert.Empty(t, r.Timers)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled, run.CheckpointRunFailed}, types(cps))
		assert.Equal(t, [][2]any{{int64(1), false}}, attemptOutcomes(eventsOf(one(cps[1]), run.EventNodeFailed)))
		assert.Equal(t, [][2]any{{int64(2), true}}, attemptOutcomes(eventsOf(one(cps[2]), run.EventNodeFailed)))
	})

	t.Run("case 23/retry backoff is served by the sleeper", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, _, err := inline.RunInline(ctx, build(t, retryThenContinue(3, 25)), nil, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, []time.Duration{25 * time.Millisecond, 25 * time.Millisecond}, k.recordedSleeps())

		// A clock that advances 10 ms per read: the sleep still counts from
		// the park's own timestamp.
		k = newKit(t)
		reads := 0
		stepping := func() time.Time {
			reads++
			return frozenNow.Add(time.Duration(reads*10) * time.Millisecond)
		}
		r, _, err = inline.RunInline(ctx, build(t, retryThenContinue(3, 100)), nil, k.options(inline.WithClock(stepping))...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, k.recordedSleeps())
	})

	t.Run("case 24/invalid policies in a hand-edited runtime graph fail the run", func(t *testing.T) {
		t.Parallel()
		for name, policies := range map[string]map[string]any{
			"max_attempts 0": {"retry": map[string]any{"max_attempts": int64(0)}},
			"on_error":       {"on_error": "route"},
		} {
			k := newKit(t)
			c := withNodePolicies(k.compile(build(t, retryThenContinue(3, 0))), "flaky", policies)
			r, cps, err := inline.RunInline(ctx, c, nil, k.options()...)
			require.NoError(t, err, name)
			assertFailedWith(t, r, "invalid_policy")
			assert.Equal(t, "flaky", r.Failure.NodeID, name)
			failed := eventsOf(one(cps[len(cps)-1]), run.EventRunFailed)
			require.Len(t, failed, 1, name)
			assert.Equal(t, "flaky", failed[0].NodeID, name)
			assert.Equal(t, "invalid_policy", failed[0].Payload["reason"], name)
			assert.Equal(t, r.Failure.Message, failed[0].Payload["message"], name)
			assert.Empty(t, k.allAttempts(), name)
		}
	})

	t.Run("case 25/a sibling's result parks as a pending write until the barrier", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, parallelRetry(1, 3, 0)), nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, map[string]any{"flaky_out": "flaky done", "steady_out": "steady done"}, r.Output)
		assert.Len(t, k.attemptsOf("steady"), 1, "the sibling ran exactly once")

		parks := findCheckpoints(cps, run.CheckpointRetryScheduled)
		require.Len(t, parks, 1)
		park := parks[0].Run
		assert.Equal(t, run.StatusRunning, park.Status)
		assert.Equal(t, 0, park.Step)
		require.Len(t, park.PendingWrites, 1)
		pw := park.PendingWrites[0]
		assert.Equal(t, "steady", pw.NodeID)
		assert.Equal(t, 1, pw.Attempt)
		assert.Equal(t, run.WriteUpdate, pw.Kind)
		assert.Equal(t, map[string]any{"steady_out": "steady done"}, pw.Value)
		_, steadyWritten := fieldValue(park, "steady_out")
		_, flakyWritten := fieldValue(park, "flaky_out")
		assert.False(t, steadyWritten || flakyWritten, "parked results stay invisible")
		taskID, task := onlyKey(t, park.ActiveTasks)
		assert.Equal(t, "flaky", task.NodeID)
		assert.Equal(t, 2, task.Attempt)
		assert.Equal(t, run.TimerRetry, park.Timers[taskID].Kind)

		step := findCheckpoints(cps, run.CheckpointStepCommitted)[0]
		assert.Equal(t, 1, step.Run.Step)
		assert.Equal(t, [][2]any{{"flaky", int64(2)}, {"steady", int64(1)}}, completedAttempts(one(step)))
	})

	t.Run("case 26/carried pending siblings are listed once", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		_, cps, err := inline.RunInline(ctx, build(t, parallelRetry(2, 3, 0)), nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		parks := findCheckpoints(cps, run.CheckpointRetryScheduled)
		require.Len(t, parks, 2)
		var first [][2]any
		for _, a := range parks[0].Metadata.Map()["node_attempts"].([]any) {
			m := a.(map[string]any)
			first = append(first, [2]any{m["node_id"], m["outcome"]})
		}
		assert.Equal(t, [][2]any{{"flaky", "failed"}, {"steady", "pending_update"}}, first)
		runID := parks[1].Run.ID
		assert.Equal(t, portable(t, []any{map[string]any{
			"task_id": runID + ":0:flaky", "node_id": "flaky", "attempted": 2, "outcome": "failed", "next_scheduled_attempt": 3,
		}}), parks[1].Metadata.Map()["node_attempts"])
		pending := parks[1].Metadata.Map()["active_superstep"].(map[string]any)["pending_attempts"].([]any)
		require.Len(t, pending, 1)
		assert.Equal(t, "steady", pending[0].(map[string]any)["node_id"])
		assert.Equal(t, int64(1), pending[0].(map[string]any)["attempted"])
	})

	t.Run("case 27/a crash during backoff resumes the parked attempt without rerunning siblings", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, parallelRetry(1, 3, 0))
		initialized, _, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxSteps(0))...)
		require.NoError(t, err)

		parked, cps, err := inline.StepInline(ctx, g, initialized, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRetryScheduled}, types(cps))
		taskID := initialized.ID + ":0:flaky"
		flaky := k.attemptsOf("flaky")
		require.Len(t, flaky, 1)
		assert.Equal(t, taskID+":1", flaky[0].IdempotencyKey)
		assert.Len(t, k.attemptsOf("steady"), 1)

		// The process "crashes" here: only the committed park survives.
		resumed, cps, err := inline.ResumeInline(ctx, g, parked, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, resumed.Status)
		assert.Equal(t, map[string]any{"flaky_out": "flaky done", "steady_out": "steady done"}, resumed.Output)
		flaky = k.attemptsOf("flaky")
		require.Len(t, flaky, 2)
		assert.Equal(t, 2, flaky[1].Attempt)
		assert.Equal(t, taskID+":2", flaky[1].IdempotencyKey)
		assert.Len(t, k.attemptsOf("steady"), 1, "the committed sibling result is not re-executed")
	})

	t.Run("case 28/a permanent failure after a park discards parked sibling results", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, parallelRetry(5, 2, 0)), nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assertFailedWith(t, r, "node_failed")
		assert.Equal(t, "flaky", r.Failure.NodeID)
		assert.Empty(t, r.ActiveTasks)
		assert.Empty(t, r.PendingWrites)
		assert.Empty(t, r.Timers)
		_, written := fieldValue(r, "steady_out")
		assert.False(t, written)
		assert.Len(t, k.attemptsOf("steady"), 1)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled, run.CheckpointRunFailed}, types(cps))
		assert.Empty(t, eventsOf(one(cps[2]), run.EventNodeCompleted))
	})

	t.Run("case 29/a corrupted pending write fails the run through the permanent path", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, parallelRetry(1, 3, 0))
		initialized, _, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		parked, _, err := inline.StepInline(ctx, g, initialized, k.options()...)
		require.NoError(t, err)

		corrupted := parked.Clone()
		for i := range corrupted.PendingWrites {
			if corrupted.PendingWrites[i].Kind == run.WriteUpdate {
				corrupted.PendingWrites[i].Value = map[string]any{"ghost": "x"}
			}
		}
		require.NoError(t, corrupted.Validate(), "the corruption is still a durable run")

		failed, _, err := inline.ResumeInline(ctx, g, corrupted, k.options()...)
		require.NoError(t, err)
		assertFailedWith(t, failed, "node_failed")
		assert.Contains(t, failed.Failure.Details["errors"].(map[string]any)["steady"], "unknown field")
	})

	t.Run("case 30/heterogeneous backoffs park at the earliest deadline each time", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("two-backoffs").
			State("fast_out", schema.String()).
			State("slow_out", schema.String()).
			Node("fast", refFlaky, cfg("failures", 1.0, "field", "fast_out", "value", "fast done"), graph.Retry(2, 10)).
			Node("slow", refFlaky, cfg("failures", 1.0, "field", "slow_out", "value", "slow done"), graph.Retry(2, 50)).
			Edge("edge_start_fast", graph.Start, "fast").
			Edge("edge_start_slow", graph.Start, "slow").
			Edge("edge_fast_finish", "fast", graph.Finish).
			Edge("edge_slow_finish", "slow", graph.Finish))
		r, cps, err := inline.RunInline(ctx, g, nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		fast, _ := fieldValue(r, "fast_out")
		slow, _ := fieldValue(r, "slow_out")
		assert.Equal(t, "fast done", fast)
		assert.Equal(t, "slow done", slow)
		assert.Equal(t, []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}, k.recordedSleeps())

		var order [][2]any
		for _, a := range k.allAttempts() {
			order = append(order, [2]any{a.NodeID, a.Attempt})
		}
		require.Len(t, order, 4)
		assert.ElementsMatch(t, [][2]any{{"fast", 1}, {"slow", 1}}, order[:2])
		assert.Equal(t, [][2]any{{"fast", 2}, {"slow", 2}}, order[2:])

		parks := findCheckpoints(cps, run.CheckpointRetryScheduled)
		require.Len(t, parks, 2)
		assert.Len(t, parks[0].Run.ActiveTasks, 2)
		assert.Empty(t, parks[0].Run.PendingWrites)
		assert.Equal(t, []run.EventType{run.EventCheckpointCommitted}, eventTypes(parks[1].Events))
		require.Len(t, parks[1].Run.PendingWrites, 1)
		fastTask := parks[1].Run.PendingWrites[0].TaskID
		assert.Equal(t, "fast", parks[1].Run.PendingWrites[0].NodeID)
		assert.Equal(t, 2, parks[1].Run.PendingWrites[0].Attempt)
		slowTask, slowState := onlyKey(t, parks[1].Run.ActiveTasks)
		assert.Equal(t, "slow", slowState.NodeID)
		assert.Equal(t, 2, slowState.Attempt)
		assert.Equal(t, portable(t, map[string]any{
			"graph_step": 0,
			"tasks": []any{map[string]any{
				"task_id": slowTask, "node_id": "slow", "scheduled_attempt": 2, "idempotency_key": slowTask + ":2",
			}},
			"pending_attempts": []any{map[string]any{
				"task_id": fastTask, "node_id": "fast", "attempted": 2, "kind": "update", "idempotency_key": fastTask + ":2",
			}},
		}), parks[1].Metadata.Map()["active_superstep"])
		assert.Equal(t, portable(t, []any{map[string]any{
			"task_id": fastTask, "node_id": "fast", "attempted": 2, "outcome": "pending_update", "next_scheduled_attempt": nil,
		}}), parks[1].Metadata.Map()["node_attempts"])
	})

	t.Run("case 31/nothing due parks uncommitted until the served deadline", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("slow-retry").
			State("out", schema.String()).
			Node("flaky", refFlaky, cfg("failures", 1.0, "field", "out", "value", "done"), graph.Retry(2, 60000)).
			Edge("edge_start_flaky", graph.Start, "flaky").
			Edge("edge_flaky_finish", "flaky", graph.Finish))
		c := k.compile(g)
		initialized, _, err := inline.RunInline(ctx, c, nil, k.options(inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		parked, cps, err := inline.StepInline(ctx, c, initialized, k.options()...)
		require.NoError(t, err)
		require.Equal(t, []run.CheckpointType{run.CheckpointRetryScheduled}, types(cps))
		deadline := frozenNow.Add(time.Minute)
		assert.Equal(t, portable(t, "at"), cps[0].Metadata.Map()["wake_disposition"])
		assert.Equal(t, []time.Duration{time.Minute}, k.recordedSleeps(), "the committed park is slept through")

		// The frozen clock has not reached the deadline: nothing is due.
		step, err := superstep.Advance(c, parked, superstep.Env{Now: frozenNow})
		require.NoError(t, err)
		assert.Equal(t, superstep.Park, step.Kind)
		assert.Equal(t, deadline, step.ResumeAt)
		assert.Equal(t, time.Minute, step.Wait)

		// StepInline serves the uncommitted park, then commits the step.
		done, cps, err := inline.StepInline(ctx, c, parked, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, []time.Duration{time.Minute, time.Minute}, k.recordedSleeps())
		require.Equal(t, []run.CheckpointType{run.CheckpointStepCommitted}, types(cps))
		assert.Equal(t, "continue", cps[0].Metadata.Map()["wake_disposition"])
		assert.Empty(t, done.ActiveTasks)
		assert.Equal(t, 2, k.attemptsOf("flaky")[1].Attempt)
	})
}

// withNodePolicies returns a copy of c whose node id has the given raw
// policies: a hand-edited or stale runtime graph the compiler never saw.
func withNodePolicies(c *graph.Compiled, id string, policies map[string]any) *graph.Compiled {
	edited := *c
	edited.Nodes = maps.Clone(c.Nodes)
	n := *c.Nodes[id]
	n.Policies = policies
	edited.Nodes[id] = &n
	return &edited
}

func attemptOutcomes(events []run.Event) [][2]any {
	var out [][2]any
	for _, e := range events {
		out = append(out, [2]any{e.Payload["attempt"], e.Payload["permanent"]})
	}
	return out
}

func completedAttempts(cps []run.Checkpoint) [][2]any {
	var out [][2]any
	for _, e := range eventsOf(cps, run.EventNodeCompleted) {
		out = append(out, [2]any{e.NodeID, e.Payload["attempt"]})
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}
