package claim

import (
	"slices"
	"time"
)

// Class is the candidate class a claimed row came from.
type Class string

// Classes.
const (
	// ClassReady rows are running, healthy, unclaimed and due:
	// wake_at <= Request.DueBy (inclusive).
	ClassReady Class = "ready"
	// ClassExpired rows are running, healthy and claimed with
	// claimed_at < Request.ExpiryCutoff (strict). Leasing one is a steal.
	ClassExpired Class = "expired"
)

// Candidate is one running, unpoisoned, unlocked run row as an adapter
// presents it to a Policy. Exactly one of WakeAt (unclaimed) and ClaimedAt
// (claimed) is set, as the queue-shape constraint guarantees.
type Candidate struct {
	RunID string
	// Order is the row's stable insertion order (the bigserial id of SQL
	// adapters): the final tie-breaker of every ordering.
	Order     int64
	ScopeKey  string // tenant id, "" for tenantless (used by tenant-fair policies)
	Admitted  bool   // durable tenant admission marker (tenant-fair policies)
	WakeAt    time.Time
	ClaimedAt time.Time
	Claimed   bool
}

// Classify places c in its class under r, or reports false when c is
// neither due nor expired.
func Classify(r Request, c Candidate) (class Class, eligibleAt time.Time, ok bool) {
	if c.Claimed {
		if Micros(c.ClaimedAt).Before(r.ExpiryCutoff()) {
			return ClassExpired, Micros(c.ClaimedAt), true
		}
		return "", time.Time{}, false
	}
	if !c.WakeAt.IsZero() && !Micros(c.WakeAt).After(r.DueBy()) {
		return ClassReady, Micros(c.WakeAt), true
	}
	return "", time.Time{}, false
}

// Pick is one selected candidate, in admission order.
type Pick struct {
	Candidate
	Class      Class
	EligibleAt time.Time // wake_at for ready, claimed_at for expired
	ClassRank  int       // 1-based position within its class
}

// Selection is a policy's answer: the picks in admission order (at most
// Request.Limit) and the size of each candidate class for telemetry.
type Selection struct {
	Picks             []Pick
	ReadyCandidates   int
	ExpiredCandidates int
}

// Policy decides which due rows one admission call takes. It is pure and
// data-only: adapters supply every running, unpoisoned row they can lock
// (rows held by a concurrent writer are skipped, never waited on) and then
// apply Decide to each pick in order.
//
// New policies (for example a tenant-fair one) implement this interface and
// need no change to the storage ports: Candidate.ScopeKey and Admitted carry
// what they need, Merge applies the shared class rules (interleaved by class
// rank for such a policy), and MarksAdmission tells the adapter to record
// the sticky admission marker on each lease.
type Policy interface {
	// Name is the policy's stable, bounded telemetry label.
	Name() string
	// Select orders and trims candidates for r. r must be valid.
	Select(r Request, candidates []Candidate) Selection
	// MarksAdmission reports whether a lease sets the tenant admission
	// marker (tenant-fair policies); Legacy preserves it as it was.
	MarksAdmission() bool
}

// Legacy is the FIFO policy: tenant-blind, oldest-eligible first, with one
// reserved slot per non-empty class when Limit >= 2 and the demand-1
// preference otherwise.
var Legacy Policy = legacyPolicy{}

type legacyPolicy struct{}

func (legacyPolicy) Name() string         { return "legacy" }
func (legacyPolicy) MarksAdmission() bool { return false }

func (legacyPolicy) Select(r Request, candidates []Candidate) Selection {
	ready, expired := classes(r, candidates)
	sel := Selection{ReadyCandidates: len(ready), ExpiredCandidates: len(expired)}
	sel.Picks = Merge(r, ready, expired, false)
	return sel
}

// classes splits candidates into the two classes, each ordered by
// (eligible_at, order), ranked from 1 and cut at r.Limit.
func classes(r Request, candidates []Candidate) (ready, expired []Pick) {
	for _, c := range candidates {
		class, at, ok := Classify(r, c)
		if !ok {
			continue
		}
		p := Pick{Candidate: c, Class: class, EligibleAt: at}
		if class == ClassReady {
			ready = append(ready, p)
		} else {
			expired = append(expired, p)
		}
	}
	return rankClass(ready, r.Limit), rankClass(expired, r.Limit)
}

func rankClass(picks []Pick, limit int) []Pick {
	slices.SortFunc(picks, byAge)
	if len(picks) > limit {
		picks = picks[:limit]
	}
	for i := range picks {
		picks[i].ClassRank = i + 1
	}
	return picks
}

func byAge(a, b Pick) int {
	if c := a.EligibleAt.Compare(b.EligibleAt); c != 0 {
		return c
	}
	return cmpInt64(a.Order, b.Order)
}

// Merge applies the shared class-mixing rules to two ranked classes (each
// already ordered and ranked from 1) and keeps r.Limit picks:
//
//  1. with Limit >= 2, each non-empty class's head comes first, so both
//     classes get at least one outcome whatever their age skew;
//  2. with Limit == 1, the preferred class comes first; an empty preferred
//     class falls through to the other, so demand is never wasted;
//  3. then global age (eligible_at, order), or, when interleave is set,
//     class rank first (rank by rank across classes).
//
// A SQL adapter's statement must produce the same order.
func Merge(r Request, ready, expired []Pick, interleave bool) []Pick {
	all := make([]Pick, 0, len(ready)+len(expired))
	all = append(all, ready...)
	all = append(all, expired...)
	key := func(p Pick) (reserved, preferred bool) {
		reserved = r.Limit >= 2 && p.ClassRank == 1
		preferred = r.Limit == 1 && r.Preference != PreferNone && string(p.Class) == string(r.Preference)
		return
	}
	slices.SortStableFunc(all, func(a, b Pick) int {
		ar, ap := key(a)
		br, bp := key(b)
		if c := cmpFirst(ar, br); c != 0 {
			return c
		}
		if c := cmpFirst(ap, bp); c != 0 {
			return c
		}
		if interleave && a.ClassRank != b.ClassRank {
			return a.ClassRank - b.ClassRank
		}
		return byAge(a, b)
	})
	if len(all) > r.Limit {
		all = all[:r.Limit]
	}
	return all
}

// cmpFirst orders true before false.
func cmpFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}

// Outcome is what admission does to one picked row.
type Outcome int

// Outcomes.
const (
	OutcomeLease  Outcome = iota + 1 // new token, attempts+1
	OutcomePoison                    // poisoned with ReasonMaxClaimAttempts
)

// Decision is the per-row result of Decide.
type Decision struct {
	Outcome Outcome
	// Attempt is the post-increment claim_attempts of a lease (>= 1), or
	// the unchanged count of a poisoned row.
	Attempt      int
	PoisonReason string // poison only
}

// Decide is the lease-or-poison rule, evaluated on the row's current
// claim_attempts: below the maximum it leases (attempts+1); otherwise it
// poisons with ReasonMaxClaimAttempts, leaving attempts unchanged. With
// maximum N exactly N launches happen and the (N+1)-th selection poisons.
func Decide(attempts, maxAttempts int) Decision {
	if attempts < maxAttempts {
		return Decision{Outcome: OutcomeLease, Attempt: attempts + 1}
	}
	return Decision{Outcome: OutcomePoison, Attempt: attempts, PoisonReason: ReasonMaxClaimAttempts}
}
