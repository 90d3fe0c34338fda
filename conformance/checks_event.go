package conformance

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func (h *harness) storedEvent(runID string, seq int64) run.Event {
	h.Helper()
	e, err := h.b.FetchEvent(h.ctx, ports.System(), runID, seq)
	h.must(err, "FetchEvent(%s, %d)", runID, seq)
	if e == nil {
		h.Fatalf("FetchEvent(%s, %d) returned no event", runID, seq)
	}
	return *e
}

func checkIdenticalEvent(h *harness) {
	r, lease := h.insertClaimed()
	first := h.storedEvent(r.ID, 1)
	h.clock.Set(at(10 * time.Second))
	m := continueMoment(h, r, "idempotent")
	m.Events = append([]run.Event{first}, m.Events...)
	h.mustCommit(ports.Tenantless(), m, lease.Token)
	got := h.storedEvent(r.ID, 1)
	h.expect(got.Equal(first), "event 1 after re-appending it: got %+v, want %+v", got, first)
	h.eventsStored(m, "events of the commit")
	eq(h, h.fetch(ports.System(), r.ID).CheckpointSeq, int64(2), "seq after the commit")

	// The re-append wrote nothing, its insertion time included: event 1
	// is as old as the run's other first events when retention runs.
	n, err := h.b.PruneEvents(h.ctx, ports.PruneParams{Before: at(5 * time.Second), BatchSize: 100})
	h.must(err, "PruneEvents")
	eq(h, n, 4, "events inserted with the run, the re-appended one included")
	_, err = h.b.FetchEvent(h.ctx, ports.System(), r.ID, 1)
	h.errIs(err, ports.ErrNotFound, "event 1 after pruning the events inserted with the run")
	h.eventsStored(cloneMomentWithEvents(m, m.Events[1:]), "the commit's new events after pruning")
}

// cloneMomentWithEvents is a copy of m carrying events instead of its own.
func cloneMomentWithEvents(m *run.Moment, events []run.Event) *run.Moment {
	c := cloneMoment(m)
	c.Events = append([]run.Event(nil), events...)
	return c
}

func checkConflictingEvent(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	first := h.storedEvent(r.ID, 1)
	changed := first
	changed.Payload = map[string]any{"rewritten": true}
	m := continueMoment(h, r, "conflict")
	fresh := append([]run.Event(nil), m.Events...)
	m.Events = append([]run.Event{changed}, m.Events...)
	_, err := h.commit(ports.Tenantless(), m, lease.Token)
	if h.errIs(err, ports.ErrEventConflict, "Commit rewriting stored event 1") {
		// The typed error names the seq: callers rely on it, not on text.
		var conflict *ports.EventConflictError
		if errors.As(err, &conflict) {
			eq(h, conflict.Seq, int64(1), "EventConflictError seq")
		} else {
			h.Errorf("Commit rewriting stored event 1: got %T, want a *ports.EventConflictError", err)
		}
	}
	h.unchanged(before, "run after the event conflict")
	got := h.storedEvent(r.ID, 1)
	h.expect(got.Equal(first), "event 1 after the conflict: got %+v, want %+v", got, first)
	for _, e := range fresh {
		_, err := h.b.FetchEvent(h.ctx, ports.System(), r.ID, e.Seq)
		h.errIs(err, ports.ErrNotFound, "new event %d of the rolled-back commit", e.Seq)
	}

	// Every field is the event's content: the same payload with another
	// type, node or timestamp conflicts too.
	otherType := run.EventNodeCompleted
	if first.Type == otherType {
		otherType = run.EventNodeFailed
	}
	for _, c := range []struct {
		name string
		edit func(e *run.Event)
	}{
		{"another type", func(e *run.Event) { e.Type = otherType }},
		{"another node", func(e *run.Event) { e.NodeID = "another-node" }},
		{"another timestamp", func(e *run.Event) { e.Timestamp = e.Timestamp.Add(time.Second) }},
	} {
		changed := first
		c.edit(&changed)
		m := continueMoment(h, r, "conflict, "+c.name)
		m.Events = append([]run.Event{changed}, m.Events...)
		_, err := h.commit(ports.Tenantless(), m, lease.Token)
		h.errIs(err, ports.ErrEventConflict, "Commit rewriting stored event 1 with %s", c.name)
		h.unchanged(before, "run after rewriting event 1 with %s", c.name)
		h.eventsAbsent(cloneMomentWithEvents(m, m.Events[1:]), "Commit rewriting stored event 1 with %s", c.name)
	}

	// Two different events at one proposed seq conflict before any write.
	twice := continueMoment(h, r, "twice")
	dup := twice.Events[0]
	dup.Payload = map[string]any{"variant": "other"}
	twice.Events = append(twice.Events, dup)
	_, err = h.commit(ports.Tenantless(), twice, lease.Token)
	h.errIs(err, ports.ErrEventConflict, "Commit proposing two different events at one seq")
	h.unchanged(before, "run after a self-conflicting proposal")

	// The claim is intact: the proper commit still goes through.
	h.mustCommit(ports.Tenantless(), continueMoment(h, r, "clean"), lease.Token)
}

