package claim_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/stretchr/testify/assert"
	"pgregory.net/rapid"
)

func ready(id string, order int64, wake time.Time) claim.Candidate {
	return claim.Candidate{RunID: id, Order: order, WakeAt: wake}
}

func claimed(id string, order int64, at time.Time) claim.Candidate {
	return claim.Candidate{RunID: id, Order: order, ClaimedAt: at, Claimed: true}
}

func ids(sel claim.Selection) []string {
	out := make([]string, 0, len(sel.Picks))
	for _, p := range sel.Picks {
		out = append(out, p.RunID)
	}
	return out
}

func TestClassifyBoundaries(t *testing.T) {
	t.Parallel()
	r := validRequest() // ttl 1s
	tests := []struct {
		name  string
		c     claim.Candidate
		class claim.Class
		ok    bool
	}{
		{"wake exactly now is ready", ready("a", 1, t0), claim.ClassReady, true},
		{"wake one microsecond later is not ready", ready("a", 1, t0.Add(time.Microsecond)), "", false},
		{"unclaimed without wake is not ready", ready("a", 1, time.Time{}), "", false},
		{"claim exactly ttl old is not expired", claimed("a", 1, t0.Add(-time.Second)), "", false},
		{"claim one microsecond older than ttl is expired", claimed("a", 1, t0.Add(-time.Second-time.Microsecond)), claim.ClassExpired, true},
		{"fresh claim is not expired", claimed("a", 1, t0), "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			class, _, ok := claim.Classify(r, tt.c)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.class, class)
		})
	}
}

func TestLegacySelect(t *testing.T) {
	t.Parallel()
	old := t0.Add(-time.Hour)
	tests := []struct {
		name   string
		limit  int
		pref   claim.Preference
		cands  []claim.Candidate
		expect []string
	}{
		{
			name:  "oldest eligible first, ties broken by insertion order",
			limit: 3,
			cands: []claim.Candidate{
				ready("late", 1, t0), ready("tie-b", 3, old), ready("tie-a", 2, old),
			},
			expect: []string{"tie-a", "tie-b", "late"},
		},
		{
			name:  "limit two reserves the head of each non-empty class despite age skew",
			limit: 2,
			cands: []claim.Candidate{
				ready("r1", 1, old), ready("r2", 2, old.Add(time.Second)),
				claimed("e1", 3, t0.Add(-2*time.Second)),
			},
			expect: []string{"r1", "e1"},
		},
		{
			name:  "reserved heads come first, then global age",
			limit: 3,
			cands: []claim.Candidate{
				ready("r1", 1, t0.Add(-10*time.Second)), ready("r2", 2, t0.Add(-9*time.Second)),
				claimed("e1", 3, t0.Add(-time.Hour)), claimed("e2", 4, t0.Add(-50*time.Minute)),
			},
			expect: []string{"e1", "r1", "e2"},
		},
		{
			name:   "demand one prefers the expired class when asked",
			limit:  1,
			pref:   claim.PreferExpired,
			cands:  []claim.Candidate{ready("r1", 1, old), claimed("e1", 2, t0.Add(-2*time.Second))},
			expect: []string{"e1"},
		},
		{
			name:   "demand one prefers the ready class when asked",
			limit:  1,
			pref:   claim.PreferReady,
			cands:  []claim.Candidate{ready("r1", 1, t0), claimed("e1", 2, old)},
			expect: []string{"r1"},
		},
		{
			name:   "an empty preferred class falls through to the other",
			limit:  1,
			pref:   claim.PreferExpired,
			cands:  []claim.Candidate{ready("r1", 1, t0)},
			expect: []string{"r1"},
		},
		{
			name:   "demand one without preference takes the oldest",
			limit:  1,
			cands:  []claim.Candidate{ready("r1", 1, t0.Add(-time.Minute)), claimed("e1", 2, old)},
			expect: []string{"e1"},
		},
		{
			name:   "nothing eligible selects nothing",
			limit:  4,
			cands:  []claim.Candidate{ready("future", 1, t0.Add(time.Second)), claimed("fresh", 2, t0)},
			expect: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRequest()
			r.Limit, r.Preference = tt.limit, tt.pref
			assert.Equal(t, tt.expect, ids(claim.Legacy.Select(r, tt.cands)))
		})
	}
}

