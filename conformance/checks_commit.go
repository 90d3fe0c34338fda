package conformance

import (
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// foreignToken is a well-formed token (a random UUID) that no claim holds.
func foreignToken() ports.ClaimToken {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return ports.NewClaimToken(fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]))
}

// malformedToken is not a UUID; stores must treat it as matching nothing.
var malformedToken = ports.NewClaimToken("not-a-uuid'; --")

// cloneMoment deep-copies m's run so the copy can be edited.
func cloneMoment(m *run.Moment) *run.Moment {
	c := *m
	c.Run = m.Run.Clone()
	c.Events = append([]run.Event(nil), m.Events...)
	return &c
}

// retargeted is a copy of m proposing the same transition for run runID
// (the run and its events), for a run the store does not know.
func retargeted(m *run.Moment, runID string) *run.Moment {
	c := cloneMoment(m)
	c.Run.ID = runID
	for i := range c.Events {
		c.Events[i].RunID = runID
	}
	return c
}

// eventsAbsent reports a failure when any of m's events is readable.
func (h *harness) eventsAbsent(m *run.Moment, format string, args ...any) {
	h.Helper()
	for _, e := range m.Events {
		got, err := h.b.FetchEvent(h.ctx, ports.System(), m.Run.ID, e.Seq)
		if err == nil && got != nil && got.Equal(e) {
			h.Errorf("%s: event %d of the rejected proposal was persisted", fmt.Sprintf(format, args...), e.Seq)
		}
	}
}

// eventsStored reports a failure unless every event of m is stored as is.
func (h *harness) eventsStored(m *run.Moment, format string, args ...any) {
	h.Helper()
	for _, e := range m.Events {
		got, err := h.b.FetchEvent(h.ctx, ports.System(), m.Run.ID, e.Seq)
		if err != nil || got == nil {
			h.Errorf("%s: event %d: %v", fmt.Sprintf(format, args...), e.Seq, describeErr(err))
			continue
		}
		h.expect(got.Equal(e), "%s: event %d: got %+v, want %+v", fmt.Sprintf(format, args...), e.Seq, *got, e)
	}
}

func checkFencedAdvance(h *harness) {
	r, lease := h.insertClaimed()
	h.clock.Set(at(5 * time.Second))
	m := h.barrierMoment(r, "yes")
	got := h.mustCommit(ports.Tenantless(), m, lease.Token)
	h.sameRun(got, m.Run, "Commit returns the committed run")
	stored := h.fetch(ports.Tenantless(), r.ID)
	h.sameRun(stored, m.Run, "FetchRun after the commit")
	eq(h, stored.CheckpointSeq, int64(2), "checkpoint seq")
	info := h.inspect(r.ID)
	eq(h, info.LatestCheckpointType, m.CheckpointType, "latest checkpoint type")
	h.eqTime(info.ClaimedAt, at(5*time.Second), "claimed_at of a retained claim (store clock)")
	h.eqTime(info.WakeAt, time.Time{}, "wake of a retained claim")
	eq(h, info.ClaimAttempts, 0, "claim attempts after a commit")
	h.must(h.refresh(r.ID, lease.Token, at(5*time.Second)), "the retained token still refreshes")
	h.eventsStored(m, "events of the commit")

	// The retained claim keeps driving: the next commit under it works.
	m3 := continueMoment(h, stored, "third")
	h.mustCommit(ports.Tenantless(), m3, lease.Token)
	eq(h, h.fetch(ports.System(), r.ID).CheckpointSeq, int64(3), "seq after a second retained commit")
}

func checkSchedulePairing(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	waiting := h.waitingMoment(r)
	running := continueMoment(h, r, "running")
	cancelled := h.cancelMoment(r)
	cases := []struct {
		name string
		m    *run.Moment
	}{
		{"external with status running", withDisposition(running, run.Disposition{Kind: run.DispositionExternal, Reason: run.ReasonAwaitingInterrupts})},
		{"terminal with status running", withDisposition(running, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCompleted})},
		{"continue with status waiting", withDisposition(waiting, run.Disposition{Kind: run.DispositionContinue})},
		{"immediate with status waiting", withDisposition(waiting, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget})},
		{"continue with status cancelled", withDisposition(cancelled, run.Disposition{Kind: run.DispositionContinue})},
		{"at without a time", withDisposition(running, run.Disposition{Kind: run.DispositionAt, Reason: run.ReasonRetryBackoff})},
		{"unknown disposition", withDisposition(running, run.Disposition{Kind: "sometime"})},
	}
	for _, c := range cases {
		_, err := h.commit(ports.Tenantless(), c.m, lease.Token)
		if h.errIs(err, ports.ErrInvalidCommit, "Commit with %s", c.name) {
			var invalid *ports.InvalidCommitError
			h.expect(errors.As(err, &invalid) && invalid.Reason != "", "Commit with %s: got %T, want a *ports.InvalidCommitError with its reason", c.name, err)
		}
		h.unchanged(before, "run after Commit with %s", c.name)
		h.eventsAbsent(c.m, "Commit with %s", c.name)
	}
	h.mustCommit(ports.Tenantless(), running, lease.Token)
}

