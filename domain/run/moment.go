package run

import "time"

// DispositionKind says when a committed moment's run should advance next.
type DispositionKind string

// Disposition kinds (the "wake_disposition" of checkpoint metadata).
const (
	DispositionContinue  DispositionKind = "continue"  // advance now, keeping the claim
	DispositionImmediate DispositionKind = "immediate" // park, wake now
	DispositionAt        DispositionKind = "at"        // park until At
	DispositionExternal  DispositionKind = "external"  // park until a signal (waiting)
	DispositionTerminal  DispositionKind = "terminal"  // never wakes
)

// Park reasons.
const (
	ReasonDrainBudget        = "drain_budget"
	ReasonInterruptResolved  = "interrupt_resolved"
	ReasonRetryBackoff       = "retry_backoff"
	ReasonAwaitingInterrupts = "awaiting_interrupts"
	ReasonRunCompleted       = "run_completed"
	ReasonRunFailed          = "run_failed"
	ReasonRunCancelled       = "run_cancelled"
)

// Disposition is continue, or a park with its kind and reason.
type Disposition struct {
	Kind   DispositionKind
	At     time.Time // DispositionAt only
	Reason string    // empty for continue
}

// Moment is one proposed durable transition: the next run, its events (the
// last is always checkpoint_committed), checkpoint metadata and when to wake.
// Computing a moment has no side effects; a store commits it whole or not at
// all, fenced on Run.CheckpointSeq-1.
type Moment struct {
	Run            *Run
	Events         []Event
	CheckpointType CheckpointType
	Metadata       *CheckpointMetadata // also on the final event
	Disposition    Disposition
	ProposedAt     time.Time
}

// ExpectedSeq is the stored checkpoint sequence this moment must be fenced on.
func (m *Moment) ExpectedSeq() int64 { return m.Run.CheckpointSeq - 1 }
