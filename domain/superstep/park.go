package superstep

import (
	"maps"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// retryPark commits a superstep that cannot reach its barrier yet (spec
// 7.7): this round's validated results become pending writes, each retrying
// attempt is parked with its next attempt number and a timer, and step does
// not advance. A crash during the backoff resumes here without re-running
// siblings or resetting attempts.
func retryPark(idx *index, r *run.Run, finals []validated, retries []retryItem, now time.Time) *run.Moment {
	active := make(map[string]run.TaskState, len(r.ActiveTasks)+len(retries))
	maps.Copy(active, r.ActiveTasks)
	timers := make(map[string]run.Timer, len(r.Timers)+len(retries))
	maps.Copy(timers, r.Timers)

	pending := make([]run.PendingWrite, 0, len(r.PendingWrites)+len(finals))
	pending = append(pending, r.PendingWrites...)
	for i := range finals {
		delete(active, finals[i].taskID)
		delete(timers, finals[i].taskID)
		pending = append(pending, finals[i].pendingWrite())
	}
	if len(pending) == 0 {
		pending = nil
	}

	events := make([]run.Event, 0, len(retries)+1)
	for _, rt := range retries {
		a := rt.act
		prior := r.ActiveTasks[a.TaskID].Failures
		failures := make([]run.AttemptFailure, len(prior), len(prior)+1)
		copy(failures, prior)
		failures = append(failures, run.AttemptFailure{Attempt: a.Attempt, Reason: rt.reason})
		next := a.Attempt + 1
		snapshot := a.Snapshot
		if a.Owned {
			// The node may have written to its owned view; the committed
			// run still holds the view it was planned from.
			snapshot = idx.stateValues(r.Channels)
		}
		active[a.TaskID] = run.TaskState{
			TaskID:         a.TaskID,
			NodeID:         a.NodeID,
			Step:           a.Step,
			Attempt:        next,
			Status:         run.TaskRetryScheduled,
			InputHash:      run.InputHash(snapshot),
			IdempotencyKey: run.IdempotencyKey(a.TaskID, next),
			Snapshot:       snapshot,
			SourceVersions: a.SourceVersions.Map(),
			Failures:       failures,
		}
		timers[a.TaskID] = run.Timer{
			Kind:    run.TimerRetry,
			FiresAt: now.Add(millis(a.Policy.BackoffMS)),
		}
		events = append(events, nodeFailedEvent(r.Step, a.NodeID, a.TaskID, a.Attempt, rt.reason, false))
	}

	wake := now
	first := true
	for _, t := range timers {
		if first || t.FiresAt.Before(wake) {
			wake, first = t.FiresAt, false
		}
	}

	next := *r
	next.ActiveTasks = active
	next.Timers = timers
	next.PendingWrites = pending
	next.UpdatedAt = now
	return run.ProposeNext(r, next, events, run.CheckpointRetryScheduled,
		run.Disposition{Kind: run.DispositionAt, At: wake, Reason: run.ReasonRetryBackoff}, now)
}
