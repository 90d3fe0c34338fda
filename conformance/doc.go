// Package conformance is the black-box suite every Docket storage adapter
// must pass: the guarantees of the seeds (fenced claims, one winning commit
// per checkpoint, atomic run + schedule + event writes, idempotent events,
// wakes announced only after commit, token redaction) and the conformance
// invariants of the PostgreSQL specification (§20), each a subtest named by
// a stable ID such as "FENCE-003/stale_token_cannot_commit".
//
// An adapter's test calls Run with its *testing.T, the Features it promises
// and a Factory that builds a fresh adapter (its own namespace and a store
// clock the suite controls) for every invariant. RunStandalone runs the
// same suite outside go test and returns a Report with every failure
// message; the docket CLI uses it.
//
// The suite imports only the domain and ports modules (and the standard
// library); it needs no assertion library, so it can run in production
// binaries. It is not a place for
// adapter-specific regressions: those live next to the adapter's Run call.
package conformance
