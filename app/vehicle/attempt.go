package vehicle

import (
	"context"
	"errors"
	"strconv"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/ports"
)

// Results of node.attempt spans (bounded labels).
const (
	attemptOK        = ports.ResultOK
	attemptInterrupt = "interrupt"
	attemptError     = ports.ResultError
	// attemptTimeout: the node returned after its deadline; the executor
	// had already recorded a timeout and dropped the result.
	attemptTimeout = "timeout"
	// attemptCancelled: the node returned after the drive was cancelled.
	attemptCancelled = "cancelled"
	// attemptCrashed: the node panicked or called runtime.Goexit.
	attemptCrashed = "crashed"
)

// traced wraps the executor's node lookups so every attempt runs inside a
// node.attempt span, a child of the moment span. It is a wrapper rather
// than an executor feature because attempts are telemetry's concern here,
// not the executor's; with telemetry off it returns nodes unchanged.
func traced(nodes executor.Resolver, t ports.Telemetry) executor.Resolver {
	if _, off := t.(ports.NopTelemetry); off {
		return nodes
	}
	return tracingResolver{nodes: nodes, telemetry: t}
}

type tracingResolver struct {
	nodes     executor.Resolver
	telemetry ports.Telemetry
}

func (r tracingResolver) Lookup(ref string) (node.Node, bool) {
	n, ok := r.nodes.Lookup(ref)
	if !ok {
		return n, false
	}
	return tracingNode{Node: n, telemetry: r.telemetry}, true
}

// tracingNode reports one attempt of its node. Task, attempt and node are
// span attributes only, never metric labels.
type tracingNode struct {
	node.Node
	telemetry ports.Telemetry
}

func (n tracingNode) Call(ctx context.Context, in node.Input) (out node.Output, err error) {
	task := in.Task
	ctx, span := n.telemetry.StartSpan(ctx, ports.FactNodeAttempt,
		ports.Label{Key: ports.LabelRunID, Value: task.RunID},
		ports.Label{Key: ports.LabelTaskID, Value: task.TaskID},
		ports.Label{Key: ports.LabelNode, Value: task.NodeID},
		ports.Label{Key: ports.LabelAttempt, Value: strconv.Itoa(task.Attempt)},
		ports.Label{Key: ports.LabelStep, Value: strconv.Itoa(task.Step)})
	returned := false
	defer func() {
		// Without a return the node is panicking or exiting; the executor
		// recovers either way, so the span only records it.
		result := attemptCrashed
		if returned {
			result = attemptResult(ctx, out, err)
		}
		span.End(result, nil)
	}()
	out, err = n.Node.Call(ctx, in)
	returned = true
	return out, err
}

func attemptResult(ctx context.Context, out node.Output, err error) string {
	switch cause := ctx.Err(); {
	case errors.Is(cause, context.DeadlineExceeded):
		return attemptTimeout
	case cause != nil:
		return attemptCancelled
	case err != nil:
		return attemptError
	}
	if _, ok := out.AsUpdate(); ok {
		return attemptOK
	}
	if _, ok := out.AsInterrupt(); ok {
		return attemptInterrupt
	}
	return attemptError // neither: the executor fails it as an invalid return
}
