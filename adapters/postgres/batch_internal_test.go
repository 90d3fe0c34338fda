package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingBatcher flushes one batch at a time and holds each flush until
// release is closed, recording what every flush carried.
type blockingBatcher struct {
	*batcher[int]
	release chan struct{}
	recMu   sync.Mutex // guards flushed
	flushed [][]string
}

// queued is how many writes wait for a flush.
func (b *blockingBatcher) queued() int {
	b.batcher.mu.Lock()
	defer b.batcher.mu.Unlock()
	return len(b.queue)
}

func newBlockingBatcher(maxBatch int) *blockingBatcher {
	return newBlockingBatcherWith(maxBatch, 1)
}

func newBlockingBatcherWith(maxBatch, maxFlushes int) *blockingBatcher {
	b := &blockingBatcher{release: make(chan struct{})}
	b.batcher = &batcher[int]{maxBatch: maxBatch, maxFlushes: maxFlushes, flush: func(_ context.Context, batch []*pending[int]) {
		ids := make([]string, len(batch))
		for i, p := range batch {
			ids[i] = p.runID
		}
		b.recMu.Lock()
		b.flushed = append(b.flushed, ids)
		b.recMu.Unlock()
		<-b.release
		for _, p := range batch {
			p.result <- nil
		}
	}}
	return b
}

func (b *blockingBatcher) flushes() [][]string {
	b.recMu.Lock()
	defer b.recMu.Unlock()
	return append([][]string(nil), b.flushed...)
}

func TestWritesQueuedBehindABusyFlushLeaveTogetherAtMostOnePerRun(t *testing.T) {
	t.Parallel()
	b := newBlockingBatcher(3)
	errs := make(chan error, 6)
	submit := func(runID string) {
		go func() { errs <- b.submit("test", newPending(context.Background(), runID, 0)) }()
	}
	submit("a")
	require.Eventually(t, func() bool { return len(b.flushes()) == 1 }, 5*time.Second, time.Millisecond)
	for _, id := range []string{"b", "c", "b", "d", "e"} {
		submit(id)
	}
	require.Eventually(t, func() bool { return b.queued() == 5 }, 5*time.Second, time.Millisecond)
	close(b.release)
	for range 6 {
		require.NoError(t, <-errs)
	}
	got := b.flushes()
	require.Len(t, got, 3)
	assert.Equal(t, []string{"a"}, got[0], "a lone write leaves at once")
	assert.Len(t, got[1], 3, "queued writes leave together, up to the batch limit")
	assert.NotContains(t, got[1][1:], got[1][0])
	count := map[string]int{}
	for _, batch := range got {
		seen := map[string]bool{}
		for _, id := range batch {
			assert.False(t, seen[id], "run %s twice in one batch", id)
			seen[id] = true
			count[id]++
		}
	}
	assert.Equal(t, map[string]int{"a": 1, "b": 2, "c": 1, "d": 1, "e": 1}, count)
}

// A second statement starts beside one in flight only once enough writes
// wait (parallelFlushAt, or the lane's own threshold: a full batch for the
// lanes that change schedule rows); fewer wait for the one in flight.
func TestASecondStatementStartsOnlyForEnoughWaitingWrites(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name              string
		maxBatch, startAt int
		parallelAt        int
	}{
		{name: "default threshold", maxBatch: 64, startAt: parallelFlushAt},
		{name: "a full batch", maxBatch: 8, startAt: 8, parallelAt: 8},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBlockingBatcherWith(tt.maxBatch, 2)
			b.parallelAt = tt.parallelAt
			errs := make(chan error, tt.startAt+1)
			submit := func(runID string) {
				go func() { errs <- b.submit("test", newPending(context.Background(), runID, 0)) }()
			}
			submit("first")
			require.Eventually(t, func() bool { return len(b.flushes()) == 1 }, 5*time.Second, time.Millisecond)
			for i := range tt.startAt - 1 {
				submit(fmt.Sprintf("w%d", i))
			}
			require.Eventually(t, func() bool { return b.queued() == tt.startAt-1 }, 5*time.Second, time.Millisecond)
			time.Sleep(20 * time.Millisecond) // room for a wrongly started statement to show
			assert.Len(t, b.flushes(), 1, "too few waiting writes for a second statement")
			submit("last")
			require.Eventually(t, func() bool { return len(b.flushes()) == 2 }, 5*time.Second, time.Millisecond)
			assert.Len(t, b.flushes()[1], tt.startAt, "the second statement takes every waiting write")
			close(b.release)
			for range tt.startAt + 1 {
				require.NoError(t, <-errs)
			}
		})
	}
}

