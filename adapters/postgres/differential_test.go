package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math"

	"strings"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The differential test drives the memory adapter and this one with the
// same generated operation sequences and requires the same outcome of
// every call (error class, values, cursors, times) and the same stored
// state after every step. Tokens are the only values the two may differ
// in: each side keeps its own, addressed by position.

type diffAnyImpl struct{}

func (diffAnyImpl) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

func diffGraph(t testing.TB, id, description string) *graph.Compiled {
	t.Helper()
	g, err := graph.New(id).
		Description(description).
		Input("topic", schema.String()).
		State("answer", schema.String()).
		Node("ask", "diff.ask").
		Edge("start_to_ask", graph.Start, "ask").
		Edge("ask_to_finish", "ask", graph.Finish).
		Output("answer", "answer").
		Build()
	require.NoError(t, err)
	c, err := graph.Compile(g, diffAnyImpl{}, graph.Options{Profile: graph.ProfilePublish})
	require.NoError(t, err)
	return c
}

// diffSide is one backend under test with its clock and its tokens.
type diffSide struct {
	name   string
	b      ports.Backend
	tokens map[string][]ports.ClaimToken // per run, oldest first
}

type diffWorld struct {
	ctx     context.Context
	clock   *conformance.ManualClock
	sides   [2]*diffSide
	graphs  []*graph.Compiled
	owners  []ports.OwnerScope
	runIDs  []string
	counter int
	// minLimit is the smallest claim demand the policy answers alike.
	minLimit int
	log      []string
}

func errClass(err error) string {
	if err == nil {
		return "ok"
	}
	for _, s := range []error{ports.ErrNotFound, ports.ErrConflict, ports.ErrStaleFence, ports.ErrInvalidCommit,
		ports.ErrClaimLost, ports.ErrInactiveRun, ports.ErrEventConflict, ports.ErrInvalidScope,
		ports.ErrInvalidArgument, ports.ErrInvalidGraph, ports.ErrInvalidGraphHash, ports.ErrGraphContentConflict,
		ports.ErrCorruptRun, ports.ErrCorruptEvent, ports.ErrCorruptGraph, ports.ErrClaimPolicyUnavailable,
		ports.ErrUnsupported, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return "untyped: " + err.Error()
}

func (w *diffWorld) fail(t *rapid.T, format string, args ...any) {
	t.Fatalf("%s\nafter:\n  %s", fmt.Sprintf(format, args...), strings.Join(w.log, "\n  "))
}

// same compares the two sides' outcomes of one call.
func (w *diffWorld) same(t *rapid.T, what string, errs [2]error, vals [2]any) {
	w.log = append(w.log, fmt.Sprintf("%s -> %s", what, errClass(errs[0])))
	c0, c1 := errClass(errs[0]), errClass(errs[1])
	if c0 != c1 {
		w.fail(t, "%s: memory %q (%v), postgres %q (%v)", what, c0, errs[0], c1, errs[1])
	}
	for i, err := range errs {
		if strings.HasPrefix(errClass(err), "untyped:") {
			w.fail(t, "%s: %s returned an untyped error: %v", what, w.sides[i].name, err)
		}
	}
	if errs[0] == nil {
		if d := diffValues(vals[0], vals[1]); d != "" {
			w.fail(t, "%s: values differ: %s", what, d)
		}
	}
}

// diffValues is testify's diff of a and b, or "" when they are equal.
func diffValues(a, b any) string {
	ft := &fakeT{}
	assert.Equal(ft, a, b)
	return ft.msg
}

type fakeT struct {
	failed bool
	msg    string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.failed, f.msg = true, fmt.Sprintf(format, args...)
}
func (f *fakeT) FailNow() {}

func encodeRun(r *run.Run) string {
	if r == nil {
		return "<nil>"
	}
	b, err := run.Encode(r)
	if err != nil {
		return "unencodable: " + err.Error()
	}
	return string(b)
}

type infoView struct {
	Run                              string
	Owner                            ports.OwnerScope
	Type                             run.CheckpointType
	WakeAt, ClaimedAt, PoisonedAt    time.Time
	Attempts, Abandons               int
	Reason                           string
	Events                           []run.Event
	LatestSeq                        int64
	Oldest, Latest                   *int64
	WakeLoc, ClaimedLoc, PoisonedLoc string
}

func (w *diffWorld) snapshot(t *rapid.T, what string) {
	for _, id := range w.runIDs {
		var errs [2]error
		var vals [2]any
		for i, s := range w.sides {
			info, err := s.b.InspectRun(w.ctx, ports.System(), id)
			errs[i] = err
			if err != nil {
				continue
			}
			page, err := s.b.ListEvents(w.ctx, ports.System(), id, ports.ListEventsParams{Limit: ports.MaxPageLimit})
			if err != nil {
				errs[i] = err
				continue
			}
			vals[i] = infoView{Run: encodeRun(info.Run), Owner: info.Owner, Type: info.LatestCheckpointType,
				WakeAt: info.WakeAt, ClaimedAt: info.ClaimedAt, PoisonedAt: info.PoisonedAt,
				Attempts: info.ClaimAttempts, Abandons: info.ClaimAbandons, Reason: info.PoisonReason,
				Events: page.Events, LatestSeq: page.LatestSeq, Oldest: page.OldestAvailableSeq, Latest: page.LatestAvailableSeq,
				WakeLoc: info.WakeAt.Location().String(), ClaimedLoc: info.ClaimedAt.Location().String(),
				PoisonedLoc: info.PoisonedAt.Location().String()}
		}
		w.same(t, fmt.Sprintf("state of %s after %s", id, what), errs, vals)
		w.log = w.log[:len(w.log)-1]
	}
}

func (w *diffWorld) token(s *diffSide, runID string, pick int) ports.ClaimToken {
	toks := s.tokens[runID]
	switch {
	case pick == 0 && len(toks) > 0:
		return toks[len(toks)-1]
	case pick == 1 && len(toks) > 1:
		return toks[len(toks)-2]
	}
	return ports.ClaimToken{}
}

// zoned renders t in a random zone: stores must answer in UTC whatever
// zone a caller's time is in.
func zoned(t *rapid.T, at time.Time, label string) time.Time {
	if rapid.Bool().Draw(t, label) {
		return at.In(time.FixedZone("diff", -5*3600))
	}
	return at
}

func pickScope(t *rapid.T, owners []ports.OwnerScope, label string) ports.Scope {
	i := rapid.IntRange(0, len(owners)).Draw(t, label)
	if i == len(owners) {
		return ports.System()
	}
	return owners[i]
}

// proposal builds the next moment of r by hand, stamped after the clock.
func (w *diffWorld) proposal(r *run.Run, kind string, wake time.Time) *run.Moment {
	w.counter++
	now := w.clock.Now().Add(time.Duration(w.counter) * time.Microsecond)
	next := r.Clone()
	next.UpdatedAt = now
	next.Metadata = map[string]any{"variant": fmt.Sprint(w.counter)}
	ctype := run.CheckpointStepCommitted
	var d run.Disposition
	switch kind {
	case "continue":
		d = run.Disposition{Kind: run.DispositionContinue}
	case "immediate":
		d = run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget}
	case "at":
		ctype = run.CheckpointRetryScheduled
		d = run.Disposition{Kind: run.DispositionAt, At: wake, Reason: run.ReasonRetryBackoff}
	}
	events := []run.Event{{Type: run.EventChannelUpdated, Step: r.Step, ChannelID: graph.StatePrefix + "answer",
		Payload: map[string]any{"variant": fmt.Sprint(w.counter)}}}
	return run.Propose(r, next, events, ctype, d, now)
}

