package conformance

import (
	"fmt"
	"math"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// ---- REFRESH --------------------------------------------------------------

func checkRefreshMonotone(h *harness) {
	r, lease := h.insertClaimed()
	h.clock.Set(at(10 * time.Second))
	h.mustCommit(ports.Tenantless(), continueMoment(h, r, "retain"), lease.Token)
	h.eqTime(h.inspect(r.ID).ClaimedAt, at(10*time.Second), "claimed_at stamped by the retained commit")

	// A refresh delayed behind the commit cannot move claimed_at back.
	h.clock.Set(at(2 * time.Second))
	h.must(h.refresh(r.ID, lease.Token, at(time.Second)), "refresh with an older clock")
	h.eqTime(h.inspect(r.ID).ClaimedAt, at(10*time.Second), "claimed_at after a refresh with an older store clock")

	// It advances to the store clock, never to the caller's now.
	h.clock.Set(at(20 * time.Second))
	h.must(h.refresh(r.ID, lease.Token, at(time.Second)), "refresh with an old caller now")
	h.eqTime(h.inspect(r.ID).ClaimedAt, at(20*time.Second), "claimed_at follows the store clock")
	h.must(h.refresh(r.ID, lease.Token, at(time.Hour)), "refresh with a future caller now")
	h.eqTime(h.inspect(r.ID).ClaimedAt, at(20*time.Second), "the caller's now is not written")

	before := h.inspect(r.ID)
	h.errIs(h.refresh(r.ID, lease.Token, time.Time{}), ports.ErrInvalidArgument, "refresh with a zero now")
	h.unchanged(before, "run after a refresh with a zero now")
}

func checkRefreshIgnoresExpiry(h *harness) {
	r, lease := h.insertClaimed()
	h.clock.Set(at(time.Hour))
	h.must(h.refresh(r.ID, lease.Token, at(time.Hour)), "refresh long after the TTL")
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, at(time.Hour), "claimed_at after refreshing an expired claim")
	eq(h, info.ClaimAttempts, 1, "a refresh is not an attempt")
	h.sameRun(info.Run, r, "document after a refresh")
	h.claimNothing(request(at(time.Hour+500*time.Millisecond)), "ClaimDue shortly after the refresh")
}

func checkRefreshStale(h *harness) {
	r, old := h.insertClaimed()
	h.claimOne(at(2*time.Second), r.ID)
	before := h.inspect(r.ID)
	tokens := map[string]ports.ClaimToken{
		"stolen":    old.Token,
		"foreign":   foreignToken(),
		"zero":      {},
		"malformed": malformedToken,
	}
	for name, tok := range tokens {
		h.errIs(h.refresh(r.ID, tok, at(2*time.Second)), ports.ErrClaimLost, "refresh with a %s token", name)
		h.unchanged(before, "run after refresh with a %s token", name)
	}
	h.errIs(h.refresh(h.id("unknown"), old.Token, at(2*time.Second)), ports.ErrClaimLost, "refresh of an unknown run")

	r2, lease := h.insertClaimed()
	h.release(r2.ID, lease.Token, t0)
	released := h.inspect(r2.ID)
	h.errIs(h.refresh(r2.ID, lease.Token, t0), ports.ErrClaimLost, "refresh after release")
	h.unchanged(released, "run after refreshing a released claim")
}

// ---- RELEASE --------------------------------------------------------------

func checkRelease(h *harness) {
	r, lease := h.insertClaimed()
	// Without a now there is no wake to record: released, the run would
	// have neither wake nor claim and no claim would ever find it.
	claimed := h.inspect(r.ID)
	h.errIs(h.b.ReleaseClaim(h.ctx, r.ID, lease.Token, time.Time{}), ports.ErrInvalidArgument, "release with a zero now")
	h.unchanged(claimed, "run after a release with a zero now")
	h.clock.Set(at(9 * time.Second))
	h.release(r.ID, lease.Token, at(3*time.Second))
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after release")
	h.eqTime(info.WakeAt, at(3*time.Second), "wake after release (the caller's now)")
	eq(h, info.ClaimAttempts, 1, "attempts after release")
	eq(h, info.ClaimAbandons, 0, "abandons after release")
	h.sameRun(info.Run, r, "document after release")
	h.claimNothing(request(at(3*time.Second-time.Microsecond)), "ClaimDue before the release wake")
	h.claimOne(at(3*time.Second), r.ID)

	// A release keeps the abandons the run counted before it.
	r2 := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Minute)})
	lease = h.claimOneWith(readyOnly(at(time.Minute)), r2.ID)
	p := abandonParams(r2.CheckpointSeq, at(time.Minute))
	eq(h, h.abandon(r2.ID, lease.Token, p), ports.AbandonRescheduled, "abandon before the release")
	lease = h.claimOneWith(readyOnly(p.RetryAt), r2.ID)
	h.release(r2.ID, lease.Token, p.RetryAt)
	eq(h, h.inspect(r2.ID).ClaimAbandons, 1, "abandons after a release")
}

