package run

import (
	"errors"
	"time"
)

// CONTRACT STUBS: the run implementer replaces these bodies (moving them
// into identity.go, propose.go, validate.go and codec.go), keeping every
// signature so other packages compile against them meanwhile.

// Yield errors.
var (
	ErrNotContinue     = errors.New("moment is not a continue moment")
	ErrMalformedMoment = errors.New("malformed moment")
)

// ErrInvalidRun is wrapped by Validate failures.
var ErrInvalidRun = errors.New("invalid run")

// TaskID is "<run_id>:<step>:<node_id>", using the committed step.
func TaskID(runID string, step int, nodeID string) string { panic("unimplemented") }

// IdempotencyKey is "<task_id>:<attempt>", attempts counting from 1.
func IdempotencyKey(taskID string, attempt int) string { panic("unimplemented") }

// Clone deep-copies r so the copy shares no mutable containers.
func (r *Run) Clone() *Run { panic("unimplemented") }

// Propose sequences a transition from committed to next: it sets
// next.CheckpointSeq = committed.CheckpointSeq+1, numbers runtimeEvents from
// committed.EventSeq+1 (run ID, timestamp now, empty metadata), appends the
// one checkpoint_committed event carrying the checkpoint metadata, sets
// next.EventSeq, and returns the moment. For initialization committed is
// nil (sequences start at 1). The metadata (checkpoint_seq, checkpoint_type,
// graph_step, park_reason, wake_disposition, active_superstep,
// node_attempts) is derived from committed, next and runtimeEvents.
func Propose(committed, next *Run, runtimeEvents []Event, ctype CheckpointType, d Disposition, now time.Time) *Moment {
	panic("unimplemented")
}

// Yield turns a continue moment into park(immediate, reason), rebuilding the
// metadata on the moment and its final event; sequences, timestamps,
// payloads and type are unchanged. It returns ErrNotContinue or
// ErrMalformedMoment.
func Yield(m *Moment, reason string) (*Moment, error) { panic("unimplemented") }

// Validate checks the durable invariants of a stored run (spec §5).
func (r *Run) Validate() error { panic("unimplemented") }

// Encode serializes the run document deterministically (equal runs, equal
// bytes) for storage; Decode is its inverse and validates the result.
func Encode(r *Run) ([]byte, error) { panic("unimplemented") }

// Decode parses bytes written by Encode.
func Decode(b []byte) (*Run, error) { panic("unimplemented") }
