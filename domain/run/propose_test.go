package run

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/value"
)

// specRetryParkMetadata is the checkpoint metadata example of spec §8.
const specRetryParkMetadata = `{"checkpoint_seq": 4, "checkpoint_type": "retry_scheduled", "graph_step": 0,
 "park_reason": "retry_backoff", "wake_disposition": "at",
 "active_superstep": {"graph_step": 0,
   "tasks": [{"task_id": "r:0:slow", "node_id": "slow", "scheduled_attempt": 2, "idempotency_key": "r:0:slow:2"}],
   "pending_attempts": [{"task_id": "r:0:fast", "node_id": "fast", "attempted": 2, "kind": "update", "idempotency_key": "r:0:fast:2"}]},
 "node_attempts": [{"task_id": "r:0:fast", "node_id": "fast", "attempted": 2,
                    "outcome": "pending_update", "next_scheduled_attempt": null}]}`

// canonical encodes v; checkpoint metadata through its wire form, checking
// that AppendCanonical writes the same bytes as the map.
func canonical(t *testing.T, v any) string {
	t.Helper()
	if m, ok := v.(*CheckpointMetadata); ok {
		wire := string(m.AppendCanonical(nil))
		require.Equal(t, canonical(t, m.Map()), wire, "AppendCanonical writes the canonical bytes of Map")
		return wire
	}
	b, err := value.Canonical(v)
	require.NoError(t, err)
	return string(b)
}

func TestProposeReproducesTheSpecRetryParkMetadata(t *testing.T) {
	t.Parallel()
	committed, next := retryParkPair()
	require.NoError(t, committed.Validate())
	require.NoError(t, next.Validate())

	m := Propose(committed, next, nil, CheckpointRetryScheduled,
		Disposition{Kind: DispositionAt, At: at(50), Reason: ReasonRetryBackoff}, at(10))

	require.NoError(t, value.Check(m.Metadata.Map()), "metadata must be a portable value")
	want, err := value.DecodeJSON([]byte(specRetryParkMetadata))
	require.NoError(t, err)
	assert.Equal(t, canonical(t, want), canonical(t, m.Metadata))
	assert.Equal(t,
		`{"active_superstep":{"graph_step":0,"pending_attempts":[{"attempted":2,"idempotency_key":"r:0:fast:2","kind":"update","node_id":"fast","task_id":"r:0:fast"}],`+
			`"tasks":[{"idempotency_key":"r:0:slow:2","node_id":"slow","scheduled_attempt":2,"task_id":"r:0:slow"}]},`+
			`"checkpoint_seq":4,"checkpoint_type":"retry_scheduled","graph_step":0,`+
			`"node_attempts":[{"attempted":2,"next_scheduled_attempt":null,"node_id":"fast","outcome":"pending_update","task_id":"r:0:fast"}],`+
			`"park_reason":"retry_backoff","wake_disposition":"at"}`,
		canonical(t, m.Metadata))

	// A park caused only by a task not yet due has no runtime events.
	require.Len(t, m.Events, 1)
	final := m.Events[0]
	assert.Equal(t, Event{
		RunID: "r", Seq: 10, Type: EventCheckpointCommitted, Step: 0, Timestamp: at(10),
		Payload: map[string]any{}, Metadata: m.Metadata,
	}, final)
	assert.Equal(t, int64(4), m.Run.CheckpointSeq)
	assert.Equal(t, int64(10), m.Run.EventSeq)
	assert.Equal(t, int64(3), m.ExpectedSeq())
	assert.Same(t, next, m.Run)
	require.NoError(t, m.Run.Validate())
}