func checkReleaseIdempotent(h *harness) {
	r, lease := h.insertClaimed()
	h.release(r.ID, lease.Token, at(time.Second))
	after := h.inspect(r.ID)
	h.release(r.ID, lease.Token, at(time.Second))
	h.unchanged(after, "run after a second release")
	h.release(r.ID, lease.Token, at(5*time.Second))
	h.unchanged(after, "run after a third release at another time")
}

func checkReleaseStale(h *harness) {
	r, old := h.insertClaimed()
	thief := h.claimOne(at(2*time.Second), r.ID)
	before := h.inspect(r.ID)
	for name, tok := range map[string]ports.ClaimToken{
		"stolen": old.Token, "foreign": foreignToken(), "zero": {}, "malformed": malformedToken,
	} {
		h.must(h.b.ReleaseClaim(h.ctx, r.ID, tok, at(3*time.Second)), "release with a %s token", name)
		h.unchanged(before, "run after release with a %s token", name)
	}
	h.must(h.b.ReleaseClaim(h.ctx, h.id("unknown"), old.Token, t0), "release of an unknown run")
	h.must(h.refresh(r.ID, thief.Token, at(3*time.Second)), "the current claim survives stale releases")
}

func checkReleaseKeepsAttempt(h *harness) {
	r := h.insert(ports.Tenantless())
	q := request(t0)
	q.MaxClaimAttempts = 2
	first := h.claimOneWith(q, r.ID)
	h.release(r.ID, first.Token, t0)
	second := h.claimOneWith(q, r.ID)
	eq(h, second.Attempt, 2, "attempt after a release")
	h.release(r.ID, second.Token, t0)
	batch := h.claimDue(q)
	h.expect(len(batch.Leases) == 0 && len(batch.Poisoned) == 1, "released attempts count toward the ceiling: got %s", describeBatch(batch))
}

// checkReleaseIgnoresExpiry releases a claim long past its TTL, by the
// caller's clock and the store's, that no claimer has stolen: the token is
// still the run's authority, so the release frees the run like any other.
func checkReleaseIgnoresExpiry(h *harness) {
	r, lease := h.insertClaimed()
	late := at(time.Hour)
	h.clock.Set(late)
	h.release(r.ID, lease.Token, late)
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after releasing an expired claim")
	h.eqTime(info.WakeAt, late, "wake after releasing an expired claim")
	eq(h, info.ClaimAttempts, 1, "attempts after releasing an expired claim")
	h.sameRun(info.Run, r, "document after releasing an expired claim")
	h.errIs(h.refresh(r.ID, lease.Token, late), ports.ErrClaimLost, "the released token is dead")
	next := h.claimOneWith(readyOnly(late), r.ID)
	eq(h, next.Attempt, 2, "attempt of the claim after the release")
}

