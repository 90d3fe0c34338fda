package inline_test

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
)

// OnCallingGoroutine: what differs from the watchdog (where and when) and
// what does not (the outcomes).

// goroutineID reads the calling goroutine's number from its stack header.
func goroutineID(t *testing.T) uint64 {
	var buf [64]byte
	header := buf[:runtime.Stack(buf[:], false)]
	field := bytes.Fields(header)[1] // "goroutine N [running]:"
	id, err := strconv.ParseUint(string(field), 10, 64)
	require.NoError(t, err)
	return id
}

func calling(reg *node.Registry, extra ...inline.Option) []inline.Option {
	return options(reg, append([]inline.Option{inline.OnCallingGoroutine()}, extra...)...)
}

func TestOnCallingGoroutineCallsNodesOnTheCallersGoroutine(t *testing.T) {
	t.Parallel()
	var seen []uint64
	reg, g := chainAround(t, func(context.Context, node.Input) (node.Output, error) {
		seen = append(seen, goroutineID(t))
		return node.Update(map[string]any{"b": "v"}), nil
	})
	r, _, err := inline.RunInline(context.Background(), g, nil, calling(reg)...)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, []uint64{goroutineID(t)}, seen)

	seen = nil
	_, _, err = inline.RunInline(context.Background(), g, nil, options(reg)...)
	require.NoError(t, err)
	require.Len(t, seen, 1)
	assert.NotEqual(t, goroutineID(t), seen[0], "by default a drive goroutine calls it")
}

func TestOnCallingGoroutineEndsAnAttemptsContextAtItsDeadline(t *testing.T) {
	t.Parallel()
	var cause atomic.Value
	reg, g := misbehaving(t, func(ctx context.Context) (node.Output, error) {
		<-ctx.Done()
		cause.Store(ctx.Err())
		return node.Update(map[string]any{"b": "late"}), nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, calling(reg)...)
	retriedOnce(t, r, cps, err, "timeout")
	assert.Equal(t, context.DeadlineExceeded, cause.Load())
	assert.Equal(t, "v", r.Channels.Value("state:b"), "the result returned after the deadline was dropped")
}

func TestOnCallingGoroutineTimesOutANodeThatIgnoresItsContextOnceItReturns(t *testing.T) {
	t.Parallel()
	var returned atomic.Bool
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		time.Sleep(60 * time.Millisecond) // three times its 20 ms timeout
		returned.Store(true)
		return node.Update(map[string]any{"b": "late"}), nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, calling(reg)...)
	retriedOnce(t, r, cps, err, "timeout")
	assert.True(t, returned.Load())
	assert.Equal(t, "v", r.Channels.Value("state:b"), "the late result never reached the run")
}

func TestOnCallingGoroutineAbandonsTheSuperstepWhenTheCallerCancels(t *testing.T) {
	t.Parallel()
	for _, cooperative := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		var returned atomic.Bool
		var attemptErr atomic.Value
		reg, g := misbehaving(t, func(actx context.Context) (node.Output, error) {
			cancel()
			if cooperative {
				<-actx.Done()
			} else {
				time.Sleep(10 * time.Millisecond) // ignores its context
			}
			attemptErr.Store(actx.Err())
			returned.Store(true)
			return node.Update(map[string]any{"b": "late"}), nil
		})
		r, cps, err := inline.RunInline(ctx, g, nil, calling(reg)...)
		require.ErrorIs(t, err, context.Canceled)
		assert.True(t, returned.Load(), "the call returns once the node has")
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted}, types(cps))
		assert.Equal(t, cps[1].Run, r, "the last committed run")
		if cooperative {
			assert.Equal(t, context.Canceled, attemptErr.Load(), "the attempt's context ended with the caller's")
		}
	}
}

