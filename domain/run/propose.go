package run

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Yield errors.
var (
	ErrNotContinue     = errors.New("moment is not a continue moment")
	ErrMalformedMoment = errors.New("malformed moment")
)

// Node attempt outcomes.
const (
	OutcomeCompleted        = "completed"
	OutcomeFailed           = "failed"
	OutcomeInterrupted      = "interrupted"
	OutcomePendingUpdate    = "pending_update"
	OutcomePendingInterrupt = "pending_interrupt"
)

// Propose sequences a transition from committed to next: it sets
// next.CheckpointSeq = committed.CheckpointSeq+1, numbers runtimeEvents from
// committed.EventSeq+1 (run ID, timestamp now, no metadata), appends the
// one checkpoint_committed event carrying the checkpoint metadata, sets
// next.EventSeq, and returns the moment. For initialization committed is
// nil (sequences start at 1). The metadata (checkpoint_seq, checkpoint_type,
// graph_step, park_reason, wake_disposition, active_superstep,
// node_attempts) is derived from committed, next and runtimeEvents.
//
// Propose takes ownership of next and of the runtimeEvents (it sets their
// sequence fields in place, and appends the final event into their array
// when it has room); callers pass values they built for this moment. A nil
// payload and the final event's payload become one empty map that every
// moment shares (emptyPayload): like every proposed value it is
// read-only. Propose never touches committed. now is used truncated to
// microseconds in UTC.
func Propose(committed, next *Run, runtimeEvents []Event, ctype CheckpointType, d Disposition, now time.Time) *Moment {
	p := &struct {
		moment   Moment
		metadata CheckpointMetadata
		attempts [1]NodeAttempt
	}{}
	propose(&p.moment, &p.metadata, p.attempts[:0], committed, next, runtimeEvents, ctype, d, now)
	return &p.moment
}

// ProposeNext is Propose for a next run held by value, typically an edited
// copy of committed: the moment, its run, its metadata and (when the
// moment settles one attempt, as most do) its node attempt list share one
// allocation, which saves three on every transition. The returned
// moment's Run and Metadata point into it.
func ProposeNext(committed *Run, next Run, runtimeEvents []Event, ctype CheckpointType, d Disposition, now time.Time) *Moment {
	p := &struct {
		moment   Moment
		run      Run
		metadata CheckpointMetadata
		attempts [1]NodeAttempt
	}{run: next}
	propose(&p.moment, &p.metadata, p.attempts[:0], committed, &p.run, runtimeEvents, ctype, d, now)
	return &p.moment
}

// emptyPayload is the payload of every event proposed without one and of
// every checkpoint_committed event. Payloads are read-only, so one map
// serves all moments instead of an allocation for each.
var emptyPayload = map[string]any{}

// propose fills m and its metadata with the transition from committed to
// next (see Propose); the node attempt list goes into attempts when it
// fits.
func propose(m *Moment, metadata *CheckpointMetadata, attempts []NodeAttempt, committed, next *Run, runtimeEvents []Event, ctype CheckpointType, d Disposition, now time.Time) {
	now = UTCMicros(now)
	var baseCheckpoint, baseEvent int64
	var committedWrites []PendingWrite
	if committed != nil {
		baseCheckpoint, baseEvent = committed.CheckpointSeq, committed.EventSeq
		committedWrites = committed.PendingWrites
	}
	next.CheckpointSeq = baseCheckpoint + 1

	// Propose owns runtimeEvents: they are numbered in place, and their
	// array holds the final event too when the caller left room for it.
	events := runtimeEvents
	if cap(events) == len(events) {
		events = make([]Event, len(runtimeEvents), len(runtimeEvents)+1)
		copy(events, runtimeEvents)
	}
	empty := emptyPayload
	seq := baseEvent
	for i := range events {
		e := &events[i]
		seq++
		e.RunID = next.ID
		e.Seq = seq
		e.Timestamp = now
		if e.Payload == nil {
			e.Payload = empty
		}
		e.Metadata = nil
	}

	added := addedPendingWrites(committedWrites, next.PendingWrites)
	fillMetadata(metadata, attempts, next, events, added, ctype, d)
	seq++
	events = append(events, Event{
		RunID:     next.ID,
		Seq:       seq,
		Type:      EventCheckpointCommitted,
		Step:      next.Step,
		Timestamp: now,
		Payload:   empty,
		Metadata:  metadata,
	})
	next.EventSeq = seq

	*m = Moment{
		Run:            next,
		Events:         events,
		CheckpointType: ctype,
		Metadata:       metadata,
		Disposition:    d,
		ProposedAt:     now,
	}
}

