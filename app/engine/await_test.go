package engine_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// inspectCounting is a backend that counts InspectRun calls (AwaitRun's
// reads) and otherwise is the backend it wraps.
type inspectCounting struct {
	ports.Backend
	inspects atomic.Int64
}

func (b *inspectCounting) InspectRun(ctx context.Context, scope ports.Scope, runID string) (*ports.RunInfo, error) {
	b.inspects.Add(1)
	return b.Backend.InspectRun(ctx, scope, runID)
}

// An await right after this engine's start takes the insertion for its
// first read: a run nothing drives is read once, when the timeout ends,
// where a first read would make two. A zero timeout has no time to wait
// and reads at once; a run this engine has committed since is read.
func TestAwaitRightAfterStartSkipsTheFirstRead(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	counting := &inspectCounting{Backend: h.store}
	e := manual(t, h, newKit(), func(c *engine.Config) {
		c.Backend = counting
		c.AwaitPollInterval = time.Minute
	})
	ctx := context.Background()
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	start := func() *run.Run {
		r, err := e.StartRun(ctx, ref, map[string]any{"value": "hi"})
		require.NoError(t, err)
		return r
	}

	_, err = e.AwaitRun(ctx, start().ID, 30*time.Millisecond)
	require.ErrorIs(t, err, engine.ErrAwaitTimeout)
	assert.EqualValues(t, 1, counting.inspects.Swap(0), "only the read before the timeout")

	_, err = e.AwaitRun(ctx, start().ID, 0)
	require.ErrorIs(t, err, engine.ErrAwaitTimeout)
	assert.EqualValues(t, 1, counting.inspects.Swap(0))

	r := start()
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	done, err := e.AwaitRun(ctx, r.ID, time.Second)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
	assert.Equal(t, map[string]any{"result": "hi"}, done.Output)
	assert.EqualValues(t, 1, counting.inspects.Swap(0), "committed since its start: read")
}

// A run this engine started and then finished before anyone awaited it is
// read at once: its insertion no longer stands in for the first read, so
// the await does not wait a poll interval on a checkpoint long past.
func TestAwaitAfterThisEngineFinishedTheRunReadsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	e := manual(t, h, newKit(), func(c *engine.Config) { c.AwaitPollInterval = time.Hour })
	ctx := context.Background()
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, map[string]any{"value": "hi"})
	require.NoError(t, err)
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)

	assert.Equal(t, run.StatusDone, awaitWithoutPolling(t, e, r.ID).Status)
}

// AwaitRun ends with its context, whatever is left of its timeout, and
// reports the context's error rather than a timeout.
func TestAwaitEndsWithItsContext(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	e := manual(t, h, newKit(), func(c *engine.Config) { c.AwaitPollInterval = time.Hour })
	r := saveAndStart(t, e.Client, build(t, minimalLinear()), map[string]any{"value": "hi"}) // nobody drives it
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() {
		_, err := e.AwaitRun(ctx, r.ID, time.Hour)
		ended <- err
	}()
	cancel()
	select {
	case err := <-ended:
		assert.ErrorIs(t, err, context.Canceled)
		assert.NotErrorIs(t, err, engine.ErrAwaitTimeout)
	case <-time.After(awaitLimit):
		t.Fatal("the await outlived its context")
	}
}

// parkDuringRead is a backend whose first InspectRun reads the run, calls
// park (which commits the run waiting), then answers with what it read: a
// run that parks between an await's read and its wait.
type parkDuringRead struct {
	ports.Backend
	park func()
	once sync.Once
}

func (b *parkDuringRead) InspectRun(ctx context.Context, scope ports.Scope, runID string) (*ports.RunInfo, error) {
	info, err := b.Backend.InspectRun(ctx, scope, runID)
	b.once.Do(b.park)
	return info, err
}

// A commit of this engine that parks the run after the await's read and
// before it waits still ends the wait at once: the await listens before it
// reads, so the park is not left to the next poll.
func TestAwaitSeesAParkCommittedBetweenItsReadAndItsWait(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(true)
	k := newKit()
	starter := manual(t, h, k) // so the awaiting engine has no insertion to stand in for its read
	racing := &parkDuringRead{Backend: h.store}
	e := manual(t, h, k, func(c *engine.Config) {
		c.Backend = racing
		c.AwaitPollInterval = time.Hour
	})
	racing.park = func() {
		_, err := e.DrainRuns(ctx, 0)
		assert.NoError(t, err)
	}
	r := saveAndStart(t, starter.Client, build(t, interruptReview()), nil)

	parked := awaitWithoutPolling(t, e, r.ID)
	assert.Equal(t, run.StatusWaiting, parked.Status)
	assert.Len(t, parked.OpenInterrupts(), 1)
}

// A repeated start that found its run inserted nothing, so it does not
// stand in for the first read of an await that follows: the await reads
// the finished run at once instead of waiting a poll interval.
func TestAwaitAfterARepeatedStartReadsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	e := manual(t, h, newKit(), func(c *engine.Config) { c.AwaitPollInterval = time.Hour })
	ctx := context.Background()
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	start := func() *run.Run {
		r, err := e.StartRun(ctx, ref, map[string]any{"value": "hi"}, engine.WithIdempotencyKey("order-1"))
		require.NoError(t, err)
		return r
	}
	r := start()
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, run.StatusDone, start().Status, "the repeat returns the finished run")

	assert.Equal(t, run.StatusDone, awaitWithoutPolling(t, e, r.ID).Status)
}

