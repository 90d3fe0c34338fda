package conformance

import (
	"fmt"
	"sort"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// ---- SCOPE ----------------------------------------------------------------

// invisible checks that every scoped read and write of runID under scope
// is ErrNotFound.
func (h *harness) invisible(scope ports.Scope, r *run.Run, lease *ports.Lease) {
	h.Helper()
	_, err := h.b.FetchRun(h.ctx, scope, r.ID)
	h.errIs(err, ports.ErrNotFound, "FetchRun(%s)", scope)
	_, err = h.b.InspectRun(h.ctx, scope, r.ID)
	h.errIs(err, ports.ErrNotFound, "InspectRun(%s)", scope)
	_, err = h.b.ListEvents(h.ctx, scope, r.ID, ports.ListEventsParams{Limit: 10})
	h.errIs(err, ports.ErrNotFound, "ListEvents(%s)", scope)
	_, err = h.b.FetchEvent(h.ctx, scope, r.ID, 1)
	h.errIs(err, ports.ErrNotFound, "FetchEvent(%s)", scope)
	_, err = h.b.FetchLatestEvent(h.ctx, scope, r.ID)
	h.errIs(err, ports.ErrNotFound, "FetchLatestEvent(%s)", scope)
	_, err = h.b.RetryPoisonedRun(h.ctx, scope, r.ID, t0)
	h.errIs(err, ports.ErrNotFound, "RetryPoisonedRun(%s)", scope)
	called := false
	_, err = h.b.MutateRun(h.ctx, scope, r.ID, func(cur *run.Run) (*run.Moment, error) {
		called = true
		return immediateMoment(h, cur, "intruder"), nil
	})
	h.errIs(err, ports.ErrNotFound, "MutateRun(%s)", scope)
	h.expect(!called, "MutateRun(%s) handed an invisible run to the mutation", scope)
	if lease != nil {
		_, err = h.commit(scope, continueMoment(h, r, "intruder"), lease.Token)
		h.errIs(err, ports.ErrNotFound, "Commit(%s)", scope)
	}
	page, err := h.b.ListRuns(h.ctx, scope, ports.ListRunsParams{Limit: ports.MaxPageLimit})
	if h.expect(err == nil, "ListRuns(%s): %v", scope, err) {
		for _, s := range page.Runs {
			h.expect(s.RunID != r.ID, "ListRuns(%s) lists an invisible run", scope)
		}
	}
}

// visible checks that runID reads back under scope.
func (h *harness) visible(scope ports.Scope, r *run.Run) {
	h.Helper()
	got, err := h.b.FetchRun(h.ctx, scope, r.ID)
	if h.expect(err == nil, "FetchRun(%s): %v", scope, err) {
		h.sameRun(got, r, "FetchRun(%s)", scope)
	}
	_, err = h.b.InspectRun(h.ctx, scope, r.ID)
	h.expect(err == nil, "InspectRun(%s): %v", scope, err)
	_, err = h.b.FetchEvent(h.ctx, scope, r.ID, 1)
	h.expect(err == nil, "FetchEvent(%s): %v", scope, err)
	_, err = h.b.ListEvents(h.ctx, scope, r.ID, ports.ListEventsParams{Limit: 10})
	h.expect(err == nil, "ListEvents(%s): %v", scope, err)
}

func checkRunIsolation(h *harness) {
	tenantA, tenantB := ports.Tenant(h.id("a")), ports.Tenant(h.id("b"))
	h.publish(tenantB)
	ra := h.insert(tenantA)
	lease := h.claimOne(t0, ra.ID)
	before := h.inspect(ra.ID)
	for _, scope := range []ports.Scope{tenantB, ports.Tenantless()} {
		h.invisible(scope, ra, &lease)
	}
	h.unchanged(before, "the tenant's run after foreign-scope calls")
	h.visible(tenantA, ra)
	h.visible(ports.System(), ra)

	rl := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Hour)})
	for _, scope := range []ports.Scope{tenantA, tenantB} {
		h.invisible(scope, rl, nil)
	}
	h.visible(ports.Tenantless(), rl)
	h.visible(ports.System(), rl)
}

