package conformance

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func checkClaimEmpty(h *harness) {
	h.claimNothing(request(t0), "ClaimDue on an empty store")
	h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Minute)})
	r := request(t0)
	r.Limit = 5
	batch := h.claimDue(r)
	h.expect(len(batch.Leases) == 0 && len(batch.Poisoned) == 0, "ClaimDue with only future work: got %s", describeBatch(batch))
}

func checkLeaseShape(h *harness) {
	owner := ports.Tenant(h.id("tenant"))
	r := h.insert(owner)
	other := h.insert(ports.Tenantless())
	req := request(at(time.Second))
	req.OrphanTTL = 1500 * time.Millisecond
	req.Limit = 2
	batch := h.claimDue(req)
	if len(batch.Leases) != 2 || len(batch.Poisoned) != 0 {
		h.Fatalf("want two leases, got %s", describeBatch(batch))
	}
	lease := leaseOf(batch, r.ID)
	if lease == nil {
		h.Fatalf("no lease for %s in %s", r.ID, describeBatch(batch))
	}
	h.expect(!lease.Token.IsZero(), "the lease carries a token")
	h.expect(batch.Leases[0].Token != batch.Leases[1].Token, "every lease has its own token")
	eq(h, lease.Owner, owner, "lease owner")
	eq(h, lease.GraphID, r.GraphID, "lease graph id")
	eq(h, lease.GraphHash, r.GraphHash, "lease graph hash")
	eq(h, lease.CheckpointSeq, r.CheckpointSeq, "lease checkpoint seq")
	h.eqTime(lease.ClaimedAt, at(time.Second), "lease claimed_at (the request's now)")
	eq(h, lease.Attempt, 1, "lease attempt")
	eq(h, lease.OrphanTTL, 1500*time.Millisecond, "lease TTL echo")
	eq(h, lease.Class, claim.ClassReady, "lease class")
	if lease.Run != nil {
		// Optional: the committed document as the claim read it, the
		// holder's own copy.
		h.sameRun(lease.Run, r, "document carried by the lease")
		lease.Run.Metadata = map[string]any{"scribbled": true}
		lease.Run.CheckpointSeq += 100
	}

	info := h.inspect(r.ID)
	h.eqTime(info.WakeAt, time.Time{}, "wake of a claimed run")
	h.eqTime(info.ClaimedAt, at(time.Second), "claimed_at of a claimed run")
	eq(h, info.ClaimAttempts, 1, "attempts of a claimed run")
	h.sameRun(info.Run, r, "document of a claimed run")
	eq(h, h.inspect(other.ID).ClaimAttempts, 1, "the other run is claimed too")
}

func checkReadyBoundary(h *harness) {
	due := h.insert(ports.Tenantless(), runOpts{wakeAt: t0})
	later := h.insert(ports.Tenantless(), runOpts{wakeAt: t0.Add(time.Microsecond)})
	r := request(t0)
	r.Limit = 10
	batch := h.claimDue(r)
	if len(batch.Leases) != 1 || batch.Leases[0].RunID != due.ID {
		h.Errorf("ClaimDue(t0): want only the run due at t0, got %s", describeBatch(batch))
	}
	h.claimOne(t0.Add(time.Microsecond), later.ID)
}

func checkExpiryBoundary(h *harness) {
	r, first := h.insertClaimed()
	before := h.inspect(r.ID)
	h.claimNothing(request(t0.Add(defaultTTL)), "ClaimDue exactly one TTL after the claim")
	h.unchanged(before, "run after a claim at the expiry boundary")
	stealAt := t0.Add(defaultTTL + time.Microsecond)
	thief := h.claimOne(stealAt, r.ID)
	h.expect(thief.Token != first.Token, "a steal issues a new token")
	eq(h, thief.Attempt, 2, "steal attempt")
	eq(h, thief.Class, claim.ClassExpired, "steal class")
	h.eqTime(thief.ClaimedAt, stealAt, "steal claimed_at")
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, stealAt, "claimed_at after the steal")
	eq(h, info.ClaimAttempts, 2, "attempts after the steal")
}

