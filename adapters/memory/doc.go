// Package memory is the in-process adapter of every Docket storage port:
// RunStore, EventStore and GraphStore (as one ports.Backend) plus an
// in-process Notifier. It is a product adapter, not a test double: the
// inline and demo modes run on it, and it passes the same conformance suite
// as the PostgreSQL adapter.
//
// It keeps the same row-level operational state as PostgreSQL (claim token
// and claimed_at, wake_at, claim attempts and abandons, poison facts, the
// tenant admission marker) and enforces every fence, scope rule and event
// idempotency rule of the ports. Every write is atomic: a failed write
// changes nothing and announces nothing. Stored values are private deep
// copies, so callers can neither alias nor mutate committed state.
//
// The "store clock" (PostgreSQL's CURRENT_TIMESTAMP and clock_timestamp())
// is the Clock given in Options; caller clocks arrive as arguments exactly
// as in the ports. Nothing is persisted: state lives as long as the Store.
package memory
