package superstep_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// waitingIR drives the IR graph to its open interrupt.
func waitingIR(t *testing.T) (*harness, *run.Run, string) {
	t.Helper()
	h := newHarness(t, irGraph(t), irNodes())
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	require.Len(t, r.Interrupts, 1)
	for id := range r.Interrupts {
		return h, r, id
	}
	return nil, nil, ""
}

func TestInterruptParksTheRunExternally(t *testing.T) {
	t.Parallel()
	// §12 case 33.
	h, r, id := waitingIR(t)
	assert.Equal(t, []run.CheckpointType{cpInit, cpInterrupt}, h.types())
	assert.Equal(t, "interrupt_0001", id)
	in := r.Interrupts[id]
	assert.Equal(t, run.Interrupt{
		ID: id, NodeID: "gate", Status: run.InterruptOpen, ResumeChannel: "decision",
		Schema: map[string]any{"type": "string"}, CreatedAt: t0,
		Metadata: map[string]any{"question": "approve?"},
	}, in)
	assert.Equal(t, []string{"gate"}, r.PendingNodes)
	assert.Equal(t, 1, r.Step)

	m := h.moments[1]
	assert.Equal(t, run.Disposition{Kind: run.DispositionExternal, Reason: run.ReasonAwaitingInterrupts}, m.Disposition)
	require.Equal(t, []run.EventType{run.EventInterruptRequested, run.EventCheckpointCommitted}, eventTypes(m))
	assert.Equal(t, "gate", m.Events[0].NodeID)
	assert.Equal(t, "run_1:0:gate", m.Events[0].TaskID)
	assert.Equal(t, map[string]any{"attempt": int64(1), "interrupt_id": id, "resume_channel": "decision"}, m.Events[0].Payload)
	assert.Empty(t, eventsOf(m, run.EventEdgeTriggered), "an interrupting node fires no edges")

	step, err := superstep.Advance(h.g, r, h.env())
	require.NoError(t, err)
	assert.Equal(t, superstep.Step{Kind: superstep.Wait, InterruptIDs: []string{id}}, step)
}

func TestResolvingAnInterruptReRunsTheNode(t *testing.T) {
	t.Parallel()
	// §12 case 34.
	h, r, id := waitingIR(t)
	h.moments = nil
	m, err := superstep.ResolveInterrupt(h.g, r, id, "approved", h.env())
	require.NoError(t, err)
	r = h.accept(r, m)
	r = h.drive(r)

	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, []run.CheckpointType{cpResolved, cpStep, cpDone}, h.types())
	assert.Equal(t, "approved", r.Channels.Value("state:decision"))
	assert.Equal(t, "approved", r.Channels.Value("state:applied"))
	assert.Equal(t, map[string]any{"applied": "approved"}, r.Output)
	assert.Equal(t, run.InterruptResolved, r.Interrupts[id].Status)
	assert.Equal(t, t0, r.Interrupts[id].ResolvedAt)
	assert.Nil(t, r.PendingNodes)
	last := h.calls[len(h.calls)-1]
	assert.Equal(t, "run_1:1:gate", last.taskID, "the re-run is a new task in a new step")
	assert.Equal(t, 1, last.attempt)
}

func TestResolveInterruptErrors(t *testing.T) {
	t.Parallel()
	// §12 case 35.
	h, r, id := waitingIR(t)
	env := h.env()

	_, err := superstep.ResolveInterrupt(h.g, r, id, int64(42), env)
	assert.ErrorIs(t, err, superstep.ErrInvalidInput, "the interrupt's schema wants a string")
	var se *superstep.Error
	require.ErrorAs(t, err, &se)
	assert.NotEmpty(t, se.Details["reasons"])

	_, err = superstep.ResolveInterrupt(h.g, r, id, struct{}{}, env)
	assert.ErrorIs(t, err, superstep.ErrInvalidInput)

	_, err = superstep.ResolveInterrupt(h.g, r, "nope", "x", env)
	assert.ErrorIs(t, err, superstep.ErrNotFound)

	m, err := superstep.ResolveInterrupt(h.g, r, id, "yes", env)
	require.NoError(t, err)
	_, err = superstep.ResolveInterrupt(h.g, m.Run, id, "again", env)
	assert.ErrorIs(t, err, superstep.ErrAlreadyResolved)

	for _, status := range []run.Status{run.StatusDone, run.StatusFailed, run.StatusCancelled} {
		terminal := *r
		terminal.Status = status
		_, err = superstep.ResolveInterrupt(h.g, &terminal, id, "x", env)
		assert.ErrorIs(t, err, superstep.ErrInactiveRun, "terminal is checked before the lookup")
		_, err = superstep.ResolveInterrupt(h.g, &terminal, "nope", "x", env)
		assert.ErrorIs(t, err, superstep.ErrInactiveRun)
	}

	created := *r
	created.Status = run.StatusCreated
	created.Interrupts = nil
	_, err = superstep.ResolveInterrupt(h.g, &created, "nope", "x", env)
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)
}