func checkStealPreservesDocument(h *harness) {
	r, old := h.insertClaimed()
	thief := h.claimOne(at(2*time.Second), r.ID)
	h.sameRun(h.fetch(ports.Tenantless(), r.ID), r, "document after the steal")
	after := h.inspect(r.ID)
	h.sameRun(after.Run, r, "inspected document after the steal")
	eq(h, after.LatestCheckpointType, run.CheckpointRunInitialized, "checkpoint type after the steal")

	h.errIs(h.refresh(r.ID, old.Token, at(2*time.Second)), ports.ErrClaimLost, "refresh with the stolen token")
	h.release(r.ID, old.Token, at(2*time.Second))
	h.unchanged(after, "run after releasing the stolen token")
	_, err := h.commit(ports.Tenantless(), continueMoment(h, r, "stale"), old.Token)
	h.errIs(err, ports.ErrStaleFence, "commit with the stolen token")
	h.unchanged(after, "run after the stale token's attempts")
	h.must(h.refresh(r.ID, thief.Token, at(2*time.Second)), "refresh with the thief's token")
}

func checkAttemptCeiling(h *harness) {
	const max = 3
	owner := ports.Tenant("acme")
	r := h.insert(owner)
	req := func(now time.Time) claim.Request {
		q := request(now)
		q.OrphanTTL = 0
		q.MaxClaimAttempts = max
		return q
	}
	for attempt := 1; attempt <= max; attempt++ {
		lease := h.claimOneWith(req(at(time.Duration(attempt)*time.Millisecond)), r.ID)
		eq(h, lease.Attempt, attempt, "lease %d attempt", attempt)
	}
	poisonAt := at(time.Duration(max+1) * time.Millisecond)
	batch := h.claimDue(req(poisonAt))
	if len(batch.Leases) != 0 || len(batch.Poisoned) != 1 || batch.Poisoned[0].RunID != r.ID {
		h.Fatalf("selection %d: want one poison outcome, got %s", max+1, describeBatch(batch))
	}
	p := batch.Poisoned[0]
	eq(h, p.PoisonReason, claim.ReasonMaxClaimAttempts, "poison reason")
	eq(h, p.Owner, owner, "owner of the poisoned run")
	h.eqTime(p.PoisonedAt, poisonAt, "poisoned_at")
	info := h.inspect(r.ID)
	eq(h, info.ClaimAttempts, max, "attempts of the poisoned run")
	h.eqTime(info.ClaimedAt, time.Time{}, "claim of the poisoned run")
	h.eqTime(info.WakeAt, time.Time{}, "wake of the poisoned run")
	h.eqTime(info.PoisonedAt, poisonAt, "poisoned_at of the poisoned run")
	eq(h, info.PoisonReason, claim.ReasonMaxClaimAttempts, "poison reason of the poisoned run")
	eq(h, info.Run.Status, run.StatusRunning, "poison is not a status")
	h.sameRun(info.Run, r, "document of the poisoned run")
	later := req(at(24 * time.Hour))
	later.MaxClaimAttempts = 100
	later.Limit = 10
	h.claimNothing(later, "ClaimDue after poisoning")

	// A released run is poisoned from the ready class: its wake goes too.
	released := h.insert(owner)
	h.poison(released.ID, at(25*time.Hour))
	info = h.inspect(released.ID)
	h.eqTime(info.WakeAt, time.Time{}, "wake of a released run poisoned at its ceiling")
	h.eqTime(info.ClaimedAt, time.Time{}, "claim of a released run poisoned at its ceiling")
	h.eqTime(info.PoisonedAt, at(25*time.Hour), "poisoned_at of a released run poisoned at its ceiling")
}