func checkScheduleEffects(h *harness) {
	type effect struct {
		name      string
		propose   func(r *run.Run) *run.Moment
		wake      time.Time
		status    run.Status
		retained  bool
		finished  bool
		claimable time.Time // zero: never claimable again
	}
	storeNow := at(7 * time.Second)
	future := at(time.Hour)
	effects := []effect{
		{name: "retain", propose: func(r *run.Run) *run.Moment { return h.barrierMoment(r, "retained") },
			status: run.StatusRunning, retained: true},
		{name: "immediate", propose: func(r *run.Run) *run.Moment { return immediateMoment(h, r, "immediate") },
			wake: storeNow, status: run.StatusRunning, claimable: storeNow},
		{name: "yielded", propose: func(r *run.Run) *run.Moment {
			m, err := run.Yield(h.barrierMoment(r, "yielded"), run.ReasonDrainBudget)
			h.must(err, "run.Yield")
			return m
		}, wake: storeNow, status: run.StatusRunning, claimable: storeNow},
		{name: "at", propose: func(r *run.Run) *run.Moment { return atMoment(h, r, "at", future) },
			wake: future, status: run.StatusRunning, claimable: future},
		{name: "external", propose: h.waitingMoment, status: run.StatusWaiting},
		{name: "terminal", propose: h.cancelMoment, status: run.StatusCancelled, finished: true},
	}
	for _, e := range effects {
		h.clock.Set(t0)
		r, lease := h.insertClaimed()
		h.clock.Set(storeNow)
		m := e.propose(r)
		h.mustCommit(ports.Tenantless(), m, lease.Token)
		info := h.inspect(r.ID)
		eq(h, info.Run.Status, e.status, "%s: status", e.name)
		h.eqTime(info.WakeAt, e.wake, "%s: wake", e.name)
		eq(h, info.ClaimAttempts, 0, "%s: attempts", e.name)
		eq(h, !info.Run.FinishedAt.IsZero(), e.finished, "%s: finished_at set", e.name)
		err := h.refresh(r.ID, lease.Token, storeNow)
		if e.retained {
			h.eqTime(info.ClaimedAt, storeNow, "%s: claimed_at", e.name)
			h.must(err, "%s: refresh of the retained claim", e.name)
			continue
		}
		h.eqTime(info.ClaimedAt, time.Time{}, "%s: claimed_at", e.name)
		h.errIs(err, ports.ErrClaimLost, "%s: refresh of the released claim", e.name)
		// Earlier cases leave claims behind; ignore them (ready class only).
		if e.claimable.IsZero() {
			h.claimNothing(readyOnly(at(24*time.Hour)), "%s: a parked run is never claimable", e.name)
			continue
		}
		h.claimNothing(readyOnly(e.claimable.Add(-time.Microsecond)), "%s: claim just before the wake", e.name)
		h.claimOneWith(readyOnly(e.claimable), r.ID)
	}
}

func checkCommitResetsHealth(h *harness) {
	// Attempts: a steal makes attempt 2; the thief's commit resets it.
	r, _ := h.insertClaimed()
	thief := h.claimOne(at(2*time.Second), r.ID)
	eq(h, thief.Attempt, 2, "steal attempt")
	h.mustCommit(ports.Tenantless(), h.cancelMoment(r), thief.Token)
	info := h.inspect(r.ID)
	eq(h, info.ClaimAttempts, 0, "attempts after a commit")
	eq(h, info.ClaimAbandons, 0, "abandons after a commit")

	// Abandons: an abandon counts 1; the next holder's commit resets it.
	h.clock.Set(t0)
	r2, lease := h.insertClaimed()
	eq(h, h.abandon(r2.ID, lease.Token, abandonParams(1, t0)), ports.AbandonRescheduled, "abandon")
	again := h.claimOne(at(30*time.Second), r2.ID)
	info = h.inspect(r2.ID)
	eq(h, info.ClaimAbandons, 1, "abandons before the commit")
	h.mustCommit(ports.Tenantless(), continueMoment(h, r2, "after-abandon"), again.Token)
	info = h.inspect(r2.ID)
	eq(h, info.ClaimAttempts, 0, "attempts after a commit")
	eq(h, info.ClaimAbandons, 0, "abandons after a commit")
	h.eqTime(info.PoisonedAt, time.Time{}, "poison after a commit")
}

