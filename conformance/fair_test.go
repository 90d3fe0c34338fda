package conformance_test

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
)

// breadthFirstPolicy is a small tenant-fair policy (spec §6.6) used only
// to exercise the FAIR invariants until domain/claim ships one: it samples
// scopes that have due ready work in random order, ranks each scope's due
// runs admitted-first, and admits rank by rank across scopes.
type breadthFirstPolicy struct{}

func (breadthFirstPolicy) Name() string         { return "test_breadth_first" }
func (breadthFirstPolicy) MarksAdmission() bool { return true }

func (breadthFirstPolicy) Select(r claim.Request, candidates []claim.Candidate) claim.Selection {
	byScope := map[string][]claim.Pick{}
	var expired []claim.Pick
	for _, c := range candidates {
		class, at, ok := claim.Classify(r, c)
		if !ok {
			continue
		}
		p := claim.Pick{Candidate: c, Class: class, EligibleAt: at}
		if class == claim.ClassExpired {
			expired = append(expired, p)
		} else {
			byScope[c.ScopeKey] = append(byScope[c.ScopeKey], p)
		}
	}
	scopes := make([]string, 0, len(byScope))
	for s := range byScope {
		scopes = append(scopes, s)
	}
	slices.Sort(scopes)
	rand.Shuffle(len(scopes), func(i, j int) { scopes[i], scopes[j] = scopes[j], scopes[i] })
	if len(scopes) > r.Limit {
		scopes = scopes[:r.Limit]
	}
	var pool []claim.Pick
	for _, s := range scopes {
		page := byScope[s]
		slices.SortFunc(page, func(a, b claim.Pick) int {
			if a.Admitted != b.Admitted {
				if a.Admitted {
					return -1
				}
				return 1
			}
			return byAge(a, b)
		})
		if len(page) > r.Limit {
			page = page[:r.Limit]
		}
		for i := range page {
			page[i].ClassRank = i + 1 // the scope rank, for now
		}
		pool = append(pool, page...)
	}
	slices.SortFunc(pool, func(a, b claim.Pick) int {
		if c := cmp.Compare(a.ClassRank, b.ClassRank); c != 0 {
			return c
		}
		return byAge(a, b)
	})
	if len(pool) > r.Limit {
		pool = pool[:r.Limit]
	}
	for i := range pool {
		pool[i].ClassRank = i + 1
	}
	slices.SortFunc(expired, byAge)
	if len(expired) > r.Limit {
		expired = expired[:r.Limit]
	}
	for i := range expired {
		expired[i].ClassRank = i + 1
	}
	return claim.Selection{
		Picks:             claim.Merge(r, pool, expired, true),
		ReadyCandidates:   len(pool),
		ExpiredCandidates: len(expired),
	}
}

func byAge(a, b claim.Pick) int {
	if c := a.EligibleAt.Compare(b.EligibleAt); c != 0 {
		return c
	}
	return cmp.Compare(a.Order, b.Order)
}

func fairFactory(t conformance.T) conformance.Adapter {
	clock := conformance.NewManualClock(conformance.ReferenceTime)
	store := memory.New(memory.Options{Clock: clock, Policy: breadthFirstPolicy{}})
	return conformance.Adapter{Backend: store, Clock: clock}
}

func TestTenantFairAdapterPassesTheSuite(t *testing.T) {
	t.Parallel()
	features := quickFeatures
	features.TenantFairPolicy = true
	report := conformance.RunStandalone(t.Context(), features, fairFactory)
	if !report.Passed() {
		t.Fatalf("report:\n%s", report)
	}
	for _, id := range []string{"FAIR-001", "FAIR-002", "FAIR-003"} {
		res, _ := report.Result(id)
		if res.Status != conformance.StatusPass {
			t.Errorf("%s: %s, want pass", id, res.Status)
		}
	}
	if res, _ := report.Result("CLAIM-014"); res.Status != conformance.StatusSkip {
		t.Errorf("CLAIM-014 (legacy order) must skip under a tenant-fair policy, got %s", res.Status)
	}
}

func TestFIFOAdapterFailsTheFairnessInvariants(t *testing.T) {
	t.Parallel()
	features := quickFeatures
	features.TenantFairPolicy = true // claimed, but the store runs claim.Legacy
	report := conformance.RunStandalone(t.Context(), features, memoryFactory)
	failed := report.Failed()
	for _, id := range []string{"FAIR-001", "FAIR-002", "OPS-005"} {
		if !slices.Contains(failed, id) {
			t.Errorf("%s must fail for a FIFO store declared tenant-fair (failed: %v)", id, failed)
		}
	}
}