func checkLimitBound(h *harness) {
	// Two runs with one spent attempt each, due before three fresh runs.
	p1 := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-20 * time.Second)})
	p2 := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-20 * time.Second)})
	prep := request(at(-10 * time.Second))
	prep.Limit = 2
	for _, l := range h.claimDue(prep).Leases {
		h.release(l.RunID, l.Token, at(-10*time.Second))
	}
	eq(h, h.inspect(p1.ID).ClaimAttempts, 1, "fixture: p1 spent one attempt")
	eq(h, h.inspect(p2.ID).ClaimAttempts, 1, "fixture: p2 spent one attempt")
	fresh := map[string]bool{}
	for range 3 {
		fresh[h.insert(ports.Tenantless()).ID] = true
	}
	req := request(t0)
	req.Limit = 3
	req.MaxClaimAttempts = 1
	batch := h.claimDue(req)
	total := len(batch.Leases) + len(batch.Poisoned)
	h.expect(total <= req.Limit, "outcomes %d exceed the limit %d: %s", total, req.Limit, describeBatch(batch))
	h.expect(total == req.Limit, "five due runs and limit 3 must give 3 outcomes, got %s", describeBatch(batch))
	if !h.features.TenantFairPolicy {
		// FIFO: the two older runs come first and are poisoned; each
		// poison outcome takes a slot, leaving one lease.
		h.expect(len(batch.Poisoned) == 2 && len(batch.Leases) == 1,
			"FIFO admission: want 2 poison outcomes and 1 lease, got %s", describeBatch(batch))
	}
	seen := map[string]bool{}
	for _, l := range batch.Leases {
		h.expect(!seen[l.RunID], "run %s appears twice", l.RunID)
		seen[l.RunID] = true
		h.expect(fresh[l.RunID], "lease of %s, a run at its attempt ceiling", l.RunID)
	}
	for _, p := range batch.Poisoned {
		h.expect(!seen[p.RunID], "run %s appears twice", p.RunID)
		seen[p.RunID] = true
	}
	req.Limit = 10
	rest := h.claimDue(req)
	h.expect(len(rest.Leases)+len(rest.Poisoned)+total == 5,
		"a second claim drains the rest: first %s, then %s", describeBatch(batch), describeBatch(rest))
}

// setupClasses prepares ready runs due at readyWake and expired runs
// claimed at claimedAt (TTL 1s at t0) in a fresh adapter.
func setupClasses(h *harness, ready int, readyWake time.Time, expired int, claimedAt time.Time) (readyIDs, expiredIDs map[string]bool) {
	h.Helper()
	readyIDs, expiredIDs = map[string]bool{}, map[string]bool{}
	for range expired {
		expiredIDs[h.insert(ports.Tenantless(), runOpts{wakeAt: claimedAt}).ID] = true
	}
	if expired > 0 {
		r := request(claimedAt)
		r.Limit = expired
		batch := h.claimDue(r)
		if len(batch.Leases) != expired {
			h.Fatalf("fixture: want %d leases at %s, got %s", expired, fmtTime(claimedAt), describeBatch(batch))
		}
	}
	for range ready {
		readyIDs[h.insert(ports.Tenantless(), runOpts{wakeAt: readyWake}).ID] = true
	}
	return readyIDs, expiredIDs
}

func checkClassReservation(h *harness) {
	cases := []struct {
		name             string
		readyWake        time.Time
		expiredClaimedAt time.Time
		readyN, expiredN int
	}{
		{"ready much older", at(-time.Hour), at(-2 * time.Second), 3, 1},
		{"expired much older", at(-2 * time.Second), at(-time.Hour), 1, 3},
	}
	for _, c := range cases {
		for _, limit := range []int{2, 3} {
			f := h.fresh()
			ready, expired := setupClasses(f, c.readyN, c.readyWake, c.expiredN, c.expiredClaimedAt)
			req := request(t0)
			req.Limit = limit
			batch := f.claimDue(req)
			var nReady, nExpired int
			for _, l := range batch.Leases {
				if ready[l.RunID] {
					nReady++
				}
				if expired[l.RunID] {
					nExpired++
				}
			}
			h.expect(nReady >= 1 && nExpired >= 1, "%s, limit %d: want both classes served, got %s", c.name, limit, describeBatch(batch))
			h.expect(len(batch.Leases) == limit, "%s, limit %d: demand not filled: %s", c.name, limit, describeBatch(batch))
		}
	}
}

