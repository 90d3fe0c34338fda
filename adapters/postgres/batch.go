package postgres

import (
	"context"
	"sync"
	"sync/atomic"
)

// Default limits of commit batching (Config.MaxCommitBatch and
// Config.MaxCommitFlushes).
const (
	defaultMaxCommitBatch   = 64
	defaultMaxCommitFlushes = 4
)

// commitBatcher groups concurrent claimed commits into shared statements
// (group commit). A commit that finds a free flush slot is sent at once,
// alone; commits that arrive while every slot is busy queue and leave
// together with the next free slot, up to maxBatch per statement. So a lone
// commit never waits for company, and under load one round trip, one
// transaction and one WAL flush carry many runs' moments, each under its
// own fence.
type commitBatcher struct {
	maxBatch   int
	maxFlushes int
	// flush commits one batch and delivers every commit's outcome.
	flush func(ctx context.Context, batch []*pendingCommit)

	mu       sync.Mutex
	queue    []*pendingCommit
	flushing int
}

// pendingCommit is one validated, encoded claimed commit and the channel
// its outcome arrives on.
type pendingCommit struct {
	ctx    context.Context
	runID  string
	args   commitRow
	result chan error // buffered: delivery never blocks
}

// submit queues c, starts a flusher when a slot is free, and waits for c's
// outcome or its context. A commit withdrawn before it joined a batch was
// never sent; one abandoned in flight may still commit (as with any
// statement whose caller stops waiting).
func (b *commitBatcher) submit(c *pendingCommit) error {
	if err := c.ctx.Err(); err != nil {
		return dbError("commit", err)
	}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	start := b.flushing < b.maxFlushes
	if start {
		b.flushing++
	}
	b.mu.Unlock()
	if start {
		go b.run()
	}
	select {
	case err := <-c.result:
		return err
	case <-c.ctx.Done():
		b.withdraw(c)
		return dbError("commit", c.ctx.Err())
	}
}

// withdraw removes c from the queue if no batch has taken it yet.
func (b *commitBatcher) withdraw(c *pendingCommit) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == c {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return
		}
	}
}

// run flushes batches until the queue is empty, then frees its slot.
func (b *commitBatcher) run() {
	for {
		b.mu.Lock()
		batch := b.take()
		if len(batch) == 0 {
			b.flushing--
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		ctx, release := batchContext(batch)
		b.flush(ctx, batch)
		release()
	}
}

// take removes up to maxBatch queued commits, oldest first, at most one
// per run: a second commit of the same run (an overlapping holder after a
// steal) waits for the next batch, so each statement updates a row once.
func (b *commitBatcher) take() []*pendingCommit {
	n := min(len(b.queue), b.maxBatch)
	batch := make([]*pendingCommit, 0, n)
	kept := b.queue[:0]
	for _, c := range b.queue {
		if len(batch) < b.maxBatch && !holds(batch, c.runID) {
			batch = append(batch, c)
		} else {
			kept = append(kept, c)
		}
	}
	clear(b.queue[len(kept):])
	b.queue = kept
	return batch
}

func holds(batch []*pendingCommit, runID string) bool {
	for _, c := range batch {
		if c.runID == runID {
			return true
		}
	}
	return false
}

// batchContext is the context of a batch's statement: it keeps the first
// commit's values (tracing) and is cancelled only once every commit of the
// batch has stopped waiting, so one impatient caller cannot abort the
// others' commits.
func batchContext(batch []*pendingCommit) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var waiting atomic.Int64
	waiting.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
