package superstep_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

func TestPermanentFailureCommitsNothingOfTheSuperstep(t *testing.T) {
	t.Parallel()
	// §12 case 16.
	g := newDoc("parallel-failure").
		field("ok_out", str(), nil).
		nodes("ok_node", "failing_node", "join").
		edge("edge_ok", "$start", "ok_node", nil).
		edge("edge_fail", "$start", "failing_node", nil).
		edge("edge_join", []any{"failing_node", "ok_node"}, "join", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{
		"ok_node":      write("ok_out", "ok"),
		"failing_node": alwaysFails(),
	})
	r := h.drive(h.start(nil))

	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, 0, r.Step)
	written := r.Channels.Has("state:ok_out")
	assert.False(t, written)
	assert.Equal(t, []run.CheckpointType{cpInit, cpFailed}, h.types())
	assert.Equal(t, &run.Failure{
		Code:    "node_failed",
		Message: "node(s) failing_node failed permanently",
		NodeID:  "failing_node",
		Details: map[string]any{"nodes": []any{"failing_node"}, "errors": map[string]any{"failing_node": "always_fails"}},
	}, r.Failure)
	assert.Equal(t, r.FinishedAt, r.UpdatedAt)

	m := h.moments[1]
	assert.Equal(t, []run.EventType{run.EventNodeFailed, run.EventRunFailed, run.EventCheckpointCommitted}, eventTypes(m))
	failed := m.Events[0]
	assert.Equal(t, "failing_node", failed.NodeID)
	assert.Equal(t, "run_1:0:failing_node", failed.TaskID)
	assert.Equal(t, map[string]any{"attempt": int64(1), "reason": "always_fails", "permanent": true}, failed.Payload)
	runFailed := m.Events[1]
	assert.Equal(t, "failing_node", runFailed.NodeID)
	assert.Equal(t, map[string]any{
		"reason":  "node_failed",
		"message": "node(s) failing_node failed permanently",
		"nodes":   []any{"failing_node"},
		"errors":  map[string]any{"failing_node": "always_fails"},
	}, runFailed.Payload)
}

func TestSeveralPermanentFailuresNameNoSingleNode(t *testing.T) {
	t.Parallel()
	g := newDoc("two-failures").
		nodes("b", "a").
		edge("ea", "$start", "a", nil).
		edge("eb", "$start", "b", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"a": alwaysFails(), "b": func(superstep.Activation) superstep.Result { return failure("boom", false) }})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, "node(s) a, b failed permanently", r.Failure.Message)
	assert.Empty(t, r.Failure.NodeID)
	assert.Equal(t, []any{"a", "b"}, r.Failure.Details["nodes"])
	assert.Empty(t, eventsOf(h.moments[1], run.EventRunFailed)[0].NodeID)
}

func TestInvalidUpdatesFailTheRun(t *testing.T) {
	t.Parallel()
	// §12 cases 19 and 20, and the other update validation reasons.
	g := newDoc("bad-writes").
		input("in", str(), nil).
		field("out", float(), nil).
		field("text", str(), nil).
		nodes("writer").
		edge("e", "$start", "writer", nil).
		edge("f", "writer", "$finish", nil).
		compile(t, graph.Options{})
	tests := []struct {
		name   string
		result superstep.Result
		reason string
	}{
		{"unknown field", update(map[string]any{"nope": "x"}), `invalid_state_update: wrote unknown field "nope"`},
		{"input field", update(map[string]any{"in": "x"}), `invalid_state_update: wrote "in", which is an input and read-only`},
		{"schema violation", update(map[string]any{"out": "not a number"}), `invalid_state_update: wrote invalid value to "out": `},
		{"non-portable value", update(map[string]any{"out": struct{}{}}), `invalid_state_update: returned a non-durable update: `},
		{"text that is not UTF-8", update(map[string]any{"text": "caf\xe9"}), `invalid_state_update: returned a non-durable update: non-portable value at text: strings must be UTF-8 text`},
		{"reasons in key order", update(map[string]any{"zz": 1, "aa": 1}), `invalid_state_update: wrote unknown field "aa"; wrote unknown field "zz"`},
		{"unsupported outcome", superstep.Result{Outcome: 99}, `invalid_node_return`},
		{"interrupt without request", superstep.Result{Outcome: superstep.OutcomeInterrupt}, `invalid_interrupt: interrupt request is missing`},
		{"interrupt into an unknown channel", superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ResumeChannel: "in"}},
			`invalid_interrupt: interrupt resume_channel "in" is not a declared state field`},
		// On PostgreSQL such an id came back changed, and resolving the id
		// the node chose was not_found.
		{"interrupt id that is not UTF-8", superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: "ask\xff", ResumeChannel: "text"}},
			`invalid_interrupt: interrupt id "ask\xff" must be UTF-8 text`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, g, map[string]behavior{"writer": func(superstep.Activation) superstep.Result { return tc.result }})
			r := h.drive(h.start(nil))
			require.Equal(t, run.StatusFailed, r.Status)
			assert.Equal(t, "writer", r.Failure.NodeID)
			assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["writer"], tc.reason)
			written := r.Channels.Has("state:out")
			assert.False(t, written)
			last := h.moments[len(h.moments)-1]
			runFailed := eventsOf(last, run.EventRunFailed)
			require.Len(t, runFailed, 1)
			assert.Equal(t, "writer", runFailed[0].NodeID)
			assert.Equal(t, "node_failed", runFailed[0].Payload["reason"])
			assert.Equal(t, []any{"writer"}, runFailed[0].Payload["nodes"])
		})
	}
}

