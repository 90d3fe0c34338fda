package superstep

import (
	"slices"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// Failure codes of runs that fail for reasons other than the error codes
// above (guard_evaluation_failed and invalid_run reuse those).
const (
	FailureNodeFailed            = "node_failed"
	FailureMaxSuperstepsExceeded = "max_supersteps_exceeded"
	FailureInvalidPolicy         = "invalid_policy"
)

// attemptFailure is the permanent failure of one node attempt: an error
// result, a non-retryable failure, an exhausted retry budget, an invalid
// update or an invalid interrupt.
type attemptFailure struct {
	nodeID  string
	taskID  string
	attempt int
	reason  string
}

// retryItem is a retryable failure with attempts remaining.
type retryItem struct {
	act    *Activation
	reason string
}

// failRun is the one terminal-failure path (node, limit, guard, plan,
// policy, corrupt run): the active superstep is absorbed, no write of the
// failing superstep commits, step is unchanged, and run_failed is the last
// runtime event.
func failRun(r *run.Run, events []run.Event, f *run.Failure, now time.Time) *run.Moment {
	next := *r
	next.Status = run.StatusFailed
	next.Failure = f
	next.FinishedAt = now
	next.UpdatedAt = now
	next.ActiveTasks = nil
	next.PendingWrites = nil
	next.Timers = nil

	payload := make(map[string]any, len(f.Details)+2)
	for k, v := range f.Details {
		payload[k] = v
	}
	payload["reason"] = f.Code
	payload["message"] = f.Message
	events = append(events, run.Event{
		Type:    run.EventRunFailed,
		Step:    r.Step,
		NodeID:  f.NodeID,
		Payload: payload,
	})
	return run.ProposeNext(r, next, events, run.CheckpointRunFailed,
		run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunFailed}, now)
}

// failSuperstep fails the run because of permanent attempt failures. The
// round's retryable failures are reported first (permanent:false), then the
// permanent ones in node order.
func failSuperstep(r *run.Run, retries []retryItem, failures []attemptFailure, now time.Time) *run.Moment {
	slices.SortStableFunc(failures, func(a, b attemptFailure) int { return strings.Compare(a.nodeID, b.nodeID) })
	events := make([]run.Event, 0, len(retries)+len(failures)+1)
	for _, rt := range retries {
		events = append(events, nodeFailedEvent(r.Step, rt.act.NodeID, rt.act.TaskID, rt.act.Attempt, rt.reason, false))
	}
	nodes := make([]string, 0, len(failures))
	errs := make(map[string]any, len(failures))
	for _, f := range failures {
		events = append(events, nodeFailedEvent(r.Step, f.nodeID, f.taskID, f.attempt, f.reason, true))
		if len(nodes) == 0 || nodes[len(nodes)-1] != f.nodeID {
			nodes = append(nodes, f.nodeID)
		}
		errs[f.nodeID] = f.reason
	}
	failure := &run.Failure{
		Code:    FailureNodeFailed,
		Message: "node(s) " + strings.Join(nodes, ", ") + " failed permanently",
		Details: map[string]any{"nodes": stringList(nodes), "errors": errs},
	}
	if len(nodes) == 1 {
		failure.NodeID = nodes[0]
	}
	return failRun(r, events, failure, now)
}

func nodeFailedEvent(step int, nodeID, taskID string, attempt int, reason string, permanent bool) run.Event {
	return run.Event{
		Type:   run.EventNodeFailed,
		Step:   step,
		NodeID: nodeID,
		TaskID: taskID,
		Payload: map[string]any{
			"attempt":   int64(attempt),
			"reason":    reason,
			"permanent": permanent,
		},
	}
}

// planFailure fails the run at plan time (limit, invalid policy, corrupt
// active superstep) with no runtime event other than run_failed.
func planFailure(r *run.Run, code, message, nodeID string, details map[string]any, now time.Time) *run.Moment {
	if details == nil {
		details = map[string]any{}
	}
	return failRun(r, nil, &run.Failure{Code: code, Message: message, NodeID: nodeID, Details: details}, now)
}

func stringList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// utc normalizes a transition time: UTC, microsecond precision.
func utc(t time.Time) time.Time { return run.UTCMicros(t) }
