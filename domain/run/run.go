// Package run is the Run aggregate: the committed document of one workflow
// execution (status, inputs, channels, the active superstep, interrupts,
// timers, failure, outputs), its checkpoint sequencing, its events, and the
// task identity derived from committed state.
//
// Everything here is a value. Functions never mutate the runs they are given;
// proposals are new values that a store commits or discards.
package run

import (
	"slices"
	"strings"
	"time"
)

// Status is a run's lifecycle status. Created exists only in memory before
// initialization and is never stored.
type Status string

// Statuses.
const (
	StatusCreated   Status = "created"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"
	StatusDone      Status = "done"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// Terminal reports whether s is absorbing (done, failed or cancelled).
func (s Status) Terminal() bool {
	return s == StatusDone || s == StatusFailed || s == StatusCancelled
}

// Run is the committed run document.
type Run struct {
	ID              string
	GraphID         string
	GraphHash       string
	Status          Status
	Input           map[string]any
	Output          map[string]any // set only when done ({} if no outputs)
	Failure         *Failure       // set iff failed
	StartedAt       time.Time
	UpdatedAt       time.Time
	FinishedAt      time.Time // non-zero iff terminal
	Step            int       // number of committed barriers
	Channels        Channels
	BarrierSeen     map[string][]string // by barrier channel ID (also a channel of Channels): sorted sources seen since it last fired
	ChangedChannels []string            // sorted set: what the last init/barrier/resolution changed
	PendingNodes    []string            // sorted set: nodes with an open or resolved-but-not-rerun interrupt
	ActiveTasks     map[string]TaskState
	PendingWrites   []PendingWrite
	Interrupts      map[string]Interrupt
	Timers          map[string]Timer
	CheckpointSeq   int64
	EventSeq        int64
	Metadata        map[string]any
}

// Failure explains a failed run. Code and Message are non-empty.
type Failure struct {
	Code    string
	Message string
	NodeID  string
	Details map[string]any
}

// Task statuses.
const (
	TaskRunning        = "running"
	TaskRetryScheduled = "retry_scheduled"
)

// TaskState is a parked activation of the active superstep. When parked,
// Status is retry_scheduled, Attempt is the next attempt, len(Failures) ==
// Attempt-1, and StartedAt/DeadlineAt are zero.
type TaskState struct {
	TaskID         string
	NodeID         string
	Step           int
	Attempt        int
	Status         string
	InputHash      string
	IdempotencyKey string
	Snapshot       map[string]any   // the state view the attempt saw; resumed attempts reuse it
	SourceVersions map[string]int64 // versions of that view
	StartedAt      time.Time
	DeadlineAt     time.Time
	Failures       []AttemptFailure
	Metadata       map[string]any
}

// AttemptFailure records why one attempt failed.
type AttemptFailure struct {
	Attempt int
	Reason  string
}

// Pending write kinds.
const (
	WriteUpdate    = "update"
	WriteInterrupt = "interrupt"
)

// PendingWrite is a validated attempt result held back until the superstep's
// barrier. Value is the state update map (kind update) or the interrupt
// request map (kind interrupt).
type PendingWrite struct {
	TaskID  string
	NodeID  string
	Attempt int
	Kind    string
	Value   any
}

// Interrupt statuses.
const (
	InterruptOpen     = "open"
	InterruptResolved = "resolved"
)

// Interrupt is a request for outside input, opened by a node.
type Interrupt struct {
	ID            string
	NodeID        string
	Status        string
	ResumeChannel string         // public ID of the state field the resolution is written to
	Schema        map[string]any // wire form of the resolution schema; nil when none
	CreatedAt     time.Time
	ResolvedAt    time.Time // non-zero iff resolved
	Metadata      map[string]any
}

// OpenInterrupts returns the interrupts of r that wait for an answer,
// sorted by ID, or nil when none does (as on a nil run). These are what
// a waiting run waits for: answer each with the engine's ResolveInterrupt
// (or inline.ResolveInterruptInline), by ID. The values are copies, but
// their Schema and Metadata maps are r's own: treat them as read-only.
func (r *Run) OpenInterrupts() []Interrupt {
	if r == nil {
		return nil
	}
	var open []Interrupt
	for _, in := range r.Interrupts {
		if in.Status == InterruptOpen {
			open = append(open, in)
		}
	}
	slices.SortFunc(open, func(a, b Interrupt) int { return strings.Compare(a.ID, b.ID) })
	return open
}

// Timer kinds.
const TimerRetry = "retry"

// Timer delays a parked task until FiresAt.
type Timer struct {
	Kind    string
	FiresAt time.Time
}