func TestFlakyNodeRetriesWithinItsBudget(t *testing.T) {
	t.Parallel()
	// §12 case 21.
	g := newDoc("retry").
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(3), "backoff_ms": int64(25)}}).
		edge("e", "$start", "flaky", nil).
		edge("f", "flaky", "$finish", nil).
		output("out", "out").
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"flaky": flaky(2, "out", "done")})
	r := h.drive(h.start(nil))

	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, map[string]any{"out": "done"}, r.Output)
	assert.Equal(t, []run.CheckpointType{cpInit, cpRetry, cpRetry, cpStep, cpDone}, h.types())
	assert.Equal(t, []time.Duration{25 * time.Millisecond, 25 * time.Millisecond}, h.sleeps)

	taskID := "run_1:0:flaky"
	for i, park := range h.moments[1:3] {
		attempt := i + 1
		failed := eventsOf(park, run.EventNodeFailed)
		require.Len(t, failed, 1)
		assert.Equal(t, map[string]any{"attempt": int64(attempt), "reason": failed[0].Payload["reason"], "permanent": false}, failed[0].Payload)
		assert.Equal(t, taskID, failed[0].TaskID)

		pr := park.Run
		assert.Equal(t, run.StatusRunning, pr.Status)
		assert.Equal(t, 0, pr.Step)
		require.Len(t, pr.ActiveTasks, 1)
		task := pr.ActiveTasks[taskID]
		assert.Equal(t, attempt+1, task.Attempt)
		assert.Equal(t, run.IdempotencyKey(taskID, attempt+1), task.IdempotencyKey)
		assert.Equal(t, run.TaskRetryScheduled, task.Status)
		require.Len(t, task.Failures, attempt)
		for j, f := range task.Failures {
			assert.Equal(t, j+1, f.Attempt)
		}
		timer := pr.Timers[taskID]
		assert.Equal(t, run.TimerRetry, timer.Kind)
		assert.Equal(t, park.ProposedAt.Add(25*time.Millisecond), timer.FiresAt)
		assert.Equal(t, run.Disposition{Kind: run.DispositionAt, At: timer.FiresAt, Reason: run.ReasonRetryBackoff}, park.Disposition)
	}

	completed := eventsOf(h.moments[3], run.EventNodeCompleted)
	require.Len(t, completed, 1)
	assert.Equal(t, int64(3), completed[0].Payload["attempt"])
	assert.Empty(t, eventsOf(h.moments[3], run.EventNodeFailed))

	// Every attempt of the task saw the same snapshot and hash.
	require.Len(t, h.calls, 3)
	for i, c := range h.calls {
		assert.Equal(t, i+1, c.attempt)
		assert.Equal(t, run.IdempotencyKey(taskID, i+1), c.key)
		assert.Equal(t, h.calls[0].hash, c.hash)
	}
}

