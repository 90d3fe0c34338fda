package conformance

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// ---- REDACT ---------------------------------------------------------------

func checkTokenNotInInspection(h *harness) {
	r, first := h.insertClaimed()
	tokens := []ports.ClaimToken{first.Token}
	look := func(what string) {
		h.Helper()
		info := h.inspect(r.ID)
		h.noToken(info, tokens, "InspectRun %s", what)
		h.noToken(*info, tokens, "RunInfo value %s", what)
		h.noToken(h.fetch(ports.System(), r.ID), tokens, "FetchRun %s", what)
		for _, scope := range []ports.Scope{ports.System(), ports.Tenantless()} {
			page, err := h.b.ListEvents(h.ctx, scope, r.ID, ports.ListEventsParams{Limit: 100})
			if h.expect(err == nil, "ListEvents: %v", err) {
				h.noToken(page, tokens, "ListEvents %s", what)
			}
		}
	}
	look("while claimed")
	h.mustCommit(ports.Tenantless(), continueMoment(h, r, "retained"), first.Token)
	look("after a retained commit")
	thief := h.claimOne(at(2*time.Second), r.ID)
	tokens = append(tokens, thief.Token)
	look("after a steal")
}

func checkTokenNotInSummaries(h *harness) {
	var tokens []ports.ClaimToken
	for range 3 {
		r := h.insert(ports.Tenantless())
		tokens = append(tokens, h.claimOne(t0, r.ID).Token)
	}
	for _, scope := range []ports.Scope{ports.System(), ports.Tenantless()} {
		page, err := h.b.ListRuns(h.ctx, scope, ports.ListRunsParams{Limit: 10})
		h.must(err, "ListRuns(%s)", scope)
		eq(h, len(page.Runs), 3, "runs listed")
		h.noToken(page, tokens, "ListRuns(%s) page", scope)
		for _, s := range page.Runs {
			h.noToken(s, tokens, "summary of %s", s.RunID)
		}
	}
}

func checkTokenNotInErrors(h *harness) {
	r, old := h.insertClaimed()
	thief := h.claimOne(at(2*time.Second), r.ID)
	tokens := []ports.ClaimToken{old.Token, thief.Token}
	saw := func(err error, format string, args ...any) {
		h.Helper()
		what := fmt.Sprintf(format, args...)
		if !h.expect(err != nil, "%s: want an error", what) {
			return
		}
		h.noToken(err, tokens, "%s", what)
	}
	m := continueMoment(h, r, "errors")
	_, err := h.commit(ports.Tenantless(), m, old.Token)
	saw(err, "Commit with a stolen token")
	_, err = h.commit(ports.Tenantless(), m, foreignToken())
	saw(err, "Commit with a foreign token")
	_, err = h.commit(ports.Tenant(h.id("other")), m, thief.Token)
	saw(err, "Commit out of scope")
	skip := cloneMoment(m)
	skip.Run.CheckpointSeq += 1
	_, err = h.commit(ports.Tenantless(), skip, thief.Token)
	saw(err, "Commit two ahead")
	conflict := continueMoment(h, r, "conflict")
	changed := h.storedEvent(r.ID, 1)
	changed.Payload = map[string]any{"rewritten": true}
	conflict.Events = append([]run.Event{changed}, conflict.Events...)
	_, err = h.commit(ports.Tenantless(), conflict, thief.Token)
	saw(err, "Commit with a conflicting event")
	_, err = h.commit(ports.Tenantless(), withDisposition(m, run.Disposition{Kind: run.DispositionExternal}), thief.Token)
	saw(err, "Commit with a mismatched schedule")
	saw(h.refresh(r.ID, old.Token, at(2*time.Second)), "RefreshClaim with a stolen token")
	saw(h.refresh(h.id("unknown"), thief.Token, at(2*time.Second)), "RefreshClaim of an unknown run")
	saw(h.refresh(r.ID, thief.Token, time.Time{}), "RefreshClaim with a zero now")
	_, err = h.b.AbandonClaim(h.ctx, r.ID, thief.Token, claim.AbandonParams{ExpectedSeq: 1, Now: t0})
	saw(err, "AbandonClaim with invalid params")
	_, err = h.b.MutateRun(h.ctx, ports.Tenantless(), r.ID, func(*run.Run) (*run.Moment, error) { return m, nil })
	h.must(err, "MutateRun") // revokes the thief's claim
	_, err = h.commit(ports.Tenantless(), continueMoment(h, h.fetch(ports.System(), r.ID), "revoked"), thief.Token)
	saw(err, "Commit with a revoked token")
	_, err = h.mutate(ports.Tenantless(), r.ID, m)
	saw(err, "MutateRun with a stale moment")
	saw(h.refresh(r.ID, thief.Token, at(2*time.Second)), "RefreshClaim with a revoked token")
	_, err = h.b.InsertRun(h.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: h.initMoment(r.ID, t0), WakeAt: t0})
	saw(err, "InsertRun of an existing id")
}

func checkLeaseRendering(h *harness) {
	h.insert(ports.Tenantless())
	h.insert(ports.Tenant(h.id("tenant")))
	q := request(t0)
	q.Limit = 2
	batch := h.claimDue(q)
	if len(batch.Leases) != 2 {
		h.Fatalf("want two leases, got %s", describeBatch(batch))
	}
	tokens := []ports.ClaimToken{batch.Leases[0].Token, batch.Leases[1].Token}
	for _, l := range batch.Leases {
		for _, s := range renderings(l) {
			for _, tok := range tokens {
				h.expect(tok.Reveal() == "" || !strings.Contains(s, tok.Reveal()), "a lease rendering reveals its token: %s", clip(s))
			}
		}
		for _, s := range renderings(l.Token) {
			h.expect(!strings.Contains(s, l.Token.Reveal()), "a token rendering reveals itself: %s", s)
		}
	}
	for _, s := range renderings(batch) {
		for _, tok := range tokens {
			h.expect(!strings.Contains(s, tok.Reveal()), "a batch rendering reveals a token: %s", clip(s))
		}
	}
}

// ---- PRUNE ----------------------------------------------------------------

func (h *harness) retainedSeqs(runID string) []int64 {
	h.Helper()
	page, err := h.b.ListEvents(h.ctx, ports.System(), runID, ports.ListEventsParams{Limit: 100})
	h.must(err, "ListEvents(%s)", runID)
	seqs := make([]int64, 0, len(page.Events))
	for _, e := range page.Events {
		seqs = append(seqs, e.Seq)
	}
	return seqs
}