func (w *diffWorld) graphOf(r *run.Run) *graph.Compiled {
	for _, g := range w.graphs {
		if g.Effective.ID == r.GraphID && g.Hash == r.GraphHash {
			return g
		}
	}
	return nil
}

// moment builds a moment of kind on r (nil when the kind does not apply).
func (w *diffWorld) moment(r *run.Run, kind string, wake time.Time) *run.Moment {
	switch kind {
	case "cancel":
		m, err := superstep.Cancel(r, superstep.Env{Now: w.clock.Now()})
		if err != nil {
			return nil
		}
		return m
	case "interrupt", "answer":
		g := w.graphOf(r)
		if g == nil || r.Status != run.StatusRunning {
			return nil
		}
		step, err := superstep.Advance(g, r, superstep.Env{Now: w.clock.Now()})
		if err != nil || step.Kind != superstep.Execute || len(step.Activations) != 1 {
			return nil
		}
		res := superstep.Result{Outcome: superstep.OutcomeUpdate, Update: map[string]any{"answer": "yes"}}
		if kind == "interrupt" {
			res = superstep.Result{Outcome: superstep.OutcomeInterrupt,
				Interrupt: &superstep.InterruptRequest{ID: "diff-interrupt", ResumeChannel: "answer"}}
		}
		m, err := superstep.Settle(g, r, step, []superstep.Result{res}, superstep.Env{Now: w.clock.Now()})
		if err != nil {
			return nil
		}
		return m
	case "resolve":
		g := w.graphOf(r)
		if g == nil {
			return nil
		}
		m, err := superstep.ResolveInterrupt(g, r, "diff-interrupt", "yes", superstep.Env{Now: w.clock.Now()})
		if err != nil {
			return nil
		}
		return m
	}
	if r.Status.Terminal() {
		return nil
	}
	return w.proposal(r, kind, wake)
}