func checkReplayIsStale(h *harness) {
	r, lease := h.insertClaimed()
	m := continueMoment(h, r, "once")
	h.mustCommit(ports.Tenantless(), m, lease.Token)
	before := h.inspect(r.ID)
	_, err := h.commit(ports.Tenantless(), m, lease.Token)
	h.errIs(err, ports.ErrStaleFence, "replaying a committed moment")
	h.unchanged(before, "run after the replay")
}

func checkForeignToken(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	m := immediateMoment(h, r, "foreign")
	_, err := h.commit(ports.Tenantless(), m, foreignToken())
	h.errIs(err, ports.ErrStaleFence, "Commit with a foreign token")
	h.unchanged(before, "run after a foreign-token commit")
	h.eventsAbsent(m, "foreign-token commit")

	_, err = h.commit(ports.Tenantless(), m, ports.ClaimToken{})
	h.errIsAny(err, []error{ports.ErrStaleFence, ports.ErrInvalidCommit}, "Commit without a token")
	_, err = h.commit(ports.Tenantless(), m, malformedToken)
	h.errIsAny(err, []error{ports.ErrStaleFence, ports.ErrInvalidCommit}, "Commit with a malformed token")
	h.unchanged(before, "run after token-less commits")
	h.eventsAbsent(m, "token-less commits")

	h.mustCommit(ports.Tenantless(), m, lease.Token)
}

func checkStaleTokenCommit(h *harness) {
	r, old := h.insertClaimed()
	current := h.claimOne(at(2*time.Second), r.ID)
	h.expect(current.Token != old.Token, "a steal issues a new token")
	before := h.inspect(r.ID)
	m := continueMoment(h, r, "stale")
	_, err := h.commit(ports.Tenantless(), m, old.Token)
	h.errIs(err, ports.ErrStaleFence, "Commit with the stolen token")
	h.unchanged(before, "run after the stale commit")
	h.eventsAbsent(m, "stale commit")
	h.mustCommit(ports.Tenantless(), continueMoment(h, r, "current"), current.Token)
}

func checkSequenceSkip(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	m := continueMoment(h, r, "skip")

	skip := cloneMoment(m)
	skip.Run.CheckpointSeq = r.CheckpointSeq + 2
	for name, tok := range map[string]ports.ClaimToken{"current token": lease.Token, "foreign token": foreignToken()} {
		_, err := h.commit(ports.Tenantless(), skip, tok)
		h.errIs(err, ports.ErrInvalidCommit, "Commit two ahead of the stored seq with the %s", name)
		h.unchanged(before, "run after a seq+2 commit with the %s", name)
	}
	h.eventsAbsent(skip, "seq+2 commit")

	// An unknown run cannot be looked up; the port derives the fence from
	// the proposal, so the only requirement is that nothing succeeds.
	_, err := h.commit(ports.Tenantless(), retargeted(skip, h.id("unknown")), lease.Token)
	h.errIsAny(err, []error{ports.ErrInvalidCommit, ports.ErrNotFound}, "Commit two ahead for an unknown run")

	behind := cloneMoment(m)
	behind.Run.CheckpointSeq = r.CheckpointSeq
	_, err = h.commit(ports.Tenantless(), behind, lease.Token)
	h.errIsAny(err, []error{ports.ErrStaleFence, ports.ErrInvalidCommit}, "Commit that does not advance the seq")
	h.unchanged(before, "run after a non-advancing commit")

	h.mustCommit(ports.Tenantless(), m, lease.Token)
}