func checkPruneEvents(h *harness) {
	r, lease := h.insertClaimed() // events 1..4 inserted at t0
	h.clock.Set(at(10 * time.Second))
	m := continueMoment(h, r, "later")
	h.mustCommit(ports.Tenantless(), m, lease.Token) // events 5, 6 inserted at t0+10s
	prune := func(before time.Time, batch int) int {
		h.Helper()
		n, err := h.b.PruneEvents(h.ctx, ports.PruneParams{Before: before, BatchSize: batch})
		h.must(err, "PruneEvents(before %s, batch %d)", fmtTime(before), batch)
		return n
	}
	eq(h, prune(t0, 100), 0, "events inserted exactly at the cutoff survive")
	eq(h, prune(at(10*time.Second), 3), 3, "a batch deletes at most BatchSize events")
	eq(h, fmt.Sprint(h.retainedSeqs(r.ID)), "[4 5 6]", "the oldest events go first")
	eq(h, prune(at(10*time.Second), 100), 1, "the remaining old event")
	eq(h, fmt.Sprint(h.retainedSeqs(r.ID)), "[5 6]", "events at the cutoff survive")
	page, err := h.b.ListEvents(h.ctx, ports.System(), r.ID, ports.ListEventsParams{Limit: 10})
	h.must(err, "ListEvents")
	eq(h, page.LatestSeq, m.Run.EventSeq, "latest seq survives pruning")
	for _, p := range []ports.PruneParams{{Before: at(time.Hour)}, {BatchSize: 10}} {
		_, err := h.b.PruneEvents(h.ctx, p)
		h.errIs(err, ports.ErrInvalidArgument, "PruneEvents(%+v)", p)
	}
}

// checkPruneEventsByInsertion commits events timestamped by proposers
// whose clocks disagree with the store's: retention goes by when the store
// inserted an event, never by the event's own timestamp.
func checkPruneEventsByInsertion(h *harness) {
	r, lease := h.insertClaimed() // events 1..4 inserted at t0
	prune := func(before time.Time) int {
		h.Helper()
		n, err := h.b.PruneEvents(h.ctx, ports.PruneParams{Before: before, BatchSize: 100})
		h.must(err, "PruneEvents(before %s)", fmtTime(before))
		return n
	}
	commitAt := func(proposerNow, storeNow time.Time, variant string) *run.Moment {
		h.Helper()
		h.clock.Set(proposerNow)
		m := continueMoment(h, h.fetch(ports.Tenantless(), r.ID), variant)
		h.clock.Set(storeNow)
		h.mustCommit(ports.Tenantless(), m, lease.Token)
		return m
	}
	behind := commitAt(at(time.Hour), at(2*time.Hour), "an hour behind the store")
	ahead := commitAt(at(4*time.Hour), at(3*time.Hour), "an hour ahead of the store")
	seqs := func(ms ...*run.Moment) string {
		var out []int64
		for _, m := range ms {
			for _, e := range m.Events {
				out = append(out, e.Seq)
			}
		}
		return fmt.Sprint(out)
	}

	eq(h, prune(at(90*time.Minute)), 4, "events inserted before the cutoff (the run's first four)")
	eq(h, fmt.Sprint(h.retainedSeqs(r.ID)), seqs(behind, ahead), "events timestamped before the cutoff but inserted after it survive")
	eq(h, prune(at(210*time.Minute)), len(behind.Events)+len(ahead.Events), "events inserted before the cutoff, whatever their timestamps")
	eq(h, fmt.Sprint(h.retainedSeqs(r.ID)), "[]", "events timestamped after the cutoff but inserted before it are pruned")
}

func checkPruneRuns(h *harness) {
	owner := ports.Tenantless()
	terminal := func(updated time.Time) *run.Run {
		h.Helper()
		r := h.insert(owner, runOpts{wakeAt: at(time.Hour)})
		h.clock.Set(updated)
		_, err := h.b.MutateRun(h.ctx, owner, r.ID, cancelMutation(h))
		h.must(err, "cancel")
		return h.fetch(owner, r.ID)
	}
	old1 := terminal(at(time.Second))
	old2 := terminal(at(2 * time.Second))
	recent := terminal(at(time.Hour))
	h.clock.Set(t0)
	running := h.insert(owner, runOpts{startedAt: at(-time.Hour), wakeAt: at(time.Hour)})
	waitingRun := h.insert(owner, runOpts{startedAt: at(-time.Hour), wakeAt: at(time.Hour)})
	h.must(errOf(h.mutate(owner, waitingRun.ID, h.waitingMoment(waitingRun))), "parking a run")
	// A poisoned run has neither wake nor claim, like a terminal one, but
	// it is running: retention must go by status, not by queue state.
	poisoned := h.insert(owner, runOpts{startedAt: at(-time.Hour), wakeAt: t0})
	h.poisonWithAttempts(poisoned.ID, 1)

	res, err := h.b.PruneRuns(h.ctx, ports.PruneParams{Before: at(time.Hour), BatchSize: 1})
	h.must(err, "PruneRuns(batch 1)")
	eq(h, res.Runs, 1, "runs pruned by a batch of 1")
	_, err = h.b.FetchRun(h.ctx, ports.System(), old1.ID)
	h.errIs(err, ports.ErrNotFound, "the oldest terminal run is pruned first")
	eq(h, res.CascadeEvents, int(old1.EventSeq), "the pruned run's events go with it")
	_, err = h.b.FetchEvent(h.ctx, ports.System(), old1.ID, 1)
	h.errIs(err, ports.ErrNotFound, "events of a pruned run")

	res, err = h.b.PruneRuns(h.ctx, ports.PruneParams{Before: at(time.Hour), BatchSize: 100})
	h.must(err, "PruneRuns")
	eq(h, res.Runs, 1, "runs pruned")
	_, err = h.b.FetchRun(h.ctx, ports.System(), old2.ID)
	h.errIs(err, ports.ErrNotFound, "the second old terminal run")
	for _, kept := range []*run.Run{recent, running, waitingRun, poisoned} {
		_, err := h.b.FetchRun(h.ctx, ports.System(), kept.ID)
		h.expect(err == nil, "run %s must survive pruning: %v", kept.ID, err)
	}
	for _, p := range []ports.PruneParams{{Before: at(time.Hour)}, {BatchSize: 10}} {
		_, err := h.b.PruneRuns(h.ctx, p)
		h.errIs(err, ports.ErrInvalidArgument, "PruneRuns(%+v)", p)
	}
}

