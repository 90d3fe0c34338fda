package executor_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/superstep"
)

// hookErr is a node's error whose Error runs hook once before it answers.
// The executor calls Error to classify the attempt, on the goroutine that
// settles it (Execute's waiter), so hook holds that goroutine at a chosen
// moment: while it runs, other reports queue up and deadlines pass.
type hookErr struct {
	once sync.Once
	hook func()
}

func (e *hookErr) Error() string {
	e.once.Do(e.hook)
	return "classified"
}

// untilPassed waits until deadline has passed: the condition under test,
// not a guess at how long something takes.
func untilPassed(deadline time.Time) {
	time.Sleep(time.Until(deadline))
	for time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// Results that arrive on time while the waiter is busy are still on time
// when it next looks and finds their deadline passed as well: none of
// them becomes a timeout. With many queued, the waiter's timer wins at
// least one of its looks with near certainty.
func TestExecuteKeepsResultsReturnedOnTimeWhenTheDeadlinePassesBeforeTheyAreRead(t *testing.T) {
	t.Parallel()
	const onTime = 20
	waiterBusy := make(chan struct{})
	var returned sync.WaitGroup
	returned.Add(onTime)
	reg := node.NewRegistry().
		MustRegister("busy", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
			deadline, _ := ctx.Deadline()
			return node.Output{}, &hookErr{hook: func() {
				close(waiterBusy)
				returned.Wait()
				untilPassed(deadline)
			}}
		})).
		MustRegister("on_time", call(func(_ context.Context, in node.Input) (node.Output, error) {
			defer returned.Done()
			<-waiterBusy
			return node.Update(map[string]any{"by": in.Task.NodeID}), nil
		}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Minute}
	acts := []superstep.Activation{withTimeout(activation("busy", "busy"), 100)}
	for i := range onTime {
		acts = append(acts, withTimeout(activation("n"+strconv.Itoa(i), "on_time"), 100))
	}
	results := execute(t, e, acts...)
	assert.Equal(t, "classified", results[0].Reason)
	for i, r := range results[1:] {
		assert.Equal(t, superstep.Result{Outcome: superstep.OutcomeUpdate, Update: map[string]any{"by": acts[i+1].NodeID}}, r,
			"returned before its deadline")
	}
}

// endingAtFirstLook is a caller's context that ends as Execute's waiter
// first looks at it: its first Done call cancels it and returns once
// every deadline of the attempts (at most after from now) has passed.
type endingAtFirstLook struct {
	context.Context
	cancel context.CancelFunc
	after  time.Duration
	once   sync.Once
}

func (c *endingAtFirstLook) Done() <-chan struct{} {
	c.once.Do(func() {
		deadline := time.Now().Add(c.after)
		c.cancel()
		untilPassed(deadline)
	})
	return c.Context.Done()
}

// A caller's context that has ended when an attempt's deadline passes
// abandons the superstep, whichever of the two the waiter sees first: the
// attempt was not settled when the caller gave up, so nothing of the
// superstep is a result to commit.
func TestExecuteAbandonsTheSuperstepWhenTheCallerEndsAsTheDeadlinePasses(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry().MustRegister("cooperative", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		<-ctx.Done()
		return node.Output{}, ctx.Err()
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Minute}
	// Each round the waiter finds both ended at once and picks one at
	// random; every pick must give the same answer.
	for range 20 {
		inner, cancel := context.WithCancel(context.Background())
		parent := &endingAtFirstLook{Context: inner, cancel: cancel, after: 5 * time.Millisecond}
		results, err := e.Execute(parent, "run_1", []superstep.Activation{withTimeout(activation("n", "cooperative"), 5)})
		require.ErrorIs(t, err, context.Canceled)
		require.Nil(t, results)
	}
}

// countingResolver counts the nodes looked up: an attempt starts with one.
type countingResolver struct {
	executor.Resolver
	lookups atomic.Int32
}

func (r *countingResolver) Lookup(ref string) (node.Node, bool) {
	r.lookups.Add(1)
	return r.Resolver.Lookup(ref)
}

func TestExecuteWithAnEndedContextStartsNoAttempt(t *testing.T) {
	t.Parallel()
	reg := &countingResolver{Resolver: node.NewRegistry().MustRegister("fast", call(func(context.Context, node.Input) (node.Output, error) {
		return node.Update(nil), nil
	}))}
	e := &executor.Executor{Nodes: reg}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	results, err := e.Execute(ctx, "run_1", []superstep.Activation{activation("a", "fast"), activation("b", "fast")})
	require.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, results)
	assert.Zero(t, reg.lookups.Load(), "no node was even looked up")
}

// A direct attempt settles once: abandoned before its node runs, Call
// calls no node and owns no result; settled by Call, it can no longer be abandoned, and its
// context ends as a finished attempt's does, not with the abandonment's
// cause.
func TestADirectAttemptSettlesOnceWhateverTheOrderOfCallAndAbandon(t *testing.T) {
	t.Parallel()
	seen := make(chan context.Context, 1)
	reg := node.NewRegistry().MustRegister("keep", call(func(ctx context.Context, _ node.Input) (node.Output, error) {
		seen <- ctx
		return node.Update(map[string]any{"out": "v"}), nil
	}))
	e := &executor.Executor{Nodes: reg, MaxAttemptElapsed: time.Minute}

	act := activation("n", "keep")
	d, _ := e.Prepare(context.Background(), "run_1", &act)
	require.NotNil(t, d)
	require.True(t, d.Abandon(context.Canceled))
	result, owned := d.Call()
	assert.False(t, owned, "abandoned first: the result is not the attempt's")
	assert.Equal(t, superstep.Result{}, result)
	assert.False(t, d.Abandon(context.DeadlineExceeded), "already settled")
	select {
	case <-seen:
		t.Fatal("the node of an attempt abandoned before Call ran: its effects would be for nothing")
	default:
	}

	d, _ = e.Prepare(context.Background(), "run_1", &act)
	require.NotNil(t, d)
	result, owned = d.Call()
	require.True(t, owned)
	assert.Equal(t, superstep.OutcomeUpdate, result.Outcome)
	assert.False(t, d.Abandon(context.DeadlineExceeded), "settled by Call")
	assert.Equal(t, context.Canceled, (<-seen).Err(), "ended as a finished attempt, not by the abandonment")
}