// Checkpoint is the committed checkpoint value of m. Build it only once m
// has committed (or, in the inline runner, been accepted).
func (m *Moment) Checkpoint() Checkpoint {
	return Checkpoint{
		Type:      m.CheckpointType,
		Seq:       m.Run.CheckpointSeq,
		Run:       m.Run,
		Events:    m.Events,
		CreatedAt: m.ProposedAt,
		Metadata:  m.Metadata,
	}
}

// Yield turns a continue moment into park(immediate, reason), rebuilding the
// metadata on the moment and its final event; sequences, timestamps,
// payloads and type are unchanged. It returns ErrNotContinue or
// ErrMalformedMoment. m is not modified; the result shares its run and
// runtime events.
func Yield(m *Moment, reason string) (*Moment, error) {
	if m.Disposition.Kind != DispositionContinue {
		return nil, fmt.Errorf("%w: disposition is %q", ErrNotContinue, m.Disposition.Kind)
	}
	if err := checkFinalEvent(m); err != nil {
		return nil, err
	}
	d := Disposition{Kind: DispositionImmediate, Reason: reason}
	// Only the disposition entries depend on d; everything else in the
	// metadata (including the pending writes this moment added, which the run
	// alone no longer tells apart) carries over.
	metadata := *m.Metadata
	metadata.WakeDisposition, metadata.ParkReason = d.Kind, d.Reason

	events := slices.Clone(m.Events)
	events[len(events)-1].Metadata = &metadata

	out := *m
	out.Events = events
	out.Metadata = &metadata
	out.Disposition = d
	return &out, nil
}

func checkFinalEvent(m *Moment) error {
	if m.Run == nil || len(m.Events) == 0 {
		return fmt.Errorf("%w: no run or no events", ErrMalformedMoment)
	}
	last := len(m.Events) - 1
	for _, e := range m.Events[:last] {
		if e.Type == EventCheckpointCommitted {
			return fmt.Errorf("%w: checkpoint_committed event %d is not the last event", ErrMalformedMoment, e.Seq)
		}
	}
	final := m.Events[last]
	switch {
	case final.Type != EventCheckpointCommitted:
		return fmt.Errorf("%w: the last event is %s, not checkpoint_committed", ErrMalformedMoment, final.Type)
	case final.Seq != m.Run.EventSeq:
		return fmt.Errorf("%w: checkpoint event seq %d differs from the run's event seq %d", ErrMalformedMoment, final.Seq, m.Run.EventSeq)
	case m.Metadata == nil || !final.Metadata.Equal(m.Metadata):
		return fmt.Errorf("%w: checkpoint event metadata differs from the moment's", ErrMalformedMoment)
	}
	return nil
}

// addedPendingWrites returns the writes of next that committed did not
// hold, compared by task, attempt and kind, in next's order.
func addedPendingWrites(committed, next []PendingWrite) []PendingWrite {
	type identity struct {
		task    string
		attempt int
		kind    string
	}
	held := make(map[identity]bool, len(committed))
	for _, w := range committed {
		held[identity{w.TaskID, w.Attempt, w.Kind}] = true
	}
	var added []PendingWrite
	for _, w := range next {
		if !held[identity{w.TaskID, w.Attempt, w.Kind}] {
			added = append(added, w)
		}
	}
	return added
}

// fillMetadata sets m to the checkpoint metadata of the transition to next,
// its node attempts in attempts when they fit.
func fillMetadata(m *CheckpointMetadata, attempts []NodeAttempt, next *Run, events []Event, added []PendingWrite, ctype CheckpointType, d Disposition) {
	tasks := sortedTasks(next.ActiveTasks)
	*m = CheckpointMetadata{
		Seq:             next.CheckpointSeq,
		Type:            ctype,
		GraphStep:       next.Step,
		WakeDisposition: d.Kind,
		ActiveSuperstep: activeSuperstep(next, tasks),
		NodeAttempts:    nodeAttempts(attempts, events, tasks, added),
	}
	if d.Kind != DispositionContinue {
		m.ParkReason = d.Reason
	}
}

