package ports

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
)

// This file holds the proposal checks every adapter runs before touching
// storage, so the rules live in one place.

var knownCheckpointTypes = []run.CheckpointType{
	run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRetryScheduled,
	run.CheckpointInterruptRequested, run.CheckpointInterruptResolved, run.CheckpointRunCompleted,
	run.CheckpointRunFailed, run.CheckpointRunCancelled,
}

var knownEventTypes = []run.EventType{
	run.EventRunInitialized, run.EventRunCompleted, run.EventRunFailed, run.EventRunCancelled,
	run.EventCheckpointCommitted, run.EventNodeCompleted, run.EventNodeFailed,
	run.EventChannelUpdated, run.EventEdgeTriggered, run.EventInterruptRequested,
	run.EventInterruptResolved,
}

// KnownStatus reports whether s is one of the five durable statuses.
func KnownStatus(s run.Status) bool {
	switch s {
	case run.StatusRunning, run.StatusWaiting, run.StatusDone, run.StatusFailed, run.StatusCancelled:
		return true
	}
	return false
}

// KnownEventType reports whether t is one of the durable event types.
func KnownEventType(t run.EventType) bool { return slices.Contains(knownEventTypes, t) }

// ValidateMoment checks a proposal without storage access: a run with its
// identity (a run id and graph binding that are TextID), a durable
// status, CheckpointSeq >= 1, a known checkpoint type, a durable run
// shape (run.Validate) and valid events. Failures are
// *InvalidCommitError, or *EventConflictError for two different events at
// one seq. It does not check the schedule (see ScheduleOf).
func ValidateMoment(m *run.Moment) error {
	if m == nil || m.Run == nil {
		return &InvalidCommitError{Reason: "moment has no run"}
	}
	r := m.Run
	fail := func(format string, args ...any) error {
		return &InvalidCommitError{RunID: r.ID, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case r.ID == "":
		return fail("run id is empty")
	case !TextID(r.ID):
		// Not quoted: the id may be any length.
		return &InvalidCommitError{Reason: fmt.Sprintf("the run id is not UTF-8 text without NUL of at most %d bytes", MaxIDBytes)}
	case r.GraphID == "" || r.GraphHash == "":
		return fail("graph binding is empty")
	case !TextID(r.GraphID) || !TextID(r.GraphHash):
		return fail("graph binding is not UTF-8 text without NUL of at most %d bytes", MaxIDBytes)
	case !KnownStatus(r.Status):
		return fail("status %q is not durable", r.Status)
	case r.CheckpointSeq < 1:
		return fail("checkpoint_seq %d is below 1", r.CheckpointSeq)
	case !slices.Contains(knownCheckpointTypes, m.CheckpointType):
		return fail("unknown checkpoint type %q", m.CheckpointType)
	}
	if err := r.Validate(); err != nil {
		return fail("%v", err)
	}
	_, err := NormalizeEvents(r.ID, m.Events)
	return err
}

// ClaimedTransition is a claimed commit that passed CheckClaimedCommit:
// the transition to write (FuseChain), its schedule and its normalized
// events.
type ClaimedTransition struct {
	Moment   *run.Moment
	Schedule Schedule
	Events   []run.Event
}

// CheckClaimedCommit runs a claimed commit's checks that need no lookup,
// in the ports' order: the scope, the proposal (ValidateMoment, then the
// chain, FuseChain), its schedule, the claim token's form (wellFormed,
// the adapter's own token syntax), then the events.
func CheckClaimedCommit(scope Scope, p CommitParams, wellFormed func(ClaimToken) bool) (ClaimedTransition, error) {
	if err := scope.Validate(); err != nil {
		return ClaimedTransition{}, err
	}
	if err := ValidateMoment(p.Moment); err != nil {
		return ClaimedTransition{}, err
	}
	m, err := FuseChain(p)
	if err != nil {
		return ClaimedTransition{}, err
	}
	sched, err := ScheduleOf(m, true)
	if err != nil {
		return ClaimedTransition{}, err
	}
	if !wellFormed(p.ClaimToken) {
		return ClaimedTransition{}, &InvalidCommitError{RunID: m.Run.ID, Reason: "claim token is missing or malformed"}
	}
	// Every event was checked with its moment (ValidateMoment, in FuseChain
	// for each of Then), against a run ID FuseChain holds equal to m's:
	// only their order and duplicates are left to settle.
	events, err := normalizeChecked(m.Run.ID, m.Events)
	if err != nil {
		return ClaimedTransition{}, err
	}
	return ClaimedTransition{Moment: m, Schedule: sched, Events: events}, nil
}

// FuseChain validates a commit's chain, Moment then each of Then, and
// returns the one transition it writes: the last moment's run, checkpoint
// type, metadata and disposition, with every moment's events in order.
// Each moment of Then must be valid on its own, belong to the same run and
// binding, advance checkpoint_seq by exactly one over the moment before
// it, and follow a moment that continues under the claim. The fence stays
// Moment's (CheckFence(stored, p.Moment)). Without Then it returns Moment.
func FuseChain(p CommitParams) (*run.Moment, error) {
	if len(p.Then) == 0 {
		return p.Moment, nil
	}
	prev := p.Moment
	n := len(prev.Events)
	for _, next := range p.Then {
		if next != nil {
			n += len(next.Events)
		}
	}
	events := append(make([]run.Event, 0, n), prev.Events...)
	for _, next := range p.Then {
		if err := ValidateMoment(next); err != nil {
			return nil, err
		}
		fail := func(reason string) error { return &InvalidCommitError{RunID: prev.Run.ID, Reason: reason} }
		switch {
		case next.Run.ID != prev.Run.ID:
			return nil, fail("a fused moment proposes another run")
		case next.Run.GraphID != prev.Run.GraphID || next.Run.GraphHash != prev.Run.GraphHash ||
			!Micros(next.Run.StartedAt).Equal(Micros(prev.Run.StartedAt)):
			return nil, fail("a fused moment changes the graph binding or started_at")
		case next.ExpectedSeq() != prev.Run.CheckpointSeq:
			return nil, fail(fmt.Sprintf("fused moments must advance checkpoint_seq by one each (%d then %d)",
				prev.Run.CheckpointSeq, next.Run.CheckpointSeq))
		case prev.Disposition.Kind != run.DispositionContinue:
			return nil, fail("only a moment that continues under the claim can be followed by another")
		}
		events = append(events, next.Events...)
		prev = next
	}
	fused := *prev
	fused.Events = events
	return &fused, nil
}

// NormalizeEvents validates events for run runID and returns them in seq
// order with identical duplicates collapsed and timestamps normalized to
// UTC µs. Each event needs RunID == runID, Seq >= 1, a timestamp, a known
// type, Step >= 0, node, channel and task ids of UTF-8 text without NUL
// and a portable payload (else *InvalidCommitError); two different events
// at one seq are an *EventConflictError. The input is not modified; when
// it is already normalized (a runtime-proposed moment's events always are)
// it is returned itself, so the result is read-only.
func NormalizeEvents(runID string, events []run.Event) ([]run.Event, error) {
	for i := range events {
		if err := checkEvent(runID, &events[i]); err != nil {
			return nil, err
		}
	}
	return normalizeChecked(runID, events)
}

// normalizeChecked is NormalizeEvents of events that each passed
// checkEvent for runID.
func normalizeChecked(runID string, events []run.Event) ([]run.Event, error) {
	normal := true
	for i := range events {
		if e := &events[i]; (i > 0 && e.Seq <= events[i-1].Seq) || e.Timestamp != Micros(e.Timestamp) {
			normal = false
			break
		}
	}
	if normal {
		return events, nil
	}
	out := make([]run.Event, len(events))
	for i, e := range events {
		e.Timestamp = Micros(e.Timestamp)
		out[i] = e
	}
	slices.SortStableFunc(out, func(a, b run.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	deduped := out[:0]
	for _, e := range out {
		if n := len(deduped); n > 0 && deduped[n-1].Seq == e.Seq {
			if !deduped[n-1].Equal(e) {
				return nil, &EventConflictError{RunID: runID, Seq: e.Seq}
			}
			continue
		}
		deduped = append(deduped, e)
	}
	return deduped, nil
}

// checkEvent checks what NormalizeEvents requires of one event.
func checkEvent(runID string, e *run.Event) error {
	switch {
	case e.RunID != runID:
		return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d belongs to another run", e.Seq)}
	case e.Seq < 1:
		return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event seq %d is below 1", e.Seq)}
	case e.Timestamp.IsZero():
		return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d has no timestamp", e.Seq)}
	case !KnownEventType(e.Type):
		return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d has unknown type %q", e.Seq, e.Type)}
	case e.Step < 0:
		return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d has negative step", e.Seq)}
	}
	for _, id := range [...]struct{ what, id string }{{"node", e.NodeID}, {"channel", e.ChannelID}, {"task", e.TaskID}} {
		if !textColumn(id.id) {
			return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d %s id %q is not UTF-8 text without NUL", e.Seq, id.what, id.id)}
		}
	}
	if err := value.Check(e.Payload); err != nil {
		return &InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("event %d payload: %v", e.Seq, err)}
	}
	return nil
}

// ValidateInsert checks the insert shape (spec §5.1) before any storage
// access: a valid run_initialized moment of a running run with a first
// wake. It returns the moment's events normalized (see NormalizeEvents);
// failures are *InvalidCommitError or *EventConflictError.
func ValidateInsert(p InsertRunParams) ([]run.Event, error) {
	m := p.Moment
	if err := ValidateMoment(m); err != nil {
		return nil, err
	}
	fail := func(reason string) error { return &InvalidCommitError{RunID: m.Run.ID, Reason: reason} }
	switch {
	case m.CheckpointType != run.CheckpointRunInitialized:
		return nil, fail(fmt.Sprintf("insert needs checkpoint type run_initialized, not %s", m.CheckpointType))
	case m.Run.Status != run.StatusRunning:
		return nil, fail(fmt.Sprintf("insert needs status running, not %s", m.Run.Status))
	case p.WakeAt.IsZero():
		return nil, fail("insert needs a first wake")
	}
	return normalizeChecked(m.Run.ID, m.Events) // checked by ValidateMoment
}

// CheckFence classifies a validated proposal against the stored document,
// in the order RunStore.Commit documents: a changed immutable binding
// (GraphID, GraphHash, StartedAt) or a sequence ahead of stored+1 is an
// *InvalidCommitError; a sequence behind is ErrStaleFence. It does not
// check the claim token.
func CheckFence(stored *run.Run, m *run.Moment) error {
	proposed := m.Run
	if proposed.GraphID != stored.GraphID || proposed.GraphHash != stored.GraphHash ||
		!Micros(proposed.StartedAt).Equal(Micros(stored.StartedAt)) {
		return &InvalidCommitError{RunID: stored.ID, Reason: "the graph binding or started_at changed"}
	}
	switch expected := m.ExpectedSeq(); {
	case expected > stored.CheckpointSeq:
		return &InvalidCommitError{RunID: stored.ID, Reason: fmt.Sprintf(
			"checkpoint_seq %d does not advance stored %d by exactly one", proposed.CheckpointSeq, stored.CheckpointSeq)}
	case expected < stored.CheckpointSeq:
		return fmt.Errorf("%w: run %q is at checkpoint_seq %d, the proposal expected %d",
			ErrStaleFence, stored.ID, stored.CheckpointSeq, expected)
	}
	return nil
}