func TestACallerThatGivesUpWhileQueuedIsNeverSent(t *testing.T) {
	t.Parallel()
	b := newBlockingBatcher(8)
	first := make(chan error, 1)
	go func() { first <- b.submit("test", newPending(context.Background(), "a", 0)) }()
	require.Eventually(t, func() bool { return len(b.flushes()) == 1 }, 5*time.Second, time.Millisecond)

	ctx, cancel := context.WithCancel(context.Background())
	queued := make(chan error, 1)
	go func() { queued <- b.submit("test", newPending(ctx, "b", 0)) }()
	require.Eventually(t, func() bool { return b.queued() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-queued, context.Canceled)
	close(b.release)
	require.NoError(t, <-first)
	assert.Equal(t, [][]string{{"a"}}, b.flushes(), "the withdrawn write was never flushed")
}

func TestABatchStatementIsCancelledOnlyWhenEveryCallerGaveUp(t *testing.T) {
	t.Parallel()
	ctxA, cancelA := context.WithCancel(context.Background())
	ctxB, cancelB := context.WithCancel(context.Background())
	batch := []*pending[int]{newPending(ctxA, "a", 0), newPending(ctxB, "b", 0)}
	ctx, release := batchContext(batch)
	defer release()
	cancelA()
	select {
	case <-ctx.Done():
		t.Fatal("one caller giving up cancelled the shared statement")
	case <-time.After(20 * time.Millisecond):
	}
	cancelB()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the statement outlived every caller")
	}
}

// A write that finds no statement in flight is sent on its caller's
// goroutine, and its caller returns once its own batch is written: the
// writes that queued meanwhile leave on another goroutine.
func TestALoneWriteIsSentByItsCallerWhoDoesNotWaitForLaterBatches(t *testing.T) {
	t.Parallel()
	releases := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var mu sync.Mutex
	var onCaller []bool
	b := &batcher[int]{maxBatch: 8, maxFlushes: 1, flush: func(_ context.Context, batch []*pending[int]) {
		stack := make([]byte, 64<<10)
		stack = stack[:runtime.Stack(stack, false)]
		if i := bytes.Index(stack, []byte("\ncreated by ")); i >= 0 {
			stack = stack[:i] // this goroutine's own frames only
		}
		mu.Lock()
		n := len(onCaller)
		onCaller = append(onCaller, bytes.Contains(stack, []byte("submitAsCaller")))
		mu.Unlock()
		<-releases[n]
		for _, p := range batch {
			p.result <- nil
		}
	}}
	flushes := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(onCaller)
	}
	lone := make(chan error, 1)
	go func() { lone <- submitAsCaller(b, "a") }()
	require.Eventually(t, func() bool { return flushes() == 1 }, 5*time.Second, time.Millisecond)
	queued := make(chan error, 2)
	for _, id := range []string{"b", "c"} {
		go func() { queued <- submitAsCaller(b, id) }()
	}
	require.Eventually(t, func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 2
	}, 5*time.Second, time.Millisecond)

	close(releases[0])
	require.NoError(t, <-lone, "the lone write's caller returns with its own batch")
	require.Eventually(t, func() bool { return flushes() == 2 }, 5*time.Second, time.Millisecond)
	close(releases[1])
	for range 2 {
		require.NoError(t, <-queued)
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []bool{true, false}, onCaller, "the lone write is flushed on its caller's goroutine, the queued ones on another")
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Zero(t, b.flushing, "every flush slot is free again")
}

// submitAsCaller submits a write for runID; a flush that finds this
// function on its stack runs on the submitting goroutine.
//
//go:noinline
func submitAsCaller(b *batcher[int], runID string) error {
	return b.submit("test", newPending(context.Background(), runID, 0))
}

// A flush that panics on a lone write's goroutine panics its caller, as a
// flusher goroutine's panic would end the process, but the lane is not
// left jammed: the next write is sent and every slot is free again.
func TestAPanickingFlushOnTheCallersGoroutineLeavesTheLaneMoving(t *testing.T) {
	t.Parallel()
	b := &batcher[int]{maxBatch: 8, maxFlushes: 1, flush: func(_ context.Context, batch []*pending[int]) {
		if batch[0].runID == "boom" {
			panic("flush failed")
		}
		for _, p := range batch {
			p.result <- nil
		}
	}}
	panicked := func() (p any) {
		defer func() { p = recover() }()
		_ = b.submit("test", newPending(context.Background(), "boom", 0))
		return nil
	}()
	assert.Equal(t, "flush failed", panicked, "the caller sees the flush's panic")

	done := make(chan error, 1)
	go func() { done <- b.submit("test", newPending(context.Background(), "next", 0)) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the lane stayed jammed after the panic")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Zero(t, b.flushing, "every flush slot is free again")
}

// The writes of a batch whose flush panicked get an error, except those
// that already had their outcome.
func TestFailUndeliveredGivesAnErrorOnlyToWritesWithoutOutcome(t *testing.T) {
	t.Parallel()
	delivered := newPending(context.Background(), "a", 0)
	delivered.result <- nil
	waiting := newPending(context.Background(), "b", 0)
	failUndelivered([]*pending[int]{delivered, waiting}, errors.New("boom"))
	assert.NoError(t, <-delivered.result, "an outcome already delivered stays")
	assert.EqualError(t, <-waiting.result, "boom")
}

// A batch's statement context costs each write of the batch what
// watching its caller's context takes (context.AfterFunc), and no more.
func TestABatchContextCostsEachWriteLittle(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	allocs := func(n int) float64 {
		batch := make([]*pending[int], n)
		for i := range batch {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			batch[i] = newPending(ctx, "r", 0)
		}
		return testing.AllocsPerRun(50, func() {
			_, release := batchContext(batch)
			release()
		})
	}
	one, many := allocs(1), allocs(33)
	perWrite := (many - one) / 32
	t.Logf("%.0f allocations for one write, %.0f for 33: %.2f a write", one, many, perWrite)
	assert.LessOrEqual(t, perWrite, 2.0)
}