// ---- OPS ------------------------------------------------------------------

func checkOperationalWrites(h *harness) {
	r := h.insert(ports.Tenantless())
	h.clock.Set(at(time.Hour)) // the store clock moves; the document must not
	same := func(what string) {
		h.Helper()
		got := h.fetch(ports.Tenantless(), r.ID)
		h.sameRun(got, r, "document after %s", what)
		h.eqTime(got.UpdatedAt, r.UpdatedAt, "updated_at after %s", what)
		eq(h, got.CheckpointSeq, r.CheckpointSeq, "checkpoint seq after %s", what)
		eq(h, h.inspect(r.ID).LatestCheckpointType, run.CheckpointRunInitialized, "checkpoint type after %s", what)
	}
	lease := h.claimOne(t0, r.ID)
	same("a claim")
	h.must(h.refresh(r.ID, lease.Token, t0), "refresh")
	same("a refresh")
	h.release(r.ID, lease.Token, t0)
	same("a release")
	lease = h.claimOne(t0, r.ID)
	thief := h.claimOne(at(2*time.Hour), r.ID)
	same("a steal")
	eq(h, h.abandon(r.ID, thief.Token, abandonParams(1, at(2*time.Hour))), ports.AbandonRescheduled, "abandon")
	same("an abandon")
	q := request(at(3 * time.Hour))
	q.MaxClaimAttempts = 2
	batch := h.claimDue(q)
	h.expect(len(batch.Poisoned) == 1, "fixture: claim-time poison, got %s", describeBatch(batch))
	same("claim-time poisoning")
	_, err := h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), r.ID, at(3*time.Hour))
	h.must(err, "RetryPoisonedRun")
	same("poison recovery")
	lease = h.claimOne(at(3*time.Hour), r.ID)
	p := abandonParams(1, at(3*time.Hour))
	p.MaxClaimAbandons = 1
	eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonRescheduled, "abandon within the limit")
	lease = h.claimOne(p.RetryAt, r.ID)
	p = abandonParams(1, p.RetryAt)
	p.MaxClaimAbandons = 1
	eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonPoisoned, "abandon at the limit")
	same("abandon poisoning")
}

// micros reports whether t is UTC with microsecond precision.
func micros(t time.Time) bool {
	return t.Location() == time.UTC && t.Nanosecond()%1000 == 0
}

func (h *harness) precise(t time.Time, format string, args ...any) {
	h.Helper()
	h.expect(micros(t), "%s: %s is not UTC µs (location %s)", fmt.Sprintf(format, args...), t.Format(time.RFC3339Nano), t.Location())
}

func checkTimePrecision(h *harness) {
	zone := time.FixedZone("UTC+05:30", 5*3600+30*60)
	ragged := func(t time.Time) time.Time { return t.Add(987 * time.Nanosecond).In(zone) }
	owner := ports.Tenantless()
	h.publish(owner)
	id := h.id("ragged")
	wake := ragged(at(-time.Second))
	_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: h.initMoment(id, t0), WakeAt: wake})
	h.must(err, "InsertRun")
	info := h.inspect(id)
	h.eqTime(info.WakeAt, ports.Micros(wake), "first wake")
	h.precise(info.WakeAt, "first wake")
	h.precise(info.Run.StartedAt, "started_at")
	h.precise(info.Run.UpdatedAt, "updated_at")

	claimAt := ragged(t0)
	q := request(claimAt)
	lease := h.claimOneWith(q, id)
	h.eqTime(lease.ClaimedAt, ports.Micros(claimAt), "lease claimed_at")
	h.precise(lease.ClaimedAt, "lease claimed_at")
	info = h.inspect(id)
	h.eqTime(info.ClaimedAt, ports.Micros(claimAt), "claimed_at")
	h.precise(info.ClaimedAt, "claimed_at")

	releaseAt := ragged(at(time.Second))
	h.clock.Set(at(time.Minute)) // an immediate wake is no later than the store clock
	h.release(id, lease.Token, releaseAt)
	info = h.inspect(id)
	h.eqTime(info.WakeAt, ports.Micros(releaseAt), "release wake")
	h.precise(info.WakeAt, "release wake")

	lease = h.claimOne(at(time.Second), id)
	abandonAt := ragged(at(2 * time.Second))
	p := claim.AbandonParams{ExpectedSeq: 1, Now: abandonAt, RetryAt: ragged(at(3 * time.Second)), MaxClaimAbandons: 3}
	eq(h, h.abandon(id, lease.Token, p), ports.AbandonRescheduled, "abandon")
	info = h.inspect(id)
	h.eqTime(info.WakeAt, ports.Micros(p.RetryAt), "abandon wake")
	h.precise(info.WakeAt, "abandon wake")

	// Attempts stand at 1 (two claims, one refunded by the abandon).
	poisonAt := ragged(at(4 * time.Second))
	q = request(poisonAt)
	q.MaxClaimAttempts = 2
	lease = h.claimOneWith(q, id)
	h.release(id, lease.Token, poisonAt)
	batch := h.claimDue(q)
	if h.expect(len(batch.Poisoned) == 1, "fixture: poison, got %s", describeBatch(batch)) {
		h.eqTime(batch.Poisoned[0].PoisonedAt, ports.Micros(poisonAt), "poison outcome poisoned_at")
		h.precise(batch.Poisoned[0].PoisonedAt, "poison outcome poisoned_at")
	}
	info = h.inspect(id)
	h.precise(info.PoisonedAt, "poisoned_at")
	recoverAt := ragged(at(5 * time.Second))
	h.clock.Set(at(time.Minute))
	_, err = h.b.RetryPoisonedRun(h.ctx, owner, id, recoverAt)
	h.must(err, "RetryPoisonedRun")
	info = h.inspect(id)
	h.eqTime(info.WakeAt, ports.Micros(recoverAt), "recovery wake")
	h.precise(info.WakeAt, "recovery wake")

	h.clock.Set(at(6 * time.Second))
	lease = h.claimOne(at(6*time.Second), id)
	h.mustCommit(owner, atMoment(h, info.Run, "ragged", ragged(at(time.Minute))), lease.Token)
	info = h.inspect(id)
	h.eqTime(info.WakeAt, ports.Micros(ragged(at(time.Minute))), "at-wake of a commit")
	h.precise(info.WakeAt, "at-wake of a commit")
	page, err := h.b.ListEvents(h.ctx, owner, id, ports.ListEventsParams{Limit: 100})
	h.must(err, "ListEvents")
	for _, e := range page.Events {
		h.precise(e.Timestamp, "event %d timestamp", e.Seq)
	}
	runs, err := h.b.ListRuns(h.ctx, owner, ports.ListRunsParams{Limit: 10})
	h.must(err, "ListRuns")
	for _, s := range runs.Runs {
		h.precise(s.StartedAt, "summary started_at")
		h.precise(s.UpdatedAt, "summary updated_at")
	}
}