func checkRunIDsGlobal(h *harness) {
	tenantA, tenantB := ports.Tenant(h.id("a")), ports.Tenant(h.id("b"))
	r := h.insert(tenantA)
	before := h.inspect(r.ID)
	for _, owner := range []ports.OwnerScope{tenantB, ports.Tenantless()} {
		h.publish(owner)
		_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: h.initMoment(r.ID, t0), WakeAt: t0})
		h.errIs(err, ports.ErrConflict, "inserting %s's run id under %s", tenantA, owner)
		h.invisible(owner, r, nil)
	}
	h.unchanged(before, "the original run")
	eq(h, h.inspect(r.ID).Owner, tenantA, "owner of the original run")
}

func checkGraphIsolation(h *harness) {
	tenantA, tenantB := ports.Tenant(h.id("a")), ports.Tenant(h.id("b"))
	c := h.publish(tenantA)
	h.publish(ports.Tenantless())
	ref := ports.GraphRef{GraphID: c.GraphID, Hash: c.Hash}

	for _, owner := range []ports.OwnerScope{tenantA, ports.Tenantless()} {
		g, err := h.b.FetchGraph(h.ctx, owner, ref)
		if h.expect(err == nil, "FetchGraph(%s): %v", owner, err) {
			hash, herr := graph.Hash(g)
			h.expect(herr == nil && hash == c.Hash, "FetchGraph(%s) returns the published document", owner)
		}
	}
	_, err := h.b.FetchGraph(h.ctx, tenantB, ref)
	h.errIs(err, ports.ErrNotFound, "FetchGraph from another tenant")
	_, err = h.b.FetchLatestGraphRef(h.ctx, tenantB, c.GraphID)
	h.errIs(err, ports.ErrNotFound, "FetchLatestGraphRef from another tenant")
	page, err := h.b.ListGraphVersions(h.ctx, tenantB, c.GraphID, ports.ListGraphVersionsParams{Limit: 10})
	if h.expect(err == nil, "ListGraphVersions from another tenant: %v", err) {
		eq(h, len(page.Versions), 0, "versions visible to another tenant")
	}

	for _, scope := range []ports.Scope{ports.System(), {}} {
		_, err = h.b.SaveGraph(h.ctx, scope, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
		h.errIs(err, ports.ErrInvalidScope, "SaveGraph(%s)", scope)
		_, err = h.b.FetchGraph(h.ctx, scope, ref)
		h.errIs(err, ports.ErrInvalidScope, "FetchGraph(%s)", scope)
		_, err = h.b.FetchLatestGraphRef(h.ctx, scope, c.GraphID)
		h.errIs(err, ports.ErrInvalidScope, "FetchLatestGraphRef(%s)", scope)
		_, err = h.b.ListGraphVersions(h.ctx, scope, c.GraphID, ports.ListGraphVersionsParams{Limit: 10})
		h.errIs(err, ports.ErrInvalidScope, "ListGraphVersions(%s)", scope)
	}
}

type listedRun struct {
	id        string
	startedAt time.Time
}

// walkRuns pages through ListRuns with limit and returns the ids in order.
func (h *harness) walkRuns(scope ports.Scope, p ports.ListRunsParams) []string {
	h.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		if pages > 100 {
			h.Fatalf("ListRuns(%s) never ends", scope)
		}
		page, err := h.b.ListRuns(h.ctx, scope, p)
		h.must(err, "ListRuns(%s)", scope)
		for _, s := range page.Runs {
			ids = append(ids, s.RunID)
		}
		if len(page.Runs) > p.Limit {
			h.Errorf("ListRuns(%s) returned %d runs for limit %d", scope, len(page.Runs), p.Limit)
		}
		if len(page.Runs) > 0 {
			last := page.Runs[len(page.Runs)-1]
			if h.expect(page.NextBefore != nil, "ListRuns(%s): a non-empty page has a cursor", scope) {
				h.expect(page.NextBefore.RunID == last.RunID && page.NextBefore.StartedAt.Equal(last.StartedAt),
					"ListRuns(%s): the cursor is the last row's key", scope)
			}
		}
		if !page.HasMore {
			// The trailing empty page keeps the cursor it was given.
			if page.NextBefore != nil {
				cursor := *page.NextBefore
				tail, err := h.b.ListRuns(h.ctx, scope, ports.ListRunsParams{Limit: p.Limit, Before: &cursor,
					GraphID: p.GraphID, GraphHash: p.GraphHash, Statuses: p.Statuses})
				h.must(err, "ListRuns(%s) past the end", scope)
				eq(h, len(tail.Runs), 0, "ListRuns(%s) past the end", scope)
				eq(h, tail.HasMore, false, "ListRuns(%s) past the end: has_more", scope)
				h.expect(tail.NextBefore != nil && *tail.NextBefore == cursor, "ListRuns(%s): an empty page echoes its cursor", scope)
			}
			return ids
		}
		p.Before = page.NextBefore
	}
}

