package superstep_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

func TestMinimalLinearRunCompletes(t *testing.T) {
	t.Parallel()
	// §12 case 1.
	h := newHarness(t, mlGraph(t), mlNodes())
	r := h.drive(h.start(map[string]any{"value": "hello"}))

	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, 1, r.Step)
	assert.Equal(t, map[string]any{"result": "hello"}, r.Output)
	assert.Equal(t, []run.CheckpointType{cpInit, cpStep, cpDone}, h.types())
	for i, m := range h.moments {
		assert.Equal(t, int64(i+1), m.Run.CheckpointSeq)
	}

	step := h.moments[1]
	assert.Equal(t, []run.EventType{run.EventNodeCompleted, run.EventChannelUpdated, run.EventEdgeTriggered, run.EventCheckpointCommitted}, eventTypes(step))
	assert.Equal(t, "copy", step.Events[0].NodeID)
	assert.Equal(t, "run_1:0:copy", step.Events[0].TaskID)
	assert.Equal(t, map[string]any{"attempt": int64(1)}, step.Events[0].Payload)
	assert.Equal(t, "state:result", step.Events[1].ChannelID)
	assert.Equal(t, map[string]any{"writers": []any{"copy"}}, step.Events[1].Payload)
	assert.Equal(t, "edge:edge_finish", step.Events[2].ChannelID)
	assert.Equal(t, map[string]any{"edge_id": "edge_finish", "to": "$finish"}, step.Events[2].Payload)
	for _, e := range step.Events[:3] {
		assert.Equal(t, 0, e.Step, "barrier events carry the pre-commit step")
	}
	assert.Equal(t, 1, step.Events[3].Step, "the checkpoint fact carries the proposed step")
	assert.Equal(t, run.Disposition{Kind: run.DispositionContinue}, step.Disposition)
	finishWritten := step.Run.Channels.Has("edge:edge_finish")
	assert.False(t, finishWritten, "a $finish edge is never bumped")
	assert.Equal(t, []string{"state:result"}, step.Run.ChangedChannels)
	assert.Equal(t, run.Channel{ID: "edge:edge_start", Value: nil, Version: 1}, channelOf(step.Run, "edge:edge_start"), "the consumed activation is cleared")

	done := h.moments[2]
	assert.Equal(t, []run.EventType{run.EventRunCompleted, run.EventCheckpointCommitted}, eventTypes(done))
	assert.Equal(t, map[string]any{"outputs": []any{"result"}}, done.Events[0].Payload)
	assert.Equal(t, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCompleted}, done.Disposition)
	assert.Equal(t, done.ProposedAt, done.Run.FinishedAt)
}

func TestSequentialRunWithUnwrittenOutput(t *testing.T) {
	t.Parallel()
	// §12 case 3.
	h := newHarness(t, seGraph(t), map[string]behavior{"writer": echo(), "reviewer": echo()})
	r := h.drive(h.start(nil))
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, 2, r.Step)
	assert.Equal(t, []run.CheckpointType{cpInit, cpStep, cpStep, cpDone}, h.types())
	assert.Equal(t, map[string]any{"draft": nil}, r.Output, "an unwritten output is null")
}

func TestOutputsTakeTheirSourceFieldsValues(t *testing.T) {
	t.Parallel()
	// An output is named apart from the field it reads.
	g := newDoc("renamed-outputs").
		field("x", str(), nil).
		field("y", str(), map[string]any{"default": "unused"}).
		nodes("w").
		edge("e", "$start", "w", nil).
		output("result", "x").
		output("other", "y").
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": write("x", "v")})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, map[string]any{"result": "v", "other": nil}, r.Output)
}

func TestFanOutCompletesInNodeOrder(t *testing.T) {
	t.Parallel()
	// §12 case 4.
	g := foDoc().compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"source": echo(), "left": echo(), "right": echo()})
	r := h.drive(h.start(nil))
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, 2, r.Step)
	var completed []string
	for _, e := range eventsOf(h.moments[2], run.EventNodeCompleted) {
		completed = append(completed, e.NodeID)
	}
	assert.Equal(t, []string{"left", "right"}, completed)
	assert.Empty(t, eventsOf(h.moments[2], run.EventEdgeTriggered))
}