func TestResolutionValueMustBeAValidWrite(t *testing.T) {
	t.Parallel()
	g := newDoc("typed-resume").
		field("answer", integer(), nil).
		nodes("ask").
		edge("e", "$start", "ask", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"ask": func(a superstep.Activation) superstep.Result {
		if _, ok := a.Snapshot["answer"]; ok {
			return update(map[string]any{})
		}
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: "q1", ResumeChannel: "answer"}}
	}})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	assert.Nil(t, r.Interrupts["q1"].Schema)

	_, err := superstep.ResolveInterrupt(g, r, "q1", "not an int", h.env())
	var se *superstep.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, superstep.CodeInvalidInput, se.Code)
	require.Len(t, se.Details["reasons"], 1)
	assert.Contains(t, se.Details["reasons"].([]any)[0], `wrote invalid value to "answer"`)

	m, err := superstep.ResolveInterrupt(g, r, "q1", 7, h.env())
	require.NoError(t, err)
	assert.Equal(t, int64(7), m.Run.Channels.Value("state:answer"), "the value is normalized")
}

func TestResolutionIntoAnAppendFieldAccumulates(t *testing.T) {
	t.Parallel()
	// §12 case 39 (resolve into append).
	g := newDoc("append-resume").
		field("answers", listOf(str()), map[string]any{"reducer": map[string]any{"type": "append"}}).
		nodes("ask").
		edge("e", "$start", "ask", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"ask": func(a superstep.Activation) superstep.Result {
		if list, _ := a.Snapshot["answers"].([]any); len(list) > 0 {
			return update(map[string]any{})
		}
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ResumeChannel: "answers"}}
	}})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	var id string
	for id = range r.Interrupts {
	}
	m, err := superstep.ResolveInterrupt(g, r, id, "yes", h.env())
	require.NoError(t, err)
	assert.Equal(t, []any{"yes"}, m.Run.Channels.Value("state:answers"))
	r = h.drive(h.accept(r, m))
	assert.Equal(t, run.StatusDone, r.Status)
}

func TestResolutionFoldsOntoTheFieldDefault(t *testing.T) {
	t.Parallel()
	// A resolution is a write like any other: into a field never written, it
	// folds onto the field's default.
	g := newDoc("default-resume").
		field("log", listOf(str()), map[string]any{"reducer": map[string]any{"type": "append"}, "default": []any{"seed"}}).
		nodes("ask").
		edge("e", "$start", "ask", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"ask": func(superstep.Activation) superstep.Result {
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: "q", ResumeChannel: "log"}}
	}})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	require.False(t, r.Channels.Has("state:log"))
	m, err := superstep.ResolveInterrupt(g, r, "q", "yes", h.env())
	require.NoError(t, err)
	checkMoment(t, r, m)
	assert.Equal(t, run.Channel{ID: "state:log", Value: []any{"seed", "yes"}, Version: 1}, channelOf(m.Run, "state:log"))
}