func expectedOrder(runs []listedRun) []string {
	sort.Slice(runs, func(i, j int) bool {
		if !runs[i].startedAt.Equal(runs[j].startedAt) {
			return runs[i].startedAt.After(runs[j].startedAt)
		}
		return runs[i].id > runs[j].id
	})
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.id
	}
	return ids
}

func checkListRuns(h *harness) {
	tenantA, tenantB := ports.Tenant(h.id("a")), ports.Tenant(h.id("b"))
	byScope := map[ports.Scope][]listedRun{}
	var all []listedRun
	add := func(owner ports.OwnerScope, started time.Duration) {
		r := h.insert(owner, runOpts{startedAt: at(started), wakeAt: at(time.Hour)})
		lr := listedRun{r.ID, r.StartedAt}
		byScope[owner] = append(byScope[owner], lr)
		all = append(all, lr)
	}
	for _, d := range []time.Duration{0, time.Second, time.Second, time.Second, 2 * time.Second} {
		add(tenantA, d)
	}
	add(tenantB, time.Second)
	add(ports.Tenantless(), 3*time.Second)
	add(ports.Tenantless(), time.Second)
	// A commit moves a run's updated_at, never its place in the list:
	// cancel the oldest run an hour later.
	h.clock.Set(at(time.Hour))
	h.must(errOf(h.b.MutateRun(h.ctx, tenantA, byScope[tenantA][0].id, cancelMutation(h))), "cancelling the oldest run")
	h.clock.Set(t0)

	for _, limit := range []int{1, 2, 100} {
		for scope, runs := range byScope {
			got := h.walkRuns(scope, ports.ListRunsParams{Limit: limit})
			want := expectedOrder(append([]listedRun(nil), runs...))
			h.expect(fmt.Sprint(got) == fmt.Sprint(want), "ListRuns(%s, limit %d): got %v, want %v", scope, limit, got, want)
		}
		got := h.walkRuns(ports.System(), ports.ListRunsParams{Limit: limit})
		want := expectedOrder(append([]listedRun(nil), all...))
		h.expect(fmt.Sprint(got) == fmt.Sprint(want), "ListRuns(system, limit %d): got %v, want %v", limit, got, want)
	}

	// Summaries carry the committed facts of their run.
	page, err := h.b.ListRuns(h.ctx, tenantA, ports.ListRunsParams{Limit: 1})
	h.must(err, "ListRuns")
	if h.expect(len(page.Runs) == 1 && page.HasMore, "ListRuns(limit 1) has one run and more") {
		s := page.Runs[0]
		r := h.fetch(tenantA, s.RunID)
		eq(h, s.Owner, tenantA, "summary owner")
		eq(h, s.GraphID, r.GraphID, "summary graph id")
		eq(h, s.GraphHash, r.GraphHash, "summary graph hash")
		eq(h, s.Status, r.Status, "summary status")
		eq(h, s.Step, r.Step, "summary step")
		eq(h, s.CheckpointSeq, r.CheckpointSeq, "summary checkpoint seq")
		h.eqTime(s.StartedAt, r.StartedAt, "summary started_at")
		h.eqTime(s.UpdatedAt, r.UpdatedAt, "summary updated_at")
		h.eqTime(s.FinishedAt, r.FinishedAt, "summary finished_at")
	}
}