func TestFanInBarrierFiresOnceBothSourcesComplete(t *testing.T) {
	t.Parallel()
	// §12 case 5.
	h := newHarness(t, msGraph(t), map[string]behavior{"source": echo(), "left": echo(), "right": echo(), "combine": echo()})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, 3, r.Step)
	require.Equal(t, []run.CheckpointType{cpInit, cpStep, cpStep, cpStep, cpDone}, h.types())

	step2 := h.moments[2]
	triggered := eventsOf(step2, run.EventEdgeTriggered)
	require.Len(t, triggered, 1)
	assert.Equal(t, map[string]any{"edge_id": "edge_combine_ready", "to": "combine"}, triggered[0].Payload)
	assert.Equal(t, []string{"edge:edge_combine_ready"}, step2.Run.ChangedChannels)

	step3 := h.moments[3]
	completed := eventsOf(step3, run.EventNodeCompleted)
	require.Len(t, completed, 1)
	assert.Equal(t, "combine", completed[0].NodeID)
	assert.Equal(t, []string{}, r.BarrierSeen["edge:edge_combine_ready"])
	assert.Equal(t, int64(1), r.Channels.Version("edge:edge_combine_ready"))
}

func TestStickyBarrierRemembersEarlySources(t *testing.T) {
	t.Parallel()
	// §12 case 6: b completes one hop after a.
	g := newDoc("sticky").
		nodes("a", "x", "b", "join").
		edge("edge_a", "$start", "a", nil).
		edge("edge_x", "$start", "x", nil).
		edge("edge_b", "x", "b", nil).
		edge("edge_join", []any{"a", "b"}, "join", nil).
		edge("edge_finish", "join", "$finish", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"a": echo(), "x": echo(), "b": echo(), "join": echo()})
	r := h.start(nil)

	_, m := h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, []string{"a"}, r.BarrierSeen["edge:edge_join"])
	assert.Equal(t, int64(0), r.Channels.Version("edge:edge_join"), "a barrier accumulates at version 0")

	committed := r.Clone()
	_, m = h.advance(r)
	assert.Equal(t, committed, r, "the barrier copies the barrier sets it changes, never the committed run's")
	r = h.accept(r, m)
	assert.Equal(t, []string{}, r.BarrierSeen["edge:edge_join"], "firing resets the seen set")
	assert.Equal(t, []string{"edge:edge_join"}, r.ChangedChannels)

	r = h.drive(r)
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, "join", h.calls[len(h.calls)-1].node)
}

func TestBarrierSourceCompletingAgainIsSeenOnce(t *testing.T) {
	t.Parallel()
	// b loops once, so it completes again in the superstep where a first
	// completes: the join has seen a and b, each once, and waits for c.
	g := newDoc("seen-again").
		field("n", integer(), map[string]any{"reducer": map[string]any{"type": "sum"}}).
		nodes("a", "b", "c", "x", "join").
		edge("edge_b", "$start", "b", nil).
		edge("edge_x", "$start", "x", nil).
		edge("edge_xa", "x", "a", nil).
		edge("edge_ac", "a", "c", nil).
		edge("edge_loop", "b", "b", guardOp("not", guardOp("version_at_least", "n", int64(2)))).
		edge("edge_join", []any{"a", "b", "c"}, "join", nil).
		edge("edge_finish", "join", "$finish", nil).
		compile(t, graph.Options{MaxSupersteps: 10})
	h := newHarness(t, g, map[string]behavior{"a": echo(), "b": write("n", int64(1)), "c": echo(), "x": echo(), "join": echo()})
	r := h.start(nil)
	_, m := h.advance(r)
	r = h.accept(r, m)
	require.Equal(t, []string{"b"}, r.BarrierSeen["edge:edge_join"])

	_, m = h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, []string{"a", "b"}, r.BarrierSeen["edge:edge_join"])
	assert.Equal(t, run.StatusDone, h.drive(r).Status)
}

