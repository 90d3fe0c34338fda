// Package node is the API user code implements to run inside a Docket
// graph: a Node declares its configuration schema and handles one attempt
// (Call), returning a state update, an interrupt request or an error. A
// Registry maps the implementation references written in graph documents
// to Nodes.
//
// It is not the executor: deadlines, panics and retries are handled by
// package executor, and writes are validated by the domain at the barrier.
package node

import (
	"context"
	"errors"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

// Node is one unit of user code.
//
// Call handles a single attempt. It must treat Input.State and Input.Config
// as read-only and should return promptly once ctx is done: an attempt that
// outlives its deadline (the node's timeout_ms, at most the engine's
// MaxAttemptElapsed, 2s by default) is recorded as a "timeout" failure and
// its result is dropped. Returning a non-nil error is a retryable attempt failure
// (retried while the node's retry policy allows); wrap it with Permanent to
// fail the run without retrying. A panic is a retryable failure too.
type Node interface {
	// ConfigSchema is the schema of the node's configuration. The compiler
	// calls it once per compile; a nil schema accepts any portable config.
	ConfigSchema() *schema.Schema
	Call(ctx context.Context, in Input) (Output, error)
}

// Input is what one attempt sees.
type Input struct {
	// State is the committed public state view of the superstep, keyed by
	// input and field ID. A field with neither a value nor a default is
	// absent. Writes made by other nodes in the same superstep are never
	// visible. Read-only by contract. Values are portable (package value):
	// string, bool, int64, float64, []any, map[string]any or nil, so an
	// integer field reads as int64, never int.
	State map[string]any
	// Config is the node's effective configuration (defaults applied).
	Config map[string]any
	// Task identifies the attempt.
	Task Task
}

// Task identifies one attempt of one node in one superstep. The identity is
// derived from committed state only, so a replayed attempt sees the same
// values: use IdempotencyKey to deduplicate side effects.
type Task struct {
	RunID          string
	NodeID         string
	TaskID         string // "<run_id>:<step>:<node_id>"
	Step           int
	Attempt        int    // counts from 1
	IdempotencyKey string // "<task_id>:<attempt>"
	// SourceVersions holds the committed version of every state value the
	// attempt sees (0 for one never written). It is read-only: Get reads
	// one version, Map copies them all.
	SourceVersions run.Versions
}

type taskKey struct{}

// WithTask returns a context carrying t; the executor uses it so helpers
// deep in user code can read the attempt identity with TaskFrom.
func WithTask(ctx context.Context, t Task) context.Context {
	return context.WithValue(ctx, taskKey{}, t)
}

// TaskValue answers Context.Value for a context type that carries the
// attempt identity itself instead of a WithTask layer (the executor's
// attempt context does, to save an allocation per attempt): for the key
// TaskFrom reads it returns *t and true, for any other key nil and false.
func TaskValue(key any, t *Task) (any, bool) {
	if _, ok := key.(taskKey); ok {
		return *t, true
	}
	return nil, false
}

// TaskFrom returns the attempt identity stored in ctx by the executor.
func TaskFrom(ctx context.Context) (Task, bool) {
	t, ok := ctx.Value(taskKey{}).(Task)
	return t, ok
}

// Output is the result of a successful attempt: either a state update or
// an interrupt request. The zero Output is neither and fails the run with
// invalid_node_return.
type Output struct {
	update    map[string]any
	interrupt *InterruptRequest
	isUpdate  bool
}

// Update returns an Output writing the given fields. Values may be any Go
// values that normalize to portable values (ints, []string, nested maps…);
// nil writes nothing. The runtime takes fields and everything in it as
// they are, without a copy: once the node has returned, it must not keep
// or change them (build a new map and new lists for every attempt).
func Update(fields map[string]any) Output {
	if fields == nil {
		fields = map[string]any{}
	}
	return Output{update: fields, isUpdate: true}
}

// Interrupt returns an Output asking for outside input: the run parks until
// the interrupt is resolved, the resolution is written to ResumeChannel,
// and the node then runs again.
func Interrupt(req InterruptRequest) Output {
	return Output{interrupt: &req}
}

// AsUpdate returns the update and true when o is an update.
func (o Output) AsUpdate() (map[string]any, bool) { return o.update, o.isUpdate }

// AsInterrupt returns the interrupt request and true when o is an
// interrupt.
func (o Output) AsInterrupt() (InterruptRequest, bool) {
	if o.interrupt == nil {
		return InterruptRequest{}, false
	}
	return *o.interrupt, true
}

// InterruptRequest asks for outside input.
type InterruptRequest struct {
	// ID is optional; the runtime generates one when empty. It must be new
	// to the run.
	ID string
	// ResumeChannel is the state field the resolution is written to.
	ResumeChannel string
	// Schema, when set, is what the resolution must satisfy. Like every
	// schema it accepts null unless required: use AsRequired (as in
	// schema.Enum("approve", "revise").AsRequired()) when an answer must
	// be given, or a null answer resolves the interrupt.
	Schema *schema.Schema
	// Metadata is open portable content stored with the interrupt.
	Metadata map[string]any
}

// ErrPermanent is matched (errors.Is) by every error wrapped with Permanent.
var ErrPermanent = errors.New("permanent node failure")

type permanentError struct{ err error }

func (e *permanentError) Error() string        { return e.err.Error() }
func (e *permanentError) Unwrap() error        { return e.err }
func (e *permanentError) Is(target error) bool { return target == ErrPermanent }

// Permanent marks err as non-retryable: the run fails on this attempt even
// when the retry policy allows more. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err: err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool { return errors.Is(err, ErrPermanent) }
