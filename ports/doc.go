// Package ports declares the interfaces between Docket's application layer
// and its storage adapters: RunStore, EventStore, GraphStore (bundled with a
// capability probe as Backend), Notifier, Telemetry and Clock, with their
// value types and typed errors.
//
// Who implements it: storage adapters (adapters/memory, adapters/postgres)
// implement Backend; adapters/otel implements Telemetry. An adapter is
// trusted to hold the guarantees documented on each method; the conformance
// module checks them black-box, and an adapter that passes it may be used
// in place of any other. The package is interfaces and small helpers
// only: the checks every adapter runs before touching storage (parameter
// and proposal validation, the commit fence, the stored graph encoding)
// and Broadcaster, the in-process Notifier. It performs no I/O and imports
// only the domain module.
//
// Conventions every method follows:
//   - Scope is explicit on every storage call (see Scope). Out-of-scope and
//     absent resources are indistinguishable: both ErrNotFound.
//   - Outcomes are sentinel errors matched with errors.Is (ErrStaleFence,
//     ErrNotFound, ErrClaimLost, ...). Invalid caller input (a zero limit, a
//     malformed scope) is an error wrapping ErrInvalidArgument or
//     ErrInvalidScope, returned before any storage access.
//   - Times are UTC with microsecond precision; adapters normalize every
//     caller-supplied time before writing or comparing it.
//   - Claim tokens are bearer capabilities: ClaimToken redacts itself from
//     every format, and no error string, RunInfo or RunSummary carries one.
//
// Stability: the interfaces grow by new params fields and new methods on
// new interfaces, never by changing an existing signature.
package ports