// checkReleaseVersusSteal races a holder's release with a steal of its
// expired claim. A claimer that leases the run (stolen, or ready at the
// release's wake) keeps it: the old token's release never takes the claim
// from its new holder. A claim may also skip the run while the release
// holds it, leaving it released.
func checkReleaseVersusSteal(h *harness) {
	stealAt := at(2 * time.Second)
	for i := range 4 * h.features.Rounds {
		h.clock.Set(t0)
		r, old := h.insertClaimed()
		// The store clock too has expired the claim, so the steal can win.
		h.clock.Set(stealAt)
		var (
			releaseErr, claimErr error
			batch                *ports.ClaimBatch
		)
		together(func() {
			releaseErr = h.b.ReleaseClaim(h.ctx, r.ID, old.Token, stealAt)
		}, func() {
			batch, claimErr = h.b.ClaimDue(h.ctx, request(stealAt))
		})
		what := fmt.Sprintf("race %d", i)
		h.must(releaseErr, "%s: release", what)
		h.must(claimErr, "%s: claim", what)
		if len(batch.Poisoned) != 0 || len(batch.Leases) > 1 || (len(batch.Leases) == 1 && batch.Leases[0].RunID != r.ID) {
			h.Errorf("%s: want at most a lease of %s, got %s", what, r.ID, describeBatch(batch))
			continue
		}
		if len(batch.Leases) == 0 {
			// The claim skipped the run while the release held it: the
			// release won, and the run waits for the next claim.
			info := h.inspect(r.ID)
			h.eqTime(info.ClaimedAt, time.Time{}, "%s: claim after a release the claim skipped", what)
			h.eqTime(info.WakeAt, stealAt, "%s: wake after a release the claim skipped", what)
			h.claimOne(stealAt, r.ID)
			continue
		}
		lease := batch.Leases[0]
		eq(h, lease.Attempt, 2, "%s: attempt of the claim after the holder's", what)
		info := h.inspect(r.ID)
		h.eqTime(info.ClaimedAt, stealAt, "%s: claimed_at of the new holder", what)
		h.eqTime(info.WakeAt, time.Time{}, "%s: wake of the claimed run", what)
		h.must(h.refresh(r.ID, lease.Token, stealAt), "%s: the new holder keeps the claim", what)
	}
}

// ---- ABANDON --------------------------------------------------------------

func checkAbandon(h *harness) {
	r, lease := h.insertClaimed()
	eq(h, lease.Attempt, 1, "fixture attempt")
	res := h.abandon(r.ID, lease.Token, abandonParams(lease.CheckpointSeq, t0))
	eq(h, res, ports.AbandonRescheduled, "abandon result")
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after abandon")
	eq(h, info.ClaimAttempts, 0, "attempts after abandon")
	eq(h, info.ClaimAbandons, 1, "abandons after abandon")
	h.eqTime(info.WakeAt, at(30*time.Second), "wake after abandon (retry_at)")
	h.expect(!info.Poisoned(), "a rescheduled abandon does not poison")
	h.sameRun(info.Run, r, "document after abandon")
	eq(h, info.LatestCheckpointType, run.CheckpointRunInitialized, "checkpoint type after abandon")
	h.claimNothing(request(t0), "ClaimDue before retry_at")
	again := h.claimOne(at(30*time.Second), r.ID)
	eq(h, again.Attempt, 1, "attempt after an abandon (refunded)")
	h.errIs(h.refresh(r.ID, lease.Token, at(30*time.Second)), ports.ErrClaimLost, "the abandoned token is dead")

	// A retained commit resets the attempts; handing the claim back after
	// it cannot take them below zero: the next claim is attempt 1 again.
	h.clock.Set(at(time.Hour))
	r2 := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Hour)})
	held := h.claimOneWith(readyOnly(at(time.Hour)), r2.ID)
	retained := continueMoment(h, r2, "retained")
	h.mustCommit(ports.Tenantless(), retained, held.Token)
	eq(h, h.abandon(r2.ID, held.Token, abandonParams(retained.Run.CheckpointSeq, at(time.Hour))), ports.AbandonRescheduled, "abandon after a retained commit")
	info = h.inspect(r2.ID)
	eq(h, info.ClaimAttempts, 0, "attempts after abandoning a retained claim")
	eq(h, info.ClaimAbandons, 1, "abandons after abandoning a retained claim")
	next := h.claimOneWith(readyOnly(at(time.Hour+30*time.Second)), r2.ID)
	eq(h, next.Attempt, 1, "attempt after abandoning a retained claim")
}

