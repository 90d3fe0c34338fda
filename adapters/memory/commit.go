package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/google/uuid"
)

// Commit writes a moment under the claim fence (see ports.RunStore).
func (s *Store) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	// Proposal validation precedes any lookup.
	t, err := ports.CheckClaimedCommit(scope, p, wellFormedToken)
	if err != nil {
		return nil, err
	}
	m, sched, events := t.Moment, t.Schedule, t.Events

	row, err := s.lockRow(ctx, scope, m.Run.ID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, notFoundRun(m.Run.ID)
	}
	var announce bool
	defer s.unlockThenAnnounce(row, &announce)
	stored, announce, err := s.write(row, p.Moment, m, sched, events, &p.ClaimToken, !p.NoResult)
	return stored, err
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
	var announce bool
	defer s.unlockThenAnnounce(row, &announce)

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

	stored, announce, err := s.write(row, m, m, sched, events, nil, true)
	return stored, err
}

// write commits a validated moment to a row whose lock the caller holds
// (see checkWrite) and reports whether the schedule's wake is to be
// announced; the caller announces it after unlocking the row (see
// unlockThenAnnounce). fence is the first moment of a fused chain (m
// itself otherwise), m the transition written. token is the claim of a
// claimed commit, nil for a mutation. The stored run is returned (a copy)
// only when result is set: the copy costs as much as the document, which
// grows with the run's history, and a holder that keeps its proposed run
// (CommitParams.NoResult) does not read it.
func (s *Store) write(row *runRow, fence, m *run.Moment, sched ports.Schedule, events []run.Event, token *ports.ClaimToken, result bool) (stored *run.Run, announce bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkWrite(row, fence, events, token); err != nil {
		return nil, false, err
	}
	now := s.now()
	s.apply(row, m, sched, events, now, token != nil)
	if result {
		stored = row.doc.Clone()
	}
	return stored, sched.Announces(now), nil
}

// unlockThenAnnounce releases a writer's row lock and only then announces
// the wake its write earned (when *announce is set): a listener that
// claims the moment it is woken must find the row unlocked, or ClaimDue
// skips it as held by a writer and the wake is wasted.
func (s *Store) unlockThenAnnounce(row *runRow, announce *bool) {
	unlockRow(row)
	if *announce {
		s.notifier.announce()
	}
}

// checkWrite runs a commit's storage checks in the ports' order: the fence
// (ports.CheckFence), the claim when token is given, then events already
// stored at a proposed seq with different content. Callers hold mu.
func checkWrite(row *runRow, m *run.Moment, events []run.Event, token *ports.ClaimToken) error {
	if err := ports.CheckFence(row.doc, m); err != nil {
		return err
	}
	if token != nil && !row.claimedBy(*token) {
		return fmt.Errorf("%w: run %q is claimed by another token or not claimed", ports.ErrStaleFence, m.Run.ID)
	}
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
		// New seqs follow the retained ones, so this appends.
		at, _ := slices.BinarySearch(row.seqs, e.Seq)
		row.seqs = slices.Insert(row.seqs, at, e.Seq)
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