func (w *diffWorld) step(t *rapid.T) {
	ctx := w.ctx
	op := rapid.SampledFrom([]string{"insert", "insert", "save", "claim", "claim", "commit", "commit", "mutate", "retry",
		"refresh", "release", "abandon", "advance", "list", "events", "prune", "graphs"}).Draw(t, "op")
	var errs [2]error
	var vals [2]any
	what := op
	switch op {
	case "advance":
		d := time.Duration(rapid.IntRange(0, 3000).Draw(t, "ms"))*time.Millisecond +
			time.Duration(rapid.IntRange(0, 999).Draw(t, "ns"))
		w.clock.Advance(d)
		w.log = append(w.log, fmt.Sprintf("advance %v", d))
		return
	case "save":
		owner := rapid.SampledFrom(w.owners).Draw(t, "owner")
		g := rapid.SampledFrom(w.graphs).Draw(t, "graph")
		what = fmt.Sprintf("save %s %s@%s", owner, g.Effective.ID, g.Hash[:6])
		for i, s := range w.sides {
			v, err := s.b.SaveGraph(ctx, owner, ports.SaveGraphParams{Graph: g.Effective, Hash: g.Hash})
			errs[i], vals[i] = err, v
		}
	case "insert":
		owner := rapid.SampledFrom(w.owners).Draw(t, "owner")
		g := w.graphs[0]
		if rapid.IntRange(0, 3).Draw(t, "otherGraph") == 0 {
			g = rapid.SampledFrom(w.graphs).Draw(t, "graph")
		}
		id := rapid.SampledFrom(w.runIDs).Draw(t, "run")
		started := w.clock.Now().Add(-time.Duration(rapid.IntRange(0, 2).Draw(t, "startedMs"))*time.Millisecond +
			time.Duration(rapid.IntRange(0, 2).Draw(t, "startedNs"))*400)
		wake := w.clock.Now().Add(time.Duration(rapid.IntRange(-1000, 1000).Draw(t, "wakeMs"))*time.Millisecond +
			time.Duration(rapid.IntRange(0, 999).Draw(t, "wakeNs")))
		started, wake = zoned(t, started, "startedZone"), zoned(t, wake, "wakeZone")
		m, err := superstep.Start(g, superstep.StartParams{RunID: id, Input: map[string]any{"topic": id}}, superstep.Env{Now: started})
		require.NoError(t, err)
		what = fmt.Sprintf("insert %s %s %s@%s started %s wake %s", id, owner, g.Effective.ID, g.Hash[:6],
			started.Format(time.RFC3339Nano), wake.Format(time.RFC3339Nano))
		for i, s := range w.sides {
			r, err := s.b.InsertRun(ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: wake})
			errs[i], vals[i] = err, encodeRun(r)
		}
	case "claim":
		r := claim.Request{
			Now: zoned(t, w.clock.Now().Add(time.Duration(rapid.IntRange(-500, 500).Draw(t, "nowMs"))*time.Millisecond+
				time.Duration(rapid.IntRange(0, 999).Draw(t, "nowNs"))), "nowZone"),
			Limit: rapid.IntRange(w.minLimit, 4).Draw(t, "limit"),
			OrphanTTL: time.Duration(rapid.IntRange(0, 2000).Draw(t, "ttlMs"))*time.Millisecond +
				time.Duration(rapid.IntRange(0, 2500).Draw(t, "ttlNs")),
			MaxClaimAttempts: rapid.IntRange(1, 3).Draw(t, "max"),
			Preference:       rapid.SampledFrom([]claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired}).Draw(t, "pref"),
		}
		what = fmt.Sprintf("claim %+v", r)
		for i, s := range w.sides {
			b, err := s.b.ClaimDue(ctx, r)
			errs[i] = err
			if err != nil {
				continue
			}
			type leaseView struct {
				RunID     string
				Owner     ports.OwnerScope
				Seq       int64
				ClaimedAt time.Time
				Attempt   int
				TTL       time.Duration
				Class     claim.Class
				Run       string
				Graph     string
			}
			var leases []leaseView
			for _, l := range b.Leases {
				s.tokens[l.RunID] = append(s.tokens[l.RunID], l.Token)
				run := ""
				if l.Run != nil {
					run = encodeRun(l.Run)
				}
				leases = append(leases, leaseView{l.RunID, l.Owner, l.CheckpointSeq, l.ClaimedAt, l.Attempt, l.OrphanTTL, l.Class, run, l.GraphID + "@" + l.GraphHash})
			}
			vals[i] = []any{leases, b.Poisoned, b.ReadyCandidates, b.ExpiredCandidates}
		}
	case "commit", "mutate":
		what = ""
		id := rapid.SampledFrom(w.runIDs).Draw(t, "run")
		kind := rapid.SampledFrom([]string{"continue", "immediate", "at", "cancel", "interrupt", "answer", "resolve"}).Draw(t, "kind")
		wake := zoned(t, w.clock.Now().Add(time.Duration(rapid.IntRange(-1000, 1000).Draw(t, "wakeMs"))*time.Millisecond+
			time.Duration(rapid.IntRange(0, 999).Draw(t, "wakeNs"))), "wakeZone")
		info, err := w.sides[0].b.InspectRun(ctx, ports.System(), id)
		if err != nil {
			return
		}
		current := info.Run
		scope := info.Owner
		if rapid.IntRange(0, 4).Draw(t, "otherScope") == 0 {
			scope = pickScope(t, w.owners, "scope")
		}
		stale := rapid.IntRange(0, 5).Draw(t, "stale") == 0
		if op == "commit" {
			m := w.moment(current, kind, wake)
			if m == nil {
				return
			}
			if stale && current.CheckpointSeq > 1 {
				m.Run.CheckpointSeq++ // ahead of stored+1
			}
			var then []*run.Moment
			if m.Disposition.Kind == run.DispositionContinue && rapid.Bool().Draw(t, "fuse") {
				kind2 := rapid.SampledFrom([]string{"immediate", "at", "cancel", "continue"}).Draw(t, "thenKind")
				if next := w.moment(m.Run, kind2, wake); next != nil {
					then = append(then, next)
					what += " then " + kind2
				}
			}
			pick := rapid.SampledFrom([]int{0, 0, 0, 0, 1, 2}).Draw(t, "token")
			what += fmt.Sprintf(" commit %s %s in %s token %d stale %v", id, kind, scope, pick, stale)
			for i, s := range w.sides {
				r, err := s.b.Commit(ctx, scope, ports.CommitParams{Moment: m, Then: then, ClaimToken: w.token(s, id, pick)})
				errs[i], vals[i] = err, encodeRun(r)
			}
			break
		}
		mode := rapid.SampledFrom([]string{"moment", "nil", "error", "stale"}).Draw(t, "mode")
		what = fmt.Sprintf("mutate %s %s %s in %s", id, mode, kind, scope)
		var old *run.Run
		base := w.counter
		for i, s := range w.sides {
			r, err := s.b.MutateRun(ctx, scope, id, func(cur *run.Run) (*run.Moment, error) {
				w.counter = base // the same moment on both sides, however often it runs
				switch mode {
				case "nil":
					return nil, nil
				case "error":
					return nil, errors.New("mutation refused")
				case "stale":
					if old == nil {
						old = cur.Clone()
						old.CheckpointSeq--
					}
					if old.CheckpointSeq < 1 {
						return nil, nil
					}
					m := w.moment(old, kind, wake)
					if m == nil {
						return nil, nil
					}
					return m, nil
				}
				m := w.moment(cur, kind, wake)
				if m == nil {
					return nil, nil
				}
				return m, nil
			})
			if err != nil && err.Error() == "mutation refused" {
				err = ports.ErrUnsupported // stands for "the mutation's own error, unchanged"
			}
			errs[i], vals[i] = err, encodeRun(r)
		}
	case "retry":
		id := rapid.SampledFrom(w.runIDs).Draw(t, "run")
		scope := ports.System()
		if rapid.IntRange(0, 2).Draw(t, "scoped") == 0 {
			scope = pickScope(t, w.owners, "scope")
		}
		now := zoned(t, w.clock.Now().Add(time.Duration(rapid.IntRange(0, 999).Draw(t, "ns"))), "zone")
		what = fmt.Sprintf("retry %s in %s", id, scope)
		for i, s := range w.sides {
			r, err := s.b.RetryPoisonedRun(ctx, scope, id, now)
			errs[i], vals[i] = err, encodeRun(r)
		}
	case "refresh", "release", "abandon":
		id := rapid.SampledFrom(w.runIDs).Draw(t, "run")
		pick := rapid.SampledFrom([]int{0, 0, 0, 1, 2}).Draw(t, "token")
		now := zoned(t, w.clock.Now().Add(time.Duration(rapid.IntRange(0, 999).Draw(t, "ns"))), "zone")
		what = fmt.Sprintf("%s %s token %d", op, id, pick)
		var p claim.AbandonParams
		if op == "abandon" {
			cur, err := w.sides[0].b.FetchRun(ctx, ports.System(), id)
			seq := int64(1)
			if err == nil {
				seq = cur.CheckpointSeq
			}
			seq -= int64(rapid.IntRange(0, 1).Draw(t, "seqBack"))
			p = claim.AbandonParams{ExpectedSeq: max(seq, 0), Now: now,
				RetryAt:          now.Add(time.Duration(rapid.IntRange(0, 1000).Draw(t, "retryMs")) * time.Millisecond),
				MaxClaimAbandons: rapid.IntRange(1, 2).Draw(t, "maxAbandons"),
				NonPoisoning:     rapid.Bool().Draw(t, "nonPoisoning")}
			if p.NonPoisoning && rapid.Bool().Draw(t, "backoff") {
				p.Backoff = &claim.Backoff{Base: 100 * time.Millisecond, Cap: 300 * time.Millisecond}
			}
			what += fmt.Sprintf(" %+v", p)
		}
		for i, s := range w.sides {
			tok := w.token(s, id, pick)
			switch op {
			case "refresh":
				errs[i] = s.b.RefreshClaim(ctx, id, tok, now)
			case "release":
				errs[i] = s.b.ReleaseClaim(ctx, id, tok, now)
			case "abandon":
				res, err := s.b.AbandonClaim(ctx, id, tok, p)
				errs[i], vals[i] = err, res
			}
		}
	case "list":
		scope := pickScope(t, w.owners, "scope")
		p := ports.ListRunsParams{Limit: rapid.IntRange(1, 3).Draw(t, "limit")}
		if rapid.Bool().Draw(t, "byGraph") {
			p.GraphID = rapid.SampledFrom(w.graphs).Draw(t, "graph").Effective.ID
		}
		if rapid.IntRange(0, 3).Draw(t, "byHash") == 0 {
			p.GraphHash = rapid.SampledFrom(w.graphs).Draw(t, "hashOf").Hash
		}
		for _, st := range []run.Status{run.StatusRunning, run.StatusWaiting, run.StatusCancelled, run.StatusDone} {
			if rapid.IntRange(0, 3).Draw(t, "status "+string(st)) == 0 {
				p.Statuses = append(p.Statuses, st)
			}
		}
		what = fmt.Sprintf("list %s %+v", scope, p)
		var pages [2][]*ports.RunPage
		for i, s := range w.sides {
			q := p
			for range 20 {
				page, err := s.b.ListRuns(ctx, scope, q)
				if err != nil {
					errs[i] = err
					break
				}
				pages[i] = append(pages[i], page)
				if !page.HasMore {
					break
				}
				q.Before = page.NextBefore
			}
			vals[i] = pages[i]
		}
	case "events":
		id := rapid.SampledFrom(w.runIDs).Draw(t, "run")
		scope := pickScope(t, w.owners, "scope")
		p := ports.ListEventsParams{AfterSeq: int64(rapid.IntRange(0, 6).Draw(t, "after")), Limit: rapid.IntRange(1, 3).Draw(t, "limit")}
		seq := int64(rapid.IntRange(1, 8).Draw(t, "seq"))
		what = fmt.Sprintf("events %s in %s %+v seq %d", id, scope, p, seq)
		for i, s := range w.sides {
			page, err := s.b.ListEvents(ctx, scope, id, p)
			if err != nil {
				errs[i] = err
				continue
			}
			ev, err1 := s.b.FetchEvent(ctx, scope, id, seq)
			latest, err2 := s.b.FetchLatestEvent(ctx, scope, id)
			vals[i] = []any{page, ev, errClass(err1), latest, errClass(err2)}
		}
	case "prune":
		kind := rapid.SampledFrom([]string{"events", "runs", "graphs"}).Draw(t, "prune")
		before := w.clock.Now().Add(-time.Duration(rapid.IntRange(0, 3000).Draw(t, "agoMs"))*time.Millisecond +
			time.Duration(rapid.IntRange(0, 999).Draw(t, "ns")))
		batch := rapid.IntRange(1, 3).Draw(t, "batch")
		keep := rapid.IntRange(1, 2).Draw(t, "keep")
		what = fmt.Sprintf("prune %s before %s batch %d keep %d", kind, before.Format(time.RFC3339Nano), batch, keep)
		for i, s := range w.sides {
			switch kind {
			case "events":
				n, err := s.b.PruneEvents(ctx, ports.PruneParams{Before: before, BatchSize: batch})
				errs[i], vals[i] = err, n
			case "runs":
				n, err := s.b.PruneRuns(ctx, ports.PruneParams{Before: before, BatchSize: batch})
				errs[i], vals[i] = err, n
			case "graphs":
				n, err := s.b.PruneGraphVersions(ctx, ports.PruneGraphsParams{Keep: keep, BatchSize: batch})
				errs[i], vals[i] = err, n
			}
		}
	case "graphs":
		owner := rapid.SampledFrom(w.owners).Draw(t, "owner")
		g := rapid.SampledFrom(w.graphs).Draw(t, "graph")
		limit := rapid.IntRange(1, 2).Draw(t, "limit")
		what = fmt.Sprintf("graphs %s %s limit %d", owner, g.Effective.ID, limit)
		for i, s := range w.sides {
			var pages []*ports.GraphVersionPage
			p := ports.ListGraphVersionsParams{Limit: limit}
			for range 10 {
				page, err := s.b.ListGraphVersions(ctx, owner, g.Effective.ID, p)
				if err != nil {
					errs[i] = err
					break
				}
				pages = append(pages, page)
				if !page.HasMore {
					break
				}
				p.Before = page.NextBefore
			}
			latest, err := s.b.FetchLatestGraphRef(ctx, owner, g.Effective.ID)
			doc, err2 := s.b.FetchGraph(ctx, owner, ports.GraphRef{GraphID: g.Effective.ID, Hash: g.Hash})
			hash := ""
			if doc != nil {
				hash = doc.ID
			}
			vals[i] = []any{pages, latest, errClass(err), hash, errClass(err2)}
		}
	}
	w.same(t, what, errs, vals)
	w.snapshot(t, what)
}