func checkAbandonStale(h *harness) {
	// After a steal.
	r, old := h.insertClaimed()
	h.claimOne(at(2*time.Second), r.ID)
	before := h.inspect(r.ID)
	eq(h, h.abandon(r.ID, old.Token, abandonParams(1, at(2*time.Second))), ports.AbandonStale, "abandon with a stolen token")
	h.unchanged(before, "run after abandon with a stolen token")
	for name, tok := range map[string]ports.ClaimToken{"foreign": foreignToken(), "zero": {}, "malformed": malformedToken} {
		eq(h, h.abandon(r.ID, tok, abandonParams(1, at(2*time.Second))), ports.AbandonStale, "abandon with a %s token", name)
		h.unchanged(before, "run after abandon with a %s token", name)
	}
	eq(h, h.abandon(h.id("unknown"), old.Token, abandonParams(1, t0)), ports.AbandonStale, "abandon of an unknown run")

	// After a retained commit: same token, advanced sequence.
	h.clock.Set(at(time.Hour))
	r2 := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Hour)})
	lease := h.claimOneWith(readyOnly(at(time.Hour)), r2.ID)
	h.mustCommit(ports.Tenantless(), continueMoment(h, r2, "progress"), lease.Token)
	committed := h.inspect(r2.ID)
	eq(h, h.abandon(r2.ID, lease.Token, abandonParams(lease.CheckpointSeq, at(time.Hour))), ports.AbandonStale, "abandon after a commit")
	h.unchanged(committed, "run after a late abandon")
	eq(h, h.abandon(r2.ID, lease.Token, abandonParams(lease.CheckpointSeq+5, at(time.Hour))), ports.AbandonStale, "abandon at a future seq")
	h.unchanged(committed, "run after an abandon at a future seq")
}

// checkAbandonIgnoresExpiry hands back a claim long past its TTL, by the
// caller's clock and the store's, that no claimer has stolen: the token is
// still the run's authority, so the abandon reschedules like any other.
func checkAbandonIgnoresExpiry(h *harness) {
	r, lease := h.insertClaimed()
	late := at(time.Hour)
	h.clock.Set(late)
	res := h.abandon(r.ID, lease.Token, abandonParams(lease.CheckpointSeq, late))
	eq(h, res, ports.AbandonRescheduled, "abandon long after the TTL")
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after abandoning an expired claim")
	h.eqTime(info.WakeAt, late.Add(30*time.Second), "wake after abandoning an expired claim (retry_at)")
	eq(h, info.ClaimAttempts, 0, "attempts after abandoning an expired claim")
	eq(h, info.ClaimAbandons, 1, "abandons after abandoning an expired claim")
	h.sameRun(info.Run, r, "document after abandoning an expired claim")
	h.claimNothing(request(late), "ClaimDue before retry_at")
}

func checkAbandonPoison(h *harness) {
	const max = 3
	r := h.insert(ports.Tenantless())
	now := t0
	for i := 1; i <= max; i++ {
		lease := h.claimOne(now, r.ID)
		p := abandonParams(1, now)
		p.MaxClaimAbandons = max
		eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonRescheduled, "abandon %d", i)
		eq(h, h.inspect(r.ID).ClaimAbandons, i, "abandons after abandon %d", i)
		now = p.RetryAt
	}
	lease := h.claimOne(now, r.ID)
	p := abandonParams(1, now)
	p.MaxClaimAbandons = max
	eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonPoisoned, "abandon %d", max+1)
	info := h.inspect(r.ID)
	eq(h, info.PoisonReason, claim.ReasonMaxClaimAbandons, "poison reason")
	h.eqTime(info.PoisonedAt, now, "poisoned_at (the abandon's now)")
	h.eqTime(info.WakeAt, time.Time{}, "wake of the poisoned run")
	h.eqTime(info.ClaimedAt, time.Time{}, "claim of the poisoned run")
	eq(h, info.ClaimAbandons, max, "abandons stay at the maximum")
	eq(h, info.ClaimAttempts, 0, "attempts of the poisoned run")
	h.sameRun(info.Run, r, "document of the poisoned run")
	later := request(at(24 * time.Hour))
	later.Limit = 10
	h.claimNothing(later, "ClaimDue after abandon poisoning")
}

