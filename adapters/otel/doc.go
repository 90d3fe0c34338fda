// Package otel implements ports.Telemetry on OpenTelemetry: operation
// spans become trace spans, and the facts of a fixed catalog become metric
// instruments (counters, histograms and gauges) created once in New.
//
// What it is for: plugging Docket's operational signals (dispatcher polls,
// vehicle drains, moments, node attempts, claims, commits, fence losses,
// poison, backlog) into an operator's tracing and metrics pipeline. What
// it is not: a business event log. Telemetry is best effort; the durable
// run and event rows are the source of truth (see docs/telemetry.md).
//
// Two guards keep the output safe and bounded whatever a caller passes:
//   - Metric attributes come only from each instrument's declared label
//     keys, all on a bounded allow-list (result, source, stage, ...).
//     Identities (tenant, scope, run, graph, task ids, attempts) are never
//     metric attributes; a value that is not a short lower-case word (an
//     id, a UUID, a token) is reported as "other".
//   - Span attributes come only from allow-listed keys: the bounded keys
//     above plus a few identities useful in a trace (run_id, graph_id,
//     task_id, node, attempt, step, ...). Tenant and scope keys are never
//     emitted, and no key can carry a claim token: any key not on the
//     lists, such as "claim_token", is dropped before it reaches the SDK.
//
// Operation and fact names may be given short ("dispatcher.poll") or with
// the catalog's "docket." or "docket.postgres." prefix; all three forms
// name the same entry.
package otel
