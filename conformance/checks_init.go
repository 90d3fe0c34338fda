package conformance

import (
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func checkInsertThenRead(h *harness) {
	owner := ports.Tenant(h.id("tenant"))
	h.publish(owner)
	id := h.id("run")
	m := h.initMoment(id, t0)
	wake := at(-time.Second)
	r, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: wake})
	h.must(err, "InsertRun")
	h.sameRun(r, m.Run, "InsertRun returns the proposed run")

	for _, scope := range []ports.Scope{owner, ports.System()} {
		h.sameRun(h.fetch(scope, id), m.Run, "FetchRun(%s)", scope)
	}
	info := h.inspect(id)
	h.sameRun(info.Run, m.Run, "InspectRun document")
	eq(h, info.Owner, owner, "owner")
	eq(h, info.LatestCheckpointType, run.CheckpointRunInitialized, "latest checkpoint type")
	h.eqTime(info.WakeAt, wake, "first wake")
	h.eqTime(info.ClaimedAt, time.Time{}, "claimed_at")
	eq(h, info.ClaimAttempts, 0, "claim attempts")
	eq(h, info.ClaimAbandons, 0, "claim abandons")
	h.eqTime(info.PoisonedAt, time.Time{}, "poisoned_at")
	eq(h, info.PoisonReason, "", "poison reason")

	for _, want := range m.Events {
		got, err := h.b.FetchEvent(h.ctx, owner, id, want.Seq)
		if h.expect(err == nil && got != nil, "FetchEvent(%d): %v", want.Seq, err) {
			h.expect(got.Equal(want), "FetchEvent(%d): got %+v, want %+v", want.Seq, *got, want)
		}
	}
}

func checkDuplicateInsert(h *harness) {
	owner := ports.Tenantless()
	original := h.insert(owner)
	before := h.inspect(original.ID)

	same := h.initMoment(original.ID, t0)
	different := h.initMoment(original.ID, at(time.Hour))
	for name, m := range map[string]*run.Moment{"same content": same, "different content": different} {
		_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: at(time.Minute)})
		h.errIs(err, ports.ErrConflict, "re-inserting %s (%s)", original.ID, name)
		h.unchanged(before, "original after a duplicate insert with %s", name)
	}
}

func checkInsertMissingGraph(h *harness) {
	owner := ports.Tenant(h.id("tenant"))
	// The graph is published elsewhere but not in owner.
	h.publish(ports.Tenantless())
	id := h.id("run")
	m := h.initMoment(id, t0)
	_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
	h.errIs(err, ports.ErrNotFound, "InsertRun with a graph unpublished in %s", owner)
	_, err = h.b.FetchRun(h.ctx, ports.System(), id)
	h.errIs(err, ports.ErrNotFound, "FetchRun after the failed insert")
	_, err = h.b.FetchEvent(h.ctx, ports.System(), id, 1)
	h.errIs(err, ports.ErrNotFound, "FetchEvent after the failed insert")

	// An unpublished hash in a scope that has the graph id is not found too.
	h.publish(owner)
	m = h.initMoment(h.id("run"), t0)
	m.Run.GraphHash = h.graphs().alt.Hash
	_, err = h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
	h.errIs(err, ports.ErrNotFound, "InsertRun pinned to an unpublished hash")
	claimNone(h, t0, "after failed inserts")
}

// claimNone requires that nothing at all is claimable at now.
func claimNone(h *harness, now time.Time, what string) {
	h.Helper()
	r := request(now)
	r.Limit = 10
	h.claimNothing(r, "ClaimDue %s", what)
}

func checkInsertShapes(h *harness) {
	owner := ports.Tenantless()
	h.publish(owner)
	type shape struct {
		name   string
		mutate func(m *run.Moment) *run.Moment
	}
	shapes := []shape{
		{name: "status waiting", mutate: func(m *run.Moment) *run.Moment { m.Run.Status = run.StatusWaiting; return m }},
		{name: "status done", mutate: func(m *run.Moment) *run.Moment {
			m.Run.Status = run.StatusDone
			m.Run.FinishedAt = t0
			m.Run.Output = map[string]any{}
			return m
		}},
		{name: "checkpoint_seq 0", mutate: func(m *run.Moment) *run.Moment { m.Run.CheckpointSeq = 0; return m }},
		{name: "no updated_at", mutate: func(m *run.Moment) *run.Moment { m.Run.UpdatedAt = time.Time{}; return m }},
		{name: "checkpoint type step_committed", mutate: func(m *run.Moment) *run.Moment {
			m.CheckpointType = run.CheckpointStepCommitted
			return m
		}},
		{name: "no run", mutate: func(m *run.Moment) *run.Moment { m.Run = nil; return m }},
		{name: "no moment", mutate: func(*run.Moment) *run.Moment { return nil }},
	}
	for _, s := range shapes {
		id := h.id("shape")
		m := s.mutate(h.initMoment(id, t0))
		_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
		h.errIsAny(err, []error{ports.ErrInvalidCommit, ports.ErrInvalidArgument}, "InsertRun with %s", s.name)
		_, err = h.b.FetchRun(h.ctx, ports.System(), id)
		h.errIs(err, ports.ErrNotFound, "FetchRun after InsertRun with %s", s.name)
	}
	id := h.id("nowake")
	_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: h.initMoment(id, t0)})
	h.errIsAny(err, []error{ports.ErrInvalidCommit, ports.ErrInvalidArgument}, "InsertRun without a first wake")
	_, err = h.b.FetchRun(h.ctx, ports.System(), id)
	h.errIs(err, ports.ErrNotFound, "FetchRun after InsertRun without a wake")
	claimNone(h, at(time.Hour), "after rejected inserts")
}