func checkAbandonBackoff(h *harness) {
	r := h.insert(ports.Tenantless())
	backoff := &claim.Backoff{Base: 100 * time.Millisecond, Cap: 300 * time.Millisecond}
	wantDelays := []time.Duration{100, 200, 300, 300}
	for i, ms := range wantDelays {
		lease := h.claimOne(at(time.Duration(i+1)*time.Second), r.ID)
		eq(h, lease.Attempt, 1, "attempt before non-poisoning abandon %d", i+1)
		p := claim.AbandonParams{ExpectedSeq: 1, Now: t0, RetryAt: t0, MaxClaimAbandons: 1, NonPoisoning: true, Backoff: backoff}
		eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonRescheduled, "non-poisoning abandon %d", i+1)
		info := h.inspect(r.ID)
		h.eqTime(info.WakeAt, t0.Add(ms*time.Millisecond), "wake after non-poisoning abandon %d", i+1)
		eq(h, info.ClaimAbandons, i+1, "abandons after non-poisoning abandon %d", i+1)
		eq(h, info.ClaimAttempts, 0, "attempts after non-poisoning abandon %d", i+1)
		h.expect(!info.Poisoned(), "a non-poisoning abandon never poisons (abandon %d)", i+1)
	}
	// Without backoff it takes retry_at, still never poisoning.
	lease := h.claimOne(at(10*time.Second), r.ID)
	p := claim.AbandonParams{ExpectedSeq: 1, Now: at(10 * time.Second), RetryAt: at(time.Minute), MaxClaimAbandons: 1, NonPoisoning: true}
	eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonRescheduled, "non-poisoning abandon without backoff")
	h.eqTime(h.inspect(r.ID).WakeAt, at(time.Minute), "wake of a non-poisoning abandon without backoff")

	// Accumulated non-poisoning abandons let a poisoning abandon poison at once.
	lease = h.claimOne(at(time.Minute), r.ID)
	eq(h, h.abandon(r.ID, lease.Token, abandonParams(1, at(time.Minute))), ports.AbandonPoisoned,
		"a poisoning abandon after 5 non-poisoning ones with max 3")
}

func checkAbandonInput(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	valid := abandonParams(1, t0)
	cases := map[string]func(p *claim.AbandonParams){
		"retry_at before now":         func(p *claim.AbandonParams) { p.RetryAt = t0.Add(-time.Millisecond) },
		"max abandons 0":              func(p *claim.AbandonParams) { p.MaxClaimAbandons = 0 },
		"max abandons beyond 32 bits": func(p *claim.AbandonParams) { p.MaxClaimAbandons = math.MaxInt32 + 1 },
		"negative expected seq":       func(p *claim.AbandonParams) { p.ExpectedSeq = -1 },
		"zero now":                    func(p *claim.AbandonParams) { p.Now = time.Time{} },
		"zero backoff base": func(p *claim.AbandonParams) {
			p.NonPoisoning = true
			p.Backoff = &claim.Backoff{Cap: time.Second}
		},
		"backoff cap below base": func(p *claim.AbandonParams) {
			p.NonPoisoning = true
			p.Backoff = &claim.Backoff{Base: time.Second, Cap: time.Millisecond}
		},
	}
	for name, edit := range cases {
		p := valid
		edit(&p)
		_, err := h.b.AbandonClaim(h.ctx, r.ID, lease.Token, p)
		h.errIs(err, ports.ErrInvalidArgument, "abandon with %s", name)
		h.unchanged(before, "run after abandon with %s", name)
	}
	eq(h, h.abandon(r.ID, lease.Token, valid), ports.AbandonRescheduled, "the valid abandon")
}

func checkAbandonVersusSteal(h *harness) {
	iterations := 4 * h.features.Rounds
	for i := range iterations {
		r, old := h.insertClaimed()
		var (
			res     ports.AbandonResult
			abErr   error
			batch   *ports.ClaimBatch
			clErr   error
			stealAt = at(2 * time.Second)
		)
		// The store clock too must have expired the claim, or no steal
		// could win the race.
		h.clock.Set(stealAt)
		together(func() {
			res, abErr = h.b.AbandonClaim(h.ctx, r.ID, old.Token, abandonParams(1, stealAt))
		}, func() {
			batch, clErr = h.b.ClaimDue(h.ctx, request(stealAt))
		})
		h.clock.Set(t0)
		what := fmt.Sprintf("race %d", i)
		h.must(abErr, "%s: abandon", what)
		h.must(clErr, "%s: steal", what)
		stolen := leaseOf(batch, r.ID)
		info := h.inspect(r.ID)
		switch res {
		case ports.AbandonRescheduled:
			// The abandon won; the run waits for retry_at, so the claim
			// finds nothing (a re-claim would be a fresh attempt 1).
			if stolen != nil {
				h.expect(stolen.Attempt == 1 && info.ClaimAbandons == 1, "%s: a claim after the abandon must be attempt 1 with 1 abandon, got attempt %d, abandons %d", what, stolen.Attempt, info.ClaimAbandons)
				continue
			}
			eq(h, info.ClaimAttempts, 0, "%s: attempts after the winning abandon", what)
			eq(h, info.ClaimAbandons, 1, "%s: abandons after the winning abandon", what)
			h.eqTime(info.ClaimedAt, time.Time{}, "%s: claim after the winning abandon", what)
		case ports.AbandonStale:
			if stolen == nil {
				h.Errorf("%s: the abandon was stale but nothing stole the claim", what)
				continue
			}
			eq(h, stolen.Attempt, 2, "%s: attempt of the winning steal", what)
			eq(h, info.ClaimAttempts, 2, "%s: attempts after the winning steal", what)
			eq(h, info.ClaimAbandons, 0, "%s: abandons after the winning steal", what)
			h.must(h.refresh(r.ID, stolen.Token, stealAt), "%s: the thief holds the claim", what)
		default:
			h.Errorf("%s: unexpected abandon result %q", what, res)
		}
	}
}