func TestProposeNextProposesWhatProposeDoes(t *testing.T) {
	t.Parallel()
	committed, next := retryParkPair()
	byValue := *next
	events := func() []Event {
		return []Event{{Type: EventNodeFailed, NodeID: "slow", TaskID: "r:0:slow",
			Payload: map[string]any{"attempt": int64(1), "reason": "timeout", "will_retry": true}}}
	}
	d := Disposition{Kind: DispositionAt, At: at(50), Reason: ReasonRetryBackoff}

	want := Propose(committed, next, events(), CheckpointRetryScheduled, d, at(10))
	got := ProposeNext(committed, byValue, events(), CheckpointRetryScheduled, d, at(10))

	assert.Equal(t, want, got)
	assert.Equal(t, int64(3), byValue.CheckpointSeq, "the caller's copy is left alone")
	require.NoError(t, got.Run.Validate())
}

func TestProposeInitMomentMetadata(t *testing.T) {
	t.Parallel()
	next := runningRun()
	next.CheckpointSeq, next.EventSeq = 0, 0
	events := []Event{
		{Type: EventRunInitialized, Payload: map[string]any{"inputs": []any{"value"}}},
		{Type: EventChannelUpdated, ChannelID: "input:value", Payload: map[string]any{"version": int64(1)}},
		{Type: EventEdgeTriggered, ChannelID: "edge:start_fast", Payload: map[string]any{"edge_id": "start_fast"}},
	}
	now := time.Date(2025, 1, 1, 0, 0, 0, 987654321, time.FixedZone("CET", 3600))

	m := Propose(nil, next, events, CheckpointRunInitialized, Disposition{Kind: DispositionContinue}, now)

	assert.Equal(t, map[string]any{
		"checkpoint_seq":   int64(1),
		"checkpoint_type":  "run_initialized",
		"graph_step":       int64(0),
		"park_reason":      nil,
		"wake_disposition": "continue",
		"active_superstep": nil,
		"node_attempts":    []any{},
	}, m.Metadata.Map())
	wantNow := time.Date(2024, 12, 31, 23, 0, 0, 987654000, time.UTC)
	assert.Equal(t, wantNow, m.ProposedAt, "now is taken in UTC, truncated to microseconds")
	require.Len(t, m.Events, 4)
	for i, e := range m.Events {
		assert.Equal(t, "r", e.RunID)
		assert.Equal(t, int64(i+1), e.Seq)
		assert.Equal(t, wantNow, e.Timestamp)
		assert.NotNil(t, e.Payload)
	}
	for _, e := range m.Events[:3] {
		assert.Nil(t, e.Metadata, "runtime events carry no metadata")
	}
	assert.Same(t, m.Metadata, m.Events[3].Metadata, "the checkpoint event carries the moment's metadata")
	assert.Equal(t, events[1].Payload, m.Events[1].Payload)
	assert.Equal(t, "input:value", m.Events[1].ChannelID)
	assert.Equal(t, EventCheckpointCommitted, m.Events[3].Type)
	assert.Equal(t, int64(1), m.Run.CheckpointSeq)
	assert.Equal(t, int64(4), m.Run.EventSeq)

	cp := m.Checkpoint()
	assert.Equal(t, Checkpoint{
		Type: CheckpointRunInitialized, Seq: 1, Run: m.Run, Events: m.Events,
		CreatedAt: wantNow, Metadata: m.Metadata,
	}, cp)
}