// A caller's context that ends by its deadline ends with the same error
// as an attempt's own deadline; only the latter is the node's timeout.
func TestACallersDeadlineAbandonsTheSuperstepInBothModes(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string][]inline.Option{"default": nil, "calling goroutine": {inline.OnCallingGoroutine()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			reg := node.NewRegistry().MustRegister("wait", node.New(nil, func(ctx context.Context, _ node.Input) (node.Output, error) {
				<-ctx.Done() // honours its context
				return node.Output{}, ctx.Err()
			}))
			g := build(t, graph.New("waits").State("out", schema.String()).Node("wait", "wait").
				Edge("e1", graph.Start, "wait").Edge("e2", "wait", graph.Finish).Output("out", "out"))
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			r, cps, err := inline.RunInline(ctx, g, nil, options(reg, append([]inline.Option{inline.WithMaxAttemptElapsed(time.Minute)}, mode...)...)...)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized}, types(cps), "nothing is committed for the abandoned superstep")
			assert.Equal(t, run.StatusRunning, r.Status)
		})
	}
}

func TestOnCallingGoroutineANodeCallingGoexitEndsTheCaller(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		runtime.Goexit()
		return node.Output{}, nil
	})
	requireEndsItsGoroutine(t, func() {
		_, _, _ = inline.RunInline(context.Background(), g, nil, calling(reg)...)
	})
}

func TestOnCallingGoroutineStepInlineTimesOutAnAttempt(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(ctx context.Context) (node.Output, error) {
		<-ctx.Done()
		return node.Output{}, ctx.Err()
	})
	mid, _, err := inline.RunInline(context.Background(), g, nil, calling(reg, inline.WithMaxSteps(1))...)
	require.NoError(t, err)
	parked, cps, err := inline.StepInline(context.Background(), g, mid, calling(reg)...)
	require.NoError(t, err)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRetryScheduled}, types(cps))
	assert.Contains(t, eventsOf(cps, run.EventNodeFailed)[0].Payload["reason"], "timeout")
	assert.Equal(t, 2, parked.ActiveTasks[onlyTask(t, parked)].Attempt)
}

// A node's runtime.Goexit unwinds through the runner with its attempt's
// deadline timer armed. Left armed, the timer could fire into the drive
// once a later call reuses it, and abandon that call's attempt behind its
// watchdog's back, so the call would never return.
func TestOnCallingGoroutineGoexitLeavesNoTimerBehind(t *testing.T) {
	exiting, g := misbehaving(t, func(context.Context) (node.Output, error) {
		runtime.Goexit()
		return node.Output{}, nil
	})
	slow, _ := misbehaving(t, func(context.Context) (node.Output, error) {
		time.Sleep(60 * time.Millisecond) // past its 20 ms timeout, ignoring its context
		return node.Update(map[string]any{"b": "late"}), nil
	})
	for range 5 {
		requireEndsItsGoroutine(t, func() {
			_, _, _ = inline.RunInline(context.Background(), g, nil, calling(exiting)...)
		})
		done := make(chan struct{})
		var (
			r   *run.Run
			cps []run.Checkpoint
			err error
		)
		go func() {
			defer close(done)
			r, cps, err = inline.RunInline(context.Background(), g, nil, options(slow)...)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a call after a node's Goexit on the calling goroutine never returned")
		}
		retriedOnce(t, r, cps, err, "timeout")
	}
}

// An attempt that follows a retry's backoff, longer than the attempt
// before it may run, still sees its own deadline end its context: nothing
// the earlier attempt armed may stand in for it.
func TestOnCallingGoroutineTimesOutAnAttemptAfterTheTimerFiredBetweenAttempts(t *testing.T) {
	t.Parallel()
	var cause atomic.Value
	reg, g := chainAround(t, func(ctx context.Context, in node.Input) (node.Output, error) {
		if in.Task.Attempt == 1 {
			return node.Output{}, errors.New("try again") // retryable, at once
		}
		select {
		case <-ctx.Done():
			cause.Store(ctx.Err())
		case <-time.After(30 * time.Second):
			cause.Store(errors.New("the attempt's context never ended"))
		}
		return node.Update(map[string]any{"b": "late"}), nil
	})
	backoff := inline.WithSleeper(func(context.Context, time.Duration) error {
		time.Sleep(60 * time.Millisecond) // past attempt 1's 20 ms deadline
		return nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, calling(reg, backoff)...)
	require.NoError(t, err)
	assert.Equal(t, context.DeadlineExceeded, cause.Load())
	assert.Equal(t, run.StatusFailed, r.Status, "both attempts failed")
	failed := eventsOf(cps, run.EventNodeFailed)
	require.Len(t, failed, 2)
	assert.Contains(t, failed[1].Payload["reason"], "timeout")
}
