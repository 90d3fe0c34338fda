package claim_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// in puts c in scope (a tenant id, "" for tenantless).
func in(scope string, c claim.Candidate) claim.Candidate {
	c.ScopeKey = scope
	return c
}

// admitted marks c as part of its scope's admitted cohort.
func admitted(c claim.Candidate) claim.Candidate {
	c.Admitted = true
	return c
}

func seeded(seed uint64) claim.Policy {
	return claim.NewWindowedInterleave(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

func TestWindowedInterleaveSelect(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	tests := []struct {
		name   string
		limit  int
		pref   claim.Preference
		cands  []claim.Candidate
		expect []string
	}{
		{
			name:  "breadth first across scopes: each scope's head before any scope's second run",
			limit: 2,
			cands: []claim.Candidate{
				in("A", ready("a-1", 1, at(-40*time.Second))), in("A", ready("a-2", 2, at(-39*time.Second))),
				in("B", ready("b-1", 3, at(-2*time.Second))), in("B", ready("b-2", 4, at(-time.Second))),
			},
			expect: []string{"a-1", "b-1"},
		},
		{
			name:  "an admitted run beats an older queued run of its scope",
			limit: 1,
			cands: []claim.Candidate{
				in("T", ready("queued", 1, at(-60*time.Second))),
				admitted(in("T", ready("admitted", 2, at(-30*time.Second)))),
			},
			expect: []string{"admitted"},
		},
		{
			name:  "a scope's page is admitted first, then by age",
			limit: 3,
			cands: []claim.Candidate{
				in("T", ready("old", 1, at(-10*time.Second))), in("T", ready("young", 2, at(-9*time.Second))),
				admitted(in("T", ready("cohort", 3, at(-time.Second)))),
			},
			expect: []string{"cohort", "old", "young"},
		},
		{
			name:  "sleeping runs are never selected",
			limit: 3,
			cands: []claim.Candidate{
				in("idle", ready("later", 1, at(time.Hour))), admitted(in("idle", ready("cohort-later", 2, at(time.Minute)))),
				in("busy", ready("due", 3, at(-time.Second))),
			},
			expect: []string{"due"},
		},
		{
			name:  "the tenantless scope takes part like any tenant",
			limit: 2,
			cands: []claim.Candidate{
				in("", ready("tenantless-1", 1, at(-time.Hour))), in("", ready("tenantless-2", 2, at(-time.Hour))),
				in("acme", ready("acme-1", 3, at(-time.Second))),
			},
			expect: []string{"tenantless-1", "acme-1"},
		},
		{
			name:  "limit two still reserves a slot for the expired class",
			limit: 2,
			cands: []claim.Candidate{
				in("A", ready("a-1", 1, at(-time.Hour))), in("B", ready("b-1", 2, at(-time.Hour))),
				in("C", claimed("stale", 3, at(-2*time.Second))),
			},
			expect: []string{"a-1", "stale"},
		},
		{
			name:  "after the reserved heads the classes interleave rank by rank, not by global age",
			limit: 4,
			cands: []claim.Candidate{
				claimed("e-1", 1, at(-2*time.Hour)), claimed("e-2", 2, at(-time.Hour)), claimed("e-3", 3, at(-50*time.Minute)),
				in("A", ready("r-1", 4, at(-5*time.Second))), in("A", ready("r-2", 5, at(-4*time.Second))),
			},
			expect: []string{"e-1", "r-1", "e-2", "r-2"},
		},
		{
			name:   "demand one prefers the expired class when asked",
			limit:  1,
			pref:   claim.PreferExpired,
			cands:  []claim.Candidate{in("A", ready("r-1", 1, at(-time.Hour))), claimed("e-1", 2, at(-2*time.Second))},
			expect: []string{"e-1"},
		},
		{
			name:   "an empty preferred class falls through to the other",
			limit:  1,
			pref:   claim.PreferExpired,
			cands:  []claim.Candidate{in("A", ready("r-1", 1, at(-time.Second)))},
			expect: []string{"r-1"},
		},
		{
			name:   "nothing eligible selects nothing",
			limit:  3,
			cands:  []claim.Candidate{in("A", ready("future", 1, at(time.Second))), claimed("fresh", 2, t0)},
			expect: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRequest()
			r.Limit, r.Preference = tt.limit, tt.pref
			// Every case has at most Limit due scopes, so the sample is
			// all of them and the answer does not depend on the seed.
			for seed := range uint64(8) {
				assert.Equal(t, tt.expect, ids(seeded(seed).Select(r, tt.cands)), "seed %d", seed)
			}
			assert.Equal(t, tt.expect, ids(claim.WindowedInterleave.Select(r, tt.cands)))
		})
	}
}

func TestWindowedInterleaveNeverSpendsDemandOnIdleScopes(t *testing.T) {
	t.Parallel()
	var cands []claim.Candidate
	for i := range 9 {
		cands = append(cands, in(fmt.Sprintf("idle-%d", i), ready(fmt.Sprintf("sleeper-%d", i), int64(i), t0.Add(time.Hour))))
	}
	cands = append(cands, in("busy", ready("due", 99, t0)))
	r := validRequest()
	policy := seeded(7)
	for range 200 {
		assert.Equal(t, []string{"due"}, ids(policy.Select(r, cands)))
	}
}

func TestWindowedInterleaveSharesDemandOneClaimsAcrossScopes(t *testing.T) {
	t.Parallel()
	// Four scopes, one of them with a far older and far larger backlog:
	// FIFO would serve it alone; the windowed policy serves every scope
	// about equally often.
	var cands []claim.Candidate
	order := int64(0)
	add := func(scope string, n int, age time.Duration) {
		for i := range n {
			order++
			cands = append(cands, in(scope, ready(fmt.Sprintf("%s-%d", scope, i), order, t0.Add(-age))))
		}
	}
	add("flood", 50, time.Hour)
	add("b", 2, time.Second)
	add("c", 2, time.Second)
	add("d", 2, time.Second)
	r := validRequest()
	policy := seeded(42)
	wins := map[string]int{}
	const calls = 400
	for range calls {
		sel := policy.Select(r, cands)
		require.Len(t, sel.Picks, 1)
		wins[sel.Picks[0].ScopeKey]++
	}
	for _, scope := range []string{"flood", "b", "c", "d"} {
		assert.Greater(t, wins[scope], calls/4/2, "scope %s won %d of %d demand-1 claims", scope, wins[scope], calls)
	}
}

func TestWindowedInterleaveIsReproducibleWithASeededSource(t *testing.T) {
	t.Parallel()
	var cands []claim.Candidate
	for i := range 12 {
		cands = append(cands, in(fmt.Sprintf("s%d", i%6), ready(fmt.Sprintf("r%d", i), int64(i), t0.Add(-time.Duration(i)*time.Second))))
	}
	r := validRequest()
	r.Limit = 3
	first, second := seeded(3), seeded(3)
	distinct := map[string]bool{}
	for range 50 {
		a, b := ids(first.Select(r, cands)), ids(second.Select(r, cands))
		require.Equal(t, a, b, "two policies with one seed choose alike")
		distinct[fmt.Sprint(a)] = true
	}
	assert.Greater(t, len(distinct), 1, "the sample varies from call to call")
}

func TestWindowedInterleaveIdentity(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "windowed_interleave", claim.WindowedInterleave.Name())
	assert.True(t, claim.WindowedInterleave.MarksAdmission(), "a lease records the sticky admission marker")
	assert.Equal(t, claim.AdmissionModeWindowed, claim.AdmissionMode(claim.WindowedInterleave))
	assert.Equal(t, claim.AdmissionModeWindowed, claim.AdmissionMode(seeded(1)))
	assert.Equal(t, claim.AdmissionModeWindowed, claim.AdmissionMode(claim.NewWindowedInterleave(nil)))
	assert.Equal(t, claim.AdmissionModeLegacy, claim.AdmissionMode(claim.Legacy))
	assert.Empty(t, claim.AdmissionMode(foreignPolicy{}), "a policy no SQL store implements has no mode")
}