// ---- POISON ---------------------------------------------------------------

// poisonWithAttempts poisons runID at the claim ceiling max (TTL 0).
func (h *harness) poisonWithAttempts(runID string, max int) time.Time {
	h.Helper()
	q := request(t0)
	q.OrphanTTL = 0
	q.MaxClaimAttempts = max
	for i := 1; i <= max+1; i++ {
		q.Now = at(time.Duration(i) * time.Millisecond)
		batch := h.claimDue(q)
		if i <= max && len(batch.Leases) != 1 {
			h.Fatalf("fixture: claim %d should lease, got %s", i, describeBatch(batch))
		}
		if i > max && len(batch.Poisoned) != 1 {
			h.Fatalf("fixture: claim %d should poison, got %s", i, describeBatch(batch))
		}
	}
	return q.Now
}

func checkPoisonRecovery(h *harness) {
	r := h.insert(ports.Tenantless())
	h.poisonWithAttempts(r.ID, 3)
	poisoned := h.inspect(r.ID)
	eq(h, poisoned.ClaimAttempts, 3, "fixture attempts")
	h.clock.Set(at(time.Hour))
	// Without a now there is no wake to record: recovered, the run would
	// have neither wake nor claim and no claim would ever find it.
	_, zeroErr := h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), r.ID, time.Time{})
	h.errIs(zeroErr, ports.ErrInvalidArgument, "RetryPoisonedRun with a zero now")
	h.unchanged(poisoned, "run after RetryPoisonedRun with a zero now")
	got, err := h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), r.ID, at(time.Minute))
	h.must(err, "RetryPoisonedRun")
	h.sameRun(got, r, "RetryPoisonedRun returns the unchanged document")
	info := h.inspect(r.ID)
	h.expect(!info.Poisoned(), "poison after recovery: %s", infoOps(info))
	eq(h, info.PoisonReason, "", "poison reason after recovery")
	eq(h, info.ClaimAttempts, 0, "attempts after recovery")
	eq(h, info.ClaimAbandons, 0, "abandons after recovery")
	h.eqTime(info.WakeAt, at(time.Minute), "wake after recovery (the caller's now)")
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after recovery")
	h.sameRun(info.Run, r, "document after recovery")
	eq(h, info.LatestCheckpointType, run.CheckpointRunInitialized, "checkpoint type after recovery")
	page, err := h.b.ListEvents(h.ctx, ports.Tenantless(), r.ID, ports.ListEventsParams{Limit: 100})
	h.must(err, "ListEvents")
	eq(h, page.LatestSeq, r.EventSeq, "recovery appends no event")
	eq(h, len(page.Events), int(r.EventSeq), "recovery appends no event")
	lease := h.claimOne(at(time.Minute), r.ID)
	eq(h, lease.Attempt, 1, "first attempt after recovery")
}

