package executor

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/superstep"
)

// Direct is one attempt run on its caller's goroutine rather than one of
// its own: Execute's attempt without the handoff, for a caller that runs a
// superstep of a single activation and keeps control of the attempt from
// another goroutine. That goroutine watches the deadline and the caller's
// context and, when either ends first, calls Abandon; the goroutine in Call
// is then left to the node, and whatever the node does later is dropped.
//
// An attempt settles once: by Call when the node returns or panics, by
// Call's goroutine exiting through runtime.Goexit, or by Abandon.
type Direct struct {
	ctx  attemptContext // holds the attempt's Task, the third part of its input
	node node.Node
	// view and config are the rest of the node's input.
	view, config map[string]any
	deadline     time.Time
	limit        time.Duration // the deadline's distance from the start
	nodeLimit    bool          // the limit is the node's timeout_ms
	state        atomic.Int32
	result       superstep.Result // written by Call's goroutine before it settles
}

const (
	directRunning int32 = iota
	directSettled
	directAbandoned
)

// Prepare builds the direct attempt of act, its deadline counted from now.
// An unknown implementation settles at once: Prepare returns nil and the
// attempt's failure.
func (e *Executor) Prepare(parent context.Context, runID string, act *superstep.Activation) (*Direct, superstep.Result) {
	if e == nil || e.Nodes == nil {
		return nil, failure("executor: no node resolver configured", false)
	}
	n, in, failed := e.prepare(runID, act, act.Owned)
	if failed != nil {
		return nil, *failed
	}
	limit := e.Deadline(act.Policy.TimeoutMS)
	deadline := time.Now().Add(limit)
	d := &Direct{node: n, view: in.State, config: in.Config, deadline: deadline, limit: limit, nodeLimit: limit < e.maximum()}
	d.ctx = attemptContext{parent: parent, deadline: deadline, task: in.Task}
	if pd, ok := parent.Deadline(); ok && pd.Before(deadline) {
		d.ctx.deadline = pd
	}
	return d, superstep.Result{}
}

// Deadline is when the attempt times out. It is the attempt's own deadline:
// a parent context ending earlier abandons the superstep instead.
func (d *Direct) Deadline() time.Time { return d.deadline }

// Call calls the node on the calling goroutine and returns the attempt's
// result, classified as Execute classifies it (a panic is a retryable
// failure). It returns false when the attempt was abandoned before the node
// returned: the result is dropped. An attempt abandoned before Call calls
// no node. A node that ends after the attempt's
// deadline settles it as a timeout, however soon its watcher wakes. If the node calls runtime.Goexit, Call
// does not return; the attempt settles as exited and Exited reports it to
// the goroutine's deferred functions.
func (d *Direct) Call() (r superstep.Result, owned bool) {
	if d.state.Load() != directRunning {
		// Abandoned before it started: the node's effects would be for a
		// result nobody takes.
		return superstep.Result{}, false
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		if p := recover(); p != nil {
			r = failure(fmt.Sprintf("panic: %v", p), true)
		} else {
			// Deferred calls run without a panic only when the goroutine
			// is exiting through runtime.Goexit.
			r = failure(ReasonExited, true)
		}
		if d.overran() {
			r = d.Timeout()
		}
		owned = d.settle(r)
	}()
	out, err := d.node.Call(&d.ctx, node.Input{State: d.view, Config: d.config, Task: d.ctx.task})
	returned = true
	if d.overran() {
		// The watcher has not abandoned the attempt yet, but the result
		// is late all the same: it is dropped as Execute drops it.
		r = d.Timeout()
		return r, d.settle(r)
	}
	if !d.state.CompareAndSwap(directRunning, directSettled) {
		return superstep.Result{}, false
	}
	d.ctx.cancel(context.Canceled)
	r = classifySafely(out, err)
	d.result = r
	return r, true
}

// overran says the attempt's own deadline has passed.
func (d *Direct) overran() bool { return !time.Now().Before(d.deadline) }

// settle records r as the attempt's result unless it was abandoned.
func (d *Direct) settle(r superstep.Result) bool {
	d.result = r
	if !d.state.CompareAndSwap(directRunning, directSettled) {
		return false
	}
	d.ctx.cancel(context.Canceled)
	return true
}

// Exited is for the deferred functions of a goroutine leaving Call without
// returning (runtime.Goexit): the attempt's result and true when Call's
// goroutine settled it, false when it had been abandoned.
func (d *Direct) Exited() (superstep.Result, bool) {
	if d.state.Load() != directSettled {
		return superstep.Result{}, false
	}
	return d.result, true
}

// Abandon settles a running attempt from another goroutine, ending its
// context with cause (context.DeadlineExceeded at the deadline, the
// caller's error when the caller gives up). It returns false when the
// attempt had already settled.
func (d *Direct) Abandon(cause error) bool {
	if !d.state.CompareAndSwap(directRunning, directAbandoned) {
		return false
	}
	d.ctx.cancel(cause)
	return true
}

// Timeout is the failure of this attempt when it overran its deadline.
func (d *Direct) Timeout() superstep.Result { return timeout(d.limit, d.nodeLimit) }
