package demo_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func TestInlineDemoCompletesAfterARetryAndAnApproval(t *testing.T) {
	t.Parallel()
	var slept []time.Duration
	res, err := demo.Execute(context.Background(), inline.WithSleeper(func(_ context.Context, d time.Duration) error {
		slept = append(slept, d)
		return nil
	}))
	require.NoError(t, err)

	r := res.Run
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, map[string]any{
		"approval": "approved",
		"checks":   []any{"intake", "credit", "fraud"},
		"summary":  "Ada: 1500 approved by manager after checks [intake credit fraud]",
	}, r.Output)
	assert.Equal(t, []time.Duration{20 * time.Millisecond}, slept, "one retry backoff")

	var timeline []run.CheckpointType
	for i, cp := range res.Checkpoints {
		assert.Equal(t, int64(i+1), cp.Seq)
		timeline = append(timeline, cp.Type)
	}
	assert.Contains(t, timeline, run.CheckpointRetryScheduled)
	assert.Contains(t, timeline, run.CheckpointInterruptRequested)
	assert.Contains(t, timeline, run.CheckpointInterruptResolved)
	assert.Equal(t, run.CheckpointRunCompleted, timeline[len(timeline)-1])
}

func TestApplicationsCoverEveryPathOfTheGraph(t *testing.T) {
	t.Parallel()
	apps := demo.Applications(demo.DefaultBatchSize)
	require.Len(t, apps, demo.DefaultBatchSize)
	var auto, approved, rejected, flaky, steady int
	for _, a := range apps {
		switch {
		case a.Amount <= demo.ManualReviewAbove:
			auto++
		case demo.ManagerDecision(a.Amount) == "approved":
			approved++
		default:
			rejected++
		}
		if demo.Flaky(a.Amount) {
			flaky++
		} else {
			steady++
		}
	}
	assert.Positive(t, auto, "some applications are approved by policy")
	assert.Positive(t, approved, "some are approved by the manager")
	assert.Positive(t, rejected, "some are rejected by the manager")
	assert.Positive(t, flaky, "some credit checks fail once")
	assert.Positive(t, steady, "some credit checks pass at once")
	assert.Equal(t, apps, demo.Applications(demo.DefaultBatchSize), "deterministic")
}

func newEngine(t *testing.T, store ports.Backend) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{
		Backend:           store,
		Nodes:             demo.Registry(),
		Dispatcher:        engine.DispatcherConfig{PollInterval: 20 * time.Millisecond},
		AwaitPollInterval: 10 * time.Millisecond,
	})
	require.NoError(t, err)
	return e
}

func TestBatchDrivesEveryRunToItsOutcome(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEngine(t, memory.New(memory.Options{}))
	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })

	var calls []int
	res, err := demo.Batch(ctx, e.Client, demo.BatchOptions{Size: 10, Progress: func(finished, total int) {
		assert.Equal(t, 10, total)
		calls = append(calls, finished)
	}})
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, calls)
	assert.Zero(t, res.Resumed)
	require.Len(t, res.Runs, 10)
	for _, br := range res.Runs {
		assert.Equal(t, run.StatusDone, br.Run.Status, br.Run.ID)
		wantApproval := "approved"
		if br.Application.Amount > demo.ManualReviewAbove {
			assert.Equal(t, demo.ManagerDecision(br.Application.Amount), br.Decision)
			wantApproval = br.Decision
		} else {
			assert.Empty(t, br.Decision, "policy approvals need no manager")
		}
		assert.Equal(t, wantApproval, br.Run.Output["approval"])
	}
}

func TestBatchResumesRunsAnInterruptedBatchLeftUnfinished(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	store := memory.New(memory.Options{})
	// A first demo starts runs but stops before any is driven.
	first := newEngine(t, store)
	g, err := demo.Graph()
	require.NoError(t, err)
	ref, err := first.SaveGraph(ctx, g)
	require.NoError(t, err)
	left, err := first.StartRun(ctx, ref, map[string]any{"customer": "Ada", "amount": 3200.0})
	require.NoError(t, err)

	second := newEngine(t, store)
	require.NoError(t, second.Start(ctx))
	t.Cleanup(func() { _ = second.Stop(context.Background()) })
	res, err := demo.Batch(ctx, second.Client, demo.BatchOptions{Size: 3})
	require.NoError(t, err)
	assert.Equal(t, 1, res.Resumed)
	require.Len(t, res.Runs, 3)
	assert.Equal(t, left.ID, res.Runs[0].Run.ID)
	assert.True(t, res.Runs[0].Resumed)
	assert.Equal(t, run.StatusDone, res.Runs[0].Run.Status)
	assert.Equal(t, "approved", res.Runs[0].Decision)
}
