package claim

import (
	"fmt"
	"math"
	"time"
)

// PoisonReason values a store records. Other strings are tolerated on read.
const (
	ReasonMaxClaimAttempts = "max_claim_attempts_exceeded"
	ReasonMaxClaimAbandons = "max_claim_abandons_exceeded"
)

// maxBackoffExponent clamps the doubling so the product stays exact.
const maxBackoffExponent = 30

// Backoff makes a non-poisoning abandon's wake grow exponentially with the
// run's durable abandon count: now + min(Base·2^min(abandons,30), Cap).
type Backoff struct {
	Base time.Duration // > 0
	Cap  time.Duration // >= Base
}

// Delay is the wake delay after abandons prior hand-backs (the count before
// this one). It saturates at Cap without overflowing.
func (b Backoff) Delay(abandons int) time.Duration {
	shift := min(max(abandons, 0), maxBackoffExponent)
	// base·2^shift > cap  ⇔  base > ⌊cap / 2^shift⌋ for integers.
	if b.Base > b.Cap>>shift {
		return b.Cap
	}
	return b.Base << shift
}

// AbandonParams is the policy of one pre-execution hand-back of a claim
// (the seed's abandon_policy).
type AbandonParams struct {
	// ExpectedSeq must equal the stored checkpoint_seq: an abandon only
	// applies before the holder's first commit.
	ExpectedSeq int64
	// Now is the caller's clock; it stamps poisoned_at and anchors Backoff.
	Now time.Time
	// RetryAt is the wake recorded on a rescheduled hand-back (>= Now).
	RetryAt time.Time
	// MaxClaimAbandons permits that many rescheduled hand-backs; the next
	// one poisons (unless NonPoisoning).
	MaxClaimAbandons int
	// NonPoisoning never poisons (host incompatibility).
	NonPoisoning bool
	// Backoff, only with NonPoisoning, replaces RetryAt with the
	// exponential wake computed from the durable abandon count.
	Backoff *Backoff
}

// Validate reports the first invalid field of p, wrapping ErrInvalidRequest.
func (p AbandonParams) Validate() error {
	switch {
	case p.ExpectedSeq < 0:
		return &InvalidError{Field: "ExpectedSeq", Reason: "must not be negative"}
	case p.Now.IsZero():
		return &InvalidError{Field: "Now", Reason: "is required"}
	case p.RetryAt.IsZero():
		return &InvalidError{Field: "RetryAt", Reason: "is required"}
	case Micros(p.RetryAt).Before(Micros(p.Now)):
		return &InvalidError{Field: "RetryAt", Reason: "must not be before Now"}
	case p.MaxClaimAbandons < 1:
		return &InvalidError{Field: "MaxClaimAbandons", Reason: "must be at least 1"}
	// Stores bind it as a 32-bit integer (the claim_abandons column).
	case p.MaxClaimAbandons > math.MaxInt32:
		return &InvalidError{Field: "MaxClaimAbandons", Reason: fmt.Sprintf("must be at most %d", math.MaxInt32)}
	case p.Backoff != nil && p.Backoff.Base <= 0:
		return &InvalidError{Field: "Backoff.Base", Reason: "must be positive"}
	case p.Backoff != nil && p.Backoff.Cap < p.Backoff.Base:
		return &InvalidError{Field: "Backoff.Cap", Reason: "must not be below Backoff.Base"}
	}
	return nil
}

// Counters are a run's operational claim counters.
type Counters struct {
	Attempts int // claim_attempts
	Abandons int // claim_abandons
}

// AbandonDecision is what a matched abandon writes. The claim is always
// cleared; exactly one of WakeAt and PoisonedAt is set.
type AbandonDecision struct {
	Counters     Counters
	Poisoned     bool
	WakeAt       time.Time // rescheduled only
	PoisonedAt   time.Time // poisoned only
	PoisonReason string    // poisoned only
}

// Abandon decides a matched abandon from the row's counters before the
// call. It refunds the attempt the claim consumed (never below zero) and
// either counts the hand-back and reschedules, or — for a poisoning policy
// whose abandon count already reached MaxClaimAbandons — poisons with
// ReasonMaxClaimAbandons, leaving the abandon count at the maximum. p must
// be valid.
func Abandon(p AbandonParams, before Counters) AbandonDecision {
	refunded := max(before.Attempts-1, 0)
	now := Micros(p.Now)
	if !p.NonPoisoning && before.Abandons >= p.MaxClaimAbandons {
		return AbandonDecision{
			Counters:     Counters{Attempts: refunded, Abandons: before.Abandons},
			Poisoned:     true,
			PoisonedAt:   now,
			PoisonReason: ReasonMaxClaimAbandons,
		}
	}
	wake := Micros(p.RetryAt)
	if p.NonPoisoning && p.Backoff != nil {
		wake = Micros(now.Add(p.Backoff.Delay(before.Abandons)))
	}
	return AbandonDecision{
		Counters: Counters{Attempts: refunded, Abandons: before.Abandons + 1},
		WakeAt:   wake,
	}
}