func TestProposeNodeAttempts(t *testing.T) {
	t.Parallel()
	// Flaky ‖ steady with two failures (spec §12 case 26): the first park
	// reports flaky failed (next attempt 2) and steady's new pending update.
	snapshot := map[string]any{}
	committed := runningRun()
	next := committed.Clone()
	next.ActiveTasks["r:0:flaky"] = parkedTask("r", 0, "flaky", 2, snapshot)
	next.Timers["r:0:flaky"] = Timer{Kind: TimerRetry, FiresAt: at(100)}
	next.PendingWrites = []PendingWrite{{TaskID: "r:0:steady", NodeID: "steady", Attempt: 1, Kind: WriteUpdate, Value: map[string]any{}}}
	failed := Event{Type: EventNodeFailed, NodeID: "flaky", TaskID: "r:0:flaky",
		Payload: map[string]any{"attempt": int64(1), "reason": "boom", "permanent": false}}
	park := Disposition{Kind: DispositionAt, At: at(100), Reason: ReasonRetryBackoff}

	m1 := Propose(committed, next, []Event{failed}, CheckpointRetryScheduled, park, at(1))
	assert.Equal(t, []any{
		map[string]any{"task_id": "r:0:flaky", "node_id": "flaky", "attempted": int64(1), "outcome": "failed", "next_scheduled_attempt": int64(2)},
		map[string]any{"task_id": "r:0:steady", "node_id": "steady", "attempted": int64(1), "outcome": "pending_update", "next_scheduled_attempt": nil},
	}, m1.Metadata.Map()["node_attempts"])

	// The second park lists only flaky; steady's write is carried over, so
	// it appears in pending_attempts but not in node_attempts.
	next2 := m1.Run.Clone()
	next2.ActiveTasks["r:0:flaky"] = parkedTask("r", 0, "flaky", 3, snapshot)
	failed2 := failed
	failed2.Payload = map[string]any{"attempt": int64(2), "reason": "boom", "permanent": false}
	m2 := Propose(m1.Run, next2, []Event{failed2}, CheckpointRetryScheduled, park, at(2))
	assert.Equal(t, []any{
		map[string]any{"task_id": "r:0:flaky", "node_id": "flaky", "attempted": int64(2), "outcome": "failed", "next_scheduled_attempt": int64(3)},
	}, m2.Metadata.Map()["node_attempts"])
	superstep := m2.Metadata.Map()["active_superstep"].(map[string]any)
	assert.Equal(t, []any{
		map[string]any{"task_id": "r:0:steady", "node_id": "steady", "attempted": int64(1), "kind": "update", "idempotency_key": "r:0:steady:1"},
	}, superstep["pending_attempts"])

	// A barrier reports completions and interrupts with no next attempt and
	// ignores events without an attempt.
	barrier := m2.Run.Clone()
	barrier.ActiveTasks, barrier.Timers, barrier.PendingWrites = map[string]TaskState{}, map[string]Timer{}, []PendingWrite{}
	barrier.Step = 1
	events := []Event{
		{Type: EventNodeCompleted, NodeID: "flaky", TaskID: "r:0:flaky", Payload: map[string]any{"attempt": int64(3)}},
		{Type: EventNodeCompleted, NodeID: "steady", TaskID: "r:0:steady", Payload: map[string]any{"attempt": 1}},
		{Type: EventChannelUpdated, ChannelID: "state:x", Payload: map[string]any{"writers": []any{"flaky"}}},
		{Type: EventInterruptRequested, NodeID: "gate", TaskID: "r:0:gate", Payload: map[string]any{"attempt": int64(1), "interrupt_id": "i"}},
		{Type: EventNodeFailed, NodeID: "odd", TaskID: "r:0:odd", Payload: map[string]any{"attempt": "1"}},
	}
	m3 := Propose(m2.Run, barrier, events, CheckpointInterruptRequested, Disposition{Kind: DispositionContinue}, at(3))
	assert.Nil(t, m3.Metadata.Map()["active_superstep"])
	assert.Equal(t, []any{
		map[string]any{"task_id": "r:0:flaky", "node_id": "flaky", "attempted": int64(3), "outcome": "completed", "next_scheduled_attempt": nil},
		map[string]any{"task_id": "r:0:steady", "node_id": "steady", "attempted": int64(1), "outcome": "completed", "next_scheduled_attempt": nil},
		map[string]any{"task_id": "r:0:gate", "node_id": "gate", "attempted": int64(1), "outcome": "interrupted", "next_scheduled_attempt": nil},
	}, m3.Metadata.Map()["node_attempts"])
	assert.Equal(t, int64(1), m3.Metadata.Map()["graph_step"])
	require.NoError(t, value.Check(m3.Metadata.Map()))
}

