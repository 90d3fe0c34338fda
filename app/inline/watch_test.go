package inline_test

import (
	"context"
	"maps"
	"runtime"
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

// A superstep of one activation runs its node on the drive goroutine; these
// cover every way the watchdog takes such an attempt back, and every way
// the runner's own code can end the drive goroutine.

// misbehaving registers "first" (writes a), the misbehaving "middle" on
// attempt 1 (writes b on later attempts) and "last" (writes c).
func misbehaving(t *testing.T, attempt1 func(ctx context.Context) (node.Output, error)) (*node.Registry, *graph.Graph) {
	t.Helper()
	return misbehavingWithin(t, 20, attempt1)
}

// misbehavingWithin is misbehaving with middle's timeout at timeoutMS.
func misbehavingWithin(t *testing.T, timeoutMS int, attempt1 func(ctx context.Context) (node.Output, error)) (*node.Registry, *graph.Graph) {
	t.Helper()
	return chainWithin(t, timeoutMS, func(ctx context.Context, in node.Input) (node.Output, error) {
		if in.Task.Attempt == 1 {
			return attempt1(ctx)
		}
		return node.Update(map[string]any{"b": "v"}), nil
	})
}

// countingMiddle is the chain whose middle node succeeds at once and
// counts its calls.
func countingMiddle(t *testing.T) (*node.Registry, *graph.Graph, *atomic.Int32) {
	t.Helper()
	calls := &atomic.Int32{}
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		calls.Add(1)
		return node.Update(map[string]any{"b": "v"}), nil
	})
	return reg, g, calls
}

// atClockRead is a frozen clock that calls act at its nth read. The
// runner reads the clock to plan each superstep and to settle it, so n
// picks the moment.
func atClockRead(n int, act func()) inline.Option {
	reads := 0
	return inline.WithClock(func() time.Time {
		reads++
		if reads == n {
			act()
		}
		return frozenNow
	})
}

// chainAround is first → middle (timeout 20 ms, two attempts) → last.
func chainAround(t *testing.T, middle node.CallFunc) (*node.Registry, *graph.Graph) {
	t.Helper()
	return chainWithin(t, 20, middle)
}

// chainWithin is chainAround with middle's timeout at timeoutMS.
func chainWithin(t *testing.T, timeoutMS int, middle node.CallFunc) (*node.Registry, *graph.Graph) {
	t.Helper()
	write := func(field string) node.Node {
		return node.New(nil, func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{field: "v"}), nil
		})
	}
	reg := node.NewRegistry().
		MustRegister("first", write("a")).
		MustRegister("last", write("c")).
		MustRegister("middle", node.New(nil, middle))
	g := build(t, graph.New("chain").
		State("a", schema.String()).State("b", schema.String()).State("c", schema.String()).
		Node("first", "first").
		Node("middle", "middle", graph.Timeout(timeoutMS), graph.Retry(2, 0)).
		Node("last", "last").
		Edge("e1", graph.Start, "first").
		Edge("e2", "first", "middle").
		Edge("e3", "middle", "last").
		Edge("e4", "last", graph.Finish).
		Output("c", "c"))
	return reg, g
}

func options(reg *node.Registry, extra ...inline.Option) []inline.Option {
	return append([]inline.Option{
		inline.WithRegistry(reg),
		inline.WithRunID("run_watch"),
		inline.WithClock(func() time.Time { return frozenNow }),
		inline.WithSleeper(func(context.Context, time.Duration) error { return nil }),
		inline.WithMaxAttemptElapsed(time.Minute),
	}, extra...)
}

// retriedOnce checks that attempt 1 of middle failed with reason, attempt 2
// succeeded and the chain completed.
func retriedOnce(t *testing.T, r *run.Run, cps []run.Checkpoint, err error, reason string) {
	t.Helper()
	require.NoError(t, err)
	requireWellFormed(t, cps)
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, map[string]any{"c": "v"}, r.Output)
	failed := eventsOf(cps, run.EventNodeFailed)
	require.Len(t, failed, 1)
	assert.Equal(t, "middle", failed[0].NodeID)
	assert.Contains(t, failed[0].Payload["reason"], reason)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted,
		run.CheckpointRetryScheduled, run.CheckpointStepCommitted, run.CheckpointStepCommitted,
		run.CheckpointRunCompleted}, types(cps))
}

func TestWatchdogTimesOutANodeThatIgnoresItsContextAndDropsItsLateResult(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	returned := make(chan struct{})
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		<-release
		defer close(returned)
		return node.Update(map[string]any{"b": "late"}), nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, options(reg)...)
	close(release)
	<-returned
	retriedOnce(t, r, cps, err, "timeout")
	assert.Equal(t, "v", r.Channels.Value("state:b"), "the late result never reached the run")
}

func TestWatchdogSettlesANodeThatCallsGoexitAndTheRunGoesOn(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		runtime.Goexit()
		return node.Output{}, nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, options(reg)...)
	retriedOnce(t, r, cps, err, "exited")
}

func TestAPanickingNodeIsAnAttemptFailureInEitherMode(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) { panic("boom") })
	for _, opts := range [][]inline.Option{options(reg), calling(reg)} {
		r, cps, err := inline.RunInline(context.Background(), g, nil, opts...)
		retriedOnce(t, r, cps, err, "panic: boom")
	}
}

func TestWatchdogKeepsAPanicAfterGoexitAnAttemptFailure(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		defer func() { panic("during exit") }()
		runtime.Goexit()
		return node.Output{}, nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, options(reg)...)
	retriedOnce(t, r, cps, err, "panic: during exit")
}

