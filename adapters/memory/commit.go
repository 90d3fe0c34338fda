package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/google/uuid"
)

// Commit writes a moment under the claim fence (see ports.RunStore).
func (s *Store) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	// Proposal validation precedes any lookup.
	if err := ports.ValidateMoment(p.Moment); err != nil {
		return nil, err
	}
	m := p.Moment
	sched, err := ports.ScheduleOf(m, true)
	if err != nil {
		return nil, err
	}
	if !wellFormedToken(p.ClaimToken) {
		return nil, &ports.InvalidCommitError{RunID: m.Run.ID, Reason: "claim token is missing or malformed"}
	}
	events, err := ports.NormalizeEvents(m.Run.ID, m.Events)
	if err != nil {
		return nil, err
	}

	row, err := s.lockRow(ctx, scope, m.Run.ID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, notFoundRun(m.Run.ID)
	}
	defer unlockRow(row)

	s.mu.Lock()
	if err := checkFence(row, m); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if !row.claimedBy(p.ClaimToken) {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: run %q is claimed by another token or not claimed", ports.ErrStaleFence, m.Run.ID)
	}
	if err := checkStoredEvents(row, events); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	now := s.now()
	s.apply(row, m, sched, events, now, true)
	stored := row.doc.Clone()
	s.mu.Unlock()

	if sched.Announces(now) {
		s.notifier.announce()
	}
	return stored, nil
}

// MutateRun serializes one unclaimed commit (see ports.RunStore).
func (s *Store) MutateRun(ctx context.Context, scope ports.Scope, runID string, mutation ports.Mutation) (*run.Run, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if mutation == nil {
		return nil, invalidArg("mutation", "is nil")
	}
	row, err := s.lockRow(ctx, scope, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, notFoundRun(runID)
	}
	defer unlockRow(row)

	// The row lock keeps every other writer out and makes ClaimDue skip
	// the row, so the snapshot stays current while the mutation runs.
	s.mu.RLock()
	current := row.doc.Clone()
	s.mu.RUnlock()

	m, err := mutation(current.Clone())
	if err != nil {
		return nil, err
	}
	if m == nil {
		return current, nil
	}
	if err := ports.ValidateMoment(m); err != nil {
		return nil, err
	}
	if m.Run.ID != runID {
		return nil, &ports.InvalidCommitError{RunID: runID, Reason: fmt.Sprintf("mutation proposed run %q", m.Run.ID)}
	}
	sched, err := ports.ScheduleOf(m, false)
	if err != nil {
		return nil, err
	}
	events, err := ports.NormalizeEvents(m.Run.ID, m.Events)
	if err != nil {
		return nil, err
	}

	s.mu.Lock()
	if err := checkFence(row, m); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if err := checkStoredEvents(row, events); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	now := s.now()
	s.apply(row, m, sched, events, now, false)
	stored := row.doc.Clone()
	s.mu.Unlock()

	if sched.Announces(now) {
		s.notifier.announce()
	}
	return stored, nil
}

// checkFence classifies a proposal against the stored row, in the order of
// the ports: a changed immutable binding or a sequence ahead of stored+1
// is invalid; a sequence behind is stale. Callers hold mu.
func checkFence(row *runRow, m *run.Moment) error {
	stored := row.doc
	proposed := m.Run
	if proposed.GraphID != stored.GraphID || proposed.GraphHash != stored.GraphHash ||
		!proposed.StartedAt.Equal(stored.StartedAt) {
		return &ports.InvalidCommitError{RunID: stored.ID, Reason: "the graph binding or started_at changed"}
	}
	expected := m.ExpectedSeq()
	switch {
	case expected > stored.CheckpointSeq:
		return &ports.InvalidCommitError{RunID: stored.ID, Reason: fmt.Sprintf(
			"checkpoint_seq %d does not advance stored %d by exactly one", proposed.CheckpointSeq, stored.CheckpointSeq)}
	case expected < stored.CheckpointSeq:
		return fmt.Errorf("%w: run %q is at checkpoint_seq %d, the proposal expected %d",
			ports.ErrStaleFence, stored.ID, stored.CheckpointSeq, expected)
	}
	return nil
}

// checkStoredEvents rejects a proposal whose event at a stored seq has
// different content. Callers hold mu.
func checkStoredEvents(row *runRow, events []run.Event) error {
	for _, e := range events {
		if old, ok := row.events[e.Seq]; ok && !old.event.Equal(e) {
			return &ports.EventConflictError{RunID: e.RunID, Seq: e.Seq}
		}
	}
	return nil
}

// apply commits a validated, fenced moment. Callers hold mu.
func (s *Store) apply(row *runRow, m *run.Moment, sched ports.Schedule, events []run.Event, now time.Time, claimed bool) {
	row.doc = m.Run.Clone()
	row.latestType = m.CheckpointType
	row.attempts, row.abandons = 0, 0
	row.clearPoison()
	switch sched.Kind {
	case ports.ScheduleRetainClaim:
		row.claimedAt = now
		row.wakeAt = time.Time{}
	default:
		row.clearClaim()
		row.wakeAt = sched.WakeAt(now)
	}
	// A claimed immediate release keeps the tenant admission (a
	// cooperative yield stays in its cohort); a signal revokes it.
	keepAdmission := claimed && (sched.Kind == ports.ScheduleRetainClaim || sched.Kind == ports.ScheduleImmediate)
	if !keepAdmission {
		row.admittedAt = time.Time{}
	}
	s.appendEvents(row, events, now)
}

// appendEvents stores events not yet retained. Callers hold mu and have
// checked conflicts.
func (s *Store) appendEvents(row *runRow, events []run.Event, now time.Time) {
	for _, e := range events {
		if _, ok := row.events[e.Seq]; ok {
			continue
		}
		s.nextRowID++
		row.events[e.Seq] = &eventRow{id: s.nextRowID, event: cloneEvent(e), insertedAt: now}
	}
}

// wellFormedToken reports whether t could have been issued by this store.
// A malformed token matches nothing and never reaches a comparison.
func wellFormedToken(t ports.ClaimToken) bool {
	if t.IsZero() {
		return false
	}
	_, err := uuid.Parse(t.Reveal())
	return err == nil
}