func checkLostFenceEvents(h *harness) {
	r, lease := h.insertClaimed()
	winner := continueMoment(h, r, "winner")
	loser := continueMoment(h, r, "loser")
	h.mustCommit(ports.Tenantless(), winner, lease.Token)
	_, err := h.commit(ports.Tenantless(), loser, lease.Token)
	h.errIs(err, ports.ErrStaleFence, "Commit at a fence the winner already moved")
	h.eventsAbsent(loser, "the losing commit")
	h.eventsStored(winner, "the winning commit")

	foreign := continueMoment(h, h.fetch(ports.System(), r.ID), "foreign")
	_, err = h.commit(ports.Tenantless(), foreign, foreignToken())
	h.errIs(err, ports.ErrStaleFence, "Commit with a foreign token")
	for _, e := range foreign.Events {
		_, err := h.b.FetchEvent(h.ctx, ports.System(), r.ID, e.Seq)
		h.errIs(err, ports.ErrNotFound, "event %d of the foreign-token commit", e.Seq)
	}
}

func int64p(v int64) *int64 { return &v }

func (h *harness) checkPage(p *ports.EventPage, seqs []int64, next int64, more bool, oldest, latest *int64, latestSeq int64, what string) {
	h.Helper()
	got := make([]int64, 0, len(p.Events))
	for _, e := range p.Events {
		got = append(got, e.Seq)
	}
	h.expect(slices.Equal(got, seqs), "%s: seqs %v, want %v", what, got, seqs)
	eq(h, p.NextAfterSeq, next, "%s: next_after_seq", what)
	eq(h, p.HasMore, more, "%s: has_more", what)
	h.expect(equalPtr(p.OldestAvailableSeq, oldest), "%s: oldest_available_seq %s, want %s", what, ptrString(p.OldestAvailableSeq), ptrString(oldest))
	h.expect(equalPtr(p.LatestAvailableSeq, latest), "%s: latest_available_seq %s, want %s", what, ptrString(p.LatestAvailableSeq), ptrString(latest))
	eq(h, p.LatestSeq, latestSeq, "%s: latest_seq", what)
}

func equalPtr(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func ptrString(p *int64) string {
	if p == nil {
		return "nil"
	}
	return strconv.FormatInt(*p, 10)
}

func checkEventPages(h *harness) {
	owner := ports.Tenantless()
	h.publish(owner)
	id := h.id("pages")
	m := h.initMoment(id, t0)
	if len(m.Events) != 4 || m.Run.EventSeq != 4 {
		h.Fatalf("fixture: the initial moment should carry events 1..4, got %d (event_seq %d)", len(m.Events), m.Run.EventSeq)
	}
	m.Events = []run.Event{m.Events[0], m.Events[2], m.Events[3]} // events 1, 3, 4
	_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: t0})
	h.must(err, "InsertRun with events 1, 3, 4")

	list := func(after int64, limit int) *ports.EventPage {
		h.Helper()
		p, err := h.b.ListEvents(h.ctx, owner, id, ports.ListEventsParams{AfterSeq: after, Limit: limit})
		h.must(err, "ListEvents(after %d, limit %d)", after, limit)
		return p
	}
	one, four := int64p(1), int64p(4)
	h.checkPage(list(0, 1), []int64{1}, 1, true, one, four, 4, "ListEvents(after 0, limit 1)")
	h.checkPage(list(1, 10), []int64{3, 4}, 4, false, one, four, 4, "ListEvents(after 1)")
	h.checkPage(list(2, 1), []int64{3}, 3, true, one, four, 4, "ListEvents(after 2, limit 1)")
	h.checkPage(list(4, 10), nil, 4, false, one, four, 4, "ListEvents(after 4)")
	h.checkPage(list(0, 3), []int64{1, 3, 4}, 4, false, one, four, 4, "ListEvents(after 0, limit 3)")

	latest, err := h.b.FetchLatestEvent(h.ctx, owner, id)
	if h.expect(err == nil && latest != nil, "FetchLatestEvent: %v", describeErr(err)) {
		eq(h, latest.Seq, int64(4), "latest event seq")
	}
	_, err = h.b.FetchEvent(h.ctx, owner, id, 2)
	h.errIs(err, ports.ErrNotFound, "FetchEvent of the gap")
	got := h.storedEvent(id, 3)
	h.expect(got.Equal(m.Events[1]), "event 3: got %+v, want %+v", got, m.Events[1])
}