func TestWatchdogAbandonsARunningAttemptWhenTheCallerCancels(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	returned := make(chan struct{})
	var attemptCtx atomic.Value
	reg, g := misbehaving(t, func(actx context.Context) (node.Output, error) {
		attemptCtx.Store(actx)
		cancel()
		<-release // ignores its context
		defer close(returned)
		return node.Update(map[string]any{"b": "late"}), nil
	})
	r, cps, err := inline.RunInline(ctx, g, nil, options(reg)...)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted}, types(cps))
	assert.Equal(t, cps[1].Run, r, "the last committed run")
	assert.ErrorIs(t, attemptCtx.Load().(context.Context).Err(), context.Canceled, "the attempt's context ended with the caller")
	close(release)
	<-returned
	assert.Len(t, cps, 2, "the late result committed nothing")
}

func TestWatchdogStopsBeforeTheNextAttemptWhenTheCallerCancels(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	reg, g, middleCalls := countingMiddle(t)
	// The third read settles first, so the caller gives up between
	// supersteps.
	clock := atClockRead(3, cancel)
	r, cps, err := inline.RunInline(ctx, g, nil, options(reg, clock)...)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int32(0), middleCalls.Load(), "no attempt starts after the caller gave up")
	assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted}, types(cps))
	assert.Equal(t, 1, r.Step)
}

func TestWatchdogStepInlineTimesOutAStuckAttempt(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		<-release
		return node.Update(map[string]any{"b": "late"}), nil
	})
	opts := options(reg, inline.WithMaxSteps(1))
	mid, _, err := inline.RunInline(context.Background(), g, nil, opts...)
	require.NoError(t, err)
	require.Equal(t, 1, mid.Step)
	parked, cps, err := inline.StepInline(context.Background(), g, mid, options(reg)...)
	require.NoError(t, err)
	assert.Equal(t, []run.CheckpointType{run.CheckpointRetryScheduled}, types(cps))
	assert.Contains(t, eventsOf(cps, run.EventNodeFailed)[0].Payload["reason"], "timeout")
	assert.Equal(t, 2, parked.ActiveTasks[onlyTask(t, parked)].Attempt)
}

func onlyTask(t *testing.T, r *run.Run) string {
	t.Helper()
	id, _ := onlyKey(t, r.ActiveTasks)
	return id
}

func TestWatchdogRepanicsARunnerPanicOnTheCallersGoroutine(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		return node.Update(map[string]any{"b": "v"}), nil
	})
	clock := atClockRead(3, func() { panic("clock broke") })
	assert.PanicsWithValue(t, "clock broke", func() {
		_, _, _ = inline.RunInline(context.Background(), g, nil, options(reg, clock)...)
	})
}

func TestWatchdogExitsTheCallersGoroutineWhenTheRunnerCallsGoexit(t *testing.T) {
	t.Parallel()
	reg, g := misbehaving(t, func(context.Context) (node.Output, error) {
		return node.Output{}, context.DeadlineExceeded // retryable: the park calls the sleeper
	})
	sleeper := inline.WithSleeper(func(context.Context, time.Duration) error {
		runtime.Goexit()
		return nil
	})
	requireEndsItsGoroutine(t, func() {
		_, _, _ = inline.RunInline(context.Background(), g, nil, options(reg, sleeper)...)
	})
}

func TestANodeWritingToItsOwnedViewChangesNeitherTheRunNorItsRetry(t *testing.T) {
	t.Parallel()
	var seen []map[string]any
	var seenVersions []map[string]int64
	reg, g := chainAround(t, func(_ context.Context, in node.Input) (node.Output, error) {
		seen = append(seen, maps.Clone(in.State))
		versions := in.Task.SourceVersions.Map()
		seenVersions = append(seenVersions, maps.Clone(versions))
		in.State["a"] = "mutated"
		in.State["extra"] = "x"
		versions["a"] = 99 // a copy: the attempt's versions are read-only
		if in.Task.Attempt == 1 {
			return node.Output{}, context.DeadlineExceeded // retryable
		}
		return node.Update(map[string]any{"b": "v"}), nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, options(reg)...)
	retriedOnce(t, r, cps, err, "deadline exceeded")
	require.Len(t, seen, 2)
	assert.Equal(t, seen[0], seen[1], "the retry sees the view the first attempt was given")
	assert.Equal(t, seenVersions[0], seenVersions[1])
	assert.Equal(t, int64(1), seenVersions[1]["a"])
	assert.Equal(t, "v", seen[1]["a"])
	assert.Equal(t, "v", r.Channels.Value("state:a"))
	park := findCheckpoints(cps, run.CheckpointRetryScheduled)[0].Run
	for _, task := range park.ActiveTasks {
		assert.Equal(t, map[string]any{"a": "v"}, task.Snapshot)
	}
}

func TestAResultReturnedAfterTheDeadlineIsDroppedHoweverLateTheWatchdogWakes(t *testing.T) {
	// Not parallel: it runs alone on one processor, where the busy node
	// keeps the watchdog (or the expiry timer) from running until it has
	// returned. The timeout is roomy: the second attempt, which returns at
	// once, must finish within it even on a loaded machine under -race.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	reg, g := misbehavingWithin(t, 100, func(ctx context.Context) (node.Output, error) {
		deadline, _ := ctx.Deadline()
		for time.Now().Before(deadline.Add(2 * time.Millisecond)) {
		}
		return node.Update(map[string]any{"b": "late"}), nil
	})
	for range 3 {
		for _, opts := range [][]inline.Option{options(reg), calling(reg)} {
			r, cps, err := inline.RunInline(context.Background(), g, nil, opts...)
			retriedOnce(t, r, cps, err, "timeout")
			assert.Equal(t, "v", r.Channels.Value("state:b"))
		}
	}
}