func TestChangedGuardSeesTheFieldsOfTheSuperstep(t *testing.T) {
	t.Parallel()
	// A guard's changed set is the fields this superstep wrote: w writes
	// draft, not note, so only the edge guarded on draft fires.
	g := newDoc("changed-guard").
		field("draft", str(), nil).
		field("note", str(), nil).
		nodes("w", "onDraft", "onNote").
		edge("edge_w", "$start", "w", nil).
		edge("edge_draft", "w", "onDraft", guardOp("changed", "draft")).
		edge("edge_note", "w", "onNote", guardOp("changed", "note")).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": write("draft", "v1"), "onDraft": echo(), "onNote": echo()})
	r := h.start(nil)
	_, m := h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, []string{"edge:edge_draft", "state:draft"}, r.ChangedChannels)
	triggered := eventsOf(m, run.EventEdgeTriggered)
	require.Len(t, triggered, 1)
	assert.Equal(t, "edge:edge_draft", triggered[0].ChannelID)
}

func TestFinishEdgesAreAnnouncedAfterTheEdgesThatActivate(t *testing.T) {
	t.Parallel()
	// The events of a superstep's fired edges list those that activate a
	// node first, then those into $finish, each group by edge ID.
	g := newDoc("finish-last").
		nodes("w", "next").
		edge("edge_w", "$start", "w", nil).
		edge("edge_a_finish", "w", "$finish", nil).
		edge("edge_b_next", "w", "next", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": echo(), "next": echo()})
	r := h.start(nil)
	_, m := h.advance(r)
	r = h.accept(r, m)
	var fired []string
	for _, e := range eventsOf(m, run.EventEdgeTriggered) {
		fired = append(fired, e.ChannelID)
	}
	assert.Equal(t, []string{"edge:edge_b_next", "edge:edge_a_finish"}, fired)
	assert.False(t, r.Channels.Has("edge:edge_a_finish"), "a $finish edge has no channel to bump")
}

func TestWideStickyBarrierRemembersEarlySources(t *testing.T) {
	t.Parallel()
	// Twenty branches complete with x in one superstep (more completed
	// nodes than the small-set scan covers); the join also waits for b,
	// one hop later. Sources are listed out of node order.
	d := newDoc("wide").nodes("x", "b", "join").
		edge("edge_x", "$start", "x", nil).
		edge("edge_b", "x", "b", nil).
		edge("edge_finish", "join", "$finish", nil)
	nodes := map[string]behavior{"x": echo(), "b": echo(), "join": echo()}
	from := []any{"b"}
	var branches []string
	for i := range 20 {
		id := fmt.Sprintf("a%02d", i)
		d.nodes(id).edge("edge_"+id, "$start", id, nil)
		nodes[id] = echo()
		from = append([]any{id}, from...)
		branches = append(branches, id)
	}
	g := d.edge("edge_join", from, "join", nil).compile(t, graph.Options{})
	h := newHarness(t, g, nodes)
	r := h.start(nil)

	_, m := h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, branches, r.BarrierSeen["edge:edge_join"], "the seen set is sorted and holds every completed source")

	_, m = h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, []string{}, r.BarrierSeen["edge:edge_join"], "b completes the set: it fires and resets")
	assert.Equal(t, []string{"edge:edge_join"}, r.ChangedChannels)

	r = h.drive(r)
	assert.Equal(t, run.StatusDone, r.Status)
	joins := 0
	for _, c := range h.calls {
		if c.node == "join" {
			joins++
		}
	}
	assert.Equal(t, 1, joins, "the join runs once")
}

func TestGuardFalseBarrierStillResets(t *testing.T) {
	t.Parallel()
	g := newDoc("guarded-barrier").
		field("go", boolean(), nil).
		nodes("a", "b", "join").
		edge("edge_a", "$start", "a", nil).
		edge("edge_b", "$start", "b", nil).
		edge("edge_join", []any{"a", "b"}, "join", guardOp("equals", "go", true)).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"a": echo(), "b": echo(), "join": echo()})
	r := h.drive(h.start(nil))
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, run.Channel{ID: "edge:edge_join"}, channelOf(r, "edge:edge_join"), "a barrier whose guard failed keeps version 0")
	assert.Equal(t, []string{}, r.BarrierSeen["edge:edge_join"])
	assert.Len(t, h.calls, 2, "join never ran")
}

func TestNodesSeeOnlyCommittedState(t *testing.T) {
	t.Parallel()
	// §12 case 7.
	g := newDoc("isolation").
		field("x", str(), map[string]any{"default": "old"}).
		field("y", str(), nil).
		nodes("writer", "reader").
		edge("edge_writer", "$start", "writer", nil).
		edge("edge_reader", "$start", "reader", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"writer": write("x", "new"), "reader": copyField("x", "y")})
	r := h.drive(h.start(nil))
	assert.Equal(t, "new", r.Channels.Value("state:x"))
	assert.Equal(t, "old", r.Channels.Value("state:y"))
}

