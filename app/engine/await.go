package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// AwaitRun waits up to timeout (>= 0) for the run to park for outside
// input (waiting) or finish (done, failed, cancelled) and returns it.
//
// A run that is waiting already is returned at once: awaiting a run's end
// across interrupts is a loop that answers r.OpenInterrupts() and awaits
// again. Where another process answers them, pass UntilFinished: the wait
// then goes on through waiting, until the run finishes.
//
// A poisoned run is reported at once as a *PoisonedError (errors.Is
// ErrPoisoned) carrying its RunInfo: it will not move until
// RetryPoisonedRun. When the timeout passes first the error is
// ErrAwaitTimeout; when ctx ends first, ctx's error.
//
// The run is re-read every AwaitPollInterval. A commit of this engine
// that rested the run (parked it or finished it) ends the wait at once
// with the committed run, without a read; any other commit of this engine
// is no news for this run and brings no read forward. Store wake
// announcements are not used because they announce due work, never parks
// or terminal states. When this engine started the run less than
// AwaitPollInterval ago and timeout leaves time to wait, the insertion
// stands in for the first read.
func (c *Client) AwaitRun(ctx context.Context, runID string, timeout time.Duration, opts ...AwaitOption) (*run.Run, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	if timeout < 0 {
		return nil, fmt.Errorf("%w: await timeout must not be negative", ErrInvalidOptions)
	}
	var o awaitOptions
	for _, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("%w: nil AwaitOption", ErrInvalidOptions)
		}
		opt(&o)
	}
	// rests says whether the wait ends at r.
	rests := func(r *run.Run) bool {
		return r.Status.Terminal() || r.Status == run.StatusWaiting && !o.untilFinished
	}
	// Registered before the first read: a commit that rests the run from
	// here on is kept for this call, an earlier one is what it reads.
	defer c.e.rested.await(owner, runID)()
	deadline := time.Now().Add(timeout)
	seen := int64(-1)
	var seenStart time.Time // the StartedAt of the run last read
	read := true
	var pollAt time.Time // when the next read is due
	for {
		// Subscribe before reading, so a commit between the read and the
		// wait still wakes us.
		committed := c.e.commits.wait()
		if seen < 0 && time.Until(deadline) > 0 {
			if inserted, start, ok := c.e.started.since(owner, runID, time.Now(), c.e.cfg.AwaitPollInterval); ok {
				// This engine inserted the run moments ago: the insertion
				// stands in for the first read.
				seen, seenStart, read = inserted, start, false
				pollAt = time.Now().Add(c.e.cfg.AwaitPollInterval)
			}
		}
		if seen >= 0 {
			// A commit of this engine that rested the run since the
			// last read carries the committed run: no need to read it.
			if r := c.e.rested.newer(owner, runID, seen, seenStart); r != nil {
				if rests(r) {
					return r, nil
				}
				seen = r.CheckpointSeq // waiting, and the caller waits on
			}
		}
		if read {
			ictx, cancel := c.e.storeCall(ctx)
			info, err := c.e.backend.InspectRun(ictx, owner, runID)
			cancel()
			if err != nil {
				return nil, err
			}
			switch {
			case info.Poisoned():
				return nil, &PoisonedError{Info: info}
			case rests(info.Run):
				return info.Run, nil
			}
			seen, seenStart = info.Run.CheckpointSeq, info.Run.StartedAt
			if time.Until(deadline) <= 0 {
				return nil, fmt.Errorf("%w: run %q is still %s after %s", ErrAwaitTimeout, runID, info.Run.Status, timeout)
			}
			pollAt = time.Now().Add(c.e.cfg.AwaitPollInterval)
		}
		t := time.NewTimer(min(time.Until(pollAt), time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-committed:
			// A commit that did not rest the run is no reason to read it
			// before its poll (or the deadline) is due.
			now := time.Now()
			read = !now.Before(pollAt) || !now.Before(deadline)
		case <-t.C:
			read = true
		}
		t.Stop()
	}
}

// AwaitOption changes what AwaitRun waits for.
type AwaitOption func(*awaitOptions)

type awaitOptions struct {
	untilFinished bool
}

// UntilFinished makes AwaitRun wait for the run to finish (done, failed or
// cancelled): a waiting run is not returned, its interrupts being for
// someone else to answer (another process, a person through the CLI).
func UntilFinished() AwaitOption {
	return func(o *awaitOptions) { o.untilFinished = true }
}
