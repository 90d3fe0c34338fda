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
	"maps"
	"sync"
	"time"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/domain/value"
)

// DefaultMaxAttemptElapsed is the host's attempt deadline when none is
// configured; a node's timeout_ms can only shorten it.
const DefaultMaxAttemptElapsed = 2000 * time.Millisecond

// Failure reasons the executor itself produces. Reasons are free-form
// strings recorded in node_failed events and run failures. A timeout's
// reason starts with ReasonTimeout and says which limit it ran past.
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
	results := make([]superstep.Result, len(acts))
	if len(acts) == 0 {
		return results, nil
	}
	b := e.start(ctx, runID, acts)
	err := b.wait(ctx, results)
	b.finish(ctx)
	if err != nil {
		return nil, err
	}
	return results, nil
}

// Deadline is the effective deadline of an attempt: the node's timeout_ms
// when set and below the host maximum, otherwise the host maximum.
func (e *Executor) Deadline(timeoutMS int) time.Duration {
	maximum := e.maximum()
	// Compared in milliseconds first: a huge timeout_ms would overflow the
	// product and wrap below the maximum.
	if timeoutMS > 0 && int64(timeoutMS) <= maximum.Milliseconds() {
		return min(time.Duration(timeoutMS)*time.Millisecond, maximum)
	}
	return maximum
}

// batch is one superstep's running attempts. Attempts with the same
// deadline form one group: they were started together, so they expire at
// the same instant. One timer, armed for the earliest pending group, wakes
// the waiter; the waiter then ends that group's attempt contexts.
//
// Each node goroutine writes its report into its attempt's slot and then
// sends the attempt's index on done (buffered for every attempt, so a late
// sender never blocks); the waiter reads a slot only after receiving its
// index. A batch whose every attempt has reported is recycled, with its
// channel, timer and slots; one with an abandoned attempt is left to it.
type batch struct {
	attempts []attempt
	groups   []deadlineGroup
	done     chan int
	timer    *time.Timer
	armed    int // the group the timer is set for, -1 when none
	reported int // reports received from done

	attemptsBuf [inlineAttempts]attempt
	groupsBuf   [2]deadlineGroup
}

// inlineAttempts is the number of attempts a batch holds without a
// separate allocation.
const inlineAttempts = 2

// deadlineGroup is one shared attempt deadline.
type deadlineGroup struct {
	after time.Duration
	at    time.Time
}

// attempt is one running activation. report is written once, by its node
// goroutine (or by start for an unknown implementation), before its index
// is sent; group indexes batch.groups.
type attempt struct {
	ctx     *attemptContext // nil for an unknown implementation
	report  report
	group   int
	settled bool
	// nodeLimit: the deadline is the node's timeout_ms, below the
	// engine's maximum (for the timeout's reason).
	nodeLimit bool
}

// report is what a node goroutine produces: the node's raw return, or the
// failure it ended with (a panic, runtime.Goexit, an unknown
// implementation). The waiter classifies a raw return, so the node
// goroutine's stack holds little beyond the node's own calls. late is true
// when the attempt's context had already ended, or its deadline passed,
// when the node returned.
type report struct {
	out    node.Output
	err    error
	failed *superstep.Result
	late   bool
}

var batches = sync.Pool{New: func() any {
	b := &batch{done: make(chan int, inlineAttempts), timer: time.NewTimer(time.Hour)}
	b.timer.Stop()
	return b
}}

func newBatch(n int) *batch {
	b := batches.Get().(*batch)
	if cap(b.done) < n {
		b.done = make(chan int, n)
	}
	switch {
	case n <= inlineAttempts:
		b.attempts = b.attemptsBuf[:n]
	case cap(b.attempts) >= n:
		b.attempts = b.attempts[:n]
	default:
		b.attempts = make([]attempt, n)
	}
	b.groups = b.groupsBuf[:0]
	b.armed = -1
	b.reported = 0
	return b
}

