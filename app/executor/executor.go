// Package executor runs the node attempts of one superstep concurrently and
// turns whatever they do (return, fail, panic, exit, overrun their
// deadline) into superstep.Results in activation order.
//
// It never reads or changes the run: the caller plans with
// superstep.Advance, executes here, and folds the results with
// superstep.Settle.
package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/domain/value"
)

// DefaultMaxAttemptElapsed is the host's attempt deadline when none is
// configured; a node's timeout_ms can only shorten it.
const DefaultMaxAttemptElapsed = 2000 * time.Millisecond

// Failure reasons the executor itself produces. Reasons are free-form
// strings recorded in node_failed events and run failures.
const (
	ReasonTimeout           = "timeout"
	ReasonExited            = "exited: killed (the node called runtime.Goexit)"
	ReasonInvalidNodeReturn = "invalid_node_return: the node returned neither an update nor an interrupt"
)

// Resolver finds the node behind an implementation reference;
// *node.Registry implements it.
type Resolver interface {
	Lookup(ref string) (node.Node, bool)
}

// Executor runs activations. The zero value is not usable: Nodes is
// required. It is safe for concurrent use.
type Executor struct {
	// Nodes resolves Activation.Implementation.
	Nodes Resolver
	// MaxAttemptElapsed is the host maximum for one attempt; zero means
	// DefaultMaxAttemptElapsed. A node's timeout_ms applies when smaller.
	MaxAttemptElapsed time.Duration
}

// Execute runs every activation in its own goroutine and waits for all of
// them, each up to its deadline. results[i] belongs to acts[i].
//
// An attempt that overruns its deadline is recorded as a retryable
// "timeout" failure; its context is cancelled and anything it returns later
// is dropped. Go cannot stop a goroutine that ignores its context, so a
// timeout means loss of control, not proof that no effect happened.
//
// If ctx ends before every attempt has settled, Execute returns ctx's error
// and no results: the superstep was not executed and must not be committed.
func (e *Executor) Execute(ctx context.Context, runID string, acts []superstep.Activation) ([]superstep.Result, error) {
	if e == nil || e.Nodes == nil {
		return nil, errors.New("executor: no node resolver configured")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	attempts := make([]*attempt, len(acts))
	for i, act := range acts {
		attempts[i] = e.start(ctx, runID, act)
	}
	defer func() {
		for _, a := range attempts {
			a.cancel()
		}
	}()

	results := make([]superstep.Result, len(acts))
	// Every deadline started before this loop, so waiting in order costs no
	// more than the slowest attempt.
	for i, a := range attempts {
		r, err := a.wait(ctx)
		if err != nil {
			return nil, err
		}
		results[i] = r
	}
	return results, nil
}

// Deadline is the effective deadline of an attempt: the node's timeout_ms
// when set and below the host maximum, otherwise the host maximum.
func (e *Executor) Deadline(timeoutMS int) time.Duration {
	maximum := e.MaxAttemptElapsed
	if maximum <= 0 {
		maximum = DefaultMaxAttemptElapsed
	}
	if timeoutMS > 0 {
		if d := time.Duration(timeoutMS) * time.Millisecond; d < maximum {
			return d
		}
	}
	return maximum
}

// attempt is one running activation.
type attempt struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan settled // buffered(1): a late sender never blocks
}

// settled is what the node goroutine reports. late is true when the
// attempt's context had already ended when the node returned.
type settled struct {
	result superstep.Result
	late   bool
}

func (e *Executor) start(parent context.Context, runID string, act superstep.Activation) *attempt {
	ctx, cancel := context.WithTimeout(parent, e.Deadline(act.Policy.TimeoutMS))
	a := &attempt{ctx: ctx, cancel: cancel, done: make(chan settled, 1)}
	n, found := e.Nodes.Lookup(act.Implementation)
	if !found {
		a.done <- settled{result: failure(fmt.Sprintf("unknown implementation %q", act.Implementation), false)}
		return a
	}
	task := node.Task{
		RunID:          runID,
		NodeID:         act.NodeID,
		TaskID:         act.TaskID,
		Step:           act.Step,
		Attempt:        act.Attempt,
		IdempotencyKey: act.IdempotencyKey,
		SourceVersions: cloneVersions(act.SourceVersions),
	}
	in := node.Input{
		// Each attempt gets its own copies: a node that writes to its input
		// despite the contract cannot race its siblings or change the
		// snapshot a retry will see.
		State:  cloneMap(act.Snapshot),
		Config: cloneMap(act.Config),
		Task:   task,
	}
	go a.run(node.WithTask(ctx, task), n, in)
	return a
}

// run calls the node and reports exactly once, whether the node returns,
// panics or calls runtime.Goexit.
func (a *attempt) run(ctx context.Context, n node.Node, in node.Input) {
	var (
		r        superstep.Result
		returned bool
	)
	defer func() {
		if !returned {
			if p := recover(); p != nil {
				r = failure(fmt.Sprintf("panic: %v", p), true)
			} else {
				// Deferred calls run without a panic only when the goroutine
				// is exiting through runtime.Goexit.
				r = failure(ReasonExited, true)
			}
		}
		a.done <- settled{result: r, late: ctx.Err() != nil}
	}()
	out, err := n.Call(ctx, in)
	r = classify(out, err)
	returned = true
}

// wait returns the attempt's result, a timeout failure at its deadline, or
// parent's error when the caller gave up.
func (a *attempt) wait(parent context.Context) (superstep.Result, error) {
	select {
	case s := <-a.done:
		if !s.late {
			return s.result, nil
		}
	case <-a.ctx.Done():
		// A result sent before the deadline may race the deadline's
		// signal; it was on time, so keep it.
		select {
		case s := <-a.done:
			if !s.late {
				return s.result, nil
			}
		default:
		}
	}
	a.cancel()
	if err := parent.Err(); err != nil {
		return superstep.Result{}, err
	}
	return failure(ReasonTimeout, true), nil
}

func classify(out node.Output, err error) superstep.Result {
	if err != nil {
		return failure(err.Error(), !node.IsPermanent(err))
	}
	if update, ok := out.AsUpdate(); ok {
		normalized, err := value.Normalize(update)
		if err != nil {
			return failure("invalid_state_update: non-durable update: "+err.Error(), false)
		}
		m, ok := normalized.(map[string]any)
		if !ok {
			return failure("invalid_state_update: must return a state update map", false)
		}
		return superstep.Result{Outcome: superstep.OutcomeUpdate, Update: m}
	}
	if req, ok := out.AsInterrupt(); ok {
		metadata, err := value.Normalize(req.Metadata)
		if err != nil {
			return failure("invalid_interrupt: non-durable metadata: "+err.Error(), false)
		}
		m, _ := metadata.(map[string]any)
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: &superstep.InterruptRequest{
			ID:            req.ID,
			ResumeChannel: req.ResumeChannel,
			Schema:        req.Schema.Clone(),
			Metadata:      m,
		}}
	}
	return failure(ReasonInvalidNodeReturn, false)
}

func failure(reason string, retryable bool) superstep.Result {
	return superstep.Result{Outcome: superstep.OutcomeFailure, Reason: reason, Retryable: retryable}
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return value.Clone(m).(map[string]any)
}

func cloneVersions(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