type foreignPolicy struct{}

func (foreignPolicy) Name() string         { return "foreign" }
func (foreignPolicy) MarksAdmission() bool { return true }
func (foreignPolicy) Select(claim.Request, []claim.Candidate) claim.Selection {
	return claim.Selection{}
}

func TestDueScopesListsScopesWithDueReadyWorkOnly(t *testing.T) {
	t.Parallel()
	r := validRequest() // ttl 1s
	cands := []claim.Candidate{
		in("b", ready("b1", 1, t0)), in("b", ready("b2", 2, t0)),
		in("a", ready("a1", 3, t0.Add(-time.Minute))),
		in("sleeping", ready("s1", 4, t0.Add(time.Microsecond))),
		in("stale-claim", claimed("c1", 5, t0.Add(-time.Hour))),
		in("", ready("tl", 6, t0)),
	}
	assert.Equal(t, []string{"", "a", "b"}, claim.DueScopes(r, cands))
}

// windowedQueue draws a random queue over a few scopes: ready runs (some
// admitted, some sleeping) and claims of various ages.
func windowedQueue(t *rapid.T) []claim.Candidate {
	scopes := []string{"", "a", "b", "c", "d"}
	n := rapid.IntRange(0, 16).Draw(t, "n")
	cands := make([]claim.Candidate, n)
	for i := range cands {
		id := fmt.Sprint("run", i)
		at := t0.Add(time.Duration(rapid.IntRange(-10, 3).Draw(t, fmt.Sprint("offset", i))) * time.Second)
		if rapid.IntRange(0, 3).Draw(t, fmt.Sprint("claimed", i)) == 0 {
			cands[i] = claimed(id, int64(i), at)
		} else {
			cands[i] = ready(id, int64(i), at)
		}
		cands[i].ScopeKey = rapid.SampledFrom(scopes).Draw(t, fmt.Sprint("scope", i))
		cands[i].Admitted = rapid.Bool().Draw(t, fmt.Sprint("admitted", i))
	}
	return cands
}

