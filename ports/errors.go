package ports

import (
	"errors"
	"fmt"
)

// Sentinel outcomes, matched with errors.Is. Adapters wrap them with
// detail (never a claim token) and map driver errors to them at the
// adapter boundary: a caller never sees a driver error for an expected
// outcome.
var (
	// ErrNotFound: the resource is absent or outside the call's scope
	// (the two are indistinguishable by design).
	ErrNotFound = errors.New("not found")
	// ErrConflict: a run with this id already exists, in any scope (run
	// ids are globally unique).
	ErrConflict = errors.New("run already exists")
	// ErrStaleFence: the stored claim token or checkpoint sequence no
	// longer matches the commit's fence; another writer won.
	ErrStaleFence = errors.New("stale fence")
	// ErrInvalidCommit: a malformed proposal (wrong checkpoint type, a
	// sequence that does not advance by exactly one, a schedule that does
	// not fit the status, a changed immutable binding, malformed events, a
	// malformed token). Nothing was written.
	ErrInvalidCommit = errors.New("invalid commit")
	// ErrClaimLost: refresh found no claim with this token (stolen,
	// revoked by a signal, released, or the run is gone).
	ErrClaimLost = errors.New("claim lost")
	// ErrInactiveRun: the run is terminal, so the operation does not apply.
	ErrInactiveRun = errors.New("inactive run")
	// ErrEventConflict: an event already stored at {run_id, seq} (or
	// proposed twice at one seq) has different content. Nothing was
	// written.
	ErrEventConflict = errors.New("event conflict")
	// ErrInvalidScope: the zero Scope, or System where an owner scope is
	// required. A programming error, reported before storage access.
	ErrInvalidScope = errors.New("invalid scope")
	// ErrInvalidArgument: malformed trusted input (limit out of range,
	// unknown status filter, zero time, bad claim request). A programming
	// error, reported before storage access.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrInvalidGraph: SaveGraph was given a document that cannot be
	// stored (nil, no id, not encodable).
	ErrInvalidGraph = errors.New("invalid graph document")
	// ErrInvalidGraphHash: the hash given to SaveGraph is not the hash of
	// the document's canonical encoding.
	ErrInvalidGraphHash = errors.New("invalid graph hash")
	// ErrGraphContentConflict: a version with this owner, id and hash is
	// stored with different bytes.
	ErrGraphContentConflict = errors.New("graph content conflict")
	// ErrCorruptRun, ErrCorruptEvent, ErrCorruptGraph: a stored row cannot
	// be decoded or fails verification. Never reported as absent.
	ErrCorruptRun   = errors.New("corrupt run row")
	ErrCorruptEvent = errors.New("corrupt event row")
	ErrCorruptGraph = errors.New("corrupt graph row")
	// ErrClaimPolicyUnavailable: the backend cannot admit under its
	// configured claim policy right now (see ClaimPolicyUnavailableError).
	ErrClaimPolicyUnavailable = errors.New("claim policy unavailable")
	// ErrUnsupported: the adapter does not offer this capability (see
	// Capabilities).
	ErrUnsupported = errors.New("unsupported capability")
)

// InvalidArgumentError names the offending parameter.
type InvalidArgumentError struct {
	Field  string
	Reason string
}

func (e *InvalidArgumentError) Error() string {
	return fmt.Sprintf("invalid argument: %s %s", e.Field, e.Reason)
}

// Unwrap lets errors.Is match ErrInvalidArgument.
func (e *InvalidArgumentError) Unwrap() error { return ErrInvalidArgument }

// InvalidCommitError says why a proposal was rejected.
type InvalidCommitError struct {
	RunID  string
	Reason string
}

func (e *InvalidCommitError) Error() string {
	if e.RunID == "" {
		return "invalid commit: " + e.Reason
	}
	return fmt.Sprintf("invalid commit of run %q: %s", e.RunID, e.Reason)
}

// Unwrap lets errors.Is match ErrInvalidCommit.
func (e *InvalidCommitError) Unwrap() error { return ErrInvalidCommit }

// EventConflictError identifies the conflicting event.
type EventConflictError struct {
	RunID string
	Seq   int64
}

func (e *EventConflictError) Error() string {
	return fmt.Sprintf("event conflict: run %q already has a different event at seq %d", e.RunID, e.Seq)
}

// Unwrap lets errors.Is match ErrEventConflict.
func (e *EventConflictError) Unwrap() error { return ErrEventConflict }

// CorruptKind says which kind of row is corrupt.
type CorruptKind string

// Corrupt row kinds.
const (
	CorruptRun   CorruptKind = "run"
	CorruptEvent CorruptKind = "event"
	CorruptGraph CorruptKind = "graph"
)

// CorruptError reports a stored row that cannot be decoded or verified.
// ID is the run id or graph id; Seq is set for events; Ref for graphs.
type CorruptError struct {
	Kind CorruptKind
	ID   string
	Seq  int64
	Hash string
	Err  error
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("corrupt %s row %q", e.Kind, e.ID)
	if e.Kind == CorruptEvent {
		msg += fmt.Sprintf(" seq %d", e.Seq)
	}
	if e.Hash != "" {
		msg += " hash " + e.Hash
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is matches the sentinel of the row kind.
func (e *CorruptError) Is(target error) bool {
	switch e.Kind {
	case CorruptRun:
		return target == ErrCorruptRun
	case CorruptEvent:
		return target == ErrCorruptEvent
	case CorruptGraph:
		return target == ErrCorruptGraph
	}
	return false
}

// Unwrap exposes the decoding error.
func (e *CorruptError) Unwrap() error { return e.Err }

// Reasons a claim policy is unavailable (bounded telemetry labels).
const (
	UnavailableReadOnly             = "read_only_transaction"
	UnavailableUnsupportedIsolation = "unsupported_isolation"
	UnavailableInactiveEngine       = "inactive_engine"
	UnavailableLockContention       = "lock_contention"
)

// ClaimPolicyUnavailableError is returned by ClaimDue when the admission
// gate is closed. Nothing was mutated.
type ClaimPolicyUnavailableError struct {
	Reason string
}

func (e *ClaimPolicyUnavailableError) Error() string {
	return "claim policy unavailable: " + e.Reason
}

// Unwrap lets errors.Is match ErrClaimPolicyUnavailable.
func (e *ClaimPolicyUnavailableError) Unwrap() error { return ErrClaimPolicyUnavailable }
