package vehicle

import (
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// Kind says how one drive of a lease ended. The values are bounded
// telemetry labels.
type Kind string

// Outcome kinds.
const (
	// Parked: the drive committed up to a park (immediate, at, external
	// or terminal); the commit released the claim.
	Parked Kind = "parked"
	// FenceLost: another writer (a signal, a steal) moved the run; nothing
	// of this drive's last proposal was committed.
	FenceLost Kind = "fence_lost"
	// Discarded: a commit or a read failed for another reason (an event
	// conflict, an infrastructure error, a store call that ran out of
	// StoreTimeout); the proposal was dropped and the claim released. A
	// timed-out commit may have been written all the same: the fence keeps
	// either fate correct.
	Discarded Kind = "discarded"
	// Abandoned: the stored graph version cannot be used here (corrupt,
	// does not compile, wrong identity); the claim was handed back with a
	// jittered backoff, counting toward max_claim_abandons.
	Abandoned Kind = "abandoned"
	// Deferred: nothing was due yet; the claim was handed back with a wake
	// at the earliest deadline.
	Deferred Kind = "deferred"
	// HostIncompatible: a node's timeout_ms exceeds this host's attempt
	// maximum; the claim was handed back without poisoning, with an
	// exponential backoff.
	HostIncompatible Kind = "host_incompatible"
	// Interrupted: the host is stopping (the drive's context ended) before
	// the drive reached a commit; the claim is left to expire and be
	// recovered after the orphan TTL.
	Interrupted Kind = "interrupted"
	// Crashed: an invariant broke or the drive panicked; the claim is left
	// to expire, and repeated crashes poison the run through
	// max_claim_attempts.
	Crashed Kind = "crashed"
)

// Budget labels: which drain limit turned a continue into a yield.
const (
	BudgetMaxMoments = "max_moments"
	BudgetMaxElapsed = "max_elapsed_ms"
	BudgetBoth       = "both"
	BudgetShutdown   = "shutdown"
)

// Outcome is the result of one drive.
type Outcome struct {
	Kind Kind
	// Park is the disposition of the last commit (Parked only).
	Park run.DispositionKind
	// Abandon is the hand-back's result (Abandoned, Deferred).
	Abandon ports.AbandonResult
	// Reason is a bounded reason: why a graph was abandoned, why a
	// proposal was discarded, or the stage a fence was lost at.
	Reason string
	// Err is the cause for HostIncompatible, Discarded, Interrupted,
	// Crashed and a corrupt graph's Abandoned (never carries a claim
	// token).
	Err error
	// Committed counts the moments this drive committed.
	Committed int
	// Budget names the limit that made the last commit a yield, if any.
	Budget string
}

// Abandon reasons (stored-graph incompatibility).
const (
	ReasonCorruptGraph     = "corrupt_graph"
	ReasonCompileFailed    = "graph_compilation_failed"
	ReasonIdentityMismatch = "effective_identity_mismatch"
)

// Discard and fence stages.
const (
	StagePreFetch   = "pre_fetch"
	StageGraphFetch = "graph_fetch"
	StageCommit     = "commit"
	StageAbandon    = "abandon"
)
