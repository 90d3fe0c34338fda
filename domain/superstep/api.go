// Package superstep is Docket's runtime algorithm as pure functions: from a
// committed run and its compiled graph it plans the next superstep, and from
// the attempt results it computes the next Moment (barrier, retry park,
// failure, completion), plus the signal mutations (interrupt resolution,
// cancellation) and initialization.
//
// Nothing here performs I/O, starts goroutines or reads a clock: time and
// identifiers arrive in Env, node execution happens in the caller between
// Advance and Settle.
package superstep

import (
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

// Env carries the values a transition needs from the outside world.
type Env struct {
	// Now is the transition time (read once per transition; truncated to µs UTC).
	Now time.Time
	// ResumeFloor is a deadline the driver already waited out: timers due at
	// or before max(Now, ResumeFloor) are due.
	ResumeFloor time.Time
	// NewInterruptID generates IDs for interrupts that supply none
	// ("interrupt_" + 16 random hex in production).
	NewInterruptID func() string
}

// StartParams describe a new run.
type StartParams struct {
	RunID    string
	Input    map[string]any
	Metadata map[string]any
}

// Error codes.
const (
	CodeInvalidInput                = "invalid_input"
	CodeInvalidRun                  = "invalid_run"
	CodeGraphMismatch               = "graph_mismatch"
	CodeGuardEvaluationFailed       = "guard_evaluation_failed"
	CodeInactiveRun                 = "inactive_run"
	CodeAlreadyResolved             = "already_resolved"
	CodeNotFound                    = "not_found"
	CodeIncompatibleExecutionPolicy = "incompatible_execution_policy"
)

// Error is a typed domain error; errors.Is matches another *Error with the
// same Code.
type Error struct {
	Code    string
	Phase   string // e.g. "init", "resolve"
	Message string
	NodeID  string         // the node concerned, when there is exactly one
	Details map[string]any // e.g. {"reasons": [...]}
}

// StepKind says what the driver must do next.
type StepKind int

// Step kinds.
const (
	// Execute: run Activations (concurrently), then call Settle.
	Execute StepKind = iota + 1
	// Commit: Moment is ready without execution (completion, superstep
	// limit, plan-time failure).
	Commit
	// Wait: the run waits on open interrupts; nothing to commit.
	Wait
	// Park: nothing is due before ResumeAt; nothing to commit.
	Park
	// Terminal: the run is already terminal; nothing to commit.
	Terminal
)

// Step is the planner's answer.
type Step struct {
	Kind         StepKind
	Activations  []Activation // Execute: sorted by node ID
	Moment       *run.Moment  // Commit
	InterruptIDs []string     // Wait: sorted open interrupt IDs
	ResumeAt     time.Time    // Park
	Wait         time.Duration
}

// Activation is one node attempt to execute.
type Activation struct {
	TaskID         string
	NodeID         string
	Step           int
	Attempt        int
	IdempotencyKey string
	Snapshot       map[string]any // the public state view values
	SourceVersions run.Versions   // their versions
	Implementation string         // registry ID
	Config         map[string]any
	Policy         graph.NodePolicy
	// Owned says Snapshot was built for this activation alone and nothing
	// reads it once it has executed: an executor may hand it to the node
	// without copying it (values nested inside the snapshot still belong
	// to the run). A retry of an owned activation takes its snapshot from
	// the committed run again. SourceVersions is read-only and never
	// needs a copy.
	Owned bool
	// FlatSnapshot says no value of Snapshot is a list or a map, so an
	// owned snapshot can be handed over without copying anything.
	FlatSnapshot bool
	// FlatConfig says no value of Config is a list or a map (found once
	// per compiled graph), so an executor's copy of it need not look
	// inside.
	FlatConfig bool
}

// InputHash is the activation's input_hash (spec 7.3): run.InputHash of
// its Snapshot, one value for every activation of a superstep, and what a
// parked retry stores beside its snapshot. It is computed when asked, not
// when the superstep is planned: only a retry's park reads it on the way
// through a superstep, and hashing every planned view was a tenth of a
// chain's cost. Ask before the attempt runs: an owned Snapshot is handed
// to the node.
func (a *Activation) InputHash() string { return run.InputHash(a.Snapshot) }

// Outcome classifies an attempt result.
type Outcome int

// Outcomes.
const (
	OutcomeUpdate Outcome = iota + 1
	OutcomeInterrupt
	OutcomeFailure
)

// Result is what executing one activation produced. Updates and interrupts
// are validated by Settle. A failure with Retryable true is retried while
// attempts remain; otherwise it is permanent.
type Result struct {
	Outcome   Outcome
	Update    map[string]any
	Interrupt *InterruptRequest
	Reason    string // failure reason, e.g. "timeout", "panic: …"
	Retryable bool
}

// InterruptRequest is a node's request for outside input.
type InterruptRequest struct {
	ID            string         // optional; generated when empty
	ResumeChannel string         // a declared state field
	Schema        *schema.Schema // optional; the resolution must satisfy it
	Metadata      map[string]any
}