// A run started here and finished by another engine is still found: the
// insertion only replaces the first read, the next read comes within the
// poll interval, and nothing this engine knows is returned as news.
func TestAwaitAfterStartSeesACommitOfAnotherEngine(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	starter := manual(t, h, k, func(c *engine.Config) { c.AwaitPollInterval = 20 * time.Millisecond })
	finisher := manual(t, h, k)
	ctx := context.Background()

	r := saveAndStart(t, starter.Client, build(t, interruptReview()), nil)
	_, err := finisher.DrainRuns(ctx, 0)
	require.NoError(t, err)
	waiting, err := starter.AwaitRun(ctx, r.ID, awaitLimit)
	require.NoError(t, err)
	assert.Equal(t, run.StatusWaiting, waiting.Status, "parked by the other engine")

	// Started and resumed here, then driven to its end by the other engine.
	r = saveAndStart(t, starter.Client, build(t, interruptReview()), nil)
	_, err = starter.DrainRuns(ctx, 0)
	require.NoError(t, err)
	parked := await(t, starter.Client, r.ID)
	require.Equal(t, run.StatusWaiting, parked.Status)
	var id string
	for id = range parked.Interrupts {
	}
	_, err = starter.ResolveInterrupt(ctx, r.ID, id, "approved")
	require.NoError(t, err)
	_, err = finisher.DrainRuns(ctx, 0)
	require.NoError(t, err)
	done := await(t, starter.Client, r.ID)
	assert.Equal(t, run.StatusDone, done.Status, "not the park this engine committed")
}

// A commit of this engine wakes every local AwaitRun, but only one that
// rested the awaited run is news for it: the others wait for their next
// poll instead of each reading its run again, so awaiting many runs costs
// reads per run, not per run times every commit of the engine.
func TestAwaitersReadTheirRunsOncePerPollNotOncePerCommit(t *testing.T) {
	t.Parallel()
	h := newHarness(true)
	k := newKit()
	starter := manual(t, h, k)
	counting := &inspectCounting{Backend: h.store}
	driver := manual(t, h, k, func(c *engine.Config) {
		c.Backend = counting
		c.AwaitPollInterval = time.Minute
	})
	ctx := context.Background()
	ref, err := starter.SaveGraph(ctx, build(t, cycleCounter()))
	require.NoError(t, err)
	const runs = 8
	ids := make([]string, runs)
	for i := range ids {
		r, err := starter.StartRun(ctx, ref, nil)
		require.NoError(t, err)
		ids[i] = r.ID
	}

	results := make(chan *run.Run, runs)
	for _, id := range ids {
		go func() {
			r, err := driver.AwaitRun(ctx, id, awaitLimit)
			assert.NoError(t, err)
			results <- r
		}()
	}
	eventually(t, "every awaiter's first read", func() bool { return counting.inspects.Load() == runs })
	_, err = driver.DrainRuns(ctx, 0)
	require.NoError(t, err)
	for range runs {
		r := <-results
		require.NotNil(t, r)
		assert.Equal(t, run.StatusDone, r.Status)
	}
	assert.EqualValues(t, runs, counting.inspects.Load(), "one read per awaiter: the first")
}

// UntilFinished waits through waiting: the run's interrupt is answered by
// someone else (here another engine), and the wait ends only at its end.
func TestAwaitUntilFinishedWaitsThroughInterrupts(t *testing.T) {
	t.Parallel()
	for _, resolvedHere := range []bool{false, true} {
		t.Run(fmt.Sprintf("resolved by the awaiting engine %v", resolvedHere), func(t *testing.T) {
			t.Parallel()
			h := newHarness(true)
			k := newKit()
			awaiter := manual(t, h, k, func(c *engine.Config) { c.AwaitPollInterval = 20 * time.Millisecond })
			other := manual(t, h, k)
			ctx := context.Background()

			r := saveAndStart(t, awaiter.Client, build(t, interruptReview()), nil)
			_, err := other.DrainRuns(ctx, 0)
			require.NoError(t, err)
			waiting, err := awaiter.AwaitRun(ctx, r.ID, 0)
			require.NoError(t, err)
			require.Equal(t, run.StatusWaiting, waiting.Status, "without the option a waiting run ends the wait")
			_, err = awaiter.AwaitRun(ctx, r.ID, 50*time.Millisecond, engine.UntilFinished())
			require.ErrorIs(t, err, engine.ErrAwaitTimeout, "with it, a waiting run does not")

			awaited := make(chan *run.Run, 1)
			failed := make(chan error, 1)
			go func() {
				done, err := awaiter.AwaitRun(ctx, r.ID, awaitLimit, engine.UntilFinished())
				if err != nil {
					failed <- err
					return
				}
				awaited <- done
			}()
			resolver := other
			if resolvedHere {
				resolver = awaiter // its commits rest the run where the wait listens
			}
			for id := range waiting.Interrupts {
				_, err = resolver.ResolveInterrupt(ctx, r.ID, id, "approved")
				require.NoError(t, err)
			}
			_, err = resolver.DrainRuns(ctx, 0)
			require.NoError(t, err)
			select {
			case done := <-awaited:
				assert.Equal(t, run.StatusDone, done.Status)
			case err := <-failed:
				t.Fatal(err)
			}
		})
	}
}

// awaitWithoutPolling awaits runID where neither the await's timeout nor
// (in engines built with an hour's AwaitPollInterval) a poll comes first:
// only the await's own reads and wakes can find the run.
func awaitWithoutPolling(t *testing.T, e *engine.Engine, runID string) *run.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), awaitLimit)
	defer cancel()
	r, err := e.AwaitRun(ctx, runID, time.Hour)
	require.NoError(t, err)
	return r
}