func (e *Executor) start(parent context.Context, runID string, acts []superstep.Activation) *batch {
	b := newBatch(len(acts))
	now := time.Now()
	// A lone owned activation has no sibling to race, and the planner
	// promised nothing reads its view once it has executed.
	owned := len(acts) == 1 && acts[0].Owned
	for i := range acts {
		act := &acts[i]
		a := &b.attempts[i]
		limit := e.Deadline(act.Policy.TimeoutMS)
		a.group = b.groupFor(now, limit)
		a.nodeLimit = limit < e.maximum()
		n, in, failed := e.prepare(runID, act, owned)
		if failed != nil {
			a.report = report{failed: failed}
			b.done <- i
			continue
		}
		a.ctx = newAttemptContext(parent, b.groups[a.group].at, in.Task)
		go b.run(a.ctx, n, in, i)
	}
	return b
}

// prepare resolves act's node and builds its input, or returns the failure
// of an unknown implementation. owned hands an owned activation's view to
// the node without the top-level copies (Execute does so only for a lone
// activation: several attempts run beside each other).
func (e *Executor) prepare(runID string, act *superstep.Activation, owned bool) (node.Node, node.Input, *superstep.Result) {
	n, found := e.Nodes.Lookup(act.Implementation)
	if !found {
		f := failure(fmt.Sprintf("unknown implementation %q", act.Implementation), false)
		return nil, node.Input{}, &f
	}
	task := node.Task{
		RunID:          runID,
		NodeID:         act.NodeID,
		TaskID:         act.TaskID,
		Step:           act.Step,
		Attempt:        act.Attempt,
		IdempotencyKey: act.IdempotencyKey,
		SourceVersions: act.SourceVersions,
	}
	// Each attempt gets its own copies: a node that writes to its input
	// despite the contract cannot race its siblings or change the snapshot
	// a retry will see.
	state := act.Snapshot
	if owned && state != nil {
		if !act.FlatSnapshot {
			state = cloneNested(state)
		}
	} else {
		state = cloneMap(state)
	}
	config := act.Config
	if act.FlatConfig && len(config) > 0 {
		config = maps.Clone(config)
	} else {
		config = cloneMap(config)
	}
	return n, node.Input{State: state, Config: config, Task: task}, nil
}

// groupFor returns the index of the deadline group for after, creating it
// on first use.
func (b *batch) groupFor(now time.Time, after time.Duration) int {
	for i := range b.groups {
		if b.groups[i].after == after {
			return i
		}
	}
	b.groups = append(b.groups, deadlineGroup{after: after, at: now.Add(after)})
	return len(b.groups) - 1
}

// finish ends every attempt context (with the parent's error when the
// parent ended, as a derived context would) and recycles the batch when
// no node goroutine can still touch it.
func (b *batch) finish(parent context.Context) {
	err := parent.Err()
	if err == nil {
		err = context.Canceled
	}
	for i := range b.attempts {
		if c := b.attempts[i].ctx; c != nil {
			c.cancel(err)
		}
	}
	b.timer.Stop()
	if b.reported != len(b.attempts) {
		return
	}
	clear(b.attempts)
	if len(b.attempts) > inlineAttempts && cap(b.attempts) > 64 {
		b.attempts = nil // keep one huge superstep from pinning its slots
	}
	batches.Put(b)
}

// run calls the node of attempt i and reports exactly once, whether the
// node returns, panics or calls runtime.Goexit.
func (b *batch) run(ctx *attemptContext, n node.Node, in node.Input, i int) {
	var (
		rep      report
		returned bool
	)
	defer func() {
		if !returned {
			var f superstep.Result
			if p := recover(); p != nil {
				f = failure(fmt.Sprintf("panic: %v", p), true)
			} else {
				// Deferred calls run without a panic only when the goroutine
				// is exiting through runtime.Goexit.
				f = failure(ReasonExited, true)
			}
			rep.failed = &f
		}
		// Returned after its deadline is late even when the waiter has
		// not woken yet to end the context: the result must not depend on
		// how soon the waiter is scheduled.
		rep.late = ctx.Err() != nil || !time.Now().Before(ctx.deadline)
		b.attempts[i].report = rep
		b.done <- i
	}()
	rep.out, rep.err = n.Call(ctx, in)
	returned = true
}