func TestProposeListsPendingWritesByNodeAndSkipsListedTasks(t *testing.T) {
	t.Parallel()
	committed := runningRun()
	next := committed.Clone()
	next.ActiveTasks["r:0:m"] = parkedTask("r", 0, "m", 2, nil)
	next.Timers["r:0:m"] = Timer{Kind: TimerRetry, FiresAt: at(1)}
	next.PendingWrites = []PendingWrite{
		{TaskID: "r:0:z", NodeID: "z", Attempt: 1, Kind: WriteInterrupt, Value: map[string]any{}},
		{TaskID: "r:0:a", NodeID: "a", Attempt: 1, Kind: WriteUpdate, Value: map[string]any{}},
	}
	// a task listed by an event is not repeated as a pending attempt
	events := []Event{{Type: EventNodeFailed, NodeID: "m", TaskID: "r:0:m", Payload: map[string]any{"attempt": int64(1)}},
		{Type: EventNodeCompleted, NodeID: "a", TaskID: "r:0:a", Payload: map[string]any{"attempt": int64(1)}}}
	m := Propose(committed, next, events, CheckpointRetryScheduled, Disposition{Kind: DispositionAt, At: at(1), Reason: ReasonRetryBackoff}, at(0))

	attempts := m.Metadata.Map()["node_attempts"].([]any)
	require.Len(t, attempts, 3)
	assert.Equal(t, "m", attempts[0].(map[string]any)["node_id"])
	assert.Equal(t, "a", attempts[1].(map[string]any)["node_id"])
	assert.Equal(t, map[string]any{"task_id": "r:0:z", "node_id": "z", "attempted": int64(1), "outcome": "pending_interrupt", "next_scheduled_attempt": nil}, attempts[2])
	pending := m.Metadata.Map()["active_superstep"].(map[string]any)["pending_attempts"].([]any)
	require.Len(t, pending, 2)
	assert.Equal(t, "a", pending[0].(map[string]any)["node_id"], "pending attempts are sorted by node")
	assert.Equal(t, "interrupt", pending[1].(map[string]any)["kind"])
}

func TestProposeDoesNotMutateCommitted(t *testing.T) {
	t.Parallel()
	committed, next := retryParkPair()
	before, err := Encode(committed)
	require.NoError(t, err)
	snapshot := committed.Clone()

	events := []Event{{Type: EventNodeFailed, NodeID: "slow", TaskID: "r:0:slow", Payload: map[string]any{"attempt": int64(1)}}}
	Propose(committed, next, events, CheckpointRetryScheduled, Disposition{Kind: DispositionAt, At: at(50), Reason: ReasonRetryBackoff}, at(10))

	after, err := Encode(committed)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.Equal(t, snapshot, committed)
}

func TestProposeChainsSequences(t *testing.T) {
	t.Parallel()
	init := runningRun()
	init.CheckpointSeq, init.EventSeq = 0, 0
	m := Propose(nil, init, []Event{{Type: EventRunInitialized}}, CheckpointRunInitialized, Disposition{Kind: DispositionContinue}, at(0))
	moments := []*Moment{m}
	for i := 1; i <= 4; i++ {
		next := m.Run.Clone()
		next.Step++
		runtime := make([]Event, i%3)
		for j := range runtime {
			runtime[j] = Event{Type: EventChannelUpdated, Step: m.Run.Step, ChannelID: "state:x", Payload: map[string]any{"writers": []any{"n"}}}
		}
		m = Propose(m.Run, next, runtime, CheckpointStepCommitted, Disposition{Kind: DispositionContinue}, at(i))
		moments = append(moments, m)
	}
	wantSeq := int64(1)
	for i, m := range moments {
		assert.Equal(t, int64(i+1), m.Run.CheckpointSeq, "checkpoint seqs run 1, 2, 3, …")
		assert.Equal(t, int64(i+1), m.Metadata.Map()["checkpoint_seq"])
		for _, e := range m.Events {
			assert.Equal(t, wantSeq, e.Seq, "event seqs are contiguous across moments")
			wantSeq++
		}
		last := m.Events[len(m.Events)-1]
		assert.Equal(t, EventCheckpointCommitted, last.Type)
		assert.Equal(t, m.Run.EventSeq, last.Seq)
		assert.Equal(t, m.Run.Step, last.Step)
		assert.Equal(t, m.Metadata, last.Metadata)
	}
}