func checkPrunedHistory(h *harness) {
	r := h.insert(ports.Tenantless())
	n, err := h.b.PruneEvents(h.ctx, ports.PruneParams{Before: at(time.Hour), BatchSize: 100})
	h.must(err, "PruneEvents")
	eq(h, n, 4, "events pruned")
	latest, err := h.b.FetchLatestEvent(h.ctx, ports.Tenantless(), r.ID)
	h.must(err, "FetchLatestEvent of a fully pruned run")
	h.expect(latest == nil, "FetchLatestEvent of a fully pruned run: got seq %d, want none", seqOf(latest))
	p, err := h.b.ListEvents(h.ctx, ports.Tenantless(), r.ID, ports.ListEventsParams{Limit: 10})
	h.must(err, "ListEvents of a fully pruned run")
	h.checkPage(p, nil, 0, false, nil, nil, 4, "ListEvents of a fully pruned run")
	p, err = h.b.ListEvents(h.ctx, ports.Tenantless(), r.ID, ports.ListEventsParams{AfterSeq: 2, Limit: 10})
	h.must(err, "ListEvents(after 2) of a fully pruned run")
	h.checkPage(p, nil, 2, false, nil, nil, 4, "ListEvents(after 2) of a fully pruned run")
	_, err = h.b.FetchEvent(h.ctx, ports.Tenantless(), r.ID, 1)
	h.errIs(err, ports.ErrNotFound, "FetchEvent of a pruned event")
	h.sameRun(h.fetch(ports.Tenantless(), r.ID), r, "the run survives event pruning")
}

func seqOf(e *run.Event) int64 {
	if e == nil {
		return 0
	}
	return e.Seq
}

func checkEventReadInput(h *harness) {
	r := h.insert(ports.Tenantless())
	unknown := h.id("unknown")
	_, err := h.b.ListEvents(h.ctx, ports.System(), unknown, ports.ListEventsParams{Limit: 10})
	h.errIs(err, ports.ErrNotFound, "ListEvents of an unknown run")
	_, err = h.b.FetchLatestEvent(h.ctx, ports.System(), unknown)
	h.errIs(err, ports.ErrNotFound, "FetchLatestEvent of an unknown run")
	_, err = h.b.FetchEvent(h.ctx, ports.System(), unknown, 1)
	h.errIs(err, ports.ErrNotFound, "FetchEvent of an unknown run")
	_, err = h.b.FetchEvent(h.ctx, ports.System(), r.ID, 99)
	h.errIs(err, ports.ErrNotFound, "FetchEvent beyond the latest seq")

	_, err = h.b.FetchEvent(h.ctx, ports.System(), r.ID, 0)
	h.errIs(err, ports.ErrInvalidArgument, "FetchEvent(seq 0)")
	for _, p := range []ports.ListEventsParams{
		{AfterSeq: -1, Limit: 10},
		{Limit: 0},
		{Limit: ports.MaxPageLimit + 1},
	} {
		_, err := h.b.ListEvents(h.ctx, ports.System(), r.ID, p)
		h.errIs(err, ports.ErrInvalidArgument, "ListEvents(after %d, limit %d)", p.AfterSeq, p.Limit)
	}
	p, err := h.b.ListEvents(h.ctx, ports.System(), r.ID, ports.ListEventsParams{Limit: ports.MaxPageLimit})
	h.must(err, "ListEvents at the maximum limit")
	eq(h, len(p.Events), 4, "events listed")
}