// The input hash is not computed when a superstep is planned: a parked
// retry stores the hash of the view its attempt was planned with, even when
// the node wrote into the view it owned before failing.
func TestRetrySeesTheSourceVersionsOfTheFirstAttempt(t *testing.T) {
	t.Parallel()
	g := newDoc("retry-versions").
		input("name", str(), nil).
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(10)}}).
		edge("e", "$start", "flaky", nil).
		compile(t, graph.Options{})
	var seen []map[string]int64
	h := newHarness(t, g, map[string]behavior{"flaky": func(a superstep.Activation) superstep.Result {
		seen = append(seen, a.SourceVersions.Map())
		if a.Attempt == 1 {
			return failure("first attempt", true)
		}
		return update(map[string]any{"out": "done"})
	}})
	r := h.drive(h.start(map[string]any{"name": "ada"}))
	require.Equal(t, run.StatusDone, r.Status)
	want := map[string]int64{"name": 1, "out": 0}
	assert.Equal(t, []map[string]int64{want, want}, seen)
	assert.Equal(t, want, h.moments[1].Run.ActiveTasks["run_1:0:flaky"].SourceVersions)
}

func TestRetryParkStoresTheInputHashOfThePlannedView(t *testing.T) {
	t.Parallel()
	g := newDoc("retry-hash").
		input("name", str(), nil).
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(10)}}).
		edge("e", "$start", "flaky", nil).
		edge("f", "flaky", "$finish", nil).
		output("out", "out").
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"flaky": func(a superstep.Activation) superstep.Result {
		if a.Attempt == 1 {
			a.Snapshot["name"] = "scribbled" // against the contract, on its owned view
			a.Snapshot["extra"] = int64(1)
			return failure("first attempt", true)
		}
		return update(map[string]any{"out": a.Snapshot["name"]})
	}})
	r := h.start(map[string]any{"name": "ada"})
	step, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	require.Len(t, step.Activations, 1)
	require.True(t, step.Activations[0].Owned)
	planned := map[string]any{"name": "ada"}
	assert.Equal(t, run.InputHash(planned), step.Activations[0].InputHash())

	r = h.drive(r)
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, map[string]any{"out": "ada"}, r.Output, "the retry saw the committed view")
	park := h.moments[1].Run
	task := park.ActiveTasks["run_1:0:flaky"]
	assert.Equal(t, planned, task.Snapshot)
	assert.Equal(t, run.InputHash(planned), task.InputHash)
	require.NoError(t, park.Validate())
}

func TestExhaustedRetryBudgetFailsPermanently(t *testing.T) {
	t.Parallel()
	// §12 case 22.
	g := parallelRetryDoc(2, 0).compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"flaky": alwaysFails(), "steady": write("steady_out", "x")})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, []run.CheckpointType{cpInit, cpRetry, cpFailed}, h.types())
	park := eventsOf(h.moments[1], run.EventNodeFailed)
	require.Len(t, park, 1)
	assert.Equal(t, []any{int64(1), false}, []any{park[0].Payload["attempt"], park[0].Payload["permanent"]})
	final := eventsOf(h.moments[2], run.EventNodeFailed)
	require.Len(t, final, 1)
	assert.Equal(t, []any{int64(2), true}, []any{final[0].Payload["attempt"], final[0].Payload["permanent"]})
	assert.Equal(t, "flaky", r.Failure.NodeID)
	assert.Nil(t, r.ActiveTasks)
	assert.Nil(t, r.PendingWrites)
	assert.Nil(t, r.Timers)
}

func TestRetryFailureReportedBeforePermanentOnes(t *testing.T) {
	t.Parallel()
	g := newDoc("mixed").
		node("r", map[string]any{"retry": map[string]any{"max_attempts": int64(3)}}).
		nodes("p").
		edge("er", "$start", "r", nil).
		edge("ep", "$start", "p", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"r": alwaysFails(), "p": func(superstep.Activation) superstep.Result { return failure("bad", false) }})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusFailed, r.Status)
	failed := eventsOf(h.moments[1], run.EventNodeFailed)
	require.Len(t, failed, 2)
	assert.Equal(t, "r", failed[0].NodeID)
	assert.Equal(t, false, failed[0].Payload["permanent"])
	assert.Equal(t, "p", failed[1].NodeID)
	assert.Equal(t, true, failed[1].Payload["permanent"])
	assert.Equal(t, []any{"p"}, r.Failure.Details["nodes"])
}