func TestSameStepConflictIsDeterministic(t *testing.T) {
	t.Parallel()
	// §12 case 8: the last writer in node order wins for last_value.
	g := newDoc("conflict").
		field("x", str(), nil).
		nodes("a_writer", "b_writer").
		edge("edge_a", "$start", "a_writer", nil).
		edge("edge_b", "$start", "b_writer", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"a_writer": write("x", "from_a"), "b_writer": write("x", "from_b")})
	r := h.drive(h.start(nil))
	assert.Equal(t, "from_b", r.Channels.Value("state:x"))
	assert.Equal(t, int64(1), r.Channels.Version("state:x"), "one write batch, one version")
	updated := eventsOf(h.moments[1], run.EventChannelUpdated)
	require.Len(t, updated, 1)
	assert.Equal(t, []any{"a_writer", "b_writer"}, updated[0].Payload["writers"])
}

func TestWritesChangeChannelsEvenWithEqualValues(t *testing.T) {
	t.Parallel()
	// §12 case 9.
	g := newDoc("write-change").
		field("x", str(), map[string]any{"default": "same"}).
		nodes("w").
		edge("e", "$start", "w", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": write("x", "same")})
	r := h.start(nil)
	_, m := h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, run.Channel{ID: "state:x", Value: "same", Version: 1}, channelOf(r, "state:x"))
	assert.Contains(t, r.ChangedChannels, "state:x")
}

func TestCountingCycleRunsToItsGuard(t *testing.T) {
	t.Parallel()
	// §12 case 11.
	h := newHarness(t, ccDoc().policy("max_supersteps", int64(50)).compile(t, graph.Options{}), ccNodes())
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, 10.0, r.Output["count"])
	assert.Equal(t, 20, r.Step)
	// The loop edge fires every other step; its activation is consumed.
	assert.Nil(t, r.Channels.Value("edge:edge_loop"))
	assert.Equal(t, int64(9), r.Channels.Version("edge:edge_loop"))
}

func TestEphemeralEdgeFiringTwiceInARowEndsCleared(t *testing.T) {
	t.Parallel()
	g := newDoc("self-loop").
		field("n", integer(), nil).
		nodes("tick").
		edge("edge_start", "$start", "tick", nil).
		edge("edge_again", "tick", "tick", guardOp("not", guardOp("version_at_least", "n", int64(3)))).
		compile(t, graph.Options{MaxSupersteps: 10})
	h := newHarness(t, g, map[string]behavior{"tick": func(a superstep.Activation) superstep.Result {
		n, _ := a.Snapshot["n"].(int64)
		return update(map[string]any{"n": n + 1})
	}})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, int64(3), r.Channels.Value("state:n"))
	assert.Equal(t, run.Channel{ID: "edge:edge_again", Value: nil, Version: 2}, channelOf(r, "edge:edge_again"))
	// The second superstep consumes the activation and fires it again: its
	// checkpoint holds it cleared, at the fired version.
	require.Equal(t, 2, h.moments[2].Run.Step)
	assert.Equal(t, run.Channel{ID: "edge:edge_again", Value: nil, Version: 2}, channelOf(h.moments[2].Run, "edge:edge_again"))
}

func TestFiredEdgeHoldsItsActivationUntilConsumed(t *testing.T) {
	t.Parallel()
	// The superstep that consumes an ephemeral edge clears it; an edge it
	// fires that was not consumed holds its activation.
	g := newDoc("hold-activation").
		nodes("w", "next").
		edge("edge_start", "$start", "w", nil).
		edge("edge_next", "w", "next", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": echo(), "next": echo()})
	r := h.start(nil)
	require.Equal(t, run.Channel{ID: "edge:edge_start", Value: true, Version: 1}, channelOf(r, "edge:edge_start"))
	_, m := h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, run.Channel{ID: "edge:edge_start", Value: nil, Version: 1}, channelOf(r, "edge:edge_start"))
	assert.Equal(t, run.Channel{ID: "edge:edge_next", Value: true, Version: 1}, channelOf(r, "edge:edge_next"))
}