func TestDifferentialMemoryMatchesPostgres(t *testing.T) {
	t.Parallel()
	// The windowed policy samples r.Limit of the due scopes at random, so
	// its claims ask for at least as many as there are owners: then every
	// due scope is sampled and the selection is deterministic.
	for _, policy := range []claim.Policy{claim.Legacy, claim.WindowedInterleave} {
		t.Run(policy.Name(), func(t *testing.T) {
			t.Parallel()
			clock := conformance.NewManualClock(conformance.ReferenceTime)
			env := newEnv(t, envOptions{clock: clock, policy: policy})
			graphs := []*graph.Compiled{diffGraph(t, "diff-a", "one"), diffGraph(t, "diff-a", "two"), diffGraph(t, "diff-b", "one")}
			owners := []ports.OwnerScope{ports.Tenantless(), ports.Tenant("acme"), ports.Tenant("zeta")}
			ctx := context.Background()
			rapid.Check(t, func(rt *rapid.T) {
				reset(t, env)
				clock.Set(conformance.ReferenceTime)
				w := &diffWorld{ctx: ctx, clock: clock, graphs: graphs, owners: owners, minLimit: 1,
					runIDs: []string{"run-a", "run-B", "run-c", "run-d", "run-é"}}
				if policy == claim.WindowedInterleave {
					w.minLimit = len(owners)
				}
				w.sides[0] = &diffSide{name: "memory", b: memory.New(memory.Options{Clock: clock, Policy: policy}), tokens: map[string][]ports.ClaimToken{}}
				w.sides[1] = &diffSide{name: "postgres", b: env.store, tokens: map[string][]ports.ClaimToken{}}
				for _, s := range w.sides {
					for _, o := range owners {
						_, err := s.b.SaveGraph(ctx, o, ports.SaveGraphParams{Graph: graphs[0].Effective, Hash: graphs[0].Hash})
						require.NoError(rt, err)
					}
				}
				n := rapid.IntRange(1, 60).Draw(rt, "steps")
				for range n {
					w.step(rt)
				}
			})
		})
	}
}