func checkInvalidScope(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	var zero ports.Scope
	_, err := h.b.FetchRun(h.ctx, zero, r.ID)
	h.errIs(err, ports.ErrInvalidScope, "FetchRun(zero scope)")
	_, err = h.b.InspectRun(h.ctx, zero, r.ID)
	h.errIs(err, ports.ErrInvalidScope, "InspectRun(zero scope)")
	_, err = h.b.ListRuns(h.ctx, zero, ports.ListRunsParams{Limit: 10})
	h.errIs(err, ports.ErrInvalidScope, "ListRuns(zero scope)")
	_, err = h.commit(zero, continueMoment(h, r, "zero"), lease.Token)
	h.errIs(err, ports.ErrInvalidScope, "Commit(zero scope)")
	_, err = h.mutate(zero, r.ID, immediateMoment(h, r, "zero"))
	h.errIs(err, ports.ErrInvalidScope, "MutateRun(zero scope)")
	_, err = h.b.RetryPoisonedRun(h.ctx, zero, r.ID, t0)
	h.errIs(err, ports.ErrInvalidScope, "RetryPoisonedRun(zero scope)")
	_, err = h.b.ListEvents(h.ctx, zero, r.ID, ports.ListEventsParams{Limit: 10})
	h.errIs(err, ports.ErrInvalidScope, "ListEvents(zero scope)")
	_, err = h.b.FetchEvent(h.ctx, zero, r.ID, 1)
	h.errIs(err, ports.ErrInvalidScope, "FetchEvent(zero scope)")
	_, err = h.b.FetchLatestEvent(h.ctx, zero, r.ID)
	h.errIs(err, ports.ErrInvalidScope, "FetchLatestEvent(zero scope)")
	h.unchanged(before, "run after zero-scope calls")

	h.publish(ports.Tenantless())
	for _, owner := range []ports.Scope{ports.System(), zero, ports.Tenant("")} {
		id := h.id("owner")
		_, err := h.b.InsertRun(h.ctx, owner, ports.InsertRunParams{Moment: h.initMoment(id, t0), WakeAt: t0})
		h.errIs(err, ports.ErrInvalidScope, "InsertRun(%s)", owner)
		_, err = h.b.FetchRun(h.ctx, ports.System(), id)
		h.errIs(err, ports.ErrNotFound, "FetchRun after InsertRun(%s)", owner)
	}
}

// ---- GRAPH ----------------------------------------------------------------

func (h *harness) save(owner ports.OwnerScope, c *graph.Compiled) *ports.GraphVersion {
	h.Helper()
	v, err := h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	h.must(err, "SaveGraph(%s, %s)", owner, c.Hash)
	if v == nil {
		h.Fatalf("SaveGraph returned no version")
	}
	eq(h, v.Ref, ports.GraphRef{GraphID: c.GraphID, Hash: c.Hash}, "saved ref")
	return v
}

func (h *harness) versions(owner ports.OwnerScope, graphID string, limit int) []ports.GraphVersion {
	h.Helper()
	var out []ports.GraphVersion
	p := ports.ListGraphVersionsParams{Limit: limit}
	for pages := 0; ; pages++ {
		if pages > 100 {
			h.Fatalf("ListGraphVersions never ends")
		}
		page, err := h.b.ListGraphVersions(h.ctx, owner, graphID, p)
		h.must(err, "ListGraphVersions")
		out = append(out, page.Versions...)
		if !page.HasMore {
			if page.NextBefore != nil {
				cursor := *page.NextBefore
				tail, err := h.b.ListGraphVersions(h.ctx, owner, graphID, ports.ListGraphVersionsParams{Limit: limit, Before: &cursor})
				h.must(err, "ListGraphVersions past the end")
				h.expect(len(tail.Versions) == 0 && !tail.HasMore && tail.NextBefore != nil && *tail.NextBefore == cursor,
					"ListGraphVersions past the end: an empty page echoing its cursor")
			}
			return out
		}
		p.Before = page.NextBefore
	}
}

func checkGraphResave(h *harness) {
	owner := ports.Tenant(h.id("tenant"))
	f := h.graphs()
	h.clock.Set(at(time.Second))
	v1 := h.save(owner, f.main)
	h.eqTime(v1.PublishedAt, at(time.Second), "published_at (store clock)")
	h.clock.Set(at(2 * time.Second))
	h.save(owner, f.alt)
	h.clock.Set(at(3 * time.Second))
	again := h.save(owner, f.main)
	h.eqTime(again.PublishedAt, at(time.Second), "published_at of a re-save")
	got := h.versions(owner, fixtureGraphID, 10)
	if h.expect(len(got) == 2, "versions after a re-save: %v", got) {
		eq(h, got[0].Ref.Hash, f.alt.Hash, "newest version after a re-save")
		eq(h, got[1].Ref.Hash, f.main.Hash, "older version after a re-save")
		h.eqTime(got[1].PublishedAt, at(time.Second), "listed published_at of the re-saved version")
	}
	latest, err := h.b.FetchLatestGraphRef(h.ctx, owner, fixtureGraphID)
	if h.expect(err == nil, "FetchLatestGraphRef: %v", err) {
		eq(h, latest.Ref.Hash, f.alt.Hash, "latest after a re-save")
	}
}