func continueMoment() *Moment {
	committed := runningRun()
	next := committed.Clone()
	next.Step = 1
	next.UpdatedAt = at(1)
	events := []Event{
		{Type: EventNodeCompleted, NodeID: "fast", TaskID: "r:0:fast", Payload: map[string]any{"attempt": int64(1)}},
		{Type: EventChannelUpdated, ChannelID: "state:x", Payload: map[string]any{"writers": []any{"fast"}}},
	}
	return Propose(committed, next, events, CheckpointInterruptRequested, Disposition{Kind: DispositionContinue}, at(1))
}

func TestYield(t *testing.T) {
	t.Parallel()
	t.Run("parks a continue moment immediately and rebuilds its metadata", func(t *testing.T) {
		t.Parallel()
		m := continueMoment()
		original := canonical(t, m.Metadata)
		originalEvents := append([]Event(nil), m.Events...)

		y, err := Yield(m, ReasonDrainBudget)
		require.NoError(t, err)

		assert.Equal(t, Disposition{Kind: DispositionImmediate, Reason: ReasonDrainBudget}, y.Disposition)
		assert.Equal(t, CheckpointInterruptRequested, y.CheckpointType, "the type is kept")
		assert.Equal(t, "immediate", y.Metadata.Map()["wake_disposition"])
		assert.Equal(t, "drain_budget", y.Metadata.Map()["park_reason"])
		want := m.Metadata.Map()
		want["wake_disposition"], want["park_reason"] = "immediate", "drain_budget"
		assert.Equal(t, want, y.Metadata.Map(), "nothing else in the metadata changes")
		require.Len(t, y.Events, len(m.Events))
		for i := range y.Events {
			assert.Equal(t, m.Events[i].Seq, y.Events[i].Seq)
			assert.Equal(t, m.Events[i].Timestamp, y.Events[i].Timestamp)
			assert.Equal(t, m.Events[i].Payload, y.Events[i].Payload)
			assert.Equal(t, m.Events[i].Type, y.Events[i].Type)
		}
		assert.Equal(t, y.Metadata, y.Events[len(y.Events)-1].Metadata)
		assert.Equal(t, m.ProposedAt, y.ProposedAt)
		assert.Same(t, m.Run, y.Run)

		assert.Equal(t, original, canonical(t, m.Metadata), "the original moment is untouched")
		assert.Equal(t, originalEvents, m.Events)
		assert.Equal(t, DispositionContinue, m.Disposition.Kind)
	})
	t.Run("refuses a moment that already parks", func(t *testing.T) {
		t.Parallel()
		committed, next := retryParkPair()
		m := Propose(committed, next, nil, CheckpointRetryScheduled, Disposition{Kind: DispositionAt, At: at(50), Reason: ReasonRetryBackoff}, at(10))
		_, err := Yield(m, ReasonDrainBudget)
		assert.ErrorIs(t, err, ErrNotContinue)
		y, err := Yield(continueMoment(), ReasonDrainBudget)
		require.NoError(t, err)
		_, err = Yield(y, ReasonDrainBudget)
		assert.ErrorIs(t, err, ErrNotContinue, "a yielded moment cannot be yielded again")
	})
	malformed := map[string]func(m *Moment){
		"no events":          func(m *Moment) { m.Events = nil },
		"missing checkpoint": func(m *Moment) { m.Events = m.Events[:len(m.Events)-1] },
		"duplicated checkpoint": func(m *Moment) {
			m.Events = append([]Event{m.Events[len(m.Events)-1]}, m.Events...)
		},
		"checkpoint not last": func(m *Moment) {
			n := len(m.Events)
			m.Events = append([]Event(nil), m.Events...)
			m.Events[n-1], m.Events[n-2] = m.Events[n-2], m.Events[n-1]
		},
		"metadata mismatch": func(m *Moment) {
			md := m.Metadata.Clone()
			md.GraphStep = 99
			m.Metadata = md
		},
		"event seq mismatch": func(m *Moment) { m.Run = m.Run.Clone(); m.Run.EventSeq++ },
		"no run":             func(m *Moment) { m.Run = nil },
	}
	for name, corrupt := range malformed {
		t.Run("rejects a malformed moment: "+name, func(t *testing.T) {
			t.Parallel()
			m := continueMoment()
			corrupt(m)
			_, err := Yield(m, ReasonDrainBudget)
			assert.ErrorIs(t, err, ErrMalformedMoment)
			assert.False(t, errors.Is(err, ErrNotContinue))
		})
	}
}