func TestResolvingLeavesTheResolvedRunUntouched(t *testing.T) {
	t.Parallel()
	// Two interrupts are resolved one after the other; the second
	// resolution must not change the run the first one committed, whose
	// changed channels it extends.
	g := newDoc("two-resolutions").
		field("a", str(), nil).
		field("b", str(), nil).
		field("c", str(), nil).
		field("d", str(), nil).
		nodes("x", "y", "w").
		edge("ex", "$start", "x", nil).
		edge("ey", "$start", "y", nil).
		edge("ew", "$start", "w", nil).
		compile(t, graph.Options{})
	ask := func(id, resume string) behavior {
		return func(superstep.Activation) superstep.Result {
			return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: id, ResumeChannel: resume}}
		}
	}
	h := newHarness(t, g, map[string]behavior{
		"x": ask("qa", "a"),
		"y": ask("qb", "b"),
		"w": func(superstep.Activation) superstep.Result { return update(map[string]any{"c": "c", "d": "d"}) },
	})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	require.Equal(t, []string{"state:c", "state:d"}, r.ChangedChannels)

	m, err := superstep.ResolveInterrupt(g, r, "qa", "yes", h.env())
	require.NoError(t, err)
	r = h.accept(r, m)
	committed := r.Clone()
	m, err = superstep.ResolveInterrupt(g, r, "qb", "yes", h.env())
	require.NoError(t, err)
	checkMoment(t, r, m)
	assert.Equal(t, committed, r, "resolving changed the committed run")
	assert.Equal(t, []string{"state:a", "state:b", "state:c", "state:d"}, m.Run.ChangedChannels)
}

func TestResolutionFoldsOntoACommittedNull(t *testing.T) {
	t.Parallel()
	// A field written null holds a value: first_value keeps it against a
	// resolution as it would against a node's write.
	g := newDoc("null-first").
		field("answer", str(), map[string]any{"reducer": map[string]any{"type": "first_value"}}).
		nodes("w", "ask").
		edge("ew", "$start", "w", nil).
		edge("ea", "$start", "ask", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{
		"w": write("answer", nil),
		"ask": func(superstep.Activation) superstep.Result {
			return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: "q", ResumeChannel: "answer"}}
		},
	})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	require.Equal(t, run.Channel{ID: "state:answer", Value: nil, Version: 1}, channelOf(r, "state:answer"))
	m, err := superstep.ResolveInterrupt(g, r, "q", "yes", h.env())
	require.NoError(t, err)
	checkMoment(t, r, m)
	assert.Equal(t, run.Channel{ID: "state:answer", Value: nil, Version: 2}, channelOf(m.Run, "state:answer"))
}

func TestResolutionMomentIsDeterministic(t *testing.T) {
	t.Parallel()
	// §12 case 36.
	h, r, id := waitingIR(t)
	now := t0.Add(time.Hour)
	env := superstep.Env{Now: now}
	first, err := superstep.ResolveInterrupt(h.g, r, id, "approved", env)
	require.NoError(t, err)
	second, err := superstep.ResolveInterrupt(h.g, r, id, "approved", env)
	require.NoError(t, err)
	assert.Equal(t, first, second)
	checkMoment(t, r, first)

	assert.Equal(t, cpResolved, first.CheckpointType)
	assert.Equal(t, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}, first.Disposition)
	assert.Equal(t, now, first.ProposedAt)
	assert.Equal(t, run.StatusRunning, first.Run.Status)
	assert.Equal(t, now, first.Run.UpdatedAt)
	assert.Equal(t, r.CheckpointSeq+1, first.Run.CheckpointSeq)
	assert.Equal(t, r.EventSeq+3, first.Run.EventSeq)
	require.Equal(t, []run.EventType{run.EventInterruptResolved, run.EventChannelUpdated, run.EventCheckpointCommitted}, eventTypes(first))
	assert.Equal(t, "gate", first.Events[0].NodeID)
	assert.Empty(t, first.Events[0].TaskID)
	assert.Equal(t, map[string]any{"interrupt_id": id, "resume_channel": "decision"}, first.Events[0].Payload)
	assert.Equal(t, "state:decision", first.Events[1].ChannelID)
	assert.Equal(t, map[string]any{"writers": []any{"gate"}}, first.Events[1].Payload)
	assert.Contains(t, first.Run.ChangedChannels, "state:decision")
	assert.Equal(t, "immediate", first.Metadata.Map()["wake_disposition"])

	withTasks := func(timers map[string]time.Time, untimed ...string) *run.Run {
		parked := *r
		parked.Status = run.StatusRunning
		parked.ActiveTasks = map[string]run.TaskState{}
		parked.Timers = map[string]run.Timer{}
		for task, at := range timers {
			parked.ActiveTasks[task] = run.TaskState{TaskID: task, NodeID: task, Attempt: 2}
			parked.Timers[task] = run.Timer{Kind: run.TimerRetry, FiresAt: at}
		}
		for _, task := range untimed {
			parked.ActiveTasks[task] = run.TaskState{TaskID: task, NodeID: task, Attempt: 2}
		}
		return &parked
	}
	earliest := now.Add(30 * time.Second)
	tests := []struct {
		name string
		run  *run.Run
		want run.Disposition
	}{
		{"all timers in the future park at the earliest",
			withTasks(map[string]time.Time{"near": earliest, "far": now.Add(90 * time.Second)}),
			run.Disposition{Kind: run.DispositionAt, At: earliest, Reason: run.ReasonInterruptResolved}},
		{"a due timer wakes now",
			withTasks(map[string]time.Time{"due": now, "far": now.Add(90 * time.Second)}),
			run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}},
		{"an untimed task wakes now",
			withTasks(map[string]time.Time{"far": now.Add(90 * time.Second)}, "untimed"),
			run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}},
	}
	for _, tc := range tests {
		m, err := superstep.ResolveInterrupt(h.g, tc.run, id, "approved", env)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, m.Disposition, tc.name)
	}
}

