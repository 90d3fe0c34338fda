package ports

import (
	"context"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
)

// Label is one bounded metric label. Values come from small fixed sets
// (operation names, result kinds, classes); identities such as run, tenant
// or graph ids and claim tokens are never labels.
type Label struct {
	Key   string
	Value string
}

// Measurements are the numbers of one telemetry fact.
type Measurements map[string]float64

// Result kinds of operation spans.
const (
	ResultOK         = "ok"
	ResultStaleFence = "stale_fence"
	ResultError      = "error"
	ResultSkipped    = "skipped"
	ResultLocked     = "locked" // a prune pass another pass's lock kept from running
	ResultOther      = "other"
)

// Telemetry receives best-effort operational signals. It can never veto
// or delay a durable write, and it is not a business event log: facts may
// describe rolled-back work, except Committed, which is emitted only after
// a successful commit. Implementations must be safe for concurrent use
// and must not block.
type Telemetry interface {
	// StartSpan begins an operation span (for example "run_store.claim").
	StartSpan(ctx context.Context, operation string, labels ...Label) (context.Context, Span)
	// Emit records one instantaneous fact.
	Emit(ctx context.Context, name string, m Measurements, labels ...Label)
	// Committed records a durable transition after its commit.
	Committed(ctx context.Context, f CommittedFact)
}

// Span is an open operation span.
type Span interface {
	// End closes the span with a bounded result label and measurements.
	End(result string, m Measurements)
}

// CommittedFact describes one committed transition (no identities).
type CommittedFact struct {
	CheckpointType run.CheckpointType
	Disposition    run.DispositionKind
	CheckpointSeq  int64
	Step           int
	RetryDelay     time.Duration // retry_scheduled only
}

// NopTelemetry discards everything.
type NopTelemetry struct{}

// StartSpan returns ctx and a span that does nothing.
func (NopTelemetry) StartSpan(ctx context.Context, _ string, _ ...Label) (context.Context, Span) {
	return ctx, nopSpan{}
}

// Emit does nothing.
func (NopTelemetry) Emit(context.Context, string, Measurements, ...Label) {}

// Committed does nothing.
func (NopTelemetry) Committed(context.Context, CommittedFact) {}

type nopSpan struct{}

func (nopSpan) End(string, Measurements) {}

// Discards reports whether t drops every fact unread (NopTelemetry), so a
// hot path may skip building measurements and labels nobody reads.
func Discards(t Telemetry) bool {
	switch t.(type) {
	case NopTelemetry, *NopTelemetry:
		return true
	}
	return false
}

// Fact and operation names: the one spelling the runtime reports each fact
// under and the telemetry adapters catalog it under (docs/telemetry.md
// lists what each carries). Adapters also accept a "docket." or
// "docket.postgres." prefix.
const (
	FactDispatcherPoll       = "dispatcher.poll"
	FactDispatcherClaim      = "dispatcher.claim"
	FactDispatcherState      = "dispatcher.state"
	FactDispatcherLaunch     = "dispatcher.launch"
	FactDispatcherShutdown   = "dispatcher.shutdown"
	FactNotification         = "notification"
	FactRunStoreClaim        = "run_store.claim"
	FactRunStoreCommit       = "run_store.commit"
	FactClaimPolicyAdmission = "claim_policy.admission"
	FactClaimAttempt         = "claim.attempt"
	FactClaimPoisoned        = "claim.poisoned"
	FactAdmissionRelease     = "admission.release"
	FactClaimOperation       = "claim.operation"
	FactFenceLost            = "claim.fence_lost"
	FactGraphCacheFetch      = "graph_cache.fetch"
	FactGraphFetch           = "graph.fetch"
	FactGraphCompile         = "graph.compile"
	FactRunCodec             = "run_codec"
	FactStore                = "store"
	FactStoreOperation       = "store.operation"
	FactLifecycleTransition  = "lifecycle.transition"
	FactMoment               = "moment"
	FactNodeAttempt          = "node.attempt"
	FactVehicle              = "vehicle"
	FactVehicleDrain         = "vehicle.drain"
	FactVehicleDiscard       = "vehicle.discard"
	FactVehicleCrash         = "vehicle.crash"
	FactPrunerPass           = "pruner.pass"
	FactObserver             = "checkpoint.observer"
	FactObserverFailure      = "checkpoint.observer.failure"
	// FactLifecycleCommitted names the durable-success fact that
	// Telemetry.Committed reports; it is never passed to Emit.
	FactLifecycleCommitted = "lifecycle.committed"
)

// Label keys. The bounded ones may become metric labels; the identity
// ones (run, graph, task, node, attempt, step, sequence) are span-only and
// an adapter must never turn them into metric labels. There is no key for
// tenants, scopes or claim tokens: they are never reported.
const (
	LabelResult          = "result"
	LabelSource          = "source"
	LabelClaimPolicy     = "claim_policy"
	LabelPreference      = "preference"
	LabelFallback        = "fallback"
	LabelImplementation  = "implementation"
	LabelContentionPhase = "contention_phase"
	LabelReason          = "reason"
	LabelOperation       = "operation"
	LabelStage           = "stage"
	LabelOutcome         = "outcome"
	LabelBudget          = "budget"
	LabelPark            = "park"
	LabelCheckpointType  = "checkpoint_type"
	LabelDisposition     = "disposition"
	LabelDurableSuccess  = "durable_success"
	LabelClass           = "class"
	LabelKind            = "kind"

	// Span-only identities.
	LabelRunID         = "run_id"
	LabelGraphID       = "graph_id"
	LabelGraphHash     = "graph_hash"
	LabelTaskID        = "task_id"
	LabelNode          = "node"
	LabelLifecycleRef  = "lifecycle_ref"
	LabelAttempt       = "attempt"
	LabelStep          = "step"
	LabelCheckpointSeq = "checkpoint_seq"
	LabelClaimAttempt  = "claim_attempt"
)

// Bounded reasons of the claim.poisoned fact.
const (
	PoisonReasonMaxClaimAttempts = "max_claim_attempts"
	PoisonReasonMaxClaimAbandons = "max_claim_abandons"
)

// PoisonReasonLabel maps a stored poison reason to its bounded label:
// max_claim_attempts, max_claim_abandons, or other for anything else.
func PoisonReasonLabel(reason string) string {
	switch reason {
	case claim.ReasonMaxClaimAttempts:
		return PoisonReasonMaxClaimAttempts
	case claim.ReasonMaxClaimAbandons:
		return PoisonReasonMaxClaimAbandons
	}
	return ResultOther
}