func checkListFilters(h *harness) {
	owner := ports.Tenantless()
	f := h.graphs()
	plain := h.insert(owner, runOpts{wakeAt: at(time.Hour)})
	// A run pinned to the second version of the graph.
	h.save(owner, f.alt)
	altID := h.id("alt")
	m, err := superstep.Start(f.alt, superstep.StartParams{RunID: altID, Input: map[string]any{"topic": "alt"}}, superstep.Env{Now: t0})
	h.must(err, "superstep.Start on the second version")
	_, err = h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: at(time.Hour)})
	h.must(err, "InsertRun on the second version")
	waitingRun := h.insert(owner, runOpts{wakeAt: at(time.Hour)})
	h.must(errOf(h.mutate(owner, waitingRun.ID, h.waitingMoment(waitingRun))), "parking")
	cancelled := h.insert(owner, runOpts{wakeAt: at(time.Hour)})
	h.must(errOf(h.b.MutateRun(h.ctx, owner, cancelled.ID, cancelMutation(h))), "cancelling")

	list := func(p ports.ListRunsParams) []string {
		h.Helper()
		p.Limit = 100
		page, err := h.b.ListRuns(h.ctx, owner, p)
		h.must(err, "ListRuns(%+v)", p)
		ids := make([]string, 0, len(page.Runs))
		for _, s := range page.Runs {
			ids = append(ids, s.RunID)
		}
		return ids
	}
	set := func(ids ...string) string {
		return fmt.Sprint(expectedOrder(func() []listedRun {
			var out []listedRun
			for _, id := range ids {
				out = append(out, listedRun{id, t0})
			}
			return out
		}()))
	}
	eq(h, fmt.Sprint(list(ports.ListRunsParams{GraphID: fixtureGraphID})), set(plain.ID, altID, waitingRun.ID, cancelled.ID), "graph id filter")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{GraphID: "no-such-graph"})), "[]", "unknown graph id filter")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{GraphHash: f.alt.Hash})), set(altID), "graph hash filter")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{GraphID: fixtureGraphID, GraphHash: f.main.Hash})), set(plain.ID, waitingRun.ID, cancelled.ID), "graph id and hash filter")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{Statuses: []run.Status{run.StatusWaiting}})), set(waitingRun.ID), "status filter")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{Statuses: []run.Status{run.StatusRunning, run.StatusCancelled}})), set(plain.ID, altID, cancelled.ID), "two-status filter")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{Statuses: []run.Status{run.StatusDone}})), "[]", "status filter without matches")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{OpenInterrupts: true})), set(waitingRun.ID), "open interrupts filter")

	// Open interrupts: an answered one is not, a cancelled run keeps its
	// unanswered one, and the filter comes before the limit, however many
	// newer runs hold none.
	answered := h.insert(owner, runOpts{wakeAt: at(time.Hour)})
	h.must(errOf(h.mutate(owner, answered.ID, h.waitingMoment(answered))), "parking")
	_, err = h.b.MutateRun(h.ctx, owner, answered.ID, func(current *run.Run) (*run.Moment, error) {
		return superstep.ResolveInterrupt(f.main, current, "conformance-interrupt", "yes", superstep.Env{Now: h.clock.Now()})
	})
	h.must(err, "answering")
	abandoned := h.insert(owner, runOpts{wakeAt: at(time.Hour)})
	h.must(errOf(h.mutate(owner, abandoned.ID, h.waitingMoment(abandoned))), "parking")
	h.must(errOf(h.b.MutateRun(h.ctx, owner, abandoned.ID, cancelMutation(h))), "cancelling a waiting run")
	for i := range 3 {
		h.insert(owner, runOpts{startedAt: at(time.Duration(i+1) * time.Minute), wakeAt: at(time.Hour)})
	}
	// A run whose own values read like an open interrupt (and hold a NUL)
	// has none.
	lookalike := h.id("lookalike")
	m, err = superstep.Start(f.main, superstep.StartParams{RunID: lookalike, Input: map[string]any{"topic": "a\x00b"},
		Metadata: map[string]any{"ticket": map[string]any{"status": "open"}}}, superstep.Env{Now: at(time.Hour)})
	h.must(err, "superstep.Start of a run whose metadata reads like an interrupt")
	_, err = h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: at(time.Hour)})
	h.must(err, "InsertRun of a run whose metadata reads like an interrupt")
	eq(h, fmt.Sprint(list(ports.ListRunsParams{OpenInterrupts: true})), set(waitingRun.ID, abandoned.ID), "open interrupts filter, with a cancelled run's")
	answerable := ports.ListRunsParams{Limit: 1, OpenInterrupts: true, Statuses: []run.Status{run.StatusRunning, run.StatusWaiting}}
	page, err := h.b.ListRuns(h.ctx, owner, answerable)
	h.must(err, "ListRuns(%+v)", answerable)
	ids := []string{}
	for _, s := range page.Runs {
		ids = append(ids, s.RunID)
	}
	eq(h, fmt.Sprint(ids), fmt.Sprint([]string{waitingRun.ID}), "open interrupts of running and waiting runs, one a page, below newer runs without")
	eq(h, page.HasMore, false, "more runs with open interrupts")

	for name, p := range map[string]ports.ListRunsParams{
		"limit 0":           {Limit: 0},
		"limit above max":   {Limit: ports.MaxPageLimit + 1},
		"status created":    {Limit: 10, Statuses: []run.Status{run.StatusCreated}},
		"an unknown status": {Limit: 10, Statuses: []run.Status{"paused"}},
	} {
		_, err := h.b.ListRuns(h.ctx, owner, p)
		h.errIs(err, ports.ErrInvalidArgument, "ListRuns with %s", name)
	}
}

