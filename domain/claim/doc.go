// Package claim holds Docket's claim policies as pure values: the admission
// request a dispatcher sends to ClaimDue, the candidate classes (ready and
// expired), the rules that merge them into one admission order, the
// lease-or-poison decision against max_claim_attempts, the abandon policy
// (poisoning and non-poisoning hand-backs with exponential backoff), and the
// per-instance admission Phase that alternates the demand-1 preference.
//
// Every storage adapter executes these rules; the rules themselves live only
// here. The in-memory adapter calls Policy.Select directly; a SQL adapter
// reproduces the same predicates and ordering in one statement and is held to
// them by the conformance suite. Nothing here performs I/O or reads a clock:
// callers pass "now".
package claim
