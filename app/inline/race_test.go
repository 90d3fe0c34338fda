package inline_test

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/run"
)

// What a direct attempt's result meets at the moment it is settled: the
// caller giving up, the deadline passing, a cancelled context.

// classifiedErr is a node's error whose Error runs hook once first. The
// runner calls Error to classify the attempt on the goroutine that called
// the node, right after the attempt has settled as the node's own: hook
// holds the attempt there, between settling and the runner taking its
// result.
type classifiedErr struct {
	once sync.Once
	hook func()
}

func (e *classifiedErr) Error() string {
	e.once.Do(e.hook)
	return "failed on time"
}

// lookedAt is a caller's context that tells when it is next looked at:
// once armed, its next Err call closes the armed channel.
type lookedAt struct {
	context.Context
	armed atomic.Pointer[chan struct{}]
}

func (c *lookedAt) Err() error {
	if ch := c.armed.Swap(nil); ch != nil {
		close(*ch)
	}
	return c.Context.Err()
}

func bothModes() map[string][]inline.Option {
	return map[string][]inline.Option{"default": nil, "calling goroutine": {inline.OnCallingGoroutine()}}
}

// The caller gives up while a settled attempt's result is on its way: the
// watchdog (or the context's callback) finds the attempt running and
// tries to abandon it. The result was the attempt's: it is committed, and
// then the call ends with the caller's error.
func TestAResultSettledAsTheCallerGivesUpIsCommitted(t *testing.T) {
	t.Parallel()
	for name, mode := range bothModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			inner, cancel := context.WithCancel(context.Background())
			defer cancel()
			ctx := &lookedAt{Context: inner}
			reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
				return node.Output{}, &classifiedErr{hook: func() {
					looked := make(chan struct{})
					ctx.armed.Store(&looked)
					cancel()
					<-looked // the caller's end is being dealt with
				}}
			})
			r, cps, err := inline.RunInline(ctx, g, nil, options(reg, mode...)...)
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted,
				run.CheckpointRetryScheduled}, types(cps))
			failed := eventsOf(cps, run.EventNodeFailed)
			require.Len(t, failed, 1)
			assert.Equal(t, "failed on time", failed[0].Payload["reason"])
			assert.Equal(t, cps[len(cps)-1].Run, r)
		})
	}
}

// The deadline passes while a settled attempt's result is on its way: the
// watchdog (or the expiry timer) finds the attempt running past its
// deadline and tries to abandon it. The result was on time: it is the
// attempt's, and no timeout is recorded beside it.
func TestAResultSettledAsTheDeadlinePassesIsNotATimeout(t *testing.T) {
	t.Parallel()
	for name, mode := range bothModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reg, g := misbehaving(t, func(ctx context.Context) (node.Output, error) {
				deadline, _ := ctx.Deadline()
				return node.Output{}, &classifiedErr{hook: func() {
					// Nothing tells when the watchdog has looked: it looks
					// at the deadline; the margin lets it.
					time.Sleep(time.Until(deadline.Add(40 * time.Millisecond)))
				}}
			})
			r, cps, err := inline.RunInline(context.Background(), g, nil, options(reg, mode...)...)
			retriedOnce(t, r, cps, err, "failed on time")
		})
	}
}

// The caller gives up while the runner plans a superstep: no attempt
// starts. With one processor nothing else runs meanwhile, so the runner
// itself must notice before it calls the node.
func TestNoAttemptStartsAfterTheCallerGaveUpWhileItWasPlanned(t *testing.T) {
	// Not parallel: it runs alone on one processor.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for name, mode := range bothModes() {
		ctx, cancel := context.WithCancel(context.Background())
		reg, g, middleCalls := countingMiddle(t)
		// The fourth read plans middle, after first was settled.
		clock := atClockRead(4, cancel)
		r, cps, err := inline.RunInline(ctx, g, nil, options(reg, append([]inline.Option{clock}, mode...)...)...)
		require.ErrorIs(t, err, context.Canceled, name)
		assert.Zero(t, middleCalls.Load(), "%s: no attempt starts after the caller gave up", name)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted}, types(cps), name)
		assert.Equal(t, 1, r.Step, name)
	}
}

// A caller's context that has already ended runs no node: RunInline
// commits the run's initialization only, and StepInline commits nothing,
// not even a transition that executes no node.
func TestAnEndedContextRunsNoNodeAndCommitsNoTransition(t *testing.T) {
	t.Parallel()
	for name, mode := range bothModes() {
		var calls atomic.Int32
		reg := node.NewRegistry().MustRegister("count", node.New(nil, func(context.Context, node.Input) (node.Output, error) {
			calls.Add(1)
			return node.Update(map[string]any{"out": "v"}), nil
		}))
		g := build(t, singleNode("single", "count"))
		ended, cancel := context.WithCancel(context.Background())
		cancel()

		r, cps, err := inline.RunInline(ended, g, nil, options(reg, mode...)...)
		require.ErrorIs(t, err, context.Canceled, name)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized}, types(cps), name)
		assert.Equal(t, run.StatusRunning, r.Status, name)
		assert.Zero(t, calls.Load(), "%s: no node ran", name)

		executed, _, err := inline.RunInline(context.Background(), g, nil, options(reg, append([]inline.Option{inline.WithMaxSteps(1)}, mode...)...)...)
		require.NoError(t, err)
		require.Equal(t, run.StatusRunning, executed.Status, "its completion is the next transition")
		r, cps, err = inline.StepInline(ended, g, executed, options(reg, mode...)...)
		require.ErrorIs(t, err, context.Canceled, name)
		assert.Empty(t, cps, name)
		assert.Equal(t, executed, r, name)
	}
}

// OnCallingGoroutine, a node that ends its caller's context and returns at
// once leaves the context's callback to run after the call has returned.
// The callback still writes to the call's loop state, so that state must
// not serve another call: the calls after it are not cancelled by it, and
// under the race detector no write of it meets another call's.
func TestOnCallingGoroutineALateCallbackOfTheCallersContextTouchesNoLaterCall(t *testing.T) {
	// Not parallel: on one processor the callback runs only once the
	// caller waits, after the call has returned.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var cancel context.CancelFunc
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		cancel()
		return node.Update(map[string]any{"b": "v"}), nil
	})
	for range 10 {
		ctx, stop := context.WithCancel(context.Background())
		cancel = stop // the node ends the context
		callbacks := make(chan struct{})
		context.AfterFunc(ctx, func() { close(callbacks) })
		r, cps, err := inline.RunInline(ctx, g, nil, calling(reg)...)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, cps[len(cps)-1].Run, r)
		<-callbacks // the caller waits: the runner's callback may run now
		stop()

		r, cps, err = inline.RunInline(context.Background(), g, nil, calling(reg)...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		requireWellFormed(t, cps)
	}
}