// checkEventPageAtTheLastSeq pages after math.MaxInt64: no seq is larger,
// so the page is empty (a store that computes AfterSeq+1 wraps around to
// the first event).
func checkEventPageAtTheLastSeq(h *harness) {
	r := h.insert(ports.Tenantless())
	page, err := h.b.ListEvents(h.ctx, ports.Tenantless(), r.ID, ports.ListEventsParams{AfterSeq: math.MaxInt64, Limit: 10})
	h.must(err, "ListEvents after seq %d", int64(math.MaxInt64))
	eq(h, len(page.Events), 0, "events after seq %d", int64(math.MaxInt64))
	eq(h, page.NextAfterSeq, int64(math.MaxInt64), "NextAfterSeq of the empty page")
	eq(h, page.HasMore, false, "HasMore after the largest seq")
	eq(h, page.LatestSeq, r.EventSeq, "LatestSeq")
}

// checkNonPortablePayload commits events whose payload is not a portable
// value, which no store can hold as it was given: each commit is
// ErrInvalidCommit and changes nothing.
func checkNonPortablePayload(h *harness) {
	for _, c := range []struct {
		name    string
		payload map[string]any
	}{
		{"a Go int", map[string]any{"n": 1}},
		{"a NaN", map[string]any{"x": math.NaN()}},
		{"text that is not UTF-8", map[string]any{"s": "\xff"}},
		{"a key that is not UTF-8", map[string]any{"\xff": "s"}},
		{"a reserved key", map[string]any{"$ref": "x"}},
		{"a Go struct", map[string]any{"t": struct{}{}}},
	} {
		r, lease := h.insertClaimed()
		before := h.inspect(r.ID)
		m := continueMoment(h, r, "non-portable")
		m.Events[0].Payload = c.payload
		_, err := h.commit(ports.Tenantless(), m, lease.Token)
		if h.errIs(err, ports.ErrInvalidCommit, "Commit of an event payload holding %s", c.name) {
			var invalid *ports.InvalidCommitError
			h.expect(errors.As(err, &invalid) && invalid.Reason != "", "Commit of an event payload holding %s: got %T, want a *ports.InvalidCommitError with its reason", c.name, err)
		}
		h.unchanged(before, "run after Commit of an event payload holding %s", c.name)
		h.eventsAbsent(m, "Commit of an event payload holding %s", c.name)
	}
}

// checkEventIDsNoTextCanHold commits events whose node, channel or task id
// no text column can hold (a NUL byte, bytes that are not UTF-8): each
// commit is ErrInvalidCommit and changes nothing.
func checkEventIDsNoTextCanHold(h *harness) {
	for _, c := range []struct {
		name string
		set  func(e *run.Event)
	}{
		{"a node id holding NUL", func(e *run.Event) { e.NodeID = "a\x00b" }},
		{"a node id that is not UTF-8", func(e *run.Event) { e.NodeID = "\xff" }},
		{"a channel id holding NUL", func(e *run.Event) { e.ChannelID = "state:\x00" }},
		{"a task id that is not UTF-8", func(e *run.Event) { e.TaskID = "t\xfe" }},
	} {
		r, lease := h.insertClaimed()
		before := h.inspect(r.ID)
		m := continueMoment(h, r, "unholdable id")
		c.set(&m.Events[0])
		_, err := h.commit(ports.Tenantless(), m, lease.Token)
		if h.errIs(err, ports.ErrInvalidCommit, "Commit of an event with %s", c.name) {
			var invalid *ports.InvalidCommitError
			h.expect(errors.As(err, &invalid) && invalid.Reason != "", "Commit of an event with %s: got %T, want a *ports.InvalidCommitError with its reason", c.name, err)
		}
		h.unchanged(before, "run after Commit of an event with %s", c.name)
		h.eventsAbsent(m, "Commit of an event with %s", c.name)
	}
}