func checkPreference(h *harness) {
	ready, expired := setupClasses(h, 1, at(-10*time.Second), 1, at(-5*time.Second))
	one := func(p claim.Preference) ports.Lease {
		h.Helper()
		r := request(t0)
		r.Preference = p
		batch := h.claimDue(r)
		if len(batch.Leases) != 1 {
			h.Fatalf("preference %q: want one lease, got %s", p, describeBatch(batch))
		}
		return batch.Leases[0]
	}
	l := one(claim.PreferReady)
	h.expect(ready[l.RunID], "preference ready served %s (class %s)", l.RunID, l.Class)
	h.release(l.RunID, l.Token, t0) // ready again, due at t0
	l = one(claim.PreferExpired)
	h.expect(expired[l.RunID], "preference expired served %s (class %s)", l.RunID, l.Class)
	// Now nothing is expired: the preferred class is empty and falls through.
	l = one(claim.PreferExpired)
	h.expect(ready[l.RunID], "an empty preferred class falls through to ready, got %s", l.RunID)

	// Nothing ready: a ready preference falls through to the expired class.
	r := request(at(10 * time.Second))
	r.Preference = claim.PreferReady
	batch := h.claimDue(r)
	h.expect(len(batch.Leases) == 1 && batch.Leases[0].Class == claim.ClassExpired,
		"an empty ready class falls through to expired, got %s", describeBatch(batch))

	// Whatever the ages, the preferred class is served: each preference
	// meets a fixture whose oldest run is in the other class, so a store
	// that ordered by age alone (or preferred one class always) fails.
	for _, c := range []struct {
		pref                 claim.Preference
		readyWake, claimedAt time.Time
	}{
		{claim.PreferReady, at(-time.Second), at(-time.Hour)},
		{claim.PreferExpired, at(-time.Hour), at(-time.Minute)},
	} {
		f := h.fresh()
		ready, expired := setupClasses(f, 1, c.readyWake, 1, c.claimedAt)
		r := request(t0)
		r.Preference = c.pref
		batch := f.claimDue(r)
		want := map[claim.Preference]map[string]bool{claim.PreferReady: ready, claim.PreferExpired: expired}[c.pref]
		h.expect(len(batch.Leases) == 1 && want[batch.Leases[0].RunID],
			"preference %q against the age order: got %s", c.pref, describeBatch(batch))
	}
}

func checkDisjointClaims(h *harness) {
	const backlog = 40
	for round := range h.features.Rounds {
		f := h.fresh()
		ids := map[string]bool{}
		for i := range backlog {
			ids[f.insert(ports.Tenantless(), runOpts{wakeAt: at(-time.Duration(i) * time.Millisecond)}).ID] = true
		}
		var mu sync.Mutex
		var leases []ports.Lease
		var errs []error
		drain := func() {
			for {
				req := readyOnly(t0)
				req.Limit = 3
				batch, err := f.b.ClaimDue(f.ctx, req)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				leases = append(leases, batch.Leases...)
				// More leases than runs already fails the check; stop, so a
				// store that leases claimed runs again cannot hang the suite.
				flooded := len(leases) > backlog
				mu.Unlock()
				if flooded || len(batch.Leases)+len(batch.Poisoned) == 0 {
					return
				}
			}
		}
		together(slices.Repeat([]func(){drain}, h.features.Writers)...)
		for _, err := range errs {
			h.Errorf("round %d: ClaimDue: %v", round, err)
		}
		runs := map[string]int{}
		tokens := map[ports.ClaimToken]bool{}
		for _, l := range leases {
			runs[l.RunID]++
			h.expect(!tokens[l.Token], "round %d: a token was issued twice", round)
			tokens[l.Token] = true
		}
		for id := range ids {
			h.expect(runs[id] == 1, "round %d: run %s leased %d times, want exactly once", round, id, runs[id])
		}
		eq(h, len(leases), backlog, "round %d: leases", round)
	}
}

func checkInvalidClaimRequest(h *harness) {
	r := h.insert(ports.Tenantless())
	before := h.inspect(r.ID)
	valid := request(t0)
	cases := map[string]func(q *claim.Request){
		"zero now":           func(q *claim.Request) { q.Now = time.Time{} },
		"limit 0":            func(q *claim.Request) { q.Limit = 0 },
		"negative TTL":       func(q *claim.Request) { q.OrphanTTL = -time.Millisecond },
		"max attempts 0":     func(q *claim.Request) { q.MaxClaimAttempts = 0 },
		"unknown preference": func(q *claim.Request) { q.Preference = "oldest" },
	}
	for name, edit := range cases {
		q := valid
		edit(&q)
		batch, err := h.b.ClaimDue(h.ctx, q)
		h.errIs(err, ports.ErrInvalidArgument, "ClaimDue with %s", name)
		if batch != nil {
			h.expect(len(batch.Leases)+len(batch.Poisoned) == 0, "ClaimDue with %s admitted %s", name, describeBatch(batch))
		}
		h.unchanged(before, "run after ClaimDue with %s", name)
	}
	h.claimOne(t0, r.ID)
}