func TestInvalidPolicyFailsAtPlanTime(t *testing.T) {
	t.Parallel()
	// §12 case 24: the compiler rejects these, so edit the runtime graph.
	for name, policies := range map[string]map[string]any{
		"max_attempts 0": {"retry": map[string]any{"max_attempts": int64(0)}},
		"on_error":       {"on_error": "route"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := newDoc("bad-policy").nodes("flaky").edge("e", "$start", "flaky", nil).compile(t, graph.Options{})
			g.Nodes["flaky"].Policies = policies
			h := newHarness(t, g, map[string]behavior{"flaky": echo()})
			r := h.drive(h.start(nil))
			require.Equal(t, run.StatusFailed, r.Status)
			assert.Equal(t, "invalid_policy", r.Failure.Code)
			assert.Equal(t, "flaky", r.Failure.NodeID)
			assert.NotEmpty(t, r.Failure.Message)
			assert.Empty(t, h.calls)
			last := h.moments[len(h.moments)-1]
			require.Equal(t, []run.EventType{run.EventRunFailed, run.EventCheckpointCommitted}, eventTypes(last))
			assert.Equal(t, "flaky", last.Events[0].NodeID)
			assert.Equal(t, "invalid_policy", last.Events[0].Payload["reason"])
			assert.Equal(t, r.Failure.Message, last.Events[0].Payload["message"])
		})
	}
}

func TestParkedSiblingResultsWaitForTheBarrier(t *testing.T) {
	t.Parallel()
	// §12 case 25.
	g := parallelRetryDoc(3, 0).compile(t, graph.Options{})
	h := newHarness(t, g, parallelRetryNodes(1))
	r := h.drive(h.start(nil))

	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, map[string]any{"flaky_out": "flaky done", "steady_out": "steady done"}, r.Output)
	steadyRuns := 0
	for _, c := range h.calls {
		if c.node == "steady" {
			steadyRuns++
		}
	}
	assert.Equal(t, 1, steadyRuns, "the sibling ran once across the park")

	park := h.moments[1]
	require.Equal(t, cpRetry, park.CheckpointType)
	assert.Equal(t, []run.PendingWrite{{
		TaskID: "run_1:0:steady", NodeID: "steady", Attempt: 1, Kind: run.WriteUpdate,
		Value: map[string]any{"steady_out": "steady done"},
	}}, park.Run.PendingWrites)
	steadyWritten := park.Run.Channels.Has("state:steady_out")
	flakyWritten := park.Run.Channels.Has("state:flaky_out")
	assert.False(t, steadyWritten)
	assert.False(t, flakyWritten)

	step := h.moments[2]
	require.Equal(t, cpStep, step.CheckpointType)
	assert.Equal(t, 1, step.Run.Step)
	var completed [][2]any
	for _, e := range eventsOf(step, run.EventNodeCompleted) {
		completed = append(completed, [2]any{e.NodeID, e.Payload["attempt"]})
	}
	assert.Equal(t, [][2]any{{"flaky", int64(2)}, {"steady", int64(1)}}, completed)
}

func TestCarriedPendingWritesAreNotRepeatedAsAttempts(t *testing.T) {
	t.Parallel()
	// §12 case 26.
	g := parallelRetryDoc(3, 0).compile(t, graph.Options{})
	h := newHarness(t, g, parallelRetryNodes(2))
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	require.Equal(t, []run.CheckpointType{cpInit, cpRetry, cpRetry, cpStep, cpDone}, h.types())

	park1, park2 := h.moments[1], h.moments[2]
	var outcomes [][2]any
	for _, a := range park1.Metadata.Map()["node_attempts"].([]any) {
		m := a.(map[string]any)
		outcomes = append(outcomes, [2]any{m["node_id"], m["outcome"]})
	}
	assert.Equal(t, [][2]any{{"flaky", "failed"}, {"steady", "pending_update"}}, outcomes)
	assert.Equal(t, []any{map[string]any{
		"task_id": "run_1:0:flaky", "node_id": "flaky", "attempted": int64(2),
		"outcome": "failed", "next_scheduled_attempt": int64(3),
	}}, park2.Metadata.Map()["node_attempts"])
	pending := park2.Metadata.Map()["active_superstep"].(map[string]any)["pending_attempts"].([]any)
	require.Len(t, pending, 1)
	assert.Equal(t, "steady", pending[0].(map[string]any)["node_id"])
	assert.Equal(t, int64(1), pending[0].(map[string]any)["attempted"])
}

