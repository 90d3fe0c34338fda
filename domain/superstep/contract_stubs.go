package superstep

import (
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// CONTRACT STUBS: the superstep implementer replaces these bodies, keeping
// every signature.

func (e *Error) Error() string { return e.Code }

// Is matches another *Error with the same Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Start initializes a new run (fresh init): validates the input, writes the
// provided inputs, fires passing $start edges and returns the
// run_initialized moment (disposition continue). Errors: invalid_input,
// guard_evaluation_failed. Nothing commits on error.
func Start(g *graph.Compiled, p StartParams, env Env) (*run.Moment, error) { panic("unimplemented") }

// Resume is the saved init of a stored running or waiting run: only
// UpdatedAt changes, the event is run_initialized {"resumed": true}.
// Terminal runs return (nil, nil). Errors: graph_mismatch.
func Resume(g *graph.Compiled, r *run.Run, env Env) (*run.Moment, error) { panic("unimplemented") }

// Advance plans the next step of a committed run.
func Advance(g *graph.Compiled, r *run.Run, env Env) (Step, error) { panic("unimplemented") }

// Settle folds the results of step.Activations (results[i] belongs to
// step.Activations[i]) into the next moment: barrier, retry park or failure.
func Settle(g *graph.Compiled, r *run.Run, step Step, results []Result, env Env) (*run.Moment, error) {
	panic("unimplemented")
}

// ResolveInterrupt applies an interrupt resolution (a pure signal
// mutation). Errors in order: inactive_run, invalid_run, already_resolved,
// not_found, invalid_input.
func ResolveInterrupt(g *graph.Compiled, r *run.Run, interruptID string, v any, env Env) (*run.Moment, error) {
	panic("unimplemented")
}

// Cancel cancels a running or waiting run. An already cancelled run returns
// (nil, nil) (unchanged). Errors: inactive_run (done/failed), invalid_run.
func Cancel(r *run.Run, env Env) (*run.Moment, error) { panic("unimplemented") }

// CheckExecutionPolicy rejects a graph any of whose nodes sets an explicit
// timeout_ms above maxAttemptElapsedMS (incompatible_execution_policy).
func CheckExecutionPolicy(g *graph.Compiled, maxAttemptElapsedMS int) error { panic("unimplemented") }