func checkAdmissionGate(h *harness) {
	gate := h.adapter.AdmissionGate
	if gate == nil {
		h.Fatalf("Features.AdmissionGate is set but the Adapter has no AdmissionGate")
	}
	r := h.insert(ports.Tenantless())
	before := h.inspect(r.ID)
	reasons := []string{ports.UnavailableInactiveEngine, ports.UnavailableUnsupportedIsolation,
		ports.UnavailableReadOnly, ports.UnavailableLockContention}
	for i, reason := range reasons {
		reopen, err := gate.Close(h.ctx, reason)
		if errors.Is(err, ports.ErrUnsupported) && i > 0 {
			h.Logf("the adapter cannot simulate %s; not checked", reason)
			continue
		}
		h.must(err, "closing the gate (%s)", reason)
		batch, err := h.b.ClaimDue(h.ctx, request(t0))
		reopen()
		var unavailable *ports.ClaimPolicyUnavailableError
		if h.expect(errors.As(err, &unavailable), "ClaimDue behind a closed gate (%s): got %v, want ClaimPolicyUnavailableError", reason, describeErr(err)) {
			eq(h, unavailable.Reason, reason, "unavailable reason")
			h.errIs(err, ports.ErrClaimPolicyUnavailable, "closed gate error")
		}
		if batch != nil {
			h.expect(len(batch.Leases)+len(batch.Poisoned) == 0, "a closed gate admitted %s", describeBatch(batch))
		}
		h.unchanged(before, "run after a closed-gate claim (%s)", reason)
	}
	h.claimOne(t0, r.ID)
}

func checkClaimKeepsDocument(h *harness) {
	r := h.insert(ports.Tenantless())
	same := func(what string) {
		h.Helper()
		h.sameRun(h.fetch(ports.Tenantless(), r.ID), r, "document after %s", what)
		eq(h, h.inspect(r.ID).LatestCheckpointType, run.CheckpointRunInitialized, "checkpoint type after %s", what)
	}
	h.clock.Set(at(time.Hour))
	lease := h.claimOne(t0, r.ID)
	same("a lease")
	h.claimOne(at(2*time.Second), r.ID)
	same("a steal")
	h.release(r.ID, lease.Token, at(3*time.Second))
	same("a stale release")
	q := request(at(4 * time.Second))
	q.MaxClaimAttempts = 2
	batch := h.claimDue(q)
	h.expect(len(batch.Poisoned) == 1, "fixture: claim-time poison, got %s", describeBatch(batch))
	same("claim-time poisoning")
}

func checkLegacyOrder(h *harness) {
	a := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-3 * time.Second)})
	b := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-5 * time.Second)})
	c := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-5 * time.Second)})
	d := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-time.Second)})
	// Oldest wake first; b and c tie on wake and go in insertion order.
	for _, want := range []*run.Run{b, c, a, d} {
		h.claimOneWith(readyOnly(t0), want.ID)
	}
}

// ---- FAIR -----------------------------------------------------------------

func checkFairBreadthFirst(h *harness) {
	scopeA, scopeB := ports.Tenant(h.id("a")), ports.Tenant(h.id("b"))
	a1 := h.insert(scopeA, runOpts{wakeAt: at(-40 * time.Second)})
	h.insert(scopeA, runOpts{wakeAt: at(-39 * time.Second)})
	b1 := h.insert(scopeB, runOpts{wakeAt: at(-2 * time.Second)})
	h.insert(scopeB, runOpts{wakeAt: at(-time.Second)})
	req := readyOnly(t0)
	req.Limit = 2
	batch := h.claimDue(req)
	got := leasedIDs(batch)
	want := []string{a1.ID, b1.ID}
	sort.Strings(want)
	h.expect(fmt.Sprint(got) == fmt.Sprint(want), "breadth-first admission: got %v, want %v", got, want)
}

func leasedIDs(b *ports.ClaimBatch) []string {
	var ids []string
	for _, l := range b.Leases {
		ids = append(ids, l.RunID)
	}
	sort.Strings(ids)
	return ids
}

func checkFairSticky(h *harness) {
	scope := ports.Tenant(h.id("t"))
	admitted := h.insert(scope, runOpts{wakeAt: at(-30 * time.Second)})
	lease := h.claimOneWith(readyOnly(at(-30*time.Second)), admitted.ID)
	h.release(admitted.ID, lease.Token, at(-30*time.Second)) // keeps admission
	h.insert(scope, runOpts{wakeAt: at(-60 * time.Second)})
	h.claimOneWith(readyOnly(t0), admitted.ID)
}