// wait fills results as attempts settle. An attempt whose deadline passes
// first becomes a timeout failure; it returns parent's error when the
// caller gives up.
func (b *batch) wait(parent context.Context, results []superstep.Result) error {
	for pending := len(b.attempts); pending > 0; {
		// Every deadline started before this loop; waiting on the earliest
		// one still pending costs no more than the slowest attempt.
		next := -1
		for i := range b.attempts {
			a := &b.attempts[i]
			if !a.settled && (next < 0 || b.groups[a.group].after < b.groups[next].after) {
				next = a.group
			}
		}
		if b.armed != next {
			b.timer.Reset(time.Until(b.groups[next].at))
			b.armed = next
		}
		select {
		case i := <-b.done:
			pending -= b.record(i, results)
		case <-b.timer.C:
			b.armed = -1
			// A result sent before the deadline may race the deadline's
			// signal; it was on time, so keep it.
			pending -= b.drain(results)
			if err := parent.Err(); err != nil {
				return err
			}
			for i := range b.attempts {
				a := &b.attempts[i]
				if !a.settled && a.group == next {
					a.settled = true
					results[i] = timeout(b.groups[a.group].after, a.nodeLimit)
					pending--
					if a.ctx != nil {
						a.ctx.cancel(context.DeadlineExceeded)
					}
				}
			}
		case <-parent.Done():
			return parent.Err()
		}
	}
	return nil
}

// record takes attempt i's report and says how many attempts it settled
// (0 for a late result: the attempt waits for its deadline's timeout).
func (b *batch) record(i int, results []superstep.Result) int {
	b.reported++
	a := &b.attempts[i]
	if a.settled || a.report.late {
		return 0
	}
	a.settled = true
	if a.report.failed != nil {
		results[i] = *a.report.failed
	} else {
		results[i] = classifySafely(a.report.out, a.report.err)
	}
	return 1
}

// classifySafely is classify with a panic in the output's conversion (a
// value whose normalization panics) recorded as the attempt's panic, as if
// the node had panicked.
func classifySafely(out node.Output, err error) (r superstep.Result) {
	defer func() {
		if p := recover(); p != nil {
			r = failure(fmt.Sprintf("panic: %v", p), true)
		}
	}()
	return classify(out, err)
}

// drain records every report already sent.
func (b *batch) drain(results []superstep.Result) int {
	n := 0
	for {
		select {
		case i := <-b.done:
			n += b.record(i, results)
		default:
			return n
		}
	}
}

func classify(out node.Output, err error) superstep.Result {
	if err != nil {
		return failure(err.Error(), !node.IsPermanent(err))
	}
	if update, ok := out.AsUpdate(); ok {
		if value.Check(update) == nil {
			// Already portable: the node handed the map over on return, so
			// it is taken as is rather than copied.
			return superstep.Result{Outcome: superstep.OutcomeUpdate, Update: update}
		}
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
		if req.Schema.ContainsItself() {
			// Copying it would overflow the stack, which no recover survives.
			return failure("invalid_interrupt: interrupt schema contains itself; a recursive schema has no wire form", false)
		}
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

// maximum is the host maximum of one attempt.
func (e *Executor) maximum() time.Duration {
	if e.MaxAttemptElapsed <= 0 {
		return DefaultMaxAttemptElapsed
	}
	return e.MaxAttemptElapsed
}

// timeout is the failure of an attempt that ran past its limit: the
// node's timeout_ms when nodeLimit, else the host's MaxAttemptElapsed. The
// reason names the limit, so whoever reads a failed run knows what to
// raise.
func timeout(limit time.Duration, nodeLimit bool) superstep.Result {
	source := "the engine's MaxAttemptElapsed"
	if nodeLimit {
		source = "the node's timeout_ms"
	}
	return failure(fmt.Sprintf("%s: the attempt ran past its limit of %v (%s)", ReasonTimeout, limit, source), true)
}

func failure(reason string, retryable bool) superstep.Result {
	return superstep.Result{Outcome: superstep.OutcomeFailure, Reason: reason, Retryable: retryable}
}

// cloneNested is m itself when it holds no containers, else a deep copy:
// the values of an owned view still belong to the run.
func cloneNested(m map[string]any) map[string]any {
	for _, v := range m {
		switch v.(type) {
		case []any, map[string]any:
			return value.Clone(m).(map[string]any)
		}
	}
	return m
}

// cloneMap deep-copies a portable map; one without containers inside (the
// common state view of strings and numbers) is copied wholesale.
func cloneMap(m map[string]any) map[string]any {
	if len(m) == 0 {
		return map[string]any{} // lighter than a clone of an empty map with room
	}
	for _, v := range m {
		switch v.(type) {
		case []any, map[string]any:
			return value.Clone(m).(map[string]any)
		}
	}
	return maps.Clone(m)
}
