package engine

import (
	"sync"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// restedCapacity bounds restedRuns: the most recent rests are the ones a
// waiting AwaitRun can be after.
const restedCapacity = 1024

// restedRuns remembers the last runs this engine committed waiting or
// terminal, by owner and run id, in a bounded ring. An AwaitRun woken by
// such a commit takes the run from here instead of reading it again; it
// only ever takes a run newer than what it last read, so an entry that a
// later commit elsewhere made stale is never returned as news.
type restedRuns struct {
	mu    sync.Mutex
	runs  map[restedKey]*run.Run
	order []restedKey // ring of keys, oldest at next
	next  int
}

type restedKey struct {
	owner string
	runID string
}

func (c *restedRuns) put(owner ports.OwnerScope, r *run.Run) {
	key := restedKey{owner: owner.Key(), runID: r.ID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = make(map[restedKey]*run.Run, restedCapacity)
		c.order = make([]restedKey, 0, restedCapacity)
	}
	if _, ok := c.runs[key]; !ok {
		if len(c.order) < restedCapacity {
			c.order = append(c.order, key)
		} else {
			delete(c.runs, c.order[c.next])
			c.order[c.next] = key
			c.next = (c.next + 1) % restedCapacity
		}
	}
	// A committed run is never written again (the domain builds every
	// next run anew), so it is kept as is; newer hands out copies.
	c.runs[key] = r
}

// newer returns a copy of the run rested after checkpoint seq, if any.
func (c *restedRuns) newer(owner ports.OwnerScope, runID string, seq int64) *run.Run {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.runs[restedKey{owner: owner.Key(), runID: runID}]
	if r == nil || r.CheckpointSeq <= seq {
		return nil
	}
	return r.Clone()
}