func TestInterruptAlongsideRunnableWorkKeepsRunning(t *testing.T) {
	t.Parallel()
	// §12 case 37.
	g := newDoc("interrupt-and-work").
		field("answer", str(), nil).
		field("asked", str(), nil).
		field("trigger", str(), nil).
		nodes("asker", "prep", "next").
		edge("edge_asker", "$start", "asker", nil).
		edge("edge_prep", "$start", "prep", nil).
		edge("edge_next", "prep", "next", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"asker": interruptOnce("answer", "asked"), "prep": write("trigger", "go"), "next": echo()})
	r := h.start(nil)
	_, m := h.advance(r)
	r = h.accept(r, m)
	assert.Equal(t, cpInterrupt, m.CheckpointType)
	assert.Equal(t, run.StatusRunning, r.Status)
	assert.Equal(t, run.DispositionContinue, m.Disposition.Kind)
	assert.Equal(t, []run.EventType{run.EventNodeCompleted, run.EventChannelUpdated, run.EventEdgeTriggered, run.EventInterruptRequested, run.EventCheckpointCommitted}, eventTypes(m))

	yielded, err := run.Yield(m, run.ReasonDrainBudget)
	require.NoError(t, err)
	assert.Equal(t, cpInterrupt, yielded.CheckpointType)

	// The next superstep runs "next"; the asker stays pending and the run
	// then waits.
	r = h.drive(r)
	assert.Equal(t, run.StatusWaiting, r.Status)
	assert.Equal(t, []string{"asker"}, r.PendingNodes)
}

func TestInterruptResolvedMidParkKeepsTheParkedSnapshot(t *testing.T) {
	t.Parallel()
	// §12 case 32 at the domain level.
	g := newDoc("interrupt-during-park").
		field("answer", str(), nil).
		field("asked", str(), nil).
		field("trigger", str(), nil).
		field("out", str(), nil).
		nodes("asker", "prep").
		node("flaky", map[string]any{"retry": map[string]any{"max_attempts": int64(2)}}).
		edge("edge_start_asker", "$start", "asker", nil).
		edge("edge_start_prep", "$start", "prep", nil).
		edge("edge_prep_flaky", "prep", "flaky", nil).
		edge("edge_asker_finish", "asker", "$finish", nil).
		edge("edge_flaky_finish", "flaky", "$finish", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"asker": interruptOnce("answer", "asked"), "prep": write("trigger", "go"), "flaky": flaky(1, "out", "done")})
	r := h.start(nil)
	_, m := h.advance(r)
	r = h.accept(r, m)
	_, m = h.advance(r)
	r = h.accept(r, m)
	require.Equal(t, cpRetry, m.CheckpointType)
	var id string
	for id = range r.Interrupts {
	}

	m, err := superstep.ResolveInterrupt(g, r, id, "42", h.env())
	require.NoError(t, err)
	r = h.drive(h.accept(r, m))
	require.Equal(t, run.StatusDone, r.Status)
	var flakyCalls []call
	for _, c := range h.calls {
		if c.node == "flaky" {
			flakyCalls = append(flakyCalls, c)
		}
	}
	require.Len(t, flakyCalls, 2)
	assert.Equal(t, flakyCalls[0].snapshot, flakyCalls[1].snapshot)
	assert.NotContains(t, flakyCalls[1].snapshot, "answer")
	assert.Equal(t, "42", r.Channels.Value("state:asked"))
	assert.Equal(t, "done", r.Channels.Value("state:out"))
}