func TestCrashDuringBackoffResumesTheParkedAttempt(t *testing.T) {
	t.Parallel()
	// §12 case 27 at the domain level: a resumed run continues from the park.
	g := parallelRetryDoc(3, 0).compile(t, graph.Options{})
	h := newHarness(t, g, parallelRetryNodes(1))
	r := h.start(nil)
	_, m := h.advance(r)
	parked := h.accept(r, m)
	require.Equal(t, cpRetry, m.CheckpointType)

	rm, err := superstep.Resume(g, parked, h.env())
	require.NoError(t, err)
	resumed := h.accept(parked, rm)
	h.calls = nil
	done := h.drive(resumed)
	require.Equal(t, run.StatusDone, done.Status)
	require.NotEmpty(t, h.calls)
	assert.Equal(t, "flaky", h.calls[0].node)
	assert.Equal(t, 2, h.calls[0].attempt)
	assert.Equal(t, "run_1:0:flaky:2", h.calls[0].key)
	for _, c := range h.calls {
		assert.NotEqual(t, "steady", c.node, "the parked sibling is not re-run")
	}
}

func TestPermanentFailureAfterAParkDiscardsParkedResults(t *testing.T) {
	t.Parallel()
	// §12 case 28.
	g := parallelRetryDoc(2, 0).compile(t, graph.Options{})
	h := newHarness(t, g, parallelRetryNodes(5))
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, []run.CheckpointType{cpInit, cpRetry, cpFailed}, h.types())
	written := r.Channels.Has("state:steady_out")
	assert.False(t, written)
	assert.Empty(t, eventsOf(h.moments[2], run.EventNodeCompleted))
	steadyRuns := 0
	for _, c := range h.calls {
		if c.node == "steady" {
			steadyRuns++
		}
	}
	assert.Equal(t, 1, steadyRuns)
}

// driveCorruptedPendingWrite parks the parallel retry run with one
// pending write, replaces that write's kind and value (a corruption the
// run's own validation cannot see) and drives the run on.
func driveCorruptedPendingWrite(t *testing.T, kind string, value map[string]any) (*harness, *run.Run) {
	t.Helper()
	g := parallelRetryDoc(3, 0).compile(t, graph.Options{})
	h := newHarness(t, g, parallelRetryNodes(1))
	r := h.start(nil)
	_, m := h.advance(r)
	parked := h.accept(r, m)

	corrupted := *parked
	corrupted.PendingWrites = []run.PendingWrite{parked.PendingWrites[0]}
	corrupted.PendingWrites[0].Kind = kind
	corrupted.PendingWrites[0].Value = value
	require.NoError(t, corrupted.Validate())
	return h, h.drive(&corrupted)
}

func TestCorruptedPendingWriteFailsAtTheBarrier(t *testing.T) {
	t.Parallel()
	// §12 case 29.
	h, done := driveCorruptedPendingWrite(t, run.WriteUpdate, map[string]any{"ghost": "x"})
	require.Equal(t, run.StatusFailed, done.Status)
	assert.Equal(t, "node_failed", done.Failure.Code)
	assert.Contains(t, done.Failure.Details["errors"].(map[string]any)["steady"], "unknown field")
	assert.Equal(t, "steady", done.Failure.NodeID)
	assert.Len(t, eventsOf(h.moments[len(h.moments)-1], run.EventNodeFailed), 1)
}

