package superstep

import (
	"fmt"
	"slices"
	"strings"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// Settle folds the results of step.Activations (results[i] belongs to
// step.Activations[i]) into the next moment (spec 7.5): any permanent
// failure fails the run, any retry (or a parked attempt not yet due) parks
// the superstep, and otherwise the barrier commits it.
func Settle(g *graph.Compiled, r *run.Run, step Step, results []Result, env Env) (*run.Moment, error) {
	if step.Kind != Execute {
		return nil, &Error{Code: CodeInvalidRun, Phase: "settle", Message: "only an execute step can be settled"}
	}
	if len(results) != len(step.Activations) {
		return nil, &Error{Code: CodeInvalidRun, Phase: "settle",
			Message: fmt.Sprintf("%d results for %d activations", len(results), len(step.Activations))}
	}
	if r.Status != run.StatusRunning && r.Status != run.StatusWaiting {
		return nil, &Error{Code: CodeInvalidRun, Phase: "settle",
			Message: fmt.Sprintf("run %q is %s and cannot settle a superstep", r.ID, r.Status)}
	}
	if err := checkGraph(g, r); err != nil {
		return nil, err
	}
	idx := indexOf(g)
	now := utc(env.Now)

	// Results are visited in node order; the index list lives on the stack
	// for the usual handful of activations.
	var orderBuf [16]int
	order := orderBuf[:0]
	if len(results) > len(orderBuf) {
		order = make([]int, 0, len(results))
	}
	for i := range results {
		order = append(order, i)
	}
	acts := step.Activations
	if !slices.IsSortedFunc(acts, func(a, b Activation) int { return strings.Compare(a.NodeID, b.NodeID) }) {
		slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(acts[a].NodeID, acts[b].NodeID) })
	}

	var (
		finalsBuf [8]validated
		finals    = finalsBuf[:0]
		retries   []retryItem
		failures  []attemptFailure
	)
	for _, i := range order {
		a := &acts[i]
		res := &results[i]
		switch res.Outcome {
		case OutcomeUpdate:
			upd, last, reasons := validateUpdateEntries(idx, res.Update)
			if len(reasons) > 0 {
				failures = append(failures, attemptFailure{a.NodeID, a.TaskID, a.Attempt, "invalid_state_update: " + strings.Join(reasons, "; ")})
				continue
			}
			finals = append(finals, validated{taskID: a.TaskID, nodeID: a.NodeID, attempt: a.Attempt, kind: run.WriteUpdate, update: upd, sole: last, soleSet: len(upd) == 1, value: upd})
		case OutcomeInterrupt:
			in, reasons := validateInterrupt(idx, r, res.Interrupt)
			if len(reasons) > 0 {
				failures = append(failures, attemptFailure{a.NodeID, a.TaskID, a.Attempt, "invalid_interrupt: " + strings.Join(reasons, "; ")})
				continue
			}
			finals = append(finals, validated{taskID: a.TaskID, nodeID: a.NodeID, attempt: a.Attempt, kind: run.WriteInterrupt, intr: in, value: interruptValue(a.NodeID, in)})
		case OutcomeFailure:
			// The reason is free text from the node (an error's message, a
			// panic's value) and is recorded in the run and its events,
			// which hold only UTF-8 text.
			reason := strings.ToValidUTF8(res.Reason, "\uFFFD")
			if reason == "" {
				reason = "node attempt failed"
			}
			if res.Retryable && a.Attempt < max(1, a.Policy.MaxAttempts) {
				retries = append(retries, retryItem{act: a, reason: reason})
				continue
			}
			failures = append(failures, attemptFailure{a.NodeID, a.TaskID, a.Attempt, reason})
		default:
			failures = append(failures, attemptFailure{a.NodeID, a.TaskID, a.Attempt, fmt.Sprintf("invalid_node_return: unknown outcome %d", res.Outcome)})
		}
	}

	switch {
	case len(failures) > 0:
		return failSuperstep(r, retries, failures, now), nil
	case len(retries) > 0 || remainingActive(r, acts):
		return retryPark(idx, r, finals, retries, now), nil
	}
	return barrier(g, idx, r, finals, env, now)
}

// remainingActive reports whether a parked attempt of the superstep was not
// dispatched in this round because its timer was not yet due.
func remainingActive(r *run.Run, acts []Activation) bool {
	if len(r.ActiveTasks) > len(acts) {
		return true
	}
	for id := range r.ActiveTasks {
		if !slices.ContainsFunc(acts, func(a Activation) bool { return a.TaskID == id }) {
			return true
		}
	}
	return false
}