func checkPoisonRecoveryGuards(h *harness) {
	tenant := ports.Tenant(h.id("tenant"))
	r := h.insert(tenant)
	h.poisonWithAttempts(r.ID, 1)
	_, err := h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), r.ID, t0)
	h.errIs(err, ports.ErrNotFound, "RetryPoisonedRun from another scope")
	h.expect(h.inspect(r.ID).Poisoned(), "an out-of-scope retry leaves the run poisoned")
	_, err = h.b.RetryPoisonedRun(h.ctx, tenant, r.ID, t0)
	h.must(err, "RetryPoisonedRun")
	recovered := h.inspect(r.ID)
	got, err := h.b.RetryPoisonedRun(h.ctx, tenant, r.ID, at(time.Hour))
	h.must(err, "RetryPoisonedRun of a healthy run")
	h.sameRun(got, r, "RetryPoisonedRun of a healthy run returns it")
	h.unchanged(recovered, "a healthy run after RetryPoisonedRun")

	// A claimed healthy run keeps its claim.
	lease := h.claimOne(t0, r.ID)
	claimed := h.inspect(r.ID)
	_, err = h.b.RetryPoisonedRun(h.ctx, ports.System(), r.ID, at(time.Hour))
	h.must(err, "RetryPoisonedRun of a claimed run")
	h.unchanged(claimed, "a claimed run after RetryPoisonedRun")
	h.must(h.refresh(r.ID, lease.Token, t0), "the claim survives")

	_, err = h.b.RetryPoisonedRun(h.ctx, ports.System(), h.id("unknown"), t0)
	h.errIs(err, ports.ErrNotFound, "RetryPoisonedRun of an unknown run")

	done := h.insert(ports.Tenantless())
	_, err = h.b.MutateRun(h.ctx, ports.Tenantless(), done.ID, cancelMutation(h))
	h.must(err, "cancelling")
	terminal := h.inspect(done.ID)
	_, err = h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), done.ID, t0)
	h.errIs(err, ports.ErrInactiveRun, "RetryPoisonedRun of a terminal run")
	h.unchanged(terminal, "a terminal run after RetryPoisonedRun")
}

// checkPoisonRevokesTheClaim poisons a run under a holder, by a claim
// after the holder's claim expired and by the holder's own abandon at the
// limit: the holder's token is then dead for every call that takes one.
func checkPoisonRevokesTheClaim(h *harness) {
	expired := h.insert(ports.Tenantless())
	q := request(t0)
	q.MaxClaimAttempts = 1
	holder := h.claimOneWith(q, expired.ID)
	q.Now = at(2 * time.Second) // the claim expired, not stolen: attempts are at the ceiling
	batch := h.claimDue(q)
	if len(batch.Leases) != 0 || len(batch.Poisoned) != 1 || batch.Poisoned[0].RunID != expired.ID {
		h.Fatalf("fixture: a claim after the holder's expiry should poison, got %s", describeBatch(batch))
	}
	h.revoked(expired.ID, holder, at(2*time.Second), "after claim-time poisoning")

	h.clock.Set(t0)
	abandoned := h.insert(ports.Tenantless())
	lease := h.claimOne(t0, abandoned.ID)
	p := abandonParams(lease.CheckpointSeq, t0)
	p.MaxClaimAbandons = 1
	eq(h, h.abandon(abandoned.ID, lease.Token, p), ports.AbandonRescheduled, "the first abandon")
	lease = h.claimOne(p.RetryAt, abandoned.ID)
	p = abandonParams(lease.CheckpointSeq, p.RetryAt)
	p.MaxClaimAbandons = 1
	eq(h, h.abandon(abandoned.ID, lease.Token, p), ports.AbandonPoisoned, "the abandon at the limit")
	h.revoked(abandoned.ID, lease, p.Now, "after abandon poisoning")
}

// revoked requires that lease's token, once the holder's, holds nothing
// on the poisoned run runID: refresh is ErrClaimLost, commit ErrStaleFence,
// abandon stale, and release changes nothing.
func (h *harness) revoked(runID string, lease ports.Lease, now time.Time, what string) {
	h.Helper()
	h.clock.Set(now)
	before := h.inspect(runID)
	h.expect(before.Poisoned() && before.ClaimedAt.IsZero(), "%s: want a poisoned run without a claim, got %s", what, infoOps(before))
	h.errIs(h.refresh(runID, lease.Token, now), ports.ErrClaimLost, "the holder's refresh %s", what)
	h.unchanged(before, "run after the holder's refresh %s", what)
	m := continueMoment(h, before.Run, "revoked")
	_, err := h.commit(ports.Tenantless(), m, lease.Token)
	h.errIs(err, ports.ErrStaleFence, "the holder's commit %s", what)
	h.unchanged(before, "run after the holder's commit %s", what)
	h.eventsAbsent(m, "the holder's commit %s", what)
	eq(h, h.abandon(runID, lease.Token, abandonParams(before.Run.CheckpointSeq, now)), ports.AbandonStale, "the holder's abandon %s", what)
	h.unchanged(before, "run after the holder's abandon %s", what)
	h.release(runID, lease.Token, now)
	h.unchanged(before, "run after the holder's release %s", what)
}