func checkUnknownRun(h *harness) {
	h.insert(ports.Tenantless())
	id := h.id("unknown")
	for _, scope := range []ports.Scope{ports.System(), ports.Tenantless()} {
		_, err := h.b.FetchRun(h.ctx, scope, id)
		h.errIs(err, ports.ErrNotFound, "FetchRun(%s)", scope)
		_, err = h.b.InspectRun(h.ctx, scope, id)
		h.errIs(err, ports.ErrNotFound, "InspectRun(%s)", scope)
		_, err = h.b.RetryPoisonedRun(h.ctx, scope, id, t0)
		h.errIs(err, ports.ErrNotFound, "RetryPoisonedRun(%s)", scope)
		called := false
		_, err = h.b.MutateRun(h.ctx, scope, id, func(*run.Run) (*run.Moment, error) { called = true; return nil, nil })
		h.errIs(err, ports.ErrNotFound, "MutateRun(%s)", scope)
		h.expect(!called, "MutateRun(%s) called the mutation for an unknown run", scope)
	}
}

func checkCapabilities(h *harness) {
	caps := h.b.Capabilities()
	eq(h, caps.Listen, h.features.WakeNotifications, "Capabilities().Listen vs Features.WakeNotifications")
	eq(h, caps.TenantFair, h.features.TenantFairPolicy, "Capabilities().TenantFair vs Features.TenantFairPolicy")
	eq(h, h.b.Notifier() != nil, caps.Listen, "Notifier() is non-nil exactly when Listen is offered")
}

func checkNoAliasing(h *harness) {
	owner := ports.Tenantless()
	h.publish(owner)
	id := h.id("alias")
	m := h.initMoment(id, t0)
	want := encodeRun(m.Run)
	// The runtime's payloads are read-only and may be shared by every run
	// of the graph: the caller scribbles on a payload of its own.
	m.Events[0].Payload = cloneAny(m.Events[0].Payload)
	wantEvent := m.Events[0]
	wantEvent.Payload = cloneAny(wantEvent.Payload)
	inserted, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
	h.must(err, "InsertRun")
	// Scribble on everything the caller holds.
	m.Run.Input["topic"] = "scribbled"
	m.Run.Metadata = map[string]any{"scribbled": true}
	m.Events[0].Payload["scribbled"] = true
	inserted.Input["topic"] = "scribbled again"
	inserted.Status = run.StatusDone
	fetched := h.fetch(owner, id)
	eq(h, encodeRun(fetched), want, "stored run after scribbling on the inserted values")
	fetched.Input["topic"] = "scribbled via fetch"
	fetched.Channels = nil
	info := h.inspect(id)
	eq(h, encodeRun(info.Run), want, "stored run after scribbling on a fetched value")
	info.Run.Input["topic"] = "scribbled via inspect"
	e := h.storedEvent(id, 1)
	h.expect(e.Equal(wantEvent), "stored event after scribbling: got %+v, want %+v", e, wantEvent)
	e.Payload["scribbled"] = true
	again := h.storedEvent(id, 1)
	h.expect(again.Equal(wantEvent), "stored event after scribbling on a fetched event")
	page, err := h.b.ListEvents(h.ctx, owner, id, ports.ListEventsParams{Limit: 1})
	h.must(err, "ListEvents")
	if h.expect(len(page.Events) == 1, "ListEvents(limit 1): got %d events", len(page.Events)) {
		page.Events[0].Payload["scribbled"] = true
	}
	again = h.storedEvent(id, 1)
	h.expect(again.Equal(wantEvent), "stored event after scribbling on a listed event")

	// The run handed to a mutation is private too.
	_, err = h.b.MutateRun(h.ctx, owner, id, func(cur *run.Run) (*run.Moment, error) {
		cur.Input["topic"] = "scribbled in a mutation"
		return nil, nil
	})
	h.must(err, "MutateRun")
	eq(h, encodeRun(h.fetch(owner, id)), want, "stored run after a mutation scribbled on its input")

	// So are the runs a no-change mutation, a healthy run's recovery and
	// a commit return.
	same, err := h.b.MutateRun(h.ctx, owner, id, func(*run.Run) (*run.Moment, error) { return nil, nil })
	h.must(err, "MutateRun returning no moment")
	same.Input["topic"] = "scribbled via a no-change mutation's result"
	eq(h, encodeRun(h.fetch(owner, id)), want, "stored run after scribbling on a no-change mutation's result")
	healthy, err := h.b.RetryPoisonedRun(h.ctx, owner, id, t0)
	h.must(err, "RetryPoisonedRun of a healthy run")
	healthy.Input["topic"] = "scribbled via a recovery's result"
	eq(h, encodeRun(h.fetch(owner, id)), want, "stored run after scribbling on a recovery's result")
	lease := h.claimOne(t0, id)
	next := continueMoment(h, h.fetch(owner, id), "committed")
	wantNext := encodeRun(next.Run)
	committed, err := h.b.Commit(h.ctx, owner, ports.CommitParams{Moment: next, ClaimToken: lease.Token})
	h.must(err, "Commit")
	committed.Input["topic"] = "scribbled via a commit's result"
	next.Run.Input["topic"] = "scribbled via the committed proposal"
	eq(h, encodeRun(h.fetch(owner, id)), wantNext, "stored run after scribbling on a commit's result and proposal")
}