func TestParkedInterruptWithAnUnknownKeyFailsAtTheBarrier(t *testing.T) {
	t.Parallel()
	// A parked interrupt is read back key by key: one the runtime never
	// writes means the stored write is corrupt, and is not dropped silently.
	_, done := driveCorruptedPendingWrite(t, run.WriteInterrupt, map[string]any{
		"node_id": "steady", "resume_channel": "steady_out", "metadata": map[string]any{}, "priority": "high",
	})
	require.Equal(t, run.StatusFailed, done.Status)
	assert.Equal(t, "steady", done.Failure.NodeID)
	assert.Contains(t, done.Failure.Details["errors"].(map[string]any)["steady"], `unknown key "priority"`)
	assert.Empty(t, done.Interrupts)
}

func TestCorruptedPendingWritesFailInNodeOrder(t *testing.T) {
	t.Parallel()
	// Pending writes are stored in the order their attempts finished, not
	// node order; the failures of corrupted ones are still reported in node
	// order.
	g := newDoc("parked-pair").
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(3), "backoff_ms": int64(0)}}).
		nodes("a", "b").
		edge("ea", "$start", "a", nil).
		edge("eb", "$start", "b", nil).
		edge("ef", "$start", "flaky", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"a": echo(), "b": echo(), "flaky": flaky(1, "out", "done")})
	r := h.start(nil)
	_, m := h.advance(r)
	parked := h.accept(r, m)
	require.Len(t, parked.PendingWrites, 2)

	corrupted := *parked
	corrupted.PendingWrites = []run.PendingWrite{parked.PendingWrites[1], parked.PendingWrites[0]}
	for i := range corrupted.PendingWrites {
		corrupted.PendingWrites[i].Value = map[string]any{"ghost": "x"}
	}
	require.Equal(t, "b", corrupted.PendingWrites[0].NodeID)
	require.NoError(t, corrupted.Validate())

	done := h.drive(&corrupted)
	require.Equal(t, run.StatusFailed, done.Status)
	assert.Equal(t, "node(s) a, b failed permanently", done.Failure.Message)
	assert.Equal(t, []any{"a", "b"}, done.Failure.Details["nodes"])
	var failed []string
	for _, e := range eventsOf(h.moments[len(h.moments)-1], run.EventNodeFailed) {
		failed = append(failed, e.NodeID)
	}
	assert.Equal(t, []string{"a", "b"}, failed)
}

func TestHeterogeneousBackoffsParkAtTheEarliestDeadline(t *testing.T) {
	t.Parallel()
	// §12 case 30, frozen clock.
	g := newDoc("two-backoffs").
		field("fast_out", str(), nil).
		field("slow_out", str(), nil).
		node("fast", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(10)}}).
		node("slow", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(50)}}).
		edge("edge_start_fast", "$start", "fast", nil).
		edge("edge_start_slow", "$start", "slow", nil).
		edge("edge_fast_finish", "fast", "$finish", nil).
		edge("edge_slow_finish", "slow", "$finish", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"fast": flaky(1, "fast_out", "fast done"), "slow": flaky(1, "slow_out", "slow done")})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, []time.Duration{10 * time.Millisecond, 50 * time.Millisecond}, h.sleeps)
	assert.Equal(t, "fast done", r.Channels.Value("state:fast_out"))
	assert.Equal(t, "slow done", r.Channels.Value("state:slow_out"))

	var order [][2]any
	for _, c := range h.calls {
		order = append(order, [2]any{c.node, c.attempt})
	}
	assert.Equal(t, [][2]any{{"fast", 1}, {"slow", 1}, {"fast", 2}, {"slow", 2}}, order)

	require.Equal(t, []run.CheckpointType{cpInit, cpRetry, cpRetry, cpStep, cpDone}, h.types())
	park1, park2 := h.moments[1], h.moments[2]
	assert.Len(t, park1.Run.ActiveTasks, 2)
	assert.Nil(t, park1.Run.PendingWrites)
	assert.Equal(t, []run.EventType{run.EventCheckpointCommitted}, eventTypes(park2), "a park caused only by a not-yet-due sibling has no runtime events")
	require.Len(t, park2.Run.PendingWrites, 1)
	assert.Equal(t, "fast", park2.Run.PendingWrites[0].NodeID)
	assert.Equal(t, 2, park2.Run.PendingWrites[0].Attempt)
	require.Len(t, park2.Run.ActiveTasks, 1)
	assert.Equal(t, 2, park2.Run.ActiveTasks["run_1:0:slow"].Attempt)
	assert.Equal(t, t0.Add(50*time.Millisecond), park2.Disposition.At)
}

