package executor_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

func activation(nodeID, ref string) superstep.Activation {
	taskID := "run_1:0:" + nodeID
	return superstep.Activation{
		TaskID:         taskID,
		NodeID:         nodeID,
		Step:           0,
		Attempt:        1,
		IdempotencyKey: taskID + ":1",
		Snapshot:       map[string]any{"topic": "go"},
		SourceVersions: run.VersionsOf(map[string]int64{"topic": 1}),
		Implementation: ref,
		Config:         map[string]any{"field": "out"},
		Policy:         graph.NodePolicy{MaxAttempts: 1},
	}
}

func withTimeout(a superstep.Activation, ms int) superstep.Activation {
	a.Policy.TimeoutMS = ms
	return a
}

func execute(t *testing.T, e *executor.Executor, acts ...superstep.Activation) []superstep.Result {
	t.Helper()
	results, err := e.Execute(context.Background(), "run_1", acts)
	require.NoError(t, err)
	require.Len(t, results, len(acts))
	return results
}

func call(fn node.CallFunc) node.Node { return node.New(nil, fn) }

func TestExecuteRunsAttemptsConcurrently(t *testing.T) {
	t.Parallel()
	const n = 6
	var started atomic.Int32
	allStarted := make(chan struct{})
	// Each attempt waits until every attempt has started: run one at a
	// time, the first would wait forever and time out.
	rendezvous := call(func(ctx context.Context, in node.Input) (node.Output, error) {
		if started.Add(1) == n {
			close(allStarted)
		}
		select {
		case <-allStarted:
			return node.Update(map[string]any{"node": in.Task.NodeID}), nil
		case <-ctx.Done():
			return node.Output{}, ctx.Err()
		}
	})
	reg := node.NewRegistry().MustRegister("rendezvous", rendezvous)
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 5 * time.Second}

	acts := make([]superstep.Activation, n)
	for i := range acts {
		acts[i] = activation(string(rune('a'+i)), "rendezvous")
	}
	results := execute(t, e, acts...)
	for i, r := range results {
		require.Equal(t, superstep.OutcomeUpdate, r.Outcome, r.Reason)
		assert.Equal(t, map[string]any{"node": acts[i].NodeID}, r.Update)
	}
}