// reset empties env's schema between generated sequences.
func reset(t *testing.T, env *testEnv) {
	t.Helper()
	for _, table := range []string{"docket_events", "docket_runs", "docket_graph_versions"} {
		_, err := env.pool.Exec(context.Background(), "DELETE FROM "+env.table(table))
		require.NoError(t, err)
	}
}

// TestDifferentialOddIdentifiers calls every port with identifiers no
// PostgreSQL text can hold (NUL, invalid UTF-8): both stores must answer
// alike, with typed outcomes.
func TestDifferentialOddIdentifiers(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(conformance.ReferenceTime)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	g := diffGraph(t, "diff-a", "one")
	sides := []ports.Backend{memory.New(memory.Options{Clock: clock}), env.store}
	for _, b := range sides {
		_, err := b.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: g.Effective, Hash: g.Hash})
		require.NoError(t, err)
	}
	tok := ports.NewClaimToken("0b9c6a8e-3f4e-4c1e-9a51-8c2b8f0e6d11")
	now := conformance.ReferenceTime
	for _, odd := range []string{"a\x00b", "\xff\xfe"} {
		calls := map[string]func(b ports.Backend) (any, error){
			"FetchRun": func(b ports.Backend) (any, error) { return b.FetchRun(ctx, ports.System(), odd) },
			"Refresh":  func(b ports.Backend) (any, error) { return nil, b.RefreshClaim(ctx, odd, tok, now) },
			"Release":  func(b ports.Backend) (any, error) { return nil, b.ReleaseClaim(ctx, odd, tok, now) },
			"Abandon": func(b ports.Backend) (any, error) {
				return b.AbandonClaim(ctx, odd, tok, claim.AbandonParams{ExpectedSeq: 1, Now: now, RetryAt: now, MaxClaimAbandons: 1})
			},
			"Mutate": func(b ports.Backend) (any, error) {
				return b.MutateRun(ctx, ports.System(), odd, func(*run.Run) (*run.Moment, error) { return nil, nil })
			},
			"SaveGraph": func(b ports.Backend) (any, error) {
				odder := *g.Effective
				odder.ID = odd
				hash, err := graph.Hash(&odder)
				if err != nil {
					return nil, fmt.Errorf("%w: %w", ports.ErrUnsupported, err)
				}
				v, err := b.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: &odder, Hash: hash})
				return v, err
			},
			"MutateNil": func(b ports.Backend) (any, error) { return b.MutateRun(ctx, ports.System(), odd, nil) },
			"Retry":     func(b ports.Backend) (any, error) { return b.RetryPoisonedRun(ctx, ports.System(), odd, now) },
			"ListEvents": func(b ports.Backend) (any, error) {
				return b.ListEvents(ctx, ports.System(), odd, ports.ListEventsParams{Limit: 1})
			},
			"ListRunsGraphID": func(b ports.Backend) (any, error) {
				return b.ListRuns(ctx, ports.System(), ports.ListRunsParams{Limit: 1, GraphID: odd})
			},
			"ListRunsGraphHash": func(b ports.Backend) (any, error) {
				return b.ListRuns(ctx, ports.System(), ports.ListRunsParams{Limit: 1, GraphHash: odd})
			},
			"ListRunsBefore": func(b ports.Backend) (any, error) {
				return b.ListRuns(ctx, ports.System(), ports.ListRunsParams{Limit: 1, Before: &ports.RunCursor{StartedAt: now, RunID: odd}})
			},
			"FetchGraphID": func(b ports.Backend) (any, error) {
				return b.FetchGraph(ctx, ports.Tenantless(), ports.GraphRef{GraphID: odd, Hash: g.Hash})
			},
			"FetchGraphHash": func(b ports.Backend) (any, error) {
				return b.FetchGraph(ctx, ports.Tenantless(), ports.GraphRef{GraphID: g.Effective.ID, Hash: odd})
			},
			"FetchLatestGraphRef": func(b ports.Backend) (any, error) { return b.FetchLatestGraphRef(ctx, ports.Tenantless(), odd) },
			"ListGraphVersions": func(b ports.Backend) (any, error) {
				return b.ListGraphVersions(ctx, ports.Tenantless(), odd, ports.ListGraphVersionsParams{Limit: 1})
			},
			"ListGraphVersionsBefore": func(b ports.Backend) (any, error) {
				return b.ListGraphVersions(ctx, ports.Tenantless(), g.Effective.ID, ports.ListGraphVersionsParams{Limit: 1,
					Before: &ports.GraphCursor{PublishedAt: now.Add(time.Hour), Hash: odd}})
			},
		}
		for name, call := range calls {
			v0, err0 := call(sides[0])
			v1, err1 := call(sides[1])
			if errClass(err0) != errClass(err1) || strings.HasPrefix(errClass(err1), "untyped:") {
				t.Errorf("%s(%q): memory %s (%v), postgres %s (%v)", name, odd, errClass(err0), err0, errClass(err1), err1)
				continue
			}
			if err0 == nil {
				if d := diffValues(v0, v1); d != "" {
					t.Errorf("%s(%q): %s", name, odd, d)
				}
			}
		}
	}
}

