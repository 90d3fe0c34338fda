package postgres

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Default limits of write batching (Config.MaxCommitBatch and
// Config.MaxCommitFlushes).
const (
	defaultMaxCommitBatch   = 64
	defaultMaxCommitFlushes = 2
)

// parallelFlushAt is how many writes must be waiting before a batcher
// starts another statement beside one in flight. Below it they wait for
// the statement in flight to finish and leave together: tiny statements
// side by side cost the database more per write than one larger one, and
// their WAL flushes queue behind each other anyway (a 10-node chain with
// 8 workers commits about 30% more steps per second this way, with about
// 25% less database CPU per step; with 32 workers no difference shows).
const parallelFlushAt = 4

// batcher groups concurrent writes of different runs into shared
// statements (group commit). A write that finds no statement in flight is
// sent at once, alone, by its own caller; writes that arrive while one is in flight queue and
// leave together when a flush slot takes them, up to maxBatch per
// statement, and a further slot (up to maxFlushes) starts only once
// parallelFlushAt writes wait. So a lone write never waits for company,
// and under load one round trip, one transaction and one WAL flush carry
// many runs' writes, each under its own conditions.
type batcher[T any] struct {
	maxBatch   int
	maxFlushes int
	// parallelAt, when positive, replaces parallelFlushAt: how many
	// writes must wait before another statement starts beside one in
	// flight.
	parallelAt int
	// flush writes one batch and delivers every write's outcome.
	flush func(ctx context.Context, batch []*pending[T])
	// release, when set, frees what a write's arguments hold (pooled
	// buffers) once its statement has been sent and answered, or once the
	// write was withdrawn unsent: nothing reads them after that.
	release func(T)

	mu       sync.Mutex
	queue    []*pending[T]
	flushing int
}

// pending is one validated, encoded write and the channel its outcome
// arrives on.
type pending[T any] struct {
	ctx    context.Context
	runID  string
	args   T
	result chan error // buffered: delivery never blocks
}

func newPending[T any](ctx context.Context, runID string, args T) *pending[T] {
	return &pending[T]{ctx: ctx, runID: runID, args: args, result: make(chan error, 1)}
}

// submit queues p, starts a flusher when a slot is free, and waits for p's
// outcome or its context. A write withdrawn before it joined a batch was
// never sent; one abandoned in flight may still land (as with any
// statement whose caller stops waiting).
func (b *batcher[T]) submit(op string, p *pending[T]) error {
	if err := p.ctx.Err(); err != nil {
		return dbError(op, err)
	}
	b.mu.Lock()
	b.queue = append(b.queue, p)
	lead := b.flushing == 0
	start := lead || (b.flushing < b.maxFlushes && len(b.queue) >= cmp.Or(b.parallelAt, parallelFlushAt))
	if start {
		b.flushing++
	}
	b.mu.Unlock()
	if lead {
		// No statement is in flight, so the queue held nothing before p
		// and p leaves in the first batch: the caller sends it itself
		// instead of handing it to a new goroutine and waiting to be
		// woken, two scheduler hand-offs on the path of a lone write.
		b.lead()
		return <-p.result
	}
	if start {
		go b.run()
	}
	select {
	case err := <-p.result:
		return err
	case <-p.ctx.Done():
		if b.withdraw(p) && b.release != nil {
			b.release(p.args) // never sent: no batch holds it
		}
		return dbError(op, p.ctx.Err())
	}
}

// withdraw removes p from the queue if no batch has taken it yet, and
// reports whether it did.
func (b *batcher[T]) withdraw(p *pending[T]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == p {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

// run flushes batches until the queue is empty, then frees its slot.
func (b *batcher[T]) run() {
	for batch := b.next(); len(batch) > 0; batch = b.next() {
		b.send(batch)
	}
}

// lead flushes one batch on the caller's goroutine and leaves what queued
// meanwhile to a goroutine that keeps the slot. A panic in the flush goes
// on to the caller (whose recovery, a vehicle's say, then sees it), but
// only after the batch's writes have an outcome and the slot is handed
// on, so the lane keeps moving.
func (b *batcher[T]) lead() {
	batch := b.next()
	if len(batch) == 0 {
		return // nothing to send; next freed the slot
	}
	defer func() {
		if p := recover(); p != nil {
			failUndelivered(batch, fmt.Errorf("docket postgres: batched write panicked: %v", p))
			b.handOn()
			panic(p)
		}
	}()
	b.send(batch)
	b.handOn()
}

// handOn frees the caller's slot when nothing waits, and otherwise leaves
// the slot to a goroutine that flushes what waits.
func (b *batcher[T]) handOn() {
	b.mu.Lock()
	idle := len(b.queue) == 0
	if idle {
		b.flushing--
	}
	b.mu.Unlock()
	if !idle {
		go b.run()
	}
}

// failUndelivered gives err to every write of batch that has no outcome
// yet (a result channel holds one; a full one already has its outcome).
func failUndelivered[T any](batch []*pending[T], err error) {
	for _, p := range batch {
		select {
		case p.result <- err:
		default:
		}
	}
}

// next takes the next batch, or frees the caller's slot and returns none
// when nothing waits.
func (b *batcher[T]) next() []*pending[T] {
	b.mu.Lock()
	defer b.mu.Unlock()
	batch := b.take()
	if len(batch) == 0 {
		b.flushing--
	}
	return batch
}

// send writes one batch and delivers every write's outcome, then frees
// what the writes' arguments hold.
func (b *batcher[T]) send(batch []*pending[T]) {
	ctx, stop := batchContext(batch)
	b.flush(ctx, batch)
	stop()
	if b.release != nil {
		for _, p := range batch {
			b.release(p.args)
		}
	}
}

// take removes up to maxBatch queued writes, oldest first, at most one
// per run: a second write of the same run (an overlapping holder after a
// steal) waits for the next batch, so each statement touches a row once.
func (b *batcher[T]) take() []*pending[T] {
	batch := make([]*pending[T], 0, min(len(b.queue), b.maxBatch))
	kept := b.queue[:0]
	for _, p := range b.queue {
		if len(batch) < b.maxBatch && !holds(batch, p.runID) {
			batch = append(batch, p)
		} else {
			kept = append(kept, p)
		}
	}
	clear(b.queue[len(kept):])
	b.queue = kept
	return batch
}

func holds[T any](batch []*pending[T], runID string) bool {
	for _, p := range batch {
		if p.runID == runID {
			return true
		}
	}
	return false
}

// batchContext is the context of a batch's statement: it keeps the first
// write's values (tracing) and is cancelled only once every write of the
// batch has stopped waiting, so one impatient caller cannot abort the
// others' writes.
func batchContext[T any](batch []*pending[T]) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	var waiting atomic.Int64
	waiting.Store(int64(len(batch)))
	stopped := func() { // one for every write of the batch
		if waiting.Add(-1) == 0 {
			cancel()
		}
	}
	stops := make([]func() bool, len(batch))
	for i, p := range batch {
		stops[i] = context.AfterFunc(p.ctx, stopped)
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