func TestExecuteReturnsResultsInActivationOrderWhateverTheFinishOrder(t *testing.T) {
	t.Parallel()
	// Later activations finish first.
	delays := map[string]time.Duration{"a": 60 * time.Millisecond, "b": 30 * time.Millisecond, "c": 0}
	var mu sync.Mutex
	var finished []string
	reg := node.NewRegistry().MustRegister("delayed", call(func(ctx context.Context, in node.Input) (node.Output, error) {
		time.Sleep(delays[in.Task.NodeID])
		mu.Lock()
		finished = append(finished, in.Task.NodeID)
		mu.Unlock()
		return node.Update(map[string]any{"by": in.Task.NodeID}), nil
	}))
	e := &executor.Executor{Nodes: reg}

	results := execute(t, e, activation("a", "delayed"), activation("b", "delayed"), activation("c", "delayed"))
	for i, id := range []string{"a", "b", "c"} {
		assert.Equal(t, map[string]any{"by": id}, results[i].Update)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.ElementsMatch(t, []string{"a", "b", "c"}, finished)
}

func TestExecuteClassifiesEveryWayAnAttemptEnds(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().
		MustRegister("error", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, errors.New("always_fails")
		})).
		MustRegister("permanent", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, node.Permanent(errors.New("unsupported_await"))
		})).
		MustRegister("panic", call(func(context.Context, node.Input) (node.Output, error) {
			panic("boom")
		})).
		MustRegister("goexit", call(func(context.Context, node.Input) (node.Output, error) {
			runtime.Goexit()
			return node.Output{}, nil
		})).
		MustRegister("zero", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Output{}, nil
		})).
		MustRegister("non_portable", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"out": make(chan int)}), nil
		})).
		MustRegister("go_values", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"n": 3, "tags": []string{"x", "y"}}), nil
		})).
		MustRegister("nil_update", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Update(nil), nil
		})).
		MustRegister("interrupt", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Interrupt(node.InterruptRequest{
				ID: "ask", ResumeChannel: "answer", Schema: schema.String(), Metadata: map[string]any{"prompt": "?", "n": 1},
			}), nil
		}))
	e := &executor.Executor{Nodes: reg}

	failures := []struct {
		name      string
		ref       string
		reason    []string
		retryable bool
	}{
		{"an error is a retryable failure with its message", "error", []string{"always_fails"}, true},
		{"a permanent error is not retryable", "permanent", []string{"unsupported_await"}, false},
		{"a panic is a retryable failure", "panic", []string{"panic: boom"}, true},
		{"runtime.Goexit is a retryable failure", "goexit", []string{"exited", "killed"}, true},
		{"an empty output is an invalid node return", "zero", []string{"invalid_node_return"}, false},
		{"a non-portable update is permanent", "non_portable", []string{"invalid_state_update", "non-durable"}, false},
		{"an unknown implementation is permanent", "missing", []string{"unknown implementation", "missing"}, false},
	}
	for _, tc := range failures {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := execute(t, e, activation("n", tc.ref))[0]
			require.Equal(t, superstep.OutcomeFailure, r.Outcome)
			for _, part := range tc.reason {
				assert.Contains(t, r.Reason, part)
			}
			assert.Equal(t, tc.retryable, r.Retryable)
		})
	}

	t.Run("updates are normalized to portable values", func(t *testing.T) {
		t.Parallel()
		r := execute(t, e, activation("n", "go_values"))[0]
		require.Equal(t, superstep.OutcomeUpdate, r.Outcome, r.Reason)
		assert.Equal(t, map[string]any{"n": int64(3), "tags": []any{"x", "y"}}, r.Update)
	})
	t.Run("a nil update writes nothing", func(t *testing.T) {
		t.Parallel()
		r := execute(t, e, activation("n", "nil_update"))[0]
		require.Equal(t, superstep.OutcomeUpdate, r.Outcome, r.Reason)
		assert.Empty(t, r.Update)
	})
	t.Run("an interrupt carries its request", func(t *testing.T) {
		t.Parallel()
		r := execute(t, e, activation("n", "interrupt"))[0]
		require.Equal(t, superstep.OutcomeInterrupt, r.Outcome, r.Reason)
		require.NotNil(t, r.Interrupt)
		assert.Equal(t, "ask", r.Interrupt.ID)
		assert.Equal(t, "answer", r.Interrupt.ResumeChannel)
		assert.Equal(t, schema.String(), r.Interrupt.Schema)
		assert.Equal(t, map[string]any{"prompt": "?", "n": int64(1)}, r.Interrupt.Metadata)
	})
}

func TestExecuteFailsAttemptsAtTheirDeadline(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	returned := make(chan struct{})
	t.Cleanup(func() { close(release) })
	reg := node.NewRegistry().
		// Ignores its context, then returns an update long after the
		// deadline: the late result must be dropped.
		MustRegister("stubborn", call(func(context.Context, node.Input) (node.Output, error) {
			<-release
			defer close(returned)
			return node.Update(map[string]any{"out": "late"}), nil
		})).
		// Stops when its context ends, returning the context's error.
		MustRegister("cooperative", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
			<-ctx.Done()
			return node.Output{}, ctx.Err()
		})).
		MustRegister("fast", call(func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"out": "fast"}), nil
		}))

	t.Run("timeout_ms below the host maximum applies", func(t *testing.T) {
		e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 5 * time.Second}
		results := execute(t, e, withTimeout(activation("slow", "cooperative"), 15), activation("quick", "fast"))
		assert.Equal(t, superstep.Result{Outcome: superstep.OutcomeFailure, Retryable: true,
			Reason: "timeout: the attempt ran past its limit of 15ms (the node's timeout_ms)"}, results[0], "the reason names the limit")
		assert.Equal(t, superstep.OutcomeUpdate, results[1].Outcome, "a sibling's result survives a timeout")
	})
	t.Run("the host maximum applies without timeout_ms", func(t *testing.T) {
		e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 20 * time.Millisecond}
		results := execute(t, e, activation("slow", "cooperative"))
		assert.Equal(t, "timeout: the attempt ran past its limit of 20ms (the engine's MaxAttemptElapsed)", results[0].Reason)
		assert.True(t, results[0].Retryable)
	})
	t.Run("a node that ignores its context is abandoned and its late result dropped", func(t *testing.T) {
		e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 20 * time.Millisecond}
		results := execute(t, e, activation("slow", "stubborn"))
		release <- struct{}{}
		<-returned
		assert.Equal(t, superstep.Result{Outcome: superstep.OutcomeFailure, Retryable: true,
			Reason: "timeout: the attempt ran past its limit of 20ms (the engine's MaxAttemptElapsed)"}, results[0])
	})
}