// insertDueRun publishes g on b and inserts a tenantless run of it, due
// at now.
func insertDueRun(t *testing.T, b ports.Backend, g *graph.Compiled, runID string, now time.Time) {
	t.Helper()
	ctx := context.Background()
	_, err := b.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: g.Effective, Hash: g.Hash})
	require.NoError(t, err)
	m, err := superstep.Start(g, superstep.StartParams{RunID: runID, Input: map[string]any{"topic": "x"}}, superstep.Env{Now: now})
	require.NoError(t, err)
	_, err = b.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: now})
	require.NoError(t, err)
}

// TestDifferentialWaitEndsWithItsContext holds a run under a mutation and
// lets every writer that waits for it run out of time: both stores must
// report the caller's context error.
func TestDifferentialWaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(conformance.ReferenceTime)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	g := diffGraph(t, "diff-a", "one")
	for _, b := range []ports.Backend{memory.New(memory.Options{Clock: clock}), env.store} {
		insertDueRun(t, b, g, "held", clock.Now())
		batch, err := b.ClaimDue(ctx, claim.Request{Now: clock.Now(), Limit: 1, OrphanTTL: time.Minute, MaxClaimAttempts: 3})
		require.NoError(t, err)
		require.Len(t, batch.Leases, 1)
		tok := batch.Leases[0].Token

		held, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := b.MutateRun(ctx, ports.Tenantless(), "held", func(*run.Run) (*run.Moment, error) {
				close(held)
				<-release
				return nil, nil
			})
			done <- err
		}()
		<-held
		calls := map[string]func(context.Context) error{
			"MutateRun": func(ctx context.Context) error {
				_, err := b.MutateRun(ctx, ports.Tenantless(), "held", func(*run.Run) (*run.Moment, error) { return nil, nil })
				return err
			},
			"RetryPoisonedRun": func(ctx context.Context) error {
				_, err := b.RetryPoisonedRun(ctx, ports.Tenantless(), "held", clock.Now())
				return err
			},
			"RefreshClaim": func(ctx context.Context) error { return b.RefreshClaim(ctx, "held", tok, clock.Now()) },
			"ReleaseClaim": func(ctx context.Context) error { return b.ReleaseClaim(ctx, "held", tok, clock.Now()) },
			"AbandonClaim": func(ctx context.Context) error {
				_, err := b.AbandonClaim(ctx, "held", tok, claim.AbandonParams{ExpectedSeq: 1, Now: clock.Now(), RetryAt: clock.Now(), MaxClaimAbandons: 3})
				return err
			},
		}
		for name, call := range calls {
			cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
			err := call(cctx)
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "%T %s: %v", b, name, err)
		}
		close(release)
		require.NoError(t, <-done)
	}
}

