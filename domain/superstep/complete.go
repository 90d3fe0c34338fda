package superstep

import (
	"time"

	"github.com/docketgo/docket/domain/run"
)

// complete ends a quiescent run (spec 7.10): every declared output takes the
// committed value of its source channel, or null when it was never written
// (defaults and reducer zeros are not outputs).
func complete(idx *index, r *run.Run, now time.Time) *run.Moment {
	out := make(map[string]any, len(idx.sortedOutputs))
	for _, o := range idx.sortedOutputs {
		out[o.ID] = r.Channels.Value(o.SourceChannel)
	}
	next := *r
	next.Status = run.StatusDone
	next.Output = out
	next.FinishedAt = now
	next.UpdatedAt = now
	// Room for the checkpoint_committed event Propose appends.
	events := make([]run.Event, 1, 2)
	events[0] = run.Event{Type: run.EventRunCompleted, Step: r.Step, Payload: idx.payloads.outputs}
	return run.ProposeNext(r, next, events, run.CheckpointRunCompleted,
		run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCompleted}, now)
}