func TestInterruptWithAnExistingIDFails(t *testing.T) {
	t.Parallel()
	g := newDoc("dup-interrupt").
		field("a", str(), nil).
		nodes("x", "y").
		edge("ex", "$start", "x", nil).
		edge("ey", "$start", "y", nil).
		compile(t, graph.Options{})
	ask := func(superstep.Activation) superstep.Result {
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: "same", ResumeChannel: "a"}}
	}
	h := newHarness(t, g, map[string]behavior{"x": ask, "y": ask})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, "y", r.Failure.NodeID)
	assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["y"], `interrupt id "same"`)
}

func TestInterruptReusingAResolvedInterruptsIDFails(t *testing.T) {
	t.Parallel()
	// An interrupt ID names one interrupt for the run's whole life: a later
	// node asking with the ID of a resolved interrupt fails, rather than
	// replacing the resolved interrupt with an open one.
	g := newDoc("reused-interrupt-id").
		field("a", str(), nil).
		nodes("x", "y").
		edge("ex", "$start", "x", nil).
		edge("exy", "x", "y", nil).
		compile(t, graph.Options{})
	ask := func(superstep.Activation) superstep.Result {
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: "ask", ResumeChannel: "a"}}
	}
	h := newHarness(t, g, map[string]behavior{
		"x": func(a superstep.Activation) superstep.Result {
			if _, ok := a.Snapshot["a"]; ok {
				return update(map[string]any{})
			}
			return ask(a)
		},
		"y": ask,
	})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	m, err := superstep.ResolveInterrupt(g, r, "ask", "yes", h.env())
	require.NoError(t, err)
	r = h.drive(h.accept(r, m))

	require.Equal(t, run.StatusFailed, r.Status)
	assert.Equal(t, "y", r.Failure.NodeID)
	assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["y"], `interrupt id "ask" already exists on this run`)
	assert.Equal(t, run.InterruptResolved, r.Interrupts["ask"].Status)
	assert.Equal(t, "x", r.Interrupts["ask"].NodeID)
}

func TestInterruptRequestedEventsFollowTheInterruptIDs(t *testing.T) {
	t.Parallel()
	// Interrupts of one superstep are announced in interrupt ID order, each
	// event naming the node and task that asked.
	g := newDoc("two-asks").
		field("a", str(), nil).
		nodes("x", "y").
		edge("ex", "$start", "x", nil).
		edge("ey", "$start", "y", nil).
		compile(t, graph.Options{})
	ask := func(id string) behavior {
		return func(superstep.Activation) superstep.Result {
			return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: id, ResumeChannel: "a"}}
		}
	}
	h := newHarness(t, g, map[string]behavior{"x": ask("z-ask"), "y": ask("m-ask")})
	r := h.start(nil)
	_, m := h.advance(r)
	h.accept(r, m)
	var got [][3]any
	for _, e := range eventsOf(m, run.EventInterruptRequested) {
		got = append(got, [3]any{e.Payload["interrupt_id"], e.NodeID, e.TaskID})
	}
	assert.Equal(t, [][3]any{{"m-ask", "y", "run_1:0:y"}, {"z-ask", "x", "run_1:0:x"}}, got)
}