func windowedRequest(t *rapid.T) claim.Request {
	return claim.Request{
		Now:              t0,
		Limit:            rapid.IntRange(1, 6).Draw(t, "limit"),
		OrphanTTL:        time.Duration(rapid.IntRange(0, 5).Draw(t, "ttl")) * time.Second,
		MaxClaimAttempts: 3,
		Preference:       rapid.SampledFrom([]claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired}).Draw(t, "pref"),
	}
}

// scopePage is one scope's due ready runs in the order its page ranks
// them: admitted first, then by (wake_at, order).
func scopePage(r claim.Request, cands []claim.Candidate, scope string) []string {
	var page []claim.Candidate
	for _, c := range cands {
		if class, _, ok := claim.Classify(r, c); ok && class == claim.ClassReady && c.ScopeKey == scope {
			page = append(page, c)
		}
	}
	slices.SortFunc(page, func(a, b claim.Candidate) int {
		if a.Admitted != b.Admitted {
			if a.Admitted {
				return -1
			}
			return 1
		}
		if c := a.WakeAt.Compare(b.WakeAt); c != 0 {
			return c
		}
		return int(a.Order - b.Order)
	})
	out := make([]string, len(page))
	for i, c := range page {
		out[i] = c.RunID
	}
	return out
}

// subsets returns every k-element subset of items.
func subsets(items []string, k int) [][]string {
	if k == 0 {
		return [][]string{{}}
	}
	if len(items) < k {
		return nil
	}
	var out [][]string
	for _, rest := range subsets(items[1:], k-1) {
		out = append(out, append([]string{items[0]}, rest...))
	}
	return append(out, subsets(items[1:], k)...)
}

func TestWindowedInterleaveProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := windowedRequest(t)
		cands := windowedQueue(t)
		seed := rapid.Uint64().Draw(t, "seed")
		sel := seeded(seed).Select(r, cands)

		eligible := map[claim.Class]int{}
		for _, c := range cands {
			if class, _, ok := claim.Classify(r, c); ok {
				eligible[class]++
			}
		}
		due := claim.DueScopes(r, cands)

		// Demand is bounded and never wasted: the sample always holds
		// enough due work to fill the ready class up to the limit.
		want := min(r.Limit, min(eligible[claim.ClassReady], r.Limit)+min(eligible[claim.ClassExpired], r.Limit))
		if len(sel.Picks) != want {
			t.Fatalf("picked %d, want %d", len(sel.Picks), want)
		}
		if sel.ReadyCandidates != min(eligible[claim.ClassReady], r.Limit) {
			t.Fatalf("ready candidates %d, want %d", sel.ReadyCandidates, min(eligible[claim.ClassReady], r.Limit))
		}

		seen := map[string]bool{}
		got := map[claim.Class]int{}
		perScope := map[string][]string{}
		for _, p := range sel.Picks {
			if seen[p.RunID] {
				t.Fatalf("run %s picked twice", p.RunID)
			}
			seen[p.RunID] = true
			class, _, ok := claim.Classify(r, p.Candidate)
			if !ok || class != p.Class {
				t.Fatalf("run %s picked as %s but classifies as %s/%v (sleeping work is never taken)", p.RunID, p.Class, class, ok)
			}
			got[p.Class]++
			if p.Class == claim.ClassReady {
				perScope[p.ScopeKey] = append(perScope[p.ScopeKey], p.RunID)
			}
		}
		// Class reservation and the demand-1 preference hold as in Legacy.
		if r.Limit >= 2 {
			for _, class := range []claim.Class{claim.ClassReady, claim.ClassExpired} {
				if eligible[class] > 0 && got[class] == 0 {
					t.Fatalf("class %s has candidates but no outcome", class)
				}
			}
		}
		if r.Limit == 1 && r.Preference != claim.PreferNone && eligible[claim.Class(r.Preference)] > 0 &&
			sel.Picks[0].Class != claim.Class(r.Preference) {
			t.Fatalf("preferred %s but picked %s", r.Preference, sel.Picks[0].Class)
		}

		// Within a scope, picks are the head of its page (admitted
		// first); across scopes, breadth first: no scope gets its k-th
		// run while a scope that was served lacks its (k-1)-th.
		deepest := 0
		for scope, picked := range perScope {
			page := scopePage(r, cands, scope)
			if !slices.Equal(page[:len(picked)], orderLike(page, picked)) {
				t.Fatalf("scope %q: picked %v, not the head of its page %v", scope, picked, page)
			}
			deepest = max(deepest, len(picked))
		}
		for scope, picked := range perScope {
			if n := len(scopePage(r, cands, scope)); len(picked) < min(n, deepest-1) {
				t.Fatalf("scope %q got %d runs while another got %d (breadth first): %v", scope, len(picked), deepest, perScope)
			}
		}
		if len(due) <= r.Limit && deepest >= 2 {
			// Every due scope was sampled, so each was served.
			for _, scope := range due {
				if len(perScope[scope]) == 0 {
					t.Fatalf("due scope %q got nothing while another got %d: %v", scope, deepest, perScope)
				}
			}
		}

		// Select is SelectWindowed over some sample of min(limit, due)
		// due scopes.
		matched := false
		for _, sample := range subsets(due, min(r.Limit, len(due))) {
			if fmt.Sprint(ids(claim.SelectWindowed(r, cands, sample))) == fmt.Sprint(ids(sel)) {
				matched = true
				break
			}
		}
		if !matched {
			t.Fatalf("selection %v matches no sample of the due scopes %v", ids(sel), due)
		}
	})
}

// orderLike returns picked reordered as they appear in page.
func orderLike(page, picked []string) []string {
	out := make([]string, 0, len(picked))
	for _, id := range page {
		if slices.Contains(picked, id) {
			out = append(out, id)
		}
	}
	return out
}

func TestWindowedLeasesAndPoisonStayWithinTheLimit(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := windowedRequest(t)
		cands := windowedQueue(t)
		attempts := map[string]int{}
		for _, c := range cands {
			attempts[c.RunID] = rapid.IntRange(0, r.MaxClaimAttempts+1).Draw(t, "attempts-"+c.RunID)
		}
		sel := claim.WindowedInterleave.Select(r, cands)
		leases, poisoned := 0, 0
		for _, p := range sel.Picks {
			switch d := claim.Decide(attempts[p.RunID], r.MaxClaimAttempts); d.Outcome {
			case claim.OutcomeLease:
				leases++
			case claim.OutcomePoison:
				poisoned++
			}
		}
		if leases+poisoned > r.Limit {
			t.Fatalf("%d leases and %d poison outcomes exceed the limit %d", leases, poisoned, r.Limit)
		}
	})
}