func cloneAny(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func checkPruneCutoffInsideMicrosecond(h *harness) {
	owner := ports.Tenantless()
	r := h.insert(owner, runOpts{wakeAt: at(time.Hour)}) // events inserted at t0
	h.clock.Set(at(time.Second))
	_, err := h.b.MutateRun(h.ctx, owner, r.ID, cancelMutation(h))
	h.must(err, "cancel")
	h.eqTime(h.fetch(owner, r.ID).UpdatedAt, at(time.Second), "fixture: updated_at")
	cutoff := at(time.Second + 500*time.Nanosecond) // updated_at (+1s) < cutoff
	res, err := h.b.PruneRuns(h.ctx, ports.PruneParams{Before: cutoff, BatchSize: 10})
	h.must(err, "PruneRuns")
	eq(h, res.Runs, 1, "terminal run updated at +1s pruned with Before = +1s+500ns")

	s := h.insert(owner, runOpts{wakeAt: at(time.Hour)}) // events inserted at +1s
	n, err := h.b.PruneEvents(h.ctx, ports.PruneParams{Before: cutoff, BatchSize: 100})
	h.must(err, "PruneEvents")
	_ = n
	_, err = h.b.FetchEvent(h.ctx, owner, s.ID, 1)
	h.errIs(err, ports.ErrNotFound, "event 1 inserted at +1s after PruneEvents(Before = +1s+500ns)")
}

func checkPruneGraphVersions(h *harness) {
	a, b := ports.Tenant(h.id("a")), ports.Tenant(h.id("b"))
	version := func(owner ports.OwnerScope, description string, published time.Time) ports.GraphRef {
		h.Helper()
		c, err := compileFixture(description)
		h.must(err, "compiling version %q", description)
		h.clock.Set(published)
		_, err = h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
		h.must(err, "SaveGraph(%s, %q)", owner, description)
		return ports.GraphRef{GraphID: c.Effective.ID, Hash: c.Hash}
	}
	main := h.graphs().main
	referenced := ports.GraphRef{GraphID: main.Effective.ID, Hash: main.Hash}
	h.clock.Set(t0)
	h.insert(a) // publishes the fixture version in a, and a run of a references it
	old := version(a, "old", at(time.Minute))
	older := version(a, "older", at(2*time.Minute))
	newest := version(a, "newest", at(3*time.Minute))
	// In b the fixture version is referenced by no run of b (a's run does
	// not count) and is not b's newest.
	bOld := version(b, "conformance fixture", at(4*time.Minute))
	bNewest := version(b, "b newest", at(5*time.Minute))
	if bOld != referenced {
		h.Fatalf("fixture: b's old version %v is not the version a's run references %v", bOld, referenced)
	}

	n, err := h.b.PruneGraphVersions(h.ctx, ports.PruneGraphsParams{Keep: 1, BatchSize: 1})
	h.must(err, "PruneGraphVersions(batch 1)")
	eq(h, n, 1, "versions pruned by a batch of 1")
	_, err = h.b.FetchGraph(h.ctx, a, old)
	h.errIs(err, ports.ErrNotFound, "the oldest unreferenced version goes first")
	_, err = h.b.FetchGraph(h.ctx, a, older)
	h.must(err, "the next one waits for the next batch")

	n, err = h.b.PruneGraphVersions(h.ctx, ports.PruneGraphsParams{Keep: 1, BatchSize: 100})
	h.must(err, "PruneGraphVersions")
	eq(h, n, 2, "versions pruned: a's other old one and b's old one")
	_, err = h.b.FetchGraph(h.ctx, a, older)
	h.errIs(err, ports.ErrNotFound, "a's second unreferenced old version")
	_, err = h.b.FetchGraph(h.ctx, b, bOld)
	h.errIs(err, ports.ErrNotFound, "b's old version, whose (id, hash) only a's run references")
	for _, kept := range []struct {
		owner ports.OwnerScope
		ref   ports.GraphRef
		what  string
	}{{a, referenced, "a version a run of its owner references"}, {a, newest, "a's newest"}, {b, bNewest, "b's newest"}} {
		_, err := h.b.FetchGraph(h.ctx, kept.owner, kept.ref)
		h.must(err, "%s must survive pruning", kept.what)
	}
	n, err = h.b.PruneGraphVersions(h.ctx, ports.PruneGraphsParams{Keep: 1, BatchSize: 100})
	h.must(err, "PruneGraphVersions again")
	eq(h, n, 0, "nothing is left to prune")
	for _, p := range []ports.PruneGraphsParams{{Keep: 0, BatchSize: 10}, {Keep: 1}} {
		_, err := h.b.PruneGraphVersions(h.ctx, p)
		h.errIs(err, ports.ErrInvalidArgument, "PruneGraphVersions(%+v)", p)
	}
}

// checkIDsNoTextCanHold calls every port with identifiers that are not
// ports.TextID (a NUL, invalid UTF-8): they name no row, so each call has
// the outcome of an absent row, never a storage error; a page cursor
// holding one is malformed.
func checkIDsNoTextCanHold(h *harness) {
	owner := ports.Tenantless()
	c := h.publish(owner)
	r, lease := h.insertClaimed()
	for _, odd := range []string{"run\x00id", "run\xffid"} {
		_, err := h.b.FetchRun(h.ctx, owner, odd)
		h.errIs(err, ports.ErrNotFound, "FetchRun(%q)", odd)
		_, err = h.b.ListEvents(h.ctx, owner, odd, ports.ListEventsParams{Limit: 1})
		h.errIs(err, ports.ErrNotFound, "ListEvents(%q)", odd)
		err = h.b.RefreshClaim(h.ctx, odd, lease.Token, t0)
		h.errIs(err, ports.ErrClaimLost, "RefreshClaim(%q) with a live token", odd)
		h.must(h.b.ReleaseClaim(h.ctx, odd, lease.Token, t0), "ReleaseClaim(%q) with a live token", odd)
		res, err := h.b.AbandonClaim(h.ctx, odd, lease.Token, claim.AbandonParams{
			ExpectedSeq: r.CheckpointSeq, Now: t0, RetryAt: t0, MaxClaimAbandons: 1})
		h.must(err, "AbandonClaim(%q) with a live token", odd)
		eq(h, res, ports.AbandonStale, "AbandonClaim(%q)", odd)

		_, err = h.b.FetchGraph(h.ctx, owner, ports.GraphRef{GraphID: odd, Hash: c.Hash})
		h.errIs(err, ports.ErrNotFound, "FetchGraph(id %q)", odd)
		_, err = h.b.FetchGraph(h.ctx, owner, ports.GraphRef{GraphID: c.Effective.ID, Hash: odd})
		h.errIs(err, ports.ErrNotFound, "FetchGraph(hash %q)", odd)
		_, err = h.b.FetchLatestGraphRef(h.ctx, owner, odd)
		h.errIs(err, ports.ErrNotFound, "FetchLatestGraphRef(%q)", odd)
		versions, err := h.b.ListGraphVersions(h.ctx, owner, odd, ports.ListGraphVersionsParams{Limit: 1})
		h.must(err, "ListGraphVersions(%q)", odd)
		eq(h, len(versions.Versions), 0, "ListGraphVersions(%q) versions", odd)
		for _, p := range []ports.ListRunsParams{{Limit: 1, GraphID: odd}, {Limit: 1, GraphHash: odd}} {
			page, err := h.b.ListRuns(h.ctx, ports.System(), p)
			h.must(err, "ListRuns(graph %q, hash %q)", p.GraphID, p.GraphHash)
			eq(h, len(page.Runs), 0, "ListRuns(graph %q, hash %q) runs", p.GraphID, p.GraphHash)
		}

		_, err = h.b.ListRuns(h.ctx, ports.System(), ports.ListRunsParams{Limit: 1,
			Before: &ports.RunCursor{StartedAt: t0, RunID: odd}})
		h.errIs(err, ports.ErrInvalidArgument, "ListRuns before run id %q", odd)
		_, err = h.b.ListGraphVersions(h.ctx, owner, c.Effective.ID, ports.ListGraphVersionsParams{Limit: 1,
			Before: &ports.GraphCursor{PublishedAt: t0, Hash: odd}})
		h.errIs(err, ports.ErrInvalidArgument, "ListGraphVersions before hash %q", odd)
	}
	// A graph whose id no text can hold cannot be published.
	odd := *c.Effective
	odd.ID = "graph\x00id"
	if hash, err := graph.Hash(&odd); err == nil {
		_, err = h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: &odd, Hash: hash})
		h.errIs(err, ports.ErrInvalidGraph, "SaveGraph(id %q)", odd.ID)
	}
	info := h.inspect(r.ID)
	h.expect(info.Claimed(), "the live claim survived calls naming other ids")
}

