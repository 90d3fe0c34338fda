package demo_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/domain/run"
)

func TestDemoCompletesAfterARetryAndAnApproval(t *testing.T) {
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

func TestRunPrintsTheOutputAndTimeline(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, demo.Run(context.Background(), &out))
	text := out.String()
	for _, want := range []string{
		"done after 6 supersteps",
		"summary:  Ada: 1500 approved by manager",
		"retry_scheduled",
		"node_failed credit_check#1: credit bureau unavailable",
		"interrupt_resolved",
		"external (awaiting_interrupts)",
		"run_completed",
	} {
		assert.Contains(t, text, want)
	}
}