func checkImmutableBinding(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	m := continueMoment(h, r, "binding")
	edits := map[string]func(c *run.Moment){
		"graph id":   func(c *run.Moment) { c.Run.GraphID = "another-graph" },
		"graph hash": func(c *run.Moment) { c.Run.GraphHash = h.graphs().alt.Hash },
		"started_at": func(c *run.Moment) { c.Run.StartedAt = c.Run.StartedAt.Add(-time.Second) },
	}
	for name, edit := range edits {
		for tokName, tok := range map[string]ports.ClaimToken{"current": lease.Token, "foreign": foreignToken()} {
			c := cloneMoment(m)
			edit(c)
			_, err := h.commit(ports.Tenantless(), c, tok)
			h.errIs(err, ports.ErrInvalidCommit, "Commit changing the %s with the %s token", name, tokName)
			h.unchanged(before, "run after a commit changing the %s", name)
		}
	}
	h.mustCommit(ports.Tenantless(), m, lease.Token)
}

func checkCommitScope(h *harness) {
	tenantA := ports.Tenant(h.id("tenant-a"))
	r := h.insert(tenantA)
	lease := h.claimOne(t0, r.ID)
	eq(h, lease.Owner, tenantA, "lease owner")
	before := h.inspect(r.ID)
	m := continueMoment(h, r, "scope")
	for _, scope := range []ports.Scope{ports.Tenant(h.id("tenant-b")), ports.Tenantless()} {
		_, err := h.commit(scope, m, lease.Token)
		h.errIs(err, ports.ErrNotFound, "Commit of a %s run under %s", tenantA, scope)
		h.unchanged(before, "run after an out-of-scope commit")
	}
	_, err := h.commit(ports.System(), retargeted(m, h.id("unknown")), lease.Token)
	h.errIs(err, ports.ErrNotFound, "Commit of an unknown run")
	// The owner and system both may commit.
	h.mustCommit(tenantA, m, lease.Token)
	h.mustCommit(ports.System(), continueMoment(h, h.fetch(tenantA, r.ID), "system"), lease.Token)
}

func checkConcurrentCommits(h *harness) {
	for round := range h.features.Rounds {
		h.clock.Set(t0)
		r, lease := h.insertClaimed()
		moments := make([]*run.Moment, h.features.Writers)
		for i := range moments {
			variant := fmt.Sprintf("round-%d-writer-%d", round, i)
			switch (round + i) % 3 {
			case 0:
				moments[i] = continueMoment(h, r, variant)
			case 1:
				moments[i] = immediateMoment(h, r, variant)
			default:
				moments[i] = atMoment(h, r, variant, at(time.Minute))
			}
		}
		// Commit at a later store clock so no earlier round's run is due
		// (or expired) when the next round claims at t0.
		h.clock.Set(at(24 * time.Hour))
		h.oneWinner(round, "writer", "one fence", r.ID, ports.ErrStaleFence, moments, func(m *run.Moment) error {
			_, err := h.commit(ports.Tenantless(), m, lease.Token)
			return err
		})
	}
}

// checkCommitVersusSteal races a holder's retained commit with a steal of
// its expired claim: exactly one wins. A winning commit keeps the claim,
// stamped afresh so nothing is stolen; a winning steal leaves the commit
// ErrStaleFence with nothing written.
func checkCommitVersusSteal(h *harness) {
	stealAt := at(2 * time.Second)
	for i := range 4 * h.features.Rounds {
		h.clock.Set(t0)
		r, old := h.insertClaimed()
		m := continueMoment(h, r, fmt.Sprintf("race-%d", i))
		// The store clock too has expired the claim, so the steal can win.
		h.clock.Set(stealAt)
		var (
			commitErr, claimErr error
			batch               *ports.ClaimBatch
		)
		together(func() {
			_, commitErr = h.commit(ports.Tenantless(), m, old.Token)
		}, func() {
			batch, claimErr = h.b.ClaimDue(h.ctx, request(stealAt))
		})
		what := fmt.Sprintf("race %d", i)
		h.must(claimErr, "%s: steal", what)
		stolen := leaseOf(batch, r.ID)
		info := h.inspect(r.ID)
		switch {
		case commitErr == nil && stolen != nil:
			h.Errorf("%s: both the holder's commit and a steal won (seq %d)", what, info.Run.CheckpointSeq)
		case commitErr == nil:
			h.sameRun(info.Run, m.Run, "%s: the stored run after the winning commit", what)
			h.must(h.refresh(r.ID, old.Token, stealAt), "%s: the committer keeps its claim", what)
		case stolen != nil:
			h.errIs(commitErr, ports.ErrStaleFence, "%s: the commit that lost to a steal", what)
			h.sameRun(info.Run, r, "%s: the stored run after the winning steal", what)
			h.eventsAbsent(m, "%s: the commit that lost to a steal", what)
			h.must(h.refresh(r.ID, stolen.Token, stealAt), "%s: the thief holds the claim", what)
		default:
			h.Errorf("%s: neither the commit nor the steal won; the commit: %s", what, describeErr(commitErr))
		}
	}
}