// checkIDsBeyondTheByteLimit stores a run whose tenant, run id and graph
// id are each ports.MaxIDBytes bytes long, in every key the store builds
// over them, and reads, lists and claims it back. Ids one byte longer name
// no row: each call has the outcome of an absent row, never a storage
// error; a cursor holding one is malformed, and a write naming one is
// rejected as invalid input.
func checkIDsBeyondTheByteLimit(h *harness) {
	pad := func(id string) string { return id + strings.Repeat("x", ports.MaxIDBytes-len(id)) }
	tenant := pad(h.id("tenant"))
	owner := ports.Tenant(tenant)
	h.must(owner.ValidateOwner(), "Tenant of %d bytes", len(tenant))
	c, err := compileFixtureAs(pad(h.id("graph")), "conformance fixture, long ids")
	h.must(err, "compiling the fixture graph with a %d-byte id", ports.MaxIDBytes)
	_, err = h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	h.must(err, "SaveGraph of a %d-byte graph id under a %d-byte tenant", len(c.Effective.ID), len(tenant))
	ref := ports.GraphRef{GraphID: c.Effective.ID, Hash: c.Hash}
	_, err = h.b.FetchGraph(h.ctx, owner, ref)
	h.must(err, "FetchGraph of the long ids")
	latest, err := h.b.FetchLatestGraphRef(h.ctx, owner, ref.GraphID)
	h.must(err, "FetchLatestGraphRef of the long ids")
	eq(h, latest.Ref, ref, "FetchLatestGraphRef")

	runID := pad(h.id("run"))
	start := func(runID string, c *graph.Compiled) error {
		m, err := superstep.Start(c, superstep.StartParams{RunID: runID, Input: map[string]any{"topic": "long ids"}},
			superstep.Env{Now: t0})
		h.must(err, "superstep.Start(%d-byte run id)", len(runID))
		_, err = h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
		return err
	}
	h.must(start(runID, c), "InsertRun of a %d-byte run id", len(runID))
	_, err = h.b.FetchRun(h.ctx, owner, runID)
	h.must(err, "FetchRun of the long run id")
	page, err := h.b.ListRuns(h.ctx, owner, ports.ListRunsParams{Limit: 10, GraphID: ref.GraphID, GraphHash: ref.Hash})
	h.must(err, "ListRuns filtered on the long graph id")
	if eq(h, len(page.Runs), 1, "runs of the long graph id") {
		eq(h, page.Runs[0].RunID, runID, "listed run")
	}
	page, err = h.b.ListRuns(h.ctx, owner, ports.ListRunsParams{Limit: 10,
		Before: &ports.RunCursor{StartedAt: t0.Add(time.Second), RunID: runID}})
	h.must(err, "ListRuns before a cursor holding the long run id")
	eq(h, len(page.Runs), 1, "runs before the cursor")
	lease := h.claimOne(t0, runID)
	h.must(h.b.RefreshClaim(h.ctx, runID, lease.Token, t0), "RefreshClaim of the long run id")

	// One byte more.
	eq(h, ports.Tenant(tenant+"x").Validate() != nil, true, "Tenant of %d bytes is invalid", len(tenant)+1)
	over := runID + "x"
	_, err = h.b.FetchRun(h.ctx, ports.System(), over)
	h.errIs(err, ports.ErrNotFound, "FetchRun(%d bytes)", len(over))
	_, err = h.b.InspectRun(h.ctx, owner, over)
	h.errIs(err, ports.ErrNotFound, "InspectRun(%d bytes)", len(over))
	_, err = h.b.ListEvents(h.ctx, owner, over, ports.ListEventsParams{Limit: 1})
	h.errIs(err, ports.ErrNotFound, "ListEvents(%d bytes)", len(over))
	_, err = h.b.FetchLatestEvent(h.ctx, owner, over)
	h.errIs(err, ports.ErrNotFound, "FetchLatestEvent(%d bytes)", len(over))
	_, err = h.b.MutateRun(h.ctx, owner, over, func(r *run.Run) (*run.Moment, error) { return nil, nil })
	h.errIs(err, ports.ErrNotFound, "MutateRun(%d bytes)", len(over))
	_, err = h.b.RetryPoisonedRun(h.ctx, owner, over, t0)
	h.errIs(err, ports.ErrNotFound, "RetryPoisonedRun(%d bytes)", len(over))
	err = h.b.RefreshClaim(h.ctx, over, lease.Token, t0)
	h.errIs(err, ports.ErrClaimLost, "RefreshClaim(%d bytes) with a live token", len(over))
	h.must(h.b.ReleaseClaim(h.ctx, over, lease.Token, t0), "ReleaseClaim(%d bytes) with a live token", len(over))
	res, err := h.b.AbandonClaim(h.ctx, over, lease.Token, claim.AbandonParams{
		ExpectedSeq: 1, Now: t0, RetryAt: t0, MaxClaimAbandons: 1})
	h.must(err, "AbandonClaim(%d bytes) with a live token", len(over))
	eq(h, res, ports.AbandonStale, "AbandonClaim(%d bytes)", len(over))

	for _, r := range []ports.GraphRef{{GraphID: ref.GraphID + "x", Hash: ref.Hash}, {GraphID: ref.GraphID, Hash: pad(ref.Hash) + "x"}} {
		_, err = h.b.FetchGraph(h.ctx, owner, r)
		h.errIs(err, ports.ErrNotFound, "FetchGraph(%d-byte id, %d-byte hash)", len(r.GraphID), len(r.Hash))
		page, err := h.b.ListRuns(h.ctx, ports.System(), ports.ListRunsParams{Limit: 1, GraphID: r.GraphID, GraphHash: r.Hash})
		h.must(err, "ListRuns(%d-byte graph id, %d-byte hash)", len(r.GraphID), len(r.Hash))
		eq(h, len(page.Runs), 0, "ListRuns(%d-byte graph id, %d-byte hash) runs", len(r.GraphID), len(r.Hash))
	}
	_, err = h.b.FetchLatestGraphRef(h.ctx, owner, ref.GraphID+"x")
	h.errIs(err, ports.ErrNotFound, "FetchLatestGraphRef(%d bytes)", len(ref.GraphID)+1)
	versions, err := h.b.ListGraphVersions(h.ctx, owner, ref.GraphID+"x", ports.ListGraphVersionsParams{Limit: 1})
	h.must(err, "ListGraphVersions(%d bytes)", len(ref.GraphID)+1)
	eq(h, len(versions.Versions), 0, "ListGraphVersions(%d bytes) versions", len(ref.GraphID)+1)
	_, err = h.b.ListRuns(h.ctx, owner, ports.ListRunsParams{Limit: 1,
		Before: &ports.RunCursor{StartedAt: t0, RunID: over}})
	h.errIs(err, ports.ErrInvalidArgument, "ListRuns before a %d-byte run id", len(over))
	_, err = h.b.ListGraphVersions(h.ctx, owner, ref.GraphID, ports.ListGraphVersionsParams{Limit: 1,
		Before: &ports.GraphCursor{PublishedAt: t0, Hash: pad(ref.Hash) + "x"}})
	h.errIs(err, ports.ErrInvalidArgument, "ListGraphVersions before a %d-byte hash", ports.MaxIDBytes+1)

	// Writes naming such an id are invalid input.
	long, err := compileFixtureAs(ref.GraphID+"x", "conformance fixture, too long an id")
	h.must(err, "compiling the fixture graph with a %d-byte id", len(ref.GraphID)+1)
	_, err = h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: long.Effective, Hash: long.Hash})
	h.errIs(err, ports.ErrInvalidGraph, "SaveGraph(%d-byte graph id)", len(long.Effective.ID))
	h.errIs(start(over, c), ports.ErrInvalidCommit, "InsertRun(%d-byte run id)", len(over))
	h.errIs(start(h.id("run"), long), ports.ErrInvalidCommit, "InsertRun bound to a %d-byte graph id", len(long.Effective.ID))

	info := h.inspect(runID)
	h.expect(info.Claimed(), "the live claim survived calls naming longer ids")
}

