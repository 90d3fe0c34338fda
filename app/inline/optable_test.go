package inline_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/internal/scenario"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// TestDriveRulesPerDisposition walks spec §9's drive rules: a continue
// counts toward max steps, a committed park at(t) is accepted and slept
// through without counting, an uncommitted park is slept through, and a
// terminal moment stops the drive.
func TestDriveRulesPerDisposition(t *testing.T) {
	t.Parallel()
	g := build(t, scenario.RetryThenContinue(3, 100))
	tests := []struct {
		name     string
		maxSteps int // -1: unlimited
		status   run.Status
		types    []run.CheckpointType
		sleeps   int
	}{
		{"unlimited", -1, run.StatusDone, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled,
			run.CheckpointRetryScheduled, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, 2},
		{"zero stops after initialization", 0, run.StatusRunning, []run.CheckpointType{run.CheckpointRunInitialized}, 0},
		{"retry parks do not count", 1, run.StatusRunning, []run.CheckpointType{run.CheckpointRunInitialized,
			run.CheckpointRetryScheduled, run.CheckpointRetryScheduled, run.CheckpointStepCommitted}, 2},
		{"completion counts", 2, run.StatusDone, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointRetryScheduled,
			run.CheckpointRetryScheduled, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			opts := k.options()
			if tt.maxSteps >= 0 {
				opts = k.options(inline.WithMaxSteps(tt.maxSteps))
			}
			r, cps, err := inline.RunInline(context.Background(), g, nil, opts...)
			require.NoError(t, err)
			assert.Equal(t, tt.status, r.Status)
			assert.Equal(t, tt.types, types(cps))
			sleeps := k.recordedSleeps()
			assert.Len(t, sleeps, tt.sleeps)
			for _, d := range sleeps {
				assert.Equal(t, 100*time.Millisecond, d, "t - run.updated_at under a frozen clock")
			}
		})
	}
}

// TestStepAndResumeByRunStatus walks spec §9's StepInline and
// ResumeInline rows for each run status.
func TestStepAndResumeByRunStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := newKit(t)
	g := build(t, scenario.InterruptReview())
	created, err := inline.NewRun(g, nil, k.options()...)
	require.NoError(t, err)
	running := mustInit(t, k, g)
	waiting, _, _ := waitingRun(t, k, g)
	cancelled := cancelledRun(t, waiting)
	other := build(t, scenario.MinimalLinear())

	step := []struct {
		name  string
		r     *run.Run
		g     *graph.Graph
		types []run.CheckpointType
		same  bool
		err   error
	}{
		{"created: init only", created, g, []run.CheckpointType{run.CheckpointRunInitialized}, false, nil},
		{"running: one commit", running, g, []run.CheckpointType{run.CheckpointInterruptRequested}, false, nil},
		{"waiting: unchanged", waiting, g, nil, true, nil},
		{"terminal: unchanged", cancelled, g, nil, true, nil},
		{"no graph", running, nil, nil, true, graph.ErrInvalidGraph},
		{"created of another graph", created, other, nil, true, superstep.ErrGraphMismatch},
	}
	for _, tt := range step {
		next, cps, err := inline.StepInline(ctx, tt.g, tt.r, k.options()...)
		assertOutcome(t, tt.name, cps, err, tt.types, tt.err)
		if tt.same {
			assert.Same(t, tt.r, next, tt.name)
		}
	}

	resume := []struct {
		name  string
		r     *run.Run
		g     *graph.Graph
		types []run.CheckpointType
		err   error
	}{
		{"waiting: a resumed init, then it waits", waiting, g, []run.CheckpointType{run.CheckpointRunInitialized}, nil},
		{"terminal: unchanged", cancelled, g, nil, nil},
		{"another graph", waiting, other, nil, superstep.ErrGraphMismatch},
		{"terminal of another graph", cancelled, other, nil, superstep.ErrGraphMismatch},
	}
	for _, tt := range resume {
		_, cps, err := inline.ResumeInline(ctx, tt.g, tt.r, k.options()...)
		assertOutcome(t, tt.name, cps, err, tt.types, tt.err)
		for _, cp := range cps {
			assert.Equal(t, true, cp.Events[0].Payload["resumed"], tt.name)
		}
	}
}

func cancelledRun(t *testing.T, r *run.Run) *run.Run {
	t.Helper()
	m, err := superstep.Cancel(r, superstep.Env{Now: frozenNow})
	require.NoError(t, err)
	return m.Run
}

// assertOutcome checks a call's error (wantErr, or none) and the types of
// the checkpoints it returned (none when want is empty).
func assertOutcome(t *testing.T, name string, cps []run.Checkpoint, err error, want []run.CheckpointType, wantErr error) {
	t.Helper()
	if wantErr != nil {
		assert.ErrorIs(t, err, wantErr, name)
	} else {
		assert.NoError(t, err, name)
	}
	if len(want) == 0 {
		assert.Empty(t, cps, name)
	} else {
		assert.Equal(t, want, types(cps), name)
	}
}