func checkFairIdleScopes(h *harness) {
	for i := range 9 {
		h.insert(ports.Tenant(h.id(fmt.Sprintf("idle-%d", i))), runOpts{wakeAt: at(time.Hour)})
	}
	due := h.insert(ports.Tenant(h.id("busy")))
	req := readyOnly(t0)
	req.MaxClaimAttempts = 100 // released claims keep their attempts
	for range 10 {
		lease := h.claimOneWith(req, due.ID)
		h.release(due.ID, lease.Token, t0)
	}
}

func (h *harness) admissionAfter(what string, drive func(f *harness, x *run.Run, lease ports.Lease) time.Time, wantKept bool) {
	h.Helper()
	scope := ports.Tenant(h.id("t"))
	x := h.insert(scope, runOpts{wakeAt: at(-30 * time.Second)})
	lease := h.claimOneWith(readyOnly(at(-30*time.Second)), x.ID)
	claimAt := drive(h, x, lease)
	y := h.insert(scope, runOpts{wakeAt: at(-60 * time.Second)})
	want := y.ID
	if wantKept {
		want = x.ID
	}
	got := h.claimDue(readyOnly(claimAt))
	if len(got.Leases) != 1 || got.Leases[0].RunID != want {
		h.Errorf("%s: want the lease of %s (admission kept=%v), got %s", what, want, wantKept, describeBatch(got))
	}
}

func checkAdmissionTransitions(h *harness) {
	h.fresh().admissionAfter("claimed at-wake commit", func(f *harness, x *run.Run, l ports.Lease) time.Time {
		f.mustCommit(ports.System(), atMoment(f, x, "at", at(-20*time.Second)), l.Token)
		return t0
	}, false)
	h.fresh().admissionAfter("claimed immediate commit", func(f *harness, x *run.Run, l ports.Lease) time.Time {
		f.mustCommit(ports.System(), immediateMoment(f, x, "imm"), l.Token)
		return at(time.Hour)
	}, true)
	h.fresh().admissionAfter("unclaimed immediate mutation", func(f *harness, x *run.Run, l ports.Lease) time.Time {
		_, err := f.mutate(ports.System(), x.ID, immediateMoment(f, x, "sig"))
		f.must(err, "MutateRun")
		return at(time.Hour)
	}, false)
	h.fresh().admissionAfter("abandon", func(f *harness, x *run.Run, l ports.Lease) time.Time {
		p := abandonParams(x.CheckpointSeq, at(-30*time.Second))
		p.RetryAt = at(-25 * time.Second)
		f.abandon(x.ID, l.Token, p)
		return t0
	}, false)
	h.fresh().admissionAfter("claimed retained commit, then a claimed immediate commit", func(f *harness, x *run.Run, l ports.Lease) time.Time {
		retained := continueMoment(f, x, "retained")
		f.mustCommit(ports.System(), retained, l.Token)
		f.mustCommit(ports.System(), immediateMoment(f, retained.Run, "imm"), l.Token)
		return at(time.Hour)
	}, true)
	h.fresh().admissionAfter("claim-time poisoning and recovery", func(f *harness, x *run.Run, l ports.Lease) time.Time {
		q := request(at(-28 * time.Second)) // the claim expired; one attempt is the ceiling
		q.MaxClaimAttempts = 1
		if batch := f.claimDue(q); len(batch.Poisoned) != 1 {
			f.Fatalf("fixture: want a poison outcome, got %s", describeBatch(batch))
		}
		_, err := f.b.RetryPoisonedRun(f.ctx, ports.System(), x.ID, at(-27*time.Second))
		f.must(err, "RetryPoisonedRun")
		return t0
	}, false)
}

func checkLeaseRunIsCommitted(h *harness) {
	owner := ports.Tenantless()
	expectCommitted := func(lease ports.Lease, what string) {
		h.Helper()
		if lease.Run == nil {
			return // the holder reads the run itself
		}
		eq(h, lease.Run.CheckpointSeq, lease.CheckpointSeq, "%s: the lease's run is at the lease's seq", what)
		h.sameRun(lease.Run, h.fetch(owner, lease.RunID), "%s: the run a lease carries", what)
	}
	r, lease := h.insertClaimed()
	h.mustCommit(owner, immediateMoment(h, r, "yield"), lease.Token)
	again := h.claimOne(at(time.Second), r.ID)
	expectCommitted(again, "a claim after an immediate commit")
	h.mustCommit(owner, continueMoment(h, h.fetch(owner, r.ID), "retained"), again.Token)
	stolen := h.claimOne(at(time.Second+2*defaultTTL), r.ID)
	eq(h, stolen.Class, claim.ClassExpired, "fixture: the second claim is a steal")
	expectCommitted(stolen, "a steal after a retained commit")
}