func TestProposeSequencingProperty(t *testing.T) {
	t.Parallel()
	eventTypes := []EventType{EventNodeCompleted, EventNodeFailed, EventChannelUpdated, EventEdgeTriggered, EventInterruptRequested, EventInterruptResolved}
	kinds := []DispositionKind{DispositionContinue, DispositionImmediate, DispositionAt, DispositionExternal, DispositionTerminal}
	rapid.Check(t, func(t *rapid.T) {
		committed := (*Run)(nil)
		next := runningRun()
		next.CheckpointSeq, next.EventSeq = 0, 0
		wantEventSeq := int64(1)
		for i := range rapid.IntRange(1, 8).Draw(t, "moments") {
			var before []byte
			if committed != nil {
				var err error
				before, err = Encode(committed)
				require.NoError(t, err)
			}
			runtime := make([]Event, rapid.IntRange(0, 4).Draw(t, "runtime events"))
			for j := range runtime {
				runtime[j] = Event{
					Type: rapid.SampledFrom(eventTypes).Draw(t, "type"), Step: next.Step,
					NodeID: "n", TaskID: TaskID(next.ID, next.Step, "n"),
					Payload: map[string]any{"attempt": int64(rapid.IntRange(1, 3).Draw(t, "attempt"))},
				}
			}
			d := Disposition{Kind: rapid.SampledFrom(kinds).Draw(t, "disposition")}
			if d.Kind != DispositionContinue {
				d.Reason = "reason"
			}
			m := Propose(committed, next, runtime, CheckpointStepCommitted, d, at(i))

			require.Equal(t, int64(i+1), m.Run.CheckpointSeq, "checkpoint seq advances by one")
			require.Equal(t, int64(i), m.ExpectedSeq())
			require.Len(t, m.Events, len(runtime)+1)
			for _, e := range m.Events {
				require.Equal(t, wantEventSeq, e.Seq, "event seqs are contiguous")
				require.Equal(t, m.Run.ID, e.RunID)
				wantEventSeq++
			}
			last := m.Events[len(m.Events)-1]
			require.Equal(t, EventCheckpointCommitted, last.Type)
			require.Equal(t, m.Run.EventSeq, last.Seq)
			require.Equal(t, m.Metadata, last.Metadata)
			require.NoError(t, value.Check(m.Metadata.Map()))
			require.Len(t, m.Metadata.Map()["node_attempts"], len(runtime)-countType(runtime, EventChannelUpdated, EventEdgeTriggered, EventInterruptResolved))
			if committed != nil {
				after, err := Encode(committed)
				require.NoError(t, err)
				require.Equal(t, string(before), string(after), "committed is not mutated")
			}
			if d.Kind == DispositionContinue {
				y, err := Yield(m, ReasonDrainBudget)
				require.NoError(t, err)
				require.Equal(t, y.Metadata, y.Events[len(y.Events)-1].Metadata)
			}

			committed = m.Run
			next = committed.Clone()
			if rapid.Bool().Draw(t, "barrier") {
				next.Step++
			}
		}
	})
}

func countType(events []Event, types ...EventType) int {
	n := 0
	for _, e := range events {
		if slices.Contains(types, e.Type) {
			n++
		}
	}
	return n
}