// checkFusedChain commits a continue moment and the completion that
// follows it as one transition.
func checkFusedChain(h *harness) {
	r, lease := h.insertClaimed()
	h.clock.Set(at(5 * time.Second))
	first := h.barrierMoment(r, "yes")
	step, err := superstep.Advance(h.graphs().main, first.Run, superstep.Env{Now: h.clock.Now()})
	h.must(err, "superstep.Advance after the barrier moment")
	if step.Kind != superstep.Commit {
		h.Fatalf("after the fixture node the next moment should be the completion, got kind %d", step.Kind)
	}
	last := step.Moment
	before := h.inspect(r.ID)

	gap := cloneMoment(last)
	gap.Run.CheckpointSeq++
	_, err = h.b.Commit(h.ctx, ports.Tenantless(), ports.CommitParams{Moment: first, ClaimToken: lease.Token, Then: []*run.Moment{gap}})
	h.expect(errors.Is(err, ports.ErrInvalidCommit), "a chain that skips a checkpoint: want ErrInvalidCommit, got %s", describeErr(err))
	h.unchanged(before, "run after a rejected chain")
	h.eventsAbsent(first, "rejected chain")

	p := ports.CommitParams{Moment: first, ClaimToken: lease.Token, Then: []*run.Moment{last}}
	got, err := h.b.Commit(h.ctx, ports.Tenantless(), p)
	h.must(err, "Commit of a fused chain")
	h.sameRun(got, last.Run, "Commit of a chain returns the last moment's run")
	h.sameRun(h.fetch(ports.Tenantless(), r.ID), last.Run, "FetchRun after a fused chain")
	info := h.inspect(r.ID)
	eq(h, info.LatestCheckpointType, last.CheckpointType, "latest checkpoint type is the last moment's")
	h.expect(!info.Claimed(), "the last moment's terminal schedule released the claim")
	h.eventsStored(first, "first moment of the chain")
	h.eventsStored(last, "last moment of the chain")

	_, err = h.b.Commit(h.ctx, ports.Tenantless(), p)
	h.expect(errors.Is(err, ports.ErrStaleFence), "replaying a fused chain: want ErrStaleFence, got %s", describeErr(err))
}

func checkNoResultCommit(h *harness) {
	r, lease := h.insertClaimed()
	h.clock.Set(at(5 * time.Second))
	m := h.barrierMoment(r, "yes")
	stale := ports.CommitParams{Moment: m, ClaimToken: foreignToken(), NoResult: true}
	_, err := h.b.Commit(h.ctx, ports.Tenantless(), stale)
	h.expect(errors.Is(err, ports.ErrStaleFence), "a foreign token with NoResult: want ErrStaleFence, got %s", describeErr(err))

	got, err := h.b.Commit(h.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token, NoResult: true})
	h.must(err, "Commit with NoResult")
	h.expect(got == nil, "Commit with NoResult returned a run: %+v", got)
	h.sameRun(h.fetch(ports.Tenantless(), r.ID), m.Run, "FetchRun after a commit with NoResult")
	h.eventsStored(m, "commit with NoResult")
	h.expect(h.inspect(r.ID).Claimed(), "the continue moment retained the claim")
}

func checkTokenSpelling(h *harness) {
	r, lease := h.insertClaimed()
	upper := ports.NewClaimToken(strings.ToUpper(lease.Token.Reveal()))
	if upper.Reveal() == lease.Token.Reveal() {
		h.Skipf("FENCE-008: the adapter's tokens have no lower-case letters, so no other spelling to try")
	}
	before := h.inspect(r.ID)
	h.clock.Set(at(time.Minute))
	err := h.refresh(r.ID, upper, at(time.Minute))
	h.errIs(err, ports.ErrClaimLost, "RefreshClaim with the uppercase spelling of the token")
	h.unchanged(before, "run after a refresh with another spelling")
	h.release(r.ID, upper, at(time.Minute))
	h.unchanged(before, "run after a release with another spelling")
}