func TestDeadlineIsTheSmallerOfTimeoutAndHostMaximum(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		maximum   time.Duration
		timeoutMS int
		want      time.Duration
	}{
		{"no timeout uses the default maximum", 0, 0, 2 * time.Second},
		{"no timeout uses the configured maximum", 100 * time.Millisecond, 0, 100 * time.Millisecond},
		{"a smaller timeout wins", 100 * time.Millisecond, 15, 15 * time.Millisecond},
		{"a larger timeout is capped", 100 * time.Millisecond, 500, 100 * time.Millisecond},
		{"a timeout just below a fractional maximum wins", 100*time.Millisecond + 500*time.Microsecond, 100, 100 * time.Millisecond},
		{"a timeout too large for a duration is capped", 100 * time.Millisecond, math.MaxInt, 100 * time.Millisecond},
	}
	for _, tc := range cases {
		e := &executor.Executor{MaxAttemptElapsed: tc.maximum}
		assert.Equal(t, tc.want, e.Deadline(tc.timeoutMS), tc.name)
	}
}

func TestExecuteStopsWhenTheCallerCancels(t *testing.T) {
	t.Parallel()
	sawCancel := make(chan struct{})
	running := make(chan struct{})
	reg := node.NewRegistry().MustRegister("blocking", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		close(running)
		<-ctx.Done()
		close(sawCancel)
		return node.Output{}, ctx.Err()
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-running
		cancel()
	}()

	results, err := e.Execute(ctx, "run_1", []superstep.Activation{activation("n", "blocking")})
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, results, "an interrupted superstep yields no results to commit")
	select {
	case <-sawCancel:
	case <-time.After(5 * time.Second):
		t.Fatal("the node's context was not cancelled")
	}

	_, err = e.Execute(ctx, "run_1", []superstep.Activation{activation("n", "blocking")})
	assert.ErrorIs(t, err, context.Canceled, "a cancelled context starts nothing")
}

