package claim

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrInvalidRequest is wrapped by every validation error of a Request or
// AbandonParams. Invalid input is a caller bug, reported before any storage
// access.
var ErrInvalidRequest = errors.New("invalid claim request")

// InvalidError names the offending field of a Request or AbandonParams.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("invalid claim request: %s %s", e.Field, e.Reason)
}

// Unwrap lets errors.Is match ErrInvalidRequest.
func (e *InvalidError) Unwrap() error { return ErrInvalidRequest }

// Preference is the class a demand-1 claim tries first.
type Preference string

// Preferences. PreferNone applies the policy's plain ordering.
const (
	PreferNone    Preference = ""
	PreferReady   Preference = "ready"
	PreferExpired Preference = "expired"
)

// Valid reports whether p is one of the declared preferences.
func (p Preference) Valid() bool {
	return p == PreferNone || p == PreferReady || p == PreferExpired
}

// Flip returns the other class: ready becomes expired and expired (or none)
// becomes ready.
func (p Preference) Flip() Preference {
	if p == PreferReady {
		return PreferExpired
	}
	return PreferReady
}

// Request is one admission call (the seed's claim policy input).
type Request struct {
	// Now is the caller's clock; with StoreNow it stamps claimed_at and
	// poisoned_at and bounds both classes. It is normalized to UTC
	// microseconds.
	Now time.Time
	// StoreNow is the store clock at the admission, which the store fills
	// in (callers leave it zero; zero means Now is the only clock). Hosts'
	// clocks disagree, the store's is the one they share, so each decision
	// takes the side of the two clocks that keeps its guarantee: a run is
	// due when it is due by either (see DueBy), a claim expires only when
	// it expired by both (see ExpiryCutoff), and a lease is stamped at the
	// later of the two. A caller whose clock is ahead therefore cannot
	// steal a claim its owner keeps alive, and one whose clock is behind
	// still claims what the store finds due.
	StoreNow time.Time
	// Limit is the demand: at most Limit leases plus poison outcomes.
	Limit int
	// OrphanTTL is how long a claim stays unstealable after claimed_at.
	OrphanTTL time.Duration
	// MaxClaimAttempts is the number of launches a run may have without
	// committed progress; the next selection poisons it.
	MaxClaimAttempts int
	// Preference only matters at Limit 1 (see Policy).
	Preference Preference
}

// Validate reports the first invalid field of r, wrapping ErrInvalidRequest.
func (r Request) Validate() error {
	switch {
	case r.Now.IsZero():
		return &InvalidError{Field: "Now", Reason: "is required"}
	case r.Limit < 1:
		return &InvalidError{Field: "Limit", Reason: "must be at least 1"}
	case r.OrphanTTL < 0:
		return &InvalidError{Field: "OrphanTTL", Reason: "must not be negative"}
	case r.MaxClaimAttempts < 1:
		return &InvalidError{Field: "MaxClaimAttempts", Reason: "must be at least 1"}
	// Stores bind both as 32-bit integers (the counters' columns).
	case r.Limit > math.MaxInt32:
		return &InvalidError{Field: "Limit", Reason: fmt.Sprintf("must be at most %d", math.MaxInt32)}
	case r.MaxClaimAttempts > math.MaxInt32:
		return &InvalidError{Field: "MaxClaimAttempts", Reason: fmt.Sprintf("must be at most %d", math.MaxInt32)}
	case !r.Preference.Valid():
		return &InvalidError{Field: "Preference", Reason: fmt.Sprintf("%q is not ready, expired or empty", string(r.Preference))}
	}
	return nil
}

// Normalized returns r with Now in UTC truncated to the microsecond, the
// precision every store keeps.
func (r Request) Normalized() Request {
	r.Now = Micros(r.Now)
	r.StoreNow = Micros(r.StoreNow)
	return r
}

// DueBy is the admission's "now": the later of Now and StoreNow. A ready
// run has wake_at at or before it, and a lease or a poisoning is stamped
// with it, so a claim is never stamped before the store clock.
func (r Request) DueBy() time.Time {
	now, store := Micros(r.Now), Micros(r.StoreNow)
	if store.After(now) {
		return store
	}
	return now
}

// ExpiryCutoff is the instant before which a claim is expired: claimed_at
// strictly before Now-OrphanTTL and, when StoreNow is set, strictly before
// StoreNow-OrphanTTL too.
func (r Request) ExpiryCutoff() time.Time {
	cutoff := Micros(r.Now).Add(-r.OrphanTTL)
	if store := Micros(r.StoreNow).Add(-r.OrphanTTL); !r.StoreNow.IsZero() && store.Before(cutoff) {
		cutoff = store
	}
	return cutoff
}

// Micros normalizes t to UTC with microsecond precision, the precision of
// every stored timestamp. The zero time stays zero.
func Micros(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}