// sortedTasks lists the active tasks by (node, task), the order of the
// metadata's task list; the map key breaks ties so the order is total even
// for a malformed run.
func sortedTasks(active map[string]TaskState) []TaskState {
	if len(active) == 0 {
		return nil
	}
	keys := make([]string, 0, len(active))
	for k := range active {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		ta, tb := active[a], active[b]
		return cmp.Or(cmp.Compare(ta.NodeID, tb.NodeID), cmp.Compare(ta.TaskID, tb.TaskID), cmp.Compare(a, b))
	})
	tasks := make([]TaskState, len(keys))
	for i, k := range keys {
		tasks[i] = active[k]
	}
	return tasks
}

// sortedWrites returns the writes by (node, task), stable for equal pairs.
func sortedWrites(writes []PendingWrite) []PendingWrite {
	out := slices.Clone(writes)
	slices.SortStableFunc(out, func(a, b PendingWrite) int {
		return cmp.Or(cmp.Compare(a.NodeID, b.NodeID), cmp.Compare(a.TaskID, b.TaskID))
	})
	return out
}

func activeSuperstep(next *Run, tasks []TaskState) *ActiveSuperstep {
	if len(tasks) == 0 && len(next.PendingWrites) == 0 {
		return nil
	}
	a := &ActiveSuperstep{
		GraphStep:       next.Step,
		Tasks:           make([]ScheduledTask, len(tasks)),
		PendingAttempts: make([]PendingAttempt, len(next.PendingWrites)),
	}
	for i, t := range tasks {
		a.Tasks[i] = ScheduledTask{TaskID: t.TaskID, NodeID: t.NodeID, ScheduledAttempt: t.Attempt, IdempotencyKey: t.IdempotencyKey}
	}
	for i, w := range sortedWrites(next.PendingWrites) {
		a.PendingAttempts[i] = PendingAttempt{TaskID: w.TaskID, NodeID: w.NodeID, Attempted: w.Attempt, Kind: w.Kind,
			IdempotencyKey: IdempotencyKey(w.TaskID, w.Attempt)}
	}
	return a
}

// nodeAttempts lists the attempts this moment settled: first one entry per
// node event carrying an attempt number, in event order, then the pending
// writes the moment added for tasks not already listed. Writes carried over
// from earlier moments were reported by those moments. The list is
// appended to buf when it fits.
func nodeAttempts(buf []NodeAttempt, events []Event, tasks []TaskState, added []PendingWrite) []NodeAttempt {
	n := len(added)
	for i := range events {
		switch events[i].Type {
		case EventNodeCompleted, EventNodeFailed, EventInterruptRequested:
			n++
		}
	}
	attempts := buf[:0]
	if n > cap(buf) {
		attempts = make([]NodeAttempt, 0, n)
	}
	var listed map[string]bool // tasks listed from events; only added writes consult it
	for _, e := range events {
		var outcome string
		switch e.Type {
		case EventNodeCompleted:
			outcome = OutcomeCompleted
		case EventNodeFailed:
			outcome = OutcomeFailed
		case EventInterruptRequested:
			outcome = OutcomeInterrupted
		default:
			continue
		}
		attempt, ok := positiveInt(e.Payload["attempt"])
		if !ok {
			continue
		}
		attempts = append(attempts, NodeAttempt{
			TaskID:               e.TaskID,
			NodeID:               e.NodeID,
			Attempted:            attempt,
			Outcome:              outcome,
			NextScheduledAttempt: scheduledAttempt(tasks, e.TaskID),
		})
		if len(added) > 0 {
			if listed == nil {
				listed = make(map[string]bool)
			}
			listed[e.TaskID] = true
		}
	}
	if len(added) == 0 {
		return attempts
	}
	for _, w := range sortedWrites(added) {
		if listed[w.TaskID] {
			continue
		}
		outcome := OutcomePendingUpdate
		if w.Kind == WriteInterrupt {
			outcome = OutcomePendingInterrupt
		}
		attempts = append(attempts, NodeAttempt{TaskID: w.TaskID, NodeID: w.NodeID, Attempted: w.Attempt, Outcome: outcome})
	}
	return attempts
}

// scheduledAttempt is the attempt the active task taskID is scheduled
// for, 0 when none is. Tasks are few (one per node of a superstep), so a
// scan costs less than building a map.
func scheduledAttempt(tasks []TaskState, taskID string) int {
	for i := range tasks {
		if tasks[i].TaskID == taskID {
			return tasks[i].Attempt
		}
	}
	return 0
}

// positiveInt reads an attempt number from an event payload. Payloads hold
// int64; int is accepted too so hand-built events behave the same.
func positiveInt(v any) (int, bool) {
	switch n := v.(type) {
	case int64:
		return int(n), n > 0
	case int:
		return n, n > 0
	}
	return 0, false
}