func checkGraphHash(h *harness) {
	owner := ports.Tenantless()
	f := h.graphs()
	_, err := h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: f.main.Effective, Hash: f.alt.Hash})
	h.errIs(err, ports.ErrInvalidGraphHash, "SaveGraph under another document's hash")
	_, err = h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Graph: f.main.Effective, Hash: "not-a-hash"})
	h.errIs(err, ports.ErrInvalidGraphHash, "SaveGraph under a malformed hash")
	for _, hash := range []string{f.alt.Hash, "not-a-hash"} {
		_, err = h.b.FetchGraph(h.ctx, owner, ports.GraphRef{GraphID: fixtureGraphID, Hash: hash})
		h.errIs(err, ports.ErrNotFound, "FetchGraph after a rejected save")
	}
	_, err = h.b.SaveGraph(h.ctx, owner, ports.SaveGraphParams{Hash: f.main.Hash})
	h.errIs(err, ports.ErrInvalidGraph, "SaveGraph without a document")
	page, err := h.b.ListGraphVersions(h.ctx, owner, fixtureGraphID, ports.ListGraphVersionsParams{Limit: 10})
	if h.expect(err == nil, "ListGraphVersions: %v", err) {
		eq(h, len(page.Versions), 0, "versions after rejected saves")
	}

	h.save(owner, f.main)
	g, err := h.b.FetchGraph(h.ctx, owner, ports.GraphRef{GraphID: fixtureGraphID, Hash: f.main.Hash})
	h.must(err, "FetchGraph")
	hash, err := graph.Hash(g)
	h.must(err, "graph.Hash of the fetched document")
	eq(h, hash, f.main.Hash, "the fetched document hashes to its ref")
}

func checkGraphVersions(h *harness) {
	owner := ports.Tenant(h.id("tenant"))
	f := h.graphs()
	third, err := compileFixture("conformance fixture, third version")
	h.must(err, "compiling a third version")
	fourth, err := compileFixture("conformance fixture, fourth version")
	h.must(err, "compiling a fourth version")
	h.clock.Set(at(time.Second))
	h.save(owner, f.main)
	h.clock.Set(at(2 * time.Second))
	h.save(owner, f.alt)
	// Two versions published at one instant order by hash, descending.
	h.clock.Set(at(3 * time.Second))
	h.save(owner, third)
	h.save(owner, fourth)
	tied := []string{third.Hash, fourth.Hash}
	sort.Sort(sort.Reverse(sort.StringSlice(tied)))
	want := append(tied, f.alt.Hash, f.main.Hash)
	for _, limit := range []int{1, 3, 10} {
		got := h.versions(owner, fixtureGraphID, limit)
		hashes := make([]string, len(got))
		for i, v := range got {
			hashes[i] = v.Ref.Hash
		}
		h.expect(fmt.Sprint(hashes) == fmt.Sprint(want), "versions (limit %d): got %v, want %v", limit, hashes, want)
	}
	latest, err := h.b.FetchLatestGraphRef(h.ctx, owner, fixtureGraphID)
	if h.expect(err == nil, "FetchLatestGraphRef: %v", err) {
		eq(h, latest.Ref.Hash, want[0], "latest is the first listed version")
		h.eqTime(latest.PublishedAt, at(3*time.Second), "latest published_at")
	}
	unknown := h.id("no-such-graph")
	page, err := h.b.ListGraphVersions(h.ctx, owner, unknown, ports.ListGraphVersionsParams{Limit: 10})
	if h.expect(err == nil, "ListGraphVersions of an unknown graph: %v", err) {
		h.expect(len(page.Versions) == 0 && !page.HasMore, "an unknown graph lists an empty page")
	}
	_, err = h.b.FetchLatestGraphRef(h.ctx, owner, unknown)
	h.errIs(err, ports.ErrNotFound, "FetchLatestGraphRef of an unknown graph")
	_, err = h.b.FetchGraph(h.ctx, owner, ports.GraphRef{GraphID: unknown, Hash: f.main.Hash})
	h.errIs(err, ports.ErrNotFound, "FetchGraph of an unknown graph")
	for _, limit := range []int{0, ports.MaxPageLimit + 1} {
		_, err = h.b.ListGraphVersions(h.ctx, owner, fixtureGraphID, ports.ListGraphVersionsParams{Limit: limit})
		h.errIs(err, ports.ErrInvalidArgument, "ListGraphVersions(limit %d)", limit)
	}
}