// checkSubMicrosecondCursors pages with cursors whose time falls inside a
// microsecond: every row stamped in that microsecond is strictly before
// the cursor, whatever its id, so it is on the page.
func checkSubMicrosecondCursors(h *harness) {
	owner := ports.Tenant(h.id("tenant"))
	c := h.publish(owner)
	at := t0.Add(-time.Second)
	first := h.insert(owner, runOpts{id: h.id("a"), startedAt: at})
	second := h.insert(owner, runOpts{id: h.id("b"), startedAt: at})
	inside := at.Add(500 * time.Nanosecond)
	for _, id := range []string{first.ID, second.ID, ""} {
		cursor := &ports.RunCursor{StartedAt: inside, RunID: id + "0"}
		page, err := h.b.ListRuns(h.ctx, owner, ports.ListRunsParams{Limit: 10, Before: cursor})
		h.must(err, "ListRuns before %s/%s", inside.Format(time.RFC3339Nano), cursor.RunID)
		eq(h, len(page.Runs), 2, "runs started at %s listed before %s/%s",
			at.Format(time.RFC3339Nano), inside.Format(time.RFC3339Nano), cursor.RunID)
	}

	alt := h.graphs().alt
	_, err := h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: alt.Effective, Hash: alt.Hash})
	h.must(err, "SaveGraph(second version)")
	latest, err := h.b.FetchLatestGraphRef(h.ctx, owner, c.Effective.ID)
	h.must(err, "FetchLatestGraphRef")
	cursor := &ports.GraphCursor{PublishedAt: latest.PublishedAt.Add(500 * time.Nanosecond), Hash: "0"}
	versions, err := h.b.ListGraphVersions(h.ctx, owner, c.Effective.ID, ports.ListGraphVersionsParams{Limit: 10, Before: cursor})
	h.must(err, "ListGraphVersions inside the newest publication's microsecond")
	eq(h, len(versions.Versions), 2, "versions listed before %s/0", cursor.PublishedAt.Format(time.RFC3339Nano))
}

// checkPruneCountsBeyond32Bits prunes with counts a 32-bit integer cannot
// hold: a malformed request, whose rows all stay.
func checkPruneCountsBeyond32Bits(h *harness) {
	owner := ports.Tenantless()
	r := h.insert(owner)
	_, err := h.mutate(owner, r.ID, h.cancelMoment(r))
	h.must(err, "cancel %s", r.ID)
	h.clock.Advance(time.Hour)
	big := math.MaxInt32 + 1
	_, err = h.b.PruneEvents(h.ctx, ports.PruneParams{Before: h.clock.Now(), BatchSize: big})
	h.errIs(err, ports.ErrInvalidArgument, "PruneEvents with batch %d", big)
	_, err = h.b.PruneRuns(h.ctx, ports.PruneParams{Before: h.clock.Now(), BatchSize: big})
	h.errIs(err, ports.ErrInvalidArgument, "PruneRuns with batch %d", big)
	_, err = h.b.PruneGraphVersions(h.ctx, ports.PruneGraphsParams{Keep: 1, BatchSize: big})
	h.errIs(err, ports.ErrInvalidArgument, "PruneGraphVersions with batch %d", big)
	_, err = h.b.PruneGraphVersions(h.ctx, ports.PruneGraphsParams{Keep: big, BatchSize: 1})
	h.errIs(err, ports.ErrInvalidArgument, "PruneGraphVersions keeping %d", big)
	_, err = h.b.FetchEvent(h.ctx, owner, r.ID, 1)
	h.must(err, "event 1 after the refused prunes")
}
