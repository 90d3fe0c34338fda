package executor_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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
