package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// Storage outcomes the facade passes through, re-exported so callers need
// not import ports. Match them with errors.Is.
var (
	// ErrNotFound: the run, graph version, event or interrupt does not
	// exist or belongs to another tenant (indistinguishable by design).
	ErrNotFound = ports.ErrNotFound
	// ErrConflict: StartRun with an explicit run id that already exists,
	// in any scope: run ids are unique across the store, so a tenant can
	// tell that an id it chose is taken (let the engine generate ids where
	// tenants must not learn of each other's runs).
	ErrConflict = ports.ErrConflict
	// ErrInactiveRun: the run is terminal, so the signal does not apply.
	ErrInactiveRun = ports.ErrInactiveRun
	// ErrInvalidArgument: a list or read parameter out of range (a page
	// limit, an unknown status filter), as the store reports it.
	ErrInvalidArgument = ports.ErrInvalidArgument
	// ErrStaleFence: a signal (ResolveInterrupt, CancelRun) lost the race
	// for the run's next checkpoint more than SignalStaleRetries times in
	// a row; nothing was committed, and the call may be repeated.
	ErrStaleFence = ports.ErrStaleFence
)

// Facade errors.
var (
	// ErrInvalidConfig is wrapped by every ConfigError.
	ErrInvalidConfig = errors.New("invalid engine configuration")
	// ErrInvalidTenant: a call without a tenant in tenant-required mode,
	// or with one in tenant-none mode.
	ErrInvalidTenant = errors.New("invalid tenant")
	// ErrInvalidOptions: malformed call options (an empty graph
	// reference, a negative timeout, conflicting start options, an empty
	// idempotency key, an explicit run id of the form idempotency keys
	// derive).
	ErrInvalidOptions = errors.New("invalid options")
	// ErrGraphMismatch: the stored document does not compile to the
	// version it is stored under.
	ErrGraphMismatch = errors.New("graph mismatch")
	// ErrIdempotencyKeyReused: StartRun with a key already used in this
	// scope for a different graph version, input or metadata.
	ErrIdempotencyKeyReused = errors.New("idempotency key reused with different parameters")
	// ErrPoisoned is matched by *PoisonedError.
	ErrPoisoned = errors.New("run is poisoned")
	// ErrAwaitTimeout: AwaitRun's timeout passed before the run parked or
	// finished.
	ErrAwaitTimeout = errors.New("await timed out")
	// ErrManualMode: Start on an engine in ModeManual.
	ErrManualMode = errors.New("engine is in manual mode: drive runs with DrainRuns")
	// ErrTestingModeRequired: DrainRuns outside ModeManual.
	ErrTestingModeRequired = errors.New("DrainRuns requires ModeManual")
	// ErrAlreadyStarted: Start called twice, or after Stop.
	ErrAlreadyStarted = errors.New("engine already started or stopped")
	// ErrDrainStopped is matched by *DrainStoppedError.
	ErrDrainStopped = errors.New("drain stopped")
)

// ConfigError names one invalid configuration field. New reports every
// invalid field at once (errors.Join); errors.As finds the first.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("engine config: %s %s", e.Field, e.Reason) }

// Unwrap lets errors.Is match ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// PoisonedError is AwaitRun's report that the run is poisoned: admission
// gave up on it (see Info.PoisonReason) until RetryPoisonedRun.
type PoisonedError struct {
	Info *ports.RunInfo
}

func (e *PoisonedError) Error() string {
	return fmt.Sprintf("run %q is poisoned: %s", e.Info.Run.ID, e.Info.PoisonReason)
}

// Is matches ErrPoisoned.
func (e *PoisonedError) Is(target error) bool { return target == ErrPoisoned }

// RuleError is a domain rule violation reported by a facade call: invalid
// input, an already resolved interrupt, an inactive run and so on. It
// unwraps to the *superstep.Error (match codes with errors.Is against
// superstep.ErrInvalidInput, superstep.ErrAlreadyResolved, ...), and an
// unknown interrupt or a terminal run also match ErrNotFound and
// ErrInactiveRun.
type RuleError struct {
	Op  string
	Err *superstep.Error
}

func (e *RuleError) Error() string { return e.Op + ": " + e.Err.Error() }

// Unwrap returns the domain error.
func (e *RuleError) Unwrap() error { return e.Err }

// Is maps domain codes onto the facade's storage sentinels.
func (e *RuleError) Is(target error) bool {
	switch e.Err.Code {
	case superstep.CodeNotFound:
		return target == ErrNotFound
	case superstep.CodeInactiveRun:
		return target == ErrInactiveRun
	case superstep.CodeGraphMismatch:
		return target == ErrGraphMismatch
	}
	return false
}

// ruleError wraps a *superstep.Error in a RuleError and passes anything
// else through.
func ruleError(op string, err error) error {
	var se *superstep.Error
	if errors.As(err, &se) {
		return &RuleError{Op: op, Err: se}
	}
	return err
}

// DrainStoppedError reports a DrainRuns that stopped on a vehicle outcome
// other than a park (a lost fence, a hand-back, a crash). Summary holds
// everything drained before and including it.
type DrainStoppedError struct {
	Outcome vehicle.Outcome
	Summary DrainSummary
}

func (e *DrainStoppedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drain stopped after %d run(s): vehicle outcome %s", e.Summary.Drained, e.Outcome.Kind)
	if e.Outcome.Reason != "" {
		b.WriteString(" (" + e.Outcome.Reason + ")")
	}
	if e.Outcome.Err != nil {
		b.WriteString(": " + e.Outcome.Err.Error())
	}
	return b.String()
}

// Is matches ErrDrainStopped.
func (e *DrainStoppedError) Is(target error) bool { return target == ErrDrainStopped }

// Unwrap exposes the outcome's cause.
func (e *DrainStoppedError) Unwrap() error { return e.Outcome.Err }