func TestCommittedStepRecordsWhenItCommitted(t *testing.T) {
	t.Parallel()
	// Every transition stamps the run with its time: a step committed an
	// hour after the start is updated then.
	g := newDoc("stamp").
		field("x", str(), nil).
		nodes("w").
		edge("edge_start", "$start", "w", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": write("x", "v")})
	r := h.start(nil)
	h.now = t0.Add(time.Hour)
	_, m := h.advance(r)
	r = h.accept(r, m)
	require.Equal(t, cpStep, m.CheckpointType)
	assert.Equal(t, t0, r.StartedAt)
	assert.Equal(t, t0.Add(time.Hour), r.UpdatedAt)
}

func TestSuperstepLimitFailsTheRun(t *testing.T) {
	t.Parallel()
	// §12 cases 12 and 13.
	for name, g := range map[string]*graph.Compiled{
		"graph policy":    ccDoc().policy("max_supersteps", int64(3)).compile(t, graph.Options{}),
		"runtime default": ccDoc().compile(t, graph.Options{MaxSupersteps: 3}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, g, ccNodes())
			r := h.drive(h.start(nil))
			require.Equal(t, run.StatusFailed, r.Status)
			assert.Equal(t, 3, r.Step)
			assert.Equal(t, &run.Failure{
				Code:    "max_supersteps_exceeded",
				Message: "run exceeded the superstep limit of 3",
				Details: map[string]any{"limit": int64(3)},
			}, r.Failure)
			last := h.moments[len(h.moments)-1]
			require.Equal(t, []run.EventType{run.EventRunFailed, run.EventCheckpointCommitted}, eventTypes(last))
			assert.Equal(t, map[string]any{
				"reason":  "max_supersteps_exceeded",
				"message": "run exceeded the superstep limit of 3",
				"limit":   int64(3),
			}, last.Events[0].Payload)
			assert.Equal(t, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunFailed}, last.Disposition)
		})
	}
}

func TestGuardEvaluationErrorAtTheBarrierFailsTheRun(t *testing.T) {
	t.Parallel()
	g := newDoc("bad-barrier-guard").
		field("x", str(), nil).
		nodes("a", "b").
		edge("edge_a", "$start", "a", nil).
		edge("edge_b", "a", "b", guardOp("exists", "x")).
		compile(t, graph.Options{})
	g.Edges["edge_b"].Guard = &graph.Guard{Op: graph.OpPath, Args: []any{"x", []any{}}}
	h := newHarness(t, g, map[string]behavior{"a": write("x", "v")})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, "guard_evaluation_failed", r.Failure.Code)
	assert.Equal(t, "edge edge_b guard evaluation failed", r.Failure.Message)
	assert.Equal(t, "edge_b", r.Failure.Details["edge_id"])
	assert.NotEmpty(t, r.Failure.Details["reasons"])
	assert.Equal(t, 0, r.Step)
	written := r.Channels.Has("state:x")
	assert.False(t, written, "no write of the failing superstep commits")
	assert.Equal(t, []run.EventType{run.EventRunFailed, run.EventCheckpointCommitted}, eventTypes(h.moments[1]))
}

