package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/ports"
)

// Exit codes (docs/cli.md).
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitFailure: the command failed (database unreachable, a failed
	// conformance check, an invalid graph found by validate, ...).
	ExitFailure = 1
	// ExitUsage: the command line or its input is wrong (unknown flag,
	// missing argument, malformed JSON or graph file, invalid input).
	ExitUsage = 2
	// ExitNotFound: the run, graph, event or interrupt does not exist (or
	// belongs to another tenant, which looks the same by design).
	ExitNotFound = 3
	// ExitConflict: the run's state does not allow the operation (it is
	// finished, the interrupt is already resolved, the id is taken).
	ExitConflict = 4
	// ExitTimeout: a wait (runs await, runs start --await) timed out.
	ExitTimeout = 5
	// ExitInterrupted: stopped by Ctrl-C or SIGTERM.
	ExitInterrupted = 130
)

// exitError carries an explicit exit code and kind.
type exitError struct {
	code int
	kind string
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// about names the run or graph an error concerns, unless its message
// already does (the stores' not-found errors name it themselves).
func about(what, id string, err error) error {
	if strings.Contains(err.Error(), strconv.Quote(id)) {
		return err
	}
	return fmt.Errorf("%s %q: %w", what, id, err)
}

// flagValueError words a flag value the parser refused by what the flag
// wants (--limit "abc": want an integer) rather than in the parser's own
// terms (strconv.ParseInt: parsing "abc": invalid syntax). Other errors,
// and the refusals of docket's own flag types, which name what they want
// already, are returned unchanged.
func flagValueError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) {
		return err
	}
	want, ok := wantedValue(errors.Unwrap(bad))
	if !ok {
		return err
	}
	return fmt.Errorf("--%s %q: %s", bad.GetFlag().Name, bad.GetValue(), want)
}

// wantedValue says what a value of a standard flag type looks like, when
// cause is its parser's refusal; ok is false for any other cause.
func wantedValue(cause error) (want string, ok bool) {
	var num *strconv.NumError
	switch {
	case errors.As(cause, &num) && num.Func == "ParseBool":
		return "want true or false", true
	case errors.As(cause, &num) && errors.Is(num.Err, strconv.ErrRange):
		return "out of range", true
	case errors.As(cause, &num) && num.Func == "ParseFloat":
		return "want a number", true
	case errors.As(cause, &num):
		return "want an integer", true
	case cause != nil && strings.HasPrefix(cause.Error(), "time: "):
		return "want a duration with a unit, such as 500ms, 30s, 5m or 2h", true
	}
	return "", false
}

// aboutGraph is about for a graph, and says of a graph a tenant does not
// find that it sees only its own graphs: one published without --tenant
// is not found with it. Whether another scope holds the graph is not said.
func (a *app) aboutGraph(graphID string, err error) error {
	err = about("graph", graphID, err)
	if a.tenant != "" && errors.Is(err, ports.ErrNotFound) {
		return fmt.Errorf("%w (tenant %q sees only the graphs published with --tenant %s)", err, a.tenant, shellQuote(a.tenant))
	}
	return err
}

func usageErr(err error) error { return &exitError{code: ExitUsage, kind: "usage", err: err} }

func usagef(format string, args ...any) error { return usageErr(fmt.Errorf(format, args...)) }

func failuref(format string, args ...any) error {
	return &exitError{code: ExitFailure, kind: "failure", err: fmt.Errorf(format, args...)}
}

// classify maps an error to its exit code and a stable kind for --json.
func classify(err error) (int, string) {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, ee.kind
	}
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "unknown command"), strings.HasPrefix(msg, "required flag"),
		strings.HasPrefix(msg, "unknown flag"), strings.HasPrefix(msg, "unknown shorthand flag"):
		return ExitUsage, "usage"
	case errors.Is(err, ports.ErrNotFound), errors.Is(err, superstep.ErrNotFound):
		return ExitNotFound, "not_found"
	case errors.Is(err, engine.ErrAwaitTimeout):
		return ExitTimeout, "timeout"
	case errors.Is(err, ports.ErrInactiveRun), errors.Is(err, superstep.ErrInactiveRun),
		errors.Is(err, superstep.ErrAlreadyResolved), errors.Is(err, superstep.ErrInvalidRun),
		errors.Is(err, ports.ErrConflict), errors.Is(err, engine.ErrIdempotencyKeyReused):
		return ExitConflict, "conflict"
	case errors.Is(err, graph.ErrInvalidDocument), errors.Is(err, graph.ErrInvalidGraph), errors.Is(err, ports.ErrInvalidGraph),
		errors.Is(err, superstep.ErrInvalidInput), errors.Is(err, superstep.ErrGuardEvaluationFailed),
		errors.Is(err, engine.ErrInvalidOptions), errors.Is(err, engine.ErrInvalidTenant),
		errors.Is(err, engine.ErrInvalidConfig), errors.Is(err, migrations.ErrInvalidSchema),
		errors.Is(err, migrations.ErrInvalidTarget), errors.Is(err, wiring.ErrDatabaseURL):
		return ExitUsage, "invalid_input"
	}
	return ExitFailure, "failure"
}

// report prints err as one line on stderr (a JSON object with --json) and
// returns its exit code.
func (a *app) report(err error) int {
	code, kind := classify(err)
	// The library's own errors may already start with the program's name.
	msg := strings.TrimPrefix(oneLine(err.Error()), "docket: ")
	if a.json {
		b, _ := json.Marshal(map[string]any{"error": msg, "kind": kind, "exit_code": code})
		fmt.Fprintln(a.io.Err, terminalSafe(string(b)))
	} else {
		fmt.Fprintln(a.io.Err, "docket: "+terminalSafe(msg))
	}
	return code
}

// oneLine folds a multi-line message (compile diagnostics, joined
// errors) into one line.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	out := lines[0]
	for _, l := range lines[1:] {
		if l == "" {
			continue
		}
		if strings.HasSuffix(out, ":") {
			out += " " + l
		} else {
			out += "; " + l
		}
	}
	return out
}