func checkInsertEvents(h *harness) {
	owner := ports.Tenantless()
	h.publish(owner)
	rejected := func(name string, target error, edit func(m *run.Moment)) {
		h.Helper()
		id := h.id("events")
		m := h.initMoment(id, t0)
		edit(m)
		_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
		h.errIs(err, target, "InsertRun with %s", name)
		_, err = h.b.FetchRun(h.ctx, ports.System(), id)
		h.errIs(err, ports.ErrNotFound, "FetchRun after InsertRun with %s", name)
	}
	rejected("an event of another run", ports.ErrInvalidCommit, func(m *run.Moment) { m.Events[0].RunID = "someone-else" })
	rejected("an event at seq 0", ports.ErrInvalidCommit, func(m *run.Moment) { m.Events[0].Seq = 0 })
	rejected("an event of unknown type", ports.ErrInvalidCommit, func(m *run.Moment) { m.Events[0].Type = "not_an_event" })
	rejected("an event without timestamp", ports.ErrInvalidCommit, func(m *run.Moment) { m.Events[0].Timestamp = time.Time{} })
	rejected("two different events at one seq", ports.ErrEventConflict, func(m *run.Moment) {
		dup := m.Events[0]
		dup.Payload = map[string]any{"different": true}
		m.Events = append(m.Events, dup)
	})

	id := h.id("dup")
	m := h.initMoment(id, t0)
	want := append([]run.Event(nil), m.Events...)
	m.Events = append(m.Events, m.Events[0])
	_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
	h.must(err, "InsertRun with an identical duplicate event")
	page, err := h.b.ListEvents(h.ctx, owner, id, ports.ListEventsParams{Limit: 100})
	h.must(err, "ListEvents")
	if h.expect(len(page.Events) == len(want), "identical duplicates store once: got %d events, want %d", len(page.Events), len(want)) {
		for i := range want {
			h.expect(page.Events[i].Equal(want[i]), "event %d: got %+v, want %+v", i, page.Events[i], want[i])
		}
	}
}

func checkInsertWake(h *harness) {
	due := h.insert(ports.Tenantless(), runOpts{wakeAt: at(-time.Second)})
	future := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Minute)})
	h.claimOne(t0, due.ID)
	h.claimNothing(request(t0), "ClaimDue(t0) with only a future run left")
	h.claimNothing(readyOnly(at(time.Minute-time.Microsecond)), "ClaimDue one µs before the future wake")
	h.claimOneWith(readyOnly(at(time.Minute)), future.ID)
}

func checkInsertGraphBeforeConflict(h *harness) {
	a := ports.Tenant(h.id("a"))
	b := ports.Tenant(h.id("b")) // graph never published in b
	existing := h.insert(a)
	before := h.inspect(existing.ID)
	m := h.initMoment(existing.ID, t0)
	_, err := h.b.InsertRun(h.ctx, b, ports.InsertRunParams{Moment: m, WakeAt: t0})
	h.errIs(err, ports.ErrNotFound, "InsertRun(%s) of an id stored under %s, graph unpublished in %s", b, a, b)
	h.unchanged(before, "original after the failed insert")
}

// checkConcurrentInserts races inserts of one run id, each proposing a
// different run (its own start): exactly one is stored, with its events,
// and every other insert is ErrConflict.
func checkConcurrentInserts(h *harness) {
	owner := ports.Tenantless()
	h.publish(owner)
	for round := range h.features.Rounds {
		id := h.id("raced")
		moments := make([]*run.Moment, h.features.Writers)
		for i := range moments {
			moments[i] = h.initMoment(id, at(time.Duration(i)*time.Second))
		}
		h.oneWinner(round, "insert", "one run id", id, ports.ErrConflict, moments, func(m *run.Moment) error {
			_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: at(time.Hour)})
			return err
		})
	}
}
