package engine

import (
	"sync"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// recentCapacity bounds a recentRuns ring: the most recent entries are the
// ones a waiting AwaitRun can be after.
const recentCapacity = 1024

// recentRuns remembers one value per run (by owner and run id) for the
// last runs it was told about, in a bounded ring: at capacity, a new run
// replaces the oldest. It is safe for concurrent use.
type recentRuns[V any] struct {
	mu    sync.Mutex
	runs  map[recentKey]V
	order []recentKey // ring of keys, oldest at next
	next  int
}

type recentKey struct {
	owner string
	runID string
}

func (c *recentRuns[V]) put(owner ports.OwnerScope, runID string, v V) {
	key := recentKey{owner: owner.Key(), runID: runID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = make(map[recentKey]V, recentCapacity)
		c.order = make([]recentKey, 0, recentCapacity)
	}
	if _, ok := c.runs[key]; !ok {
		if len(c.order) < recentCapacity {
			c.order = append(c.order, key)
		} else {
			delete(c.runs, c.order[c.next])
			c.order[c.next] = key
			c.next = (c.next + 1) % recentCapacity
		}
	}
	c.runs[key] = v
}

// forget drops the run's entry. Its key stays in the ring, so a later put
// of the same run may leave a little early: the cache answers less, never
// wrongly.
func (c *recentRuns[V]) forget(owner ports.OwnerScope, runID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.runs, recentKey{owner: owner.Key(), runID: runID})
}

func (c *recentRuns[V]) get(owner ports.OwnerScope, runID string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.runs[recentKey{owner: owner.Key(), runID: runID}]
	return v, ok
}

// restedRuns remembers the last runs this engine committed waiting or
// terminal while a local AwaitRun of them is in flight. An AwaitRun woken
// by such a commit takes the run from here instead of reading it again;
// it only ever takes a run newer than what it last read, so an entry that
// a later commit elsewhere made stale is never returned as news. A run
// nobody here awaits is not kept: its document can be many MB, and an
// AwaitRun that starts later reads the store first anyway.
type restedRuns struct {
	recentRuns[*run.Run]
	awaitMu  sync.Mutex // held around recentRuns.mu, never inside it
	awaiting map[recentKey]int
}

// await counts an AwaitRun of the run in flight until the returned func is
// called; the last one to leave drops the run's entry.
func (c *restedRuns) await(owner ports.OwnerScope, runID string) (done func()) {
	key := recentKey{owner: owner.Key(), runID: runID}
	c.awaitMu.Lock()
	defer c.awaitMu.Unlock()
	if c.awaiting == nil {
		c.awaiting = map[recentKey]int{}
	}
	c.awaiting[key]++
	return func() {
		c.awaitMu.Lock()
		defer c.awaitMu.Unlock()
		if c.awaiting[key]--; c.awaiting[key] == 0 {
			delete(c.awaiting, key)
			c.forget(owner, runID)
		}
	}
}

// put keeps r as committed, when an AwaitRun of it is in flight: a
// committed run is never written again (the domain builds every next run
// anew); newer hands out copies.
func (c *restedRuns) put(owner ports.OwnerScope, r *run.Run) {
	c.awaitMu.Lock()
	defer c.awaitMu.Unlock()
	if c.awaiting[recentKey{owner: owner.Key(), runID: r.ID}] > 0 {
		c.recentRuns.put(owner, r.ID, r)
	}
}

// newer returns a copy of the run rested after checkpoint seq, if any. A
// run id can name a later run once the pruner deleted the first (an
// idempotency key reused, on another engine): only a run started at
// startedAt, the one last read, counts.
func (c *restedRuns) newer(owner ports.OwnerScope, runID string, seq int64, startedAt time.Time) *run.Run {
	r, _ := c.get(owner, runID)
	if r == nil || r.CheckpointSeq <= seq || !r.StartedAt.Equal(startedAt) {
		return nil
	}
	return r.Clone()
}

// startedRun is what this engine inserted for a run, and when.
type startedRun struct {
	seq       int64
	startedAt time.Time // the run's own
	at        time.Time // the insertion's, by the wall clock
}

// startedRuns remembers the runs this engine inserted and has committed
// nothing else for since (a later commit makes committed forget the run).
// An AwaitRun that follows its StartRun within one poll interval takes the
// insertion for its first read: the run was running at that checkpoint
// moments ago, no commit of this engine has rested it since, and the next
// read comes no later than it would after a read.
type startedRuns struct{ recentRuns[startedRun] }

// since returns the checkpoint seq this engine inserted runID at, and the
// run's start, if it did so within window of now.
func (c *startedRuns) since(owner ports.OwnerScope, runID string, now time.Time, window time.Duration) (int64, time.Time, bool) {
	s, ok := c.get(owner, runID)
	if !ok || now.Sub(s.at) >= window {
		return 0, time.Time{}, false
	}
	return s.seq, s.startedAt, true
}

// committed forgets runID when this engine commits it past the insertion.
func (c *startedRuns) committed(owner ports.OwnerScope, runID string, seq int64) {
	key := recentKey{owner: owner.Key(), runID: runID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.runs[key]; ok && s.seq < seq {
		delete(c.runs, key)
	}
}