func TestWaitListsTheOpenInterruptsInIDOrder(t *testing.T) {
	t.Parallel()
	g := newDoc("four-asks").
		field("a", str(), nil).
		nodes("w", "x", "y", "z").
		edge("ew", "$start", "w", nil).
		edge("ex", "$start", "x", nil).
		edge("ey", "$start", "y", nil).
		edge("ez", "$start", "z", nil).
		compile(t, graph.Options{})
	ask := func(id string) behavior {
		return func(superstep.Activation) superstep.Result {
			return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{ID: id, ResumeChannel: "a"}}
		}
	}
	h := newHarness(t, g, map[string]behavior{"w": ask("q3"), "x": ask("q1"), "y": ask("q4"), "z": ask("q2")})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	for range 10 {
		step, err := superstep.Advance(g, r, h.env())
		require.NoError(t, err)
		require.Equal(t, superstep.Step{Kind: superstep.Wait, InterruptIDs: []string{"q1", "q2", "q3", "q4"}}, step)
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	// §12 case 38.
	h, waiting, _ := waitingIR(t)
	running := *waiting
	running.Status = run.StatusRunning
	running.ActiveTasks = map[string]run.TaskState{"t": {TaskID: "t", NodeID: "n", Attempt: 2}}
	running.Timers = map[string]run.Timer{"t": {Kind: run.TimerRetry, FiresAt: t0.Add(time.Minute)}}
	running.PendingWrites = []run.PendingWrite{{TaskID: "s", NodeID: "o", Attempt: 1, Kind: run.WriteUpdate, Value: map[string]any{}}}

	now := t0.Add(time.Hour)
	for _, r := range []*run.Run{waiting, &running} {
		m, err := superstep.Cancel(r, superstep.Env{Now: now})
		require.NoError(t, err)
		checkMoment(t, r, m)
		assert.Equal(t, cpCancelled, m.CheckpointType)
		assert.Equal(t, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCancelled}, m.Disposition)
		assert.Equal(t, run.StatusCancelled, m.Run.Status)
		assert.Equal(t, now, m.Run.FinishedAt)
		assert.Equal(t, now, m.Run.UpdatedAt)
		assert.Equal(t, []run.EventType{run.EventRunCancelled, run.EventCheckpointCommitted}, eventTypes(m))
		assert.Equal(t, map[string]any{}, m.Events[0].Payload)
		assert.Nil(t, m.Run.ActiveTasks)
		assert.Nil(t, m.Run.PendingWrites)
		assert.Nil(t, m.Run.Timers)

		again, err := superstep.Cancel(m.Run, superstep.Env{Now: now.Add(time.Hour)})
		assert.NoError(t, err)
		assert.Nil(t, again, "cancelling a cancelled run changes nothing")
	}

	for _, status := range []run.Status{run.StatusDone, run.StatusFailed} {
		r := *waiting
		r.Status = status
		_, err := superstep.Cancel(&r, superstep.Env{Now: now})
		assert.ErrorIs(t, err, superstep.ErrInactiveRun)
	}
	created := *waiting
	created.Status = run.StatusCreated
	_, err := superstep.Cancel(&created, superstep.Env{Now: now})
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)
	_ = h
}

func TestCheckExecutionPolicy(t *testing.T) {
	t.Parallel()
	g := newDoc("timeouts").
		node("slow", map[string]any{"timeout_ms": int64(101)}).
		node("fast", map[string]any{"timeout_ms": int64(15)}).
		edge("e1", "$start", "slow", nil).
		edge("e2", "$start", "fast", nil).
		compile(t, graph.Options{})

	err := superstep.CheckExecutionPolicy(g, 100)
	var se *superstep.Error
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, superstep.ErrIncompatibleExecutionPolicy)
	assert.Equal(t, "slow", se.NodeID)
	assert.Equal(t, map[string]any{"timeout_ms": int64(101), "max_attempt_elapsed_ms": int64(100)}, se.Details)

	assert.NoError(t, superstep.CheckExecutionPolicy(g, 101))
	assert.NoError(t, superstep.CheckExecutionPolicy(g, 0), "0 means the 2000 ms default")

	assert.Equal(t, 15*time.Millisecond, superstep.EffectiveTimeout(graph.NodePolicy{TimeoutMS: 15}, 100))
	assert.Equal(t, 100*time.Millisecond, superstep.EffectiveTimeout(graph.NodePolicy{TimeoutMS: 150}, 100))
	assert.Equal(t, 2*time.Second, superstep.EffectiveTimeout(graph.NodePolicy{}, 0))
}