// TestDifferentialEventPageAtTheLastSeq asks for the events after the
// largest seq there can be: there are none, on both stores.
func TestDifferentialEventPageAtTheLastSeq(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(conformance.ReferenceTime)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	g := diffGraph(t, "diff-a", "one")
	for _, b := range []ports.Backend{memory.New(memory.Options{Clock: clock}), env.store} {
		insertDueRun(t, b, g, "r", clock.Now())
		page, err := b.ListEvents(ctx, ports.Tenantless(), "r", ports.ListEventsParams{AfterSeq: math.MaxInt64, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, page.Events, "%T", b)
		require.Equal(t, int64(math.MaxInt64), page.NextAfterSeq, "%T", b)
		require.False(t, page.HasMore, "%T", b)
	}
}

// TestDifferentialPruneBounds prunes with counts beyond 32 bits: both
// stores answer alike, with typed outcomes.
func TestDifferentialPruneBounds(t *testing.T) {
	t.Parallel()
	clock := conformance.NewManualClock(conformance.ReferenceTime)
	env := newEnv(t, envOptions{clock: clock})
	ctx := context.Background()
	sides := []ports.Backend{memory.New(memory.Options{Clock: clock}), env.store}
	big := math.MaxInt32 + 1
	calls := map[string]func(b ports.Backend) (any, error){
		"PruneEvents": func(b ports.Backend) (any, error) {
			return b.PruneEvents(ctx, ports.PruneParams{Before: clock.Now(), BatchSize: big})
		},
		"PruneRuns": func(b ports.Backend) (any, error) {
			return b.PruneRuns(ctx, ports.PruneParams{Before: clock.Now(), BatchSize: big})
		},
		"PruneGraphVersionsBatch": func(b ports.Backend) (any, error) {
			return b.PruneGraphVersions(ctx, ports.PruneGraphsParams{Keep: 1, BatchSize: big})
		},
		"PruneGraphVersionsKeep": func(b ports.Backend) (any, error) {
			return b.PruneGraphVersions(ctx, ports.PruneGraphsParams{Keep: big, BatchSize: 1})
		},
	}
	for name, call := range calls {
		v0, err0 := call(sides[0])
		v1, err1 := call(sides[1])
		if errClass(err0) != errClass(err1) || strings.HasPrefix(errClass(err1), "untyped:") {
			t.Errorf("%s: memory %s (%v), postgres %s (%v)", name, errClass(err0), err0, errClass(err1), err1)
			continue
		}
		if err0 == nil {
			require.Equal(t, v0, v1, name)
		}
	}
}