func TestReducersFoldWrites(t *testing.T) {
	t.Parallel()
	// §12 case 39.
	appendField := map[string]any{"reducer": map[string]any{"type": "append"}}

	t.Run("append accumulates single and list writes", func(t *testing.T) {
		t.Parallel()
		g := newDoc("append").field("log", listOf(str()), appendField).
			nodes("one", "two").
			edge("e1", "$start", "one", nil).edge("e2", "one", "two", nil).
			compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"one": write("log", "one"), "two": write("log", []any{"two", "three"})})
		r := h.drive(h.start(nil))
		assert.Equal(t, []any{"one", "two", "three"}, r.Channels.Value("state:log"))
		assert.Equal(t, int64(2), r.Channels.Version("state:log"))
	})

	t.Run("same-step appends fold onto the default in node order", func(t *testing.T) {
		t.Parallel()
		g := newDoc("append-default").
			field("log", listOf(str()), map[string]any{"reducer": map[string]any{"type": "append"}, "default": []any{"seed"}}).
			nodes("a", "b").
			edge("ea", "$start", "a", nil).edge("eb", "$start", "b", nil).
			compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"a": write("log", "from_a"), "b": write("log", "from_b")})
		r := h.drive(h.start(nil))
		assert.Equal(t, []any{"seed", "from_a", "from_b"}, r.Channels.Value("state:log"))
	})

	t.Run("an unwritten append field reads as its zero", func(t *testing.T) {
		t.Parallel()
		g := newDoc("append-zero").field("log", listOf(str()), appendField).
			nodes("r").edge("e", "$start", "r", nil).compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"r": echo()})
		r := h.drive(h.start(nil))
		assert.Equal(t, []any{}, h.calls[0].snapshot["log"])
		written := r.Channels.Has("state:log")
		assert.False(t, written, "the zero is a default, not a write")
	})

	t.Run("writers of several fields fold each field once, in node order", func(t *testing.T) {
		t.Parallel()
		g := newDoc("two-fields").field("log", listOf(str()), appendField).
			field("total", integer(), map[string]any{"reducer": map[string]any{"type": "sum"}}).
			nodes("a", "b").edge("ea", "$start", "a", nil).edge("eb", "$start", "b", nil).
			compile(t, graph.Options{})
		both := func(name string, n int64) behavior {
			return func(superstep.Activation) superstep.Result {
				return update(map[string]any{"log": name, "total": n})
			}
		}
		h := newHarness(t, g, map[string]behavior{"b": both("b", 3), "a": both("a", 2)})
		r := h.drive(h.start(nil))
		require.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, run.Channel{ID: "state:log", Value: []any{"a", "b"}, Version: 1}, channelOf(r, "state:log"))
		assert.Equal(t, run.Channel{ID: "state:total", Value: int64(5), Version: 1}, channelOf(r, "state:total"))
		updated := eventsOf(h.moments[1], run.EventChannelUpdated)
		require.Len(t, updated, 2)
		for i, cid := range []string{"state:log", "state:total"} {
			assert.Equal(t, cid, updated[i].ChannelID)
			assert.Equal(t, map[string]any{"writers": []any{"a", "b"}}, updated[i].Payload)
		}
	})

	t.Run("sum adds the writes", func(t *testing.T) {
		t.Parallel()
		g := newDoc("sum").field("total", integer(), map[string]any{"reducer": map[string]any{"type": "sum"}}).
			nodes("a", "b").edge("ea", "$start", "a", nil).edge("eb", "$start", "b", nil).
			compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"a": write("total", int64(2)), "b": write("total", int64(3))})
		r := h.drive(h.start(nil))
		assert.Equal(t, int64(5), r.Channels.Value("state:total"))
	})

	t.Run("merge combines maps", func(t *testing.T) {
		t.Parallel()
		g := newDoc("merge").field("m", objectMap(), map[string]any{"reducer": map[string]any{"type": "merge"}}).
			nodes("a", "b").edge("ea", "$start", "a", nil).edge("eb", "$start", "b", nil).
			compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"a": write("m", map[string]any{"a": int64(1)}), "b": write("m", map[string]any{"b": int64(2)})})
		r := h.drive(h.start(nil))
		assert.Equal(t, map[string]any{"a": int64(1), "b": int64(2)}, r.Channels.Value("state:m"))
	})

	t.Run("first_value keeps the first write", func(t *testing.T) {
		t.Parallel()
		g := newDoc("first").field("f", str(), map[string]any{"reducer": map[string]any{"type": "first_value"}}).
			nodes("a", "b").edge("ea", "$start", "a", nil).edge("eb", "a", "b", nil).
			compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"a": write("f", "first"), "b": write("f", "second")})
		r := h.drive(h.start(nil))
		assert.Equal(t, "first", r.Channels.Value("state:f"))
		assert.Equal(t, int64(2), r.Channels.Version("state:f"))
	})

	t.Run("a write that fails the item schema fails the run", func(t *testing.T) {
		t.Parallel()
		g := newDoc("append-bad").field("log", listOf(str()), appendField).
			nodes("w").edge("e", "$start", "w", nil).compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"w": write("log", int64(42))})
		r := h.drive(h.start(nil))
		require.Equal(t, run.StatusFailed, r.Status)
		written := r.Channels.Has("state:log")
		assert.False(t, written)
		assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["w"], `wrote invalid value to "log"`)
	})
}