func TestExecuteGivesEachAttemptItsIdentityAndAPrivateSnapshot(t *testing.T) {
	t.Parallel()
	var seen node.Input
	var fromCtx node.Task
	reg := node.NewRegistry().MustRegister("inspect", call(func(ctx context.Context, in node.Input) (node.Output, error) {
		seen = in
		fromCtx, _ = node.TaskFrom(ctx)
		in.State["topic"] = "mutated"
		in.Config["field"] = "mutated"
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg}
	act := activation("n", "inspect")
	act.Step, act.Attempt, act.IdempotencyKey = 0, 2, "run_1:0:n:2"

	execute(t, e, act)
	want := node.Task{
		RunID: "run_1", NodeID: "n", TaskID: "run_1:0:n", Step: 0, Attempt: 2,
		IdempotencyKey: "run_1:0:n:2", SourceVersions: run.VersionsOf(map[string]int64{"topic": 1}),
	}
	assert.Equal(t, want, seen.Task)
	assert.Equal(t, want, fromCtx)
	assert.Equal(t, map[string]any{"topic": "go"}, act.Snapshot, "the activation's snapshot is untouched")
	assert.Equal(t, map[string]any{"field": "out"}, act.Config, "the activation's config is untouched")
}

// A flat config is copied without a look inside, and still copied.
func TestExecuteCopiesAFlatConfig(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().MustRegister("write", call(func(_ context.Context, in node.Input) (node.Output, error) {
		in.Config["field"] = "mutated"
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg}
	act := activation("n", "write")
	act.FlatConfig = true
	execute(t, e, act)
	act.Owned, act.FlatSnapshot = true, true
	execute(t, e, act)
	assert.Equal(t, map[string]any{"field": "out"}, act.Config, "the activation's config is untouched")
}

func TestExecuteHandsOnlyALoneOwnedActivationItsView(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().MustRegister("write", call(func(_ context.Context, in node.Input) (node.Output, error) {
		in.State["topic"] = "mutated by " + in.Task.NodeID
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg}

	lone := activation("n", "write")
	lone.Owned = true
	execute(t, e, lone)
	assert.Equal(t, "mutated by n", lone.Snapshot["topic"], "a lone owned view is handed over, not copied")

	shared := map[string]any{"topic": "go"}
	a, b := activation("a", "write"), activation("b", "write")
	a.Snapshot, b.Snapshot = shared, shared
	a.Owned, b.Owned = true, true
	execute(t, e, a, b)
	assert.Equal(t, map[string]any{"topic": "go"}, shared, "attempts running beside each other get copies")
}

func TestExecuteWithoutResolverIsAnError(t *testing.T) {
	t.Parallel()
	_, err := (&executor.Executor{}).Execute(context.Background(), "run_1", []superstep.Activation{activation("n", "x")})
	assert.Error(t, err)
}

func TestAttemptContextBehavesAsATimeoutContext(t *testing.T) {
	t.Parallel()
	type seen struct {
		hasDeadline        bool
		derivedErr, err    error
		cause, derivedCaus error
		afterFuncRan       bool
	}
	got := make(chan seen, 1)
	reg := node.NewRegistry().MustRegister("observe", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		var s seen
		_, s.hasDeadline = ctx.Deadline()
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		ran := make(chan struct{})
		context.AfterFunc(ctx, func() { close(ran) })
		<-derived.Done()
		<-ran
		s.afterFuncRan = true
		s.err, s.derivedErr = ctx.Err(), derived.Err()
		s.cause, s.derivedCaus = context.Cause(ctx), context.Cause(derived)
		got <- s
		return node.Output{}, ctx.Err()
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 20 * time.Millisecond}
	parent, cancel := context.WithCancel(context.Background())
	defer cancel()
	results, err := e.Execute(parent, "run_1", []superstep.Activation{activation("n", "observe")})
	require.NoError(t, err)
	assert.Contains(t, results[0].Reason, "timeout")
	s := <-got
	assert.True(t, s.hasDeadline)
	assert.True(t, s.afterFuncRan)
	assert.ErrorIs(t, s.err, context.DeadlineExceeded)
	assert.ErrorIs(t, s.derivedErr, context.DeadlineExceeded)
	assert.ErrorIs(t, s.cause, context.DeadlineExceeded)
	assert.ErrorIs(t, s.derivedCaus, context.DeadlineExceeded)
}

func TestAttemptContextEndsWithTheCallerAndAfterExecute(t *testing.T) {
	t.Parallel()
	kept := make(chan context.Context, 1)
	reg := node.NewRegistry().MustRegister("keep", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		kept <- ctx
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg}
	execute(t, e, activation("n", "keep"))
	ctx := <-kept
	<-ctx.Done()
	assert.ErrorIs(t, ctx.Err(), context.Canceled, "an attempt's context ends when Execute returns")

	cause := errors.New("caller gave up")
	parent, cancel := context.WithCancelCause(context.Background())
	reg.MustRegister("wait", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		cancel(cause)
		<-ctx.Done()
		kept <- ctx
		return node.Output{}, ctx.Err()
	}))
	_, err := e.Execute(parent, "run_1", []superstep.Activation{activation("n", "wait")})
	require.ErrorIs(t, err, context.Canceled)
	ctx = <-kept
	assert.ErrorIs(t, ctx.Err(), context.Canceled)
	assert.Equal(t, cause, context.Cause(ctx), "the caller's cause reaches the attempt")
}

// overrun ignores its context and returns an update once its deadline has
// passed, keeping the processor busy meanwhile: with one processor nothing
// else runs (the waiter's timer included) until it has returned.
func overrun(ctx context.Context, _ node.Input) (node.Output, error) {
	deadline, _ := ctx.Deadline()
	for time.Now().Before(deadline.Add(2 * time.Millisecond)) {
	}
	return node.Update(map[string]any{"out": "late"}), nil
}

func TestAResultReturnedAfterTheDeadlineIsATimeoutHoweverLateTheWaiterWakes(t *testing.T) {
	// Not parallel: it runs alone on one processor.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	reg := node.NewRegistry().MustRegister("overrun", call(overrun))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Second}
	timeout := timeoutAfter5ms
	for range 20 {
		results := execute(t, e, withTimeout(activation("a", "overrun"), 5), withTimeout(activation("b", "overrun"), 5))
		require.Equal(t, []superstep.Result{timeout, timeout}, results, "Execute")

		require.Equal(t, timeout, callUnwatched(t, e, withTimeout(activation("a", "overrun"), 5)), "a direct attempt")
	}
}

// An owned view is handed over without a copy of its top level, but the
// lists and maps inside it still belong to the run: a node writing into
// them changes neither the activation's snapshot nor what a retry sees.
func TestExecuteCopiesTheContainersInsideALoneOwnedView(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().MustRegister("write", call(func(_ context.Context, in node.Input) (node.Output, error) {
		in.State["tags"].([]any)[0] = "mutated"
		in.State["meta"].(map[string]any)["k"] = "mutated"
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg}
	lone := activation("n", "write")
	lone.Snapshot = map[string]any{"tags": []any{"go"}, "meta": map[string]any{"k": "v"}}
	lone.Owned = true
	execute(t, e, lone)
	assert.Equal(t, map[string]any{"tags": []any{"go"}, "meta": map[string]any{"k": "v"}}, lone.Snapshot,
		"values nested in an owned view are the run's")
}

// Attempts with different deadlines time out each at its own: the first
// deadline to pass ends only its attempts, and a sibling with a later
// deadline still returns its result.
func TestExecuteTimesOutEachAttemptAtItsOwnDeadline(t *testing.T) {
	t.Parallel()
	shortEnded := make(chan struct{})
	reg := node.NewRegistry().
		MustRegister("short", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
			<-ctx.Done()
			close(shortEnded)
			return node.Output{}, ctx.Err()
		})).
		// Returns once the short attempt's deadline has ended it.
		MustRegister("long", call(func(context.Context, node.Input) (node.Output, error) {
			<-shortEnded
			return node.Update(map[string]any{"out": "long"}), nil
		}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 10 * time.Second}
	results := execute(t, e, withTimeout(activation("a", "short"), 20), activation("b", "long"))
	assert.Equal(t, "timeout: the attempt ran past its limit of 20ms (the node's timeout_ms)", results[0].Reason)
	assert.Equal(t, superstep.Result{Outcome: superstep.OutcomeUpdate, Update: map[string]any{"out": "long"}}, results[1],
		"the later deadline has not passed")
}

// When the caller's deadline ends the superstep, the node's context ends
// with DeadlineExceeded, as a context derived from the caller's would.
func TestAttemptContextEndsWithTheCallersDeadline(t *testing.T) {
	t.Parallel()
	seen := make(chan error, 1)
	reg := node.NewRegistry().MustRegister("wait", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		<-ctx.Done()
		seen <- ctx.Err()
		return node.Output{}, ctx.Err()
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: 10 * time.Second}
	parent, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := e.Execute(parent, "run_1", []superstep.Activation{activation("n", "wait")})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, <-seen, context.DeadlineExceeded)
}

// A direct attempt whose node panics or exits only after its deadline has
// passed settles as the timeout, as Execute settles it: what the node did
// once it had run out of time is not its result.
func TestADirectAttemptThatPanicsOrExitsAfterItsDeadlineIsATimeout(t *testing.T) {
	t.Parallel()
	pastDeadline := func(ctx context.Context) {
		deadline, _ := ctx.Deadline()
		for time.Now().Before(deadline.Add(2 * time.Millisecond)) {
			time.Sleep(time.Millisecond)
		}
	}
	reg := node.NewRegistry().
		MustRegister("panic", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
			pastDeadline(ctx)
			panic("too late")
		})).
		MustRegister("exit", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
			pastDeadline(ctx)
			runtime.Goexit()
			return node.Output{}, nil
		}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Second}
	timeout := timeoutAfter5ms

	assert.Equal(t, timeout, callUnwatched(t, e, withTimeout(activation("n", "panic"), 5)), "a panic after the deadline")

	act := withTimeout(activation("n", "exit"), 5)
	d, _ := e.Prepare(context.Background(), "run_1", &act)
	require.NotNil(t, d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Call()
	}()
	<-done
	result, owned := d.Exited()
	assert.True(t, owned)
	assert.Equal(t, timeout, result, "a runtime.Goexit after the deadline")
}

// An attempt's context has the earlier of its own deadline and its
// caller's, as a context derived from the caller's would, whether it runs
// through Execute or as a direct attempt.
func TestAttemptContextHasTheCallersEarlierDeadline(t *testing.T) {
	t.Parallel()
	seen := make(chan time.Time, 1)
	reg := node.NewRegistry().MustRegister("deadline", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		d, _ := ctx.Deadline()
		seen <- d
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Hour}
	parent, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, _ := parent.Deadline()

	_, err := e.Execute(parent, "run_1", []superstep.Activation{activation("n", "deadline")})
	require.NoError(t, err)
	assert.Equal(t, want, <-seen, "Execute")

	act := activation("n", "deadline")
	d, _ := e.Prepare(parent, "run_1", &act)
	require.NotNil(t, d)
	d.Call()
	assert.Equal(t, want, <-seen, "a direct attempt")
}

// A direct attempt abandoned while its node ran is settled by the
// abandonment: a runtime.Goexit the node calls afterwards settles nothing,
// so Exited gives the goroutine's deferred functions no result to report.
func TestADirectAttemptAbandonedBeforeItsNodeExitsHasNoExitResult(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().MustRegister("exit", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		<-ctx.Done()
		runtime.Goexit()
		return node.Output{}, nil
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Minute}
	act := activation("n", "exit")
	d, _ := e.Prepare(context.Background(), "run_1", &act)
	require.NotNil(t, d)
	type exit struct {
		result superstep.Result
		owned  bool
	}
	exited := make(chan exit, 1)
	go func() {
		defer func() {
			r, owned := d.Exited()
			exited <- exit{r, owned}
		}()
		d.Call()
	}()
	require.True(t, d.Abandon(context.DeadlineExceeded))
	got := <-exited
	assert.False(t, got.owned, "the abandonment settled the attempt")
	assert.Equal(t, superstep.Result{}, got.result)
}

// A direct attempt's context ends once the attempt has settled, as an
// attempt's context ends when Execute returns: anything the node left
// running under it is told to stop.
func TestADirectAttemptsContextEndsWhenItsNodeReturns(t *testing.T) {
	t.Parallel()
	kept := make(chan context.Context, 1)
	reg := node.NewRegistry().MustRegister("keep", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		kept <- ctx
		return node.Update(nil), nil
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Minute}
	act := activation("n", "keep")
	d, _ := e.Prepare(context.Background(), "run_1", &act)
	require.NotNil(t, d)
	result, owned := d.Call()
	require.True(t, owned)
	assert.Equal(t, superstep.OutcomeUpdate, result.Outcome)
	assert.ErrorIs(t, (<-kept).Err(), context.Canceled)
}

// timeoutAfter5ms is the result of an attempt that ran past a node's
// timeout_ms of 5.
var timeoutAfter5ms = superstep.Result{Outcome: superstep.OutcomeFailure, Retryable: true,
	Reason: "timeout: the attempt ran past its limit of 5ms (the node's timeout_ms)"}

// callUnwatched prepares act as a direct attempt and calls it with no
// watcher to abandon it, so the attempt settles its own result.
func callUnwatched(t *testing.T, e *executor.Executor, act superstep.Activation) superstep.Result {
	t.Helper()
	d, _ := e.Prepare(context.Background(), "run_1", &act)
	require.NotNil(t, d)
	result, owned := d.Call()
	assert.True(t, owned)
	return result
}
