package claim

import (
	"math/rand/v2"
	"slices"
	"sync"
)

// Admission modes: the value a SQL store keeps in its admission gate
// (docket_claim_policy.admission_mode) for each built-in policy. A store
// admits only while the gate names its own policy's mode, so engines of
// different policies never admit against one schema at once.
const (
	AdmissionModeLegacy   = "legacy"
	AdmissionModeWindowed = "windowed"
)

// AdmissionMode reports the admission mode of a built-in policy:
// AdmissionModeLegacy for Legacy, AdmissionModeWindowed for
// WindowedInterleave (however its random source was chosen), and "" for
// any other policy, which a SQL store cannot execute.
func AdmissionMode(p Policy) string {
	switch p.(type) {
	case legacyPolicy:
		return AdmissionModeLegacy
	case *windowedPolicy:
		return AdmissionModeWindowed
	}
	return ""
}

// WindowedInterleave is the tenant-fair policy (admission mode
// "windowed"): statistically fair across scopes, with sticky cohorts
// within a scope. Its scope sample is drawn from the process-wide random
// source; NewWindowedInterleave takes a seeded one.
//
// The ready class is built in three steps:
//
//  1. Sampling: the scopes holding at least one due ready run (DueScopes),
//     in random order, keeping r.Limit of them. A scope whose runs all
//     sleep is never sampled, so a demand-1 claim cannot land on an idle
//     scope while due work waits elsewhere.
//  2. Per-scope page: each sampled scope's due ready runs, admitted ones
//     (Candidate.Admitted) first, then by (wake_at, order), cut at r.Limit;
//     the position is the run's scope rank.
//  3. Breadth first: the pooled pages ordered by (scope rank, wake_at,
//     order) and cut at r.Limit, so every sampled scope's first run comes
//     before any scope's second. That order is the ready class rank.
//
// The expired class is Legacy's (scope-blind, oldest claim first), and the
// classes are merged by Merge with the class-rank interleave. A lease sets
// the sticky admission marker (MarksAdmission): admitted runs outrank
// fresh ones of their scope, so work already underway is finished before
// new runs start. Fairness is per call and statistical; no bound is
// promised.
var WindowedInterleave Policy = &windowedPolicy{}

// NewWindowedInterleave returns WindowedInterleave drawing its scope
// sample from src, so a seeded source makes every selection reproducible.
// The policy is safe for concurrent use; a nil src means the process-wide
// random source.
func NewWindowedInterleave(src rand.Source) Policy {
	if src == nil {
		return &windowedPolicy{}
	}
	return &windowedPolicy{rng: rand.New(src)}
}

type windowedPolicy struct {
	mu  sync.Mutex
	rng *rand.Rand // nil: the process-wide source
}

func (*windowedPolicy) Name() string         { return "windowed_interleave" }
func (*windowedPolicy) MarksAdmission() bool { return true }

func (p *windowedPolicy) Select(r Request, candidates []Candidate) Selection {
	return SelectWindowed(r, candidates, p.sample(DueScopes(r, candidates), r.Limit))
}

// sample shuffles scopes (sorted, so a seeded source sees the same input
// every time) and keeps limit of them.
func (p *windowedPolicy) sample(scopes []string, limit int) []string {
	swap := func(i, j int) { scopes[i], scopes[j] = scopes[j], scopes[i] }
	if p.rng == nil {
		rand.Shuffle(len(scopes), swap)
	} else {
		p.mu.Lock()
		p.rng.Shuffle(len(scopes), swap)
		p.mu.Unlock()
	}
	if len(scopes) > limit {
		scopes = scopes[:limit]
	}
	return scopes
}

// DueScopes returns, sorted, the scope keys of the candidates that are
// ready under r (unclaimed with wake_at <= r.DueBy()): the scopes
// WindowedInterleave samples from.
func DueScopes(r Request, candidates []Candidate) []string {
	var scopes []string
	for _, c := range candidates {
		if class, _, ok := Classify(r, c); ok && class == ClassReady {
			scopes = append(scopes, c.ScopeKey)
		}
	}
	slices.Sort(scopes)
	return slices.Compact(scopes)
}

// SelectWindowed is WindowedInterleave's selection for a given scope
// sample (normally at most r.Limit scopes drawn from DueScopes). It is
// deterministic: the order of sample does not matter, only which scopes it
// holds. Ready candidates of scopes outside the sample are not
// considered; expired candidates always are.
func SelectWindowed(r Request, candidates []Candidate, sample []string) Selection {
	sampled := make(map[string]bool, len(sample))
	for _, s := range sample {
		sampled[s] = true
	}
	pages := map[string][]Pick{}
	var expired []Pick
	for _, c := range candidates {
		class, at, ok := Classify(r, c)
		switch {
		case !ok:
		case class == ClassExpired:
			expired = append(expired, Pick{Candidate: c, Class: class, EligibleAt: at})
		case sampled[c.ScopeKey]:
			pages[c.ScopeKey] = append(pages[c.ScopeKey], Pick{Candidate: c, Class: class, EligibleAt: at})
		}
	}

	type ranked struct {
		pick      Pick
		scopeRank int
	}
	var pool []ranked
	for _, page := range pages {
		slices.SortFunc(page, admittedFirst)
		for i, p := range page[:min(len(page), r.Limit)] {
			pool = append(pool, ranked{pick: p, scopeRank: i + 1})
		}
	}
	// Breadth first: rank 1 of every sampled scope before any rank 2.
	slices.SortFunc(pool, func(a, b ranked) int {
		if a.scopeRank != b.scopeRank {
			return a.scopeRank - b.scopeRank
		}
		return byAge(a.pick, b.pick)
	})
	ready := make([]Pick, 0, min(len(pool), r.Limit))
	for i, p := range pool[:min(len(pool), r.Limit)] {
		p.pick.ClassRank = i + 1
		ready = append(ready, p.pick)
	}
	expired = rankClass(expired, r.Limit)
	return Selection{
		Picks:             Merge(r, ready, expired, true),
		ReadyCandidates:   len(ready),
		ExpiredCandidates: len(expired),
	}
}

// admittedFirst orders one scope's page: runs already admitted (their
// cohort is underway) before queued ones, then by age.
func admittedFirst(a, b Pick) int {
	if c := cmpFirst(a.Admitted, b.Admitted); c != 0 {
		return c
	}
	return byAge(a, b)
}
