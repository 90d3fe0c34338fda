package superstep

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// CheckResolvable is ResolveInterrupt's first checks, which need no graph:
// the run is active and interruptID names one of its open interrupts. A
// caller that must compile the run's graph first runs them before, so a
// finished run is reported as such even where its graph cannot compile.
func CheckResolvable(r *run.Run, interruptID string) error {
	const phase = "resolve"
	switch {
	case r.Status.Terminal():
		return &Error{Code: CodeInactiveRun, Phase: phase, Message: fmt.Sprintf("run %q is %s and cannot be resumed", r.ID, r.Status)}
	case r.Status != run.StatusRunning && r.Status != run.StatusWaiting:
		return &Error{Code: CodeInvalidRun, Phase: phase, Message: fmt.Sprintf("run %q has non-durable status %q", r.ID, r.Status)}
	}
	in, ok := r.Interrupts[interruptID]
	switch {
	case ok && in.Status == run.InterruptResolved:
		return &Error{Code: CodeAlreadyResolved, Phase: phase, Message: fmt.Sprintf("interrupt %q is resolved", interruptID)}
	case !ok || in.Status != run.InterruptOpen:
		return &Error{Code: CodeNotFound, Phase: phase, Message: fmt.Sprintf("no interrupt %q", interruptID)}
	}
	return nil
}

// ResolveInterrupt applies an interrupt resolution (spec 7.11), a pure
// signal mutation. Errors in order: inactive_run (terminal), invalid_run
// (not running or waiting), already_resolved, not_found, then invalid_input
// when the value is not portable, fails the interrupt's schema or is not a
// valid write to the resume channel.
func ResolveInterrupt(g *graph.Compiled, r *run.Run, interruptID string, v any, env Env) (*run.Moment, error) {
	const phase = "resolve"
	if err := CheckResolvable(r, interruptID); err != nil {
		return nil, err
	}
	in := r.Interrupts[interruptID]
	if err := checkGraph(g, r); err != nil {
		return nil, err
	}
	idx := indexOf(g)

	v, err := value.Normalize(v)
	if err != nil {
		return nil, invalidInput(phase, "interrupt resolution value is not portable", []string{err.Error()})
	}
	if in.Schema != nil {
		s, err := schema.FromMap(in.Schema)
		if err != nil {
			return nil, &Error{Code: CodeInvalidRun, Phase: phase, Message: fmt.Sprintf("interrupt %q has an invalid stored schema: %v", interruptID, err)}
		}
		if reasons := s.Validate(v); len(reasons) > 0 {
			return nil, invalidInput(phase, "interrupt resolution value is invalid", reasons)
		}
	}
	if _, reasons := validateUpdate(idx, map[string]any{in.ResumeChannel: v}); len(reasons) > 0 {
		return nil, invalidInput(phase, "interrupt resolution value is invalid", reasons)
	}

	now := utc(env.Now)
	s := idx.fields[in.ResumeChannel]
	channels := make(run.Channels, len(r.Channels), len(r.Channels)+1)
	copy(channels, r.Channels)
	cur, has := currentValue(r.Channels, s)
	bump(&channels, s.channelID, reducer.Fold(s.channel.Reducer, cur, has, []any{v}))

	changed := r.ChangedChannels
	if i, found := slices.BinarySearch(changed, s.channelID); !found {
		changed = slices.Insert(slices.Clone(changed), i, s.channelID)
	}
	interrupts := maps.Clone(r.Interrupts)
	in.Status = run.InterruptResolved
	in.ResolvedAt = now
	interrupts[interruptID] = in

	next := *r
	next.Channels = slices.Clip(channels)
	next.ChangedChannels = changed
	next.Interrupts = interrupts
	next.Status = run.StatusRunning
	next.UpdatedAt = now

	events := []run.Event{
		{Type: run.EventInterruptResolved, Step: r.Step, NodeID: in.NodeID,
			Payload: map[string]any{"interrupt_id": in.ID, "resume_channel": in.ResumeChannel}},
		{Type: run.EventChannelUpdated, Step: r.Step, ChannelID: s.channelID,
			Payload: map[string]any{"writers": []any{in.NodeID}}},
	}
	return run.ProposeNext(r, next, events, run.CheckpointInterruptResolved, resolutionDisposition(r, now), now), nil
}

// resolutionDisposition wakes the run now, unless every parked attempt
// waits on a future retry timer; then it wakes at the earliest one, so the
// committed wake never precedes the first dispatchable attempt.
func resolutionDisposition(r *run.Run, now time.Time) run.Disposition {
	immediate := run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}
	if len(r.ActiveTasks) == 0 {
		return immediate
	}
	var earliest time.Time
	for id := range r.ActiveTasks {
		t, ok := r.Timers[id]
		if !ok || !t.FiresAt.After(now) {
			return immediate
		}
		if earliest.IsZero() || t.FiresAt.Before(earliest) {
			earliest = t.FiresAt
		}
	}
	return run.Disposition{Kind: run.DispositionAt, At: earliest, Reason: run.ReasonInterruptResolved}
}

// Cancel cancels a running or waiting run (spec 7.12), absorbing any parked
// superstep. An already cancelled run returns (nil, nil), unchanged. Errors:
// inactive_run (done or failed), invalid_run (created).
func Cancel(r *run.Run, env Env) (*run.Moment, error) {
	switch r.Status {
	case run.StatusCancelled:
		return nil, nil
	case run.StatusDone, run.StatusFailed:
		return nil, &Error{Code: CodeInactiveRun, Phase: "cancel", Message: fmt.Sprintf("run %q is %s and cannot be cancelled", r.ID, r.Status)}
	case run.StatusRunning, run.StatusWaiting:
	default:
		return nil, &Error{Code: CodeInvalidRun, Phase: "cancel", Message: fmt.Sprintf("run %q has non-durable status %q", r.ID, r.Status)}
	}
	now := utc(env.Now)
	next := *r
	next.Status = run.StatusCancelled
	next.FinishedAt = now
	next.UpdatedAt = now
	next.ActiveTasks = nil
	next.PendingWrites = nil
	next.Timers = nil
	events := []run.Event{{Type: run.EventRunCancelled, Step: r.Step, Payload: map[string]any{}}}
	return run.ProposeNext(r, next, events, run.CheckpointRunCancelled,
		run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCancelled}, now), nil
}