func TestLegacySelectCountsCandidatesAndRanksClasses(t *testing.T) {
	t.Parallel()
	r := validRequest()
	r.Limit = 2
	sel := claim.Legacy.Select(r, []claim.Candidate{
		ready("r1", 1, t0), ready("r2", 2, t0), ready("r3", 3, t0), claimed("e1", 4, t0.Add(-time.Minute)),
	})
	assert.Equal(t, 2, sel.ReadyCandidates, "each class is cut at the limit")
	assert.Equal(t, 1, sel.ExpiredCandidates)
	for _, p := range sel.Picks {
		assert.Equal(t, 1, p.ClassRank)
	}
	assert.Equal(t, "legacy", claim.Legacy.Name())
	assert.False(t, claim.Legacy.MarksAdmission())
}

func TestDecideLeasesExactlyMaxTimesThenPoisons(t *testing.T) {
	t.Parallel()
	const maxAttempts = 3
	attempts := 0
	for i := 1; i <= maxAttempts; i++ {
		d := claim.Decide(attempts, maxAttempts)
		assert.Equal(t, claim.OutcomeLease, d.Outcome)
		assert.Equal(t, i, d.Attempt)
		attempts = d.Attempt
	}
	d := claim.Decide(attempts, maxAttempts)
	assert.Equal(t, claim.OutcomePoison, d.Outcome)
	assert.Equal(t, maxAttempts, d.Attempt)
	assert.Equal(t, claim.ReasonMaxClaimAttempts, d.PoisonReason)
}

func TestLegacySelectProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := claim.Request{
			Now:              t0,
			Limit:            rapid.IntRange(1, 6).Draw(t, "limit"),
			OrphanTTL:        time.Duration(rapid.IntRange(0, 5).Draw(t, "ttl")) * time.Second,
			MaxClaimAttempts: 3,
			Preference:       rapid.SampledFrom([]claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired}).Draw(t, "pref"),
		}
		n := rapid.IntRange(0, 12).Draw(t, "n")
		cands := make([]claim.Candidate, n)
		for i := range cands {
			at := t0.Add(time.Duration(rapid.IntRange(-10, 3).Draw(t, fmt.Sprint("offset", i))) * time.Second)
			if rapid.Bool().Draw(t, fmt.Sprint("claimed", i)) {
				cands[i] = claimed(fmt.Sprint("run", i), int64(i), at)
			} else {
				cands[i] = ready(fmt.Sprint("run", i), int64(i), at)
			}
		}
		eligible := map[claim.Class]int{}
		for _, c := range cands {
			if class, _, ok := claim.Classify(r, c); ok {
				eligible[class]++
			}
		}
		sel := claim.Legacy.Select(r, cands)

		// Outcomes never exceed demand and demand is never wasted.
		want := min(r.Limit, min(eligible[claim.ClassReady], r.Limit)+min(eligible[claim.ClassExpired], r.Limit))
		if len(sel.Picks) != want {
			t.Fatalf("picked %d, want %d", len(sel.Picks), want)
		}
		seen := map[string]bool{}
		got := map[claim.Class]int{}
		for _, p := range sel.Picks {
			if seen[p.RunID] {
				t.Fatalf("run %s picked twice", p.RunID)
			}
			seen[p.RunID] = true
			class, _, ok := claim.Classify(r, p.Candidate)
			if !ok || class != p.Class {
				t.Fatalf("run %s picked as %s but classifies as %s/%v", p.RunID, p.Class, class, ok)
			}
			got[p.Class]++
		}
		// Class reservation at limit >= 2.
		if r.Limit >= 2 {
			for _, class := range []claim.Class{claim.ClassReady, claim.ClassExpired} {
				if eligible[class] > 0 && got[class] == 0 {
					t.Fatalf("class %s has candidates but no outcome", class)
				}
			}
		}
		// Demand-1 preference with fall-through.
		if r.Limit == 1 && r.Preference != claim.PreferNone && eligible[claim.Class(r.Preference)] > 0 {
			if sel.Picks[0].Class != claim.Class(r.Preference) {
				t.Fatalf("preferred %s but picked %s", r.Preference, sel.Picks[0].Class)
			}
		}
	})
}