// checkSkewedCallerClocks claims as engines whose clocks disagree with
// the store's: ClaimDue is called directly, the store clock left where
// the check puts it (the harness's claims move it to the caller's now).
func checkSkewedCallerClocks(h *harness) {
	owner := ports.Tenantless()
	skewed := func(r claim.Request) *ports.ClaimBatch {
		h.Helper()
		batch, err := h.b.ClaimDue(h.ctx, r)
		h.must(err, "ClaimDue(now=%s) with the store clock at %s", fmtTime(r.Now), fmtTime(h.clock.Now()))
		return batch
	}
	live, lease := h.insertClaimed()

	// Half a TTL later by the store clock, a caller an hour ahead finds
	// the claim expired by its own clock only.
	h.clock.Set(t0.Add(defaultTTL / 2))
	if batch := skewed(request(at(time.Hour))); len(batch.Leases)+len(batch.Poisoned) != 0 {
		h.Errorf("a caller an hour ahead stole a claim half a TTL old by the store clock: %s", describeBatch(batch))
	}
	h.must(h.refresh(live.ID, lease.Token, t0.Add(defaultTTL/2)), "the owner's refresh after the fast caller's claim")

	// Once the store clock expires it too, the fast caller steals it,
	// stamped by its own (later) clock.
	h.clock.Set(t0.Add(defaultTTL/2 + defaultTTL + time.Microsecond))
	batch := skewed(request(at(time.Hour)))
	if len(batch.Leases) != 1 || batch.Leases[0].RunID != live.ID || batch.Leases[0].Class != claim.ClassExpired {
		h.Fatalf("a caller an hour ahead, the claim expired by both clocks: want a steal of %s, got %s", live.ID, describeBatch(batch))
	}
	h.eqTime(batch.Leases[0].ClaimedAt, at(time.Hour), "claimed_at of a steal by a caller ahead of the store")
	h.mustCommit(owner, h.cancelMoment(h.fetch(owner, live.ID)), batch.Leases[0].Token)

	// A caller 30s behind the store still leases a run due by the store
	// clock, and its lease is stamped at the store clock.
	storeNow := at(2 * time.Hour)
	due := h.insert(owner, runOpts{wakeAt: storeNow})
	h.clock.Set(storeNow)
	batch = skewed(request(storeNow.Add(-30 * time.Second)))
	if len(batch.Leases) != 1 || batch.Leases[0].RunID != due.ID || batch.Leases[0].Class != claim.ClassReady {
		h.Fatalf("a caller 30s behind the store: want a lease of %s (due by the store clock), got %s", due.ID, describeBatch(batch))
	}
	h.eqTime(batch.Leases[0].ClaimedAt, storeNow, "claimed_at of a lease by a caller behind the store")
	h.eqTime(h.inspect(due.ID).ClaimedAt, storeNow, "stored claimed_at of a lease by a caller behind the store")

	// A poisoning is stamped like a lease, by the later clock: a caller an
	// hour ahead poisons a released run at its ceiling at its own time.
	ceiling := h.insert(owner, runOpts{wakeAt: storeNow})
	q := request(storeNow)
	q.MaxClaimAttempts = 1
	batch = skewed(q)
	if len(batch.Leases) != 1 || batch.Leases[0].RunID != ceiling.ID {
		h.Fatalf("fixture: want a lease of %s, got %s", ceiling.ID, describeBatch(batch))
	}
	h.release(ceiling.ID, batch.Leases[0].Token, storeNow)
	q.Now = storeNow.Add(time.Hour)
	batch = skewed(q)
	if len(batch.Leases) != 0 || len(batch.Poisoned) != 1 || batch.Poisoned[0].RunID != ceiling.ID {
		h.Fatalf("a caller an hour ahead at the run's ceiling: want %s poisoned, got %s", ceiling.ID, describeBatch(batch))
	}
	h.eqTime(batch.Poisoned[0].PoisonedAt, q.Now, "poisoned_at of a poisoning by a caller ahead of the store")
	h.eqTime(h.inspect(ceiling.ID).PoisonedAt, q.Now, "stored poisoned_at of a poisoning by a caller ahead of the store")
}

