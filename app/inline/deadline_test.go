package inline_test

import (
	"context"
	"errors"
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

// quickThenSlow is quick (timeout 20 ms, returns at once) → slow (the
// given node, with a longer timeout of slowMS).
func quickThenSlow(t *testing.T, slowMS int, slow node.CallFunc) (*node.Registry, *graph.Graph) {
	t.Helper()
	reg := node.NewRegistry().
		MustRegister("quick", node.New(nil, func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"a": "v"}), nil
		})).
		MustRegister("slow", node.New(nil, slow))
	g := build(t, graph.New("quick_then_slow").
		State("a", schema.String()).State("b", schema.String()).
		Node("quick", "quick", graph.Timeout(20)).
		Node("slow", "slow", graph.Timeout(slowMS)).
		Edge("e1", graph.Start, "quick").
		Edge("e2", "quick", "slow").
		Edge("e3", "slow", graph.Finish).
		Output("b", "b"))
	return reg, g
}

// An attempt keeps its own deadline whatever shorter deadline another node
// of the graph has: one that returns well within it succeeds in either mode.
func TestAnAttemptRunsUntilItsOwnDeadlineNotAShorterOneOfTheGraph(t *testing.T) {
	t.Parallel()
	reg, g := quickThenSlow(t, 10_000, func(context.Context, node.Input) (node.Output, error) {
		time.Sleep(100 * time.Millisecond) // past quick's 20 ms, well within its own 10 s
		return node.Update(map[string]any{"b": "v"}), nil
	})
	for _, opts := range [][]inline.Option{options(reg), calling(reg)} {
		r, cps, err := inline.RunInline(context.Background(), g, nil, opts...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Empty(t, eventsOf(cps, run.EventNodeFailed))
	}
}

// An attempt whose deadline is later than the attempt before it still sees
// its own deadline end its context, in either mode.
func TestAnAttemptAfterOneWithAShorterDeadlineTimesOutAtItsOwn(t *testing.T) {
	t.Parallel()
	for name, mode := range map[string][]inline.Option{"default": nil, "calling goroutine": {inline.OnCallingGoroutine()}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cause := make(chan error, 1)
			reg, g := quickThenSlow(t, 200, func(ctx context.Context, _ node.Input) (node.Output, error) {
				select {
				case <-ctx.Done():
					cause <- ctx.Err()
				case <-time.After(60 * time.Second):
					cause <- errors.New("the attempt's context never ended")
				}
				return node.Output{}, ctx.Err()
			})
			opts := options(reg, append([]inline.Option{inline.WithMaxAttemptElapsed(time.Minute)}, mode...)...)
			r, cps, err := inline.RunInline(context.Background(), g, nil, opts...)
			require.NoError(t, err)
			assert.Equal(t, context.DeadlineExceeded, <-cause) // by default the run may finish first
			assert.Equal(t, run.StatusFailed, r.Status)
			failed := eventsOf(cps, run.EventNodeFailed)
			require.Len(t, failed, 1)
			assert.Contains(t, failed[0].Payload["reason"], "timeout")
		})
	}
}

// By default too, an attempt that follows a retry's backoff, longer than
// the shortest deadline of the graph, still sees its own deadline end its
// context: the watchdog keeps looking while no attempt runs.
func TestWatchdogTimesOutAnAttemptAfterABackoffWithNoAttemptRunning(t *testing.T) {
	t.Parallel()
	cause := make(chan error, 1)
	reg, g := chainAround(t, func(ctx context.Context, in node.Input) (node.Output, error) {
		if in.Task.Attempt == 1 {
			return node.Output{}, errors.New("try again") // retryable, at once
		}
		select {
		case <-ctx.Done():
			cause <- ctx.Err()
		case <-time.After(30 * time.Second):
			cause <- errors.New("the attempt's context never ended")
		}
		return node.Update(map[string]any{"b": "late"}), nil
	})
	backoff := inline.WithSleeper(func(context.Context, time.Duration) error {
		time.Sleep(60 * time.Millisecond) // past the graph's shortest deadline, 20 ms
		return nil
	})
	r, cps, err := inline.RunInline(context.Background(), g, nil, options(reg, backoff)...)
	require.NoError(t, err)
	assert.Equal(t, context.DeadlineExceeded, <-cause) // the run may finish first
	assert.Equal(t, run.StatusFailed, r.Status, "both attempts failed")
	failed := eventsOf(cps, run.EventNodeFailed)
	require.Len(t, failed, 2)
	assert.Contains(t, failed[1].Payload["reason"], "timeout")
}
