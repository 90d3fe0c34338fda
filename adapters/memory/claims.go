package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/google/uuid"
)

// ClaimDue executes one admission under the store's policy (see
// ports.RunStore). Rows held by a concurrent writer are skipped.
func (s *Store) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ports.ErrInvalidArgument, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The store clock bounds the caller's (see claim.Request.StoreNow).
	r.StoreNow = s.now()
	r = r.Normalized()
	now := r.DueBy()

	s.mu.Lock()
	defer s.mu.Unlock()
	candidates := make([]claim.Candidate, 0)
	for _, row := range s.runs {
		if !row.healthyRunning() || row.locked() {
			continue
		}
		candidates = append(candidates, claim.Candidate{
			RunID:     row.doc.ID,
			Order:     row.id,
			ScopeKey:  row.owner.Key(),
			Admitted:  !row.admittedAt.IsZero(),
			WakeAt:    row.wakeAt,
			ClaimedAt: row.claimedAt,
			Claimed:   row.token != "",
		})
	}
	sel := s.policy.Select(r, candidates)
	if len(sel.Picks) > r.Limit {
		sel.Picks = sel.Picks[:r.Limit] // a policy bug must not exceed demand
	}
	batch := &ports.ClaimBatch{
		Leases:            []ports.Lease{},
		Poisoned:          []ports.PoisonOutcome{},
		ReadyCandidates:   sel.ReadyCandidates,
		ExpiredCandidates: sel.ExpiredCandidates,
	}
	seen := make(map[string]bool, len(sel.Picks))
	for _, pick := range sel.Picks {
		row := s.runs[pick.RunID]
		// Re-check what the policy was shown: a pick must be a current,
		// healthy, unlocked row, taken once.
		if row == nil || row.id != pick.Order || seen[pick.RunID] || !row.healthyRunning() || row.locked() {
			continue
		}
		if _, _, ok := claim.Classify(r, pick.Candidate); !ok {
			continue
		}
		seen[pick.RunID] = true
		d := claim.Decide(row.attempts, r.MaxClaimAttempts)
		if d.Outcome == claim.OutcomePoison {
			row.clearClaim()
			row.wakeAt = time.Time{}
			row.admittedAt = time.Time{}
			row.poisonedAt, row.reason = now, d.PoisonReason
			batch.Poisoned = append(batch.Poisoned, ports.PoisonOutcome{
				RunID: row.doc.ID, Owner: row.owner, PoisonedAt: now, PoisonReason: d.PoisonReason, Class: pick.Class,
			})
			continue
		}
		token := uuid.NewString()
		row.token, row.claimedAt = token, now
		row.wakeAt = time.Time{}
		row.attempts = d.Attempt
		if s.policy.MarksAdmission() && row.admittedAt.IsZero() {
			row.admittedAt = now
		}
		batch.Leases = append(batch.Leases, ports.Lease{
			RunID:         row.doc.ID,
			Owner:         row.owner,
			GraphID:       row.doc.GraphID,
			GraphHash:     row.doc.GraphHash,
			CheckpointSeq: row.doc.CheckpointSeq,
			Token:         ports.NewClaimToken(token),
			ClaimedAt:     now,
			Attempt:       d.Attempt,
			OrphanTTL:     r.OrphanTTL,
			Class:         pick.Class,
			Run:           row.doc.Clone(),
		})
	}
	return batch, nil
}

// RefreshClaim stamps a current claim as alive (see ports.RunStore).
func (s *Store) RefreshClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	if now.IsZero() {
		return invalidArg("now", "is required")
	}
	if !wellFormedToken(token) {
		return claimLost(runID)
	}
	row, err := s.lockRow(ctx, ports.System(), runID)
	if err != nil {
		return err
	}
	if row == nil {
		return claimLost(runID)
	}
	defer unlockRow(row)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !row.claimedBy(token) {
		return claimLost(runID)
	}
	// Never backwards: a refresh delayed behind a retained commit cannot
	// re-expose the run to a steal.
	if storeNow := s.now(); storeNow.After(row.claimedAt) {
		row.claimedAt = storeNow
	}
	return nil
}

func claimLost(runID string) error {
	return fmt.Errorf("%w: run %q", ports.ErrClaimLost, runID)
}

// ReleaseClaim idempotently hands back a current claim with an immediate
// wake at now (see ports.RunStore). It announces nothing.
func (s *Store) ReleaseClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	if now.IsZero() {
		return invalidArg("now", "is required")
	}
	if !wellFormedToken(token) {
		return nil
	}
	row, err := s.lockRow(ctx, ports.System(), runID)
	if err != nil || row == nil {
		return err
	}
	defer unlockRow(row)
	s.mu.Lock()
	defer s.mu.Unlock()
	if row.claimedBy(token) {
		row.clearClaim()
		row.wakeAt = s.immediateWake(now)
	}
	return nil
}

// AbandonClaim hands back a claim before execution (see ports.RunStore).
func (s *Store) AbandonClaim(ctx context.Context, runID string, token ports.ClaimToken, p claim.AbandonParams) (ports.AbandonResult, error) {
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("%w: %w", ports.ErrInvalidArgument, err)
	}
	if !wellFormedToken(token) {
		return ports.AbandonStale, nil
	}
	row, err := s.lockRow(ctx, ports.System(), runID)
	if err != nil {
		return "", err
	}
	if row == nil {
		return ports.AbandonStale, nil
	}
	defer unlockRow(row)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !row.claimedBy(token) || row.doc.CheckpointSeq != p.ExpectedSeq {
		return ports.AbandonStale, nil
	}
	d := claim.Abandon(p, claim.Counters{Attempts: row.attempts, Abandons: row.abandons})
	row.clearClaim()
	row.admittedAt = time.Time{}
	row.attempts, row.abandons = d.Counters.Attempts, d.Counters.Abandons
	if d.Poisoned {
		row.wakeAt = time.Time{}
		row.poisonedAt, row.reason = d.PoisonedAt, d.PoisonReason
		return ports.AbandonPoisoned, nil
	}
	row.wakeAt = d.WakeAt
	return ports.AbandonRescheduled, nil
}

// RetryPoisonedRun clears poison with an immediate wake and announces it
// (see ports.RunStore).
func (s *Store) RetryPoisonedRun(ctx context.Context, scope ports.Scope, runID string, now time.Time) (*run.Run, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if now.IsZero() {
		return nil, invalidArg("now", "is required")
	}
	row, err := s.lockRow(ctx, scope, runID)
	if err != nil {
		return nil, err
	}
	if row == nil {
		return nil, notFoundRun(runID)
	}
	var recovered bool
	defer s.unlockThenAnnounce(row, &recovered)
	s.mu.Lock()
	defer s.mu.Unlock()
	if row.doc.Status.Terminal() {
		return nil, fmt.Errorf("%w: run %q is %s", ports.ErrInactiveRun, runID, row.doc.Status)
	}
	recovered = !row.poisonedAt.IsZero()
	if recovered {
		row.clearClaim()
		row.clearPoison()
		row.admittedAt = time.Time{}
		row.wakeAt = s.immediateWake(now)
		row.attempts, row.abandons = 0, 0
	}
	return row.doc.Clone(), nil
}