// checkImmediateWakesOfAFastCaller makes the immediate wakes of a caller
// an hour ahead of the store clock, which stays at t0.
func checkImmediateWakesOfAFastCaller(h *harness) {
	owner := ports.Tenantless()
	ahead := at(time.Hour)

	released, lease := h.insertClaimed()
	h.release(released.ID, lease.Token, ahead)
	h.eqTime(h.inspect(released.ID).WakeAt, t0, "wake of a release by a caller an hour ahead")
	h.claimOne(t0, released.ID)

	poisoned := h.insert(owner)
	h.poison(poisoned.ID, t0)
	h.clock.Set(t0)
	_, err := h.b.RetryPoisonedRun(h.ctx, owner, poisoned.ID, ahead)
	h.must(err, "RetryPoisonedRun by a caller an hour ahead")
	h.eqTime(h.inspect(poisoned.ID).WakeAt, t0, "wake of a poison recovery by a caller an hour ahead")

	h.publish(owner)
	started := h.id("started")
	_, err = h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: h.initMoment(started, ahead), WakeAt: ahead})
	h.must(err, "InsertRun due at the starter's now, an hour ahead")
	h.eqTime(h.inspect(started).WakeAt, t0, "first wake of a run started due by a starter an hour ahead")

	later := h.id("later")
	_, err = h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: h.initMoment(later, t0), WakeAt: ahead})
	h.must(err, "InsertRun with a first wake an hour after the starter's now")
	h.eqTime(h.inspect(later).WakeAt, ahead, "a first wake after the starter's now")
}

// checkHeldRunsNeverShortenAClaim holds a scope's two oldest due runs (a
// page of them, for the tenant-fair policy at limit 1) and claims one: the
// scope's free due run is leased, not nothing.
func checkHeldRunsNeverShortenAClaim(h *harness) {
	scope := ports.Tenant(h.id("busy"))
	first := h.insert(scope, runOpts{wakeAt: at(-30 * time.Second)})
	second := h.insert(scope, runOpts{wakeAt: at(-20 * time.Second)})
	free := h.insert(scope, runOpts{wakeAt: at(-10 * time.Second)})
	h.insert(ports.Tenant(h.id("idle")), runOpts{wakeAt: at(time.Hour)})
	release := h.hold(first.ID, second.ID)
	defer release()
	h.claimOneWith(readyOnly(t0), free.ID)
}

// hold keeps the rows of runIDs held, each by a MutateRun whose mutation
// waits (a signal being decided), until release is called.
func (h *harness) hold(runIDs ...string) (release func()) {
	h.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	release = func() { close(done); wg.Wait() }
	for _, id := range runIDs {
		held, finished := make(chan struct{}), make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(finished)
			_, _ = h.b.MutateRun(h.ctx, ports.System(), id, func(*run.Run) (*run.Moment, error) {
				close(held)
				<-done
				return nil, nil
			})
		}()
		select {
		case <-held:
		case <-finished:
			release()
			h.Fatalf("MutateRun of %s returned before its mutation ran", id)
		}
	}
	return release
}

// checkFairHeldKeepsAdmittedFirst holds a scope's two oldest admitted
// runs (a page of them at limit 1) and claims one: the scope's free
// admitted run is leased, not its older queued run.
func checkFairHeldKeepsAdmittedFirst(h *harness) {
	scope := ports.Tenant(h.id("busy"))
	first := h.insert(scope, runOpts{wakeAt: at(-50 * time.Second)})
	second := h.insert(scope, runOpts{wakeAt: at(-40 * time.Second)})
	free := h.insert(scope, runOpts{wakeAt: at(-10 * time.Second)})
	req := readyOnly(t0)
	req.Limit = 3
	for _, l := range h.claimDue(req).Leases {
		h.release(l.RunID, l.Token, map[string]time.Time{ // keeps admission and the order
			first.ID: at(-50 * time.Second), second.ID: at(-40 * time.Second), free.ID: at(-10 * time.Second),
		}[l.RunID])
	}
	h.insert(scope, runOpts{wakeAt: at(-90 * time.Second)})
	release := h.hold(first.ID, second.ID)
	defer release()
	h.claimOneWith(readyOnly(t0), free.ID)
}