func TestCenturiesOfBackoffStayInTheFuture(t *testing.T) {
	t.Parallel()
	// backoff_ms has no upper bound; past ~292 years its nanoseconds
	// overflow, and a wrapped timer would fire the retry at once.
	g := newDoc("huge-backoff").
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(9_300_000_000_000)}}).
		edge("e", "$start", "flaky", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"flaky": flaky(1, "out", "done")})
	r := h.start(nil)
	_, m := h.advance(r)
	require.NotNil(t, m)
	require.Equal(t, cpRetry, m.CheckpointType)
	fires := m.Run.Timers["run_1:0:flaky"].FiresAt
	assert.Equal(t, t0.Add(math.MaxInt64/time.Millisecond*time.Millisecond), fires, "the backoff saturates at the longest duration")
	assert.Equal(t, fires, m.Disposition.At)

	step, err := superstep.Advance(g, h.accept(r, m), superstep.Env{Now: t0.Add(24 * time.Hour)})
	require.NoError(t, err)
	assert.Equal(t, superstep.Park, step.Kind, "the retry waits out its backoff")
}

func TestNothingDueParksWithoutCommitting(t *testing.T) {
	t.Parallel()
	// §12 case 31.
	g := newDoc("long-backoff").
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(60000)}}).
		edge("e", "$start", "flaky", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"flaky": flaky(1, "out", "done")})
	r := h.start(nil)
	_, m := h.advance(r)
	parked := h.accept(r, m)
	before, err := run.Encode(parked)
	require.NoError(t, err)

	step, err := superstep.Advance(g, parked, superstep.Env{Now: t0})
	require.NoError(t, err)
	assert.Equal(t, superstep.Step{Kind: superstep.Park, ResumeAt: t0.Add(time.Minute), Wait: time.Minute}, step)
	after, err := run.Encode(parked)
	require.NoError(t, err)
	assert.Equal(t, before, after)

	step, err = superstep.Advance(g, parked, superstep.Env{Now: t0.Add(70 * time.Second)})
	require.NoError(t, err)
	assert.Equal(t, superstep.Execute, step.Kind, "a clock past the deadline makes the task due")

	// With the floor at the deadline (the driver waited it out), the frozen
	// clock no longer holds the task back.
	h.floor = t0.Add(time.Minute)
	_, m = h.advance(parked)
	require.NotNil(t, m)
	assert.Equal(t, cpStep, m.CheckpointType)
	assert.Equal(t, run.DispositionContinue, m.Disposition.Kind)
	assert.Equal(t, t0, m.Run.UpdatedAt, "the floor is not the transition time")
}

func TestResumeOfAnUnknownNodeFailsTheRun(t *testing.T) {
	t.Parallel()
	g := parallelRetryDoc(3, 0).compile(t, graph.Options{})
	h := newHarness(t, g, parallelRetryNodes(1))
	r := h.start(nil)
	_, m := h.advance(r)
	parked := h.accept(r, m)

	other := newDoc("parallel-retry").
		field("flaky_out", str(), nil).
		field("steady_out", str(), nil).
		nodes("steady").
		edge("edge_start_steady", "$start", "steady", nil).
		compile(t, graph.Options{})
	other.Hash = g.Hash // a stale runtime graph under the pinned identity
	step, err := superstep.Advance(other, parked, superstep.Env{Now: t0})
	require.NoError(t, err)
	require.Equal(t, superstep.Commit, step.Kind)
	f := step.Moment.Run.Failure
	assert.Equal(t, "invalid_run", f.Code)
	assert.Equal(t, "flaky", f.NodeID)
	assert.Nil(t, step.Moment.Run.ActiveTasks)
}

func TestRetrySleepIsMeasuredFromTheTimerOrigin(t *testing.T) {
	t.Parallel()
	// §12 case 23: with a clock that moves between transitions, each sleep
	// is still exactly the backoff.
	g := newDoc("retry-clock").
		field("out", str(), nil).
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(3), "backoff_ms": int64(100)}}).
		edge("e", "$start", "flaky", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"flaky": flaky(2, "out", "done")})
	h.tick = 10 * time.Millisecond
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 100 * time.Millisecond}, h.sleeps)
}
