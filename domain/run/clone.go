package run

import (
	"maps"
	"slices"

	"github.com/docketgo/docket/domain/value"
)

// Clone deep-copies r so the copy shares no mutable containers with it:
// proposals built from the copy never alias committed state. Nil and empty
// containers stay as they were, so a clone compares equal to its source.
// Clone of nil is nil.
func (r *Run) Clone() *Run {
	if r == nil {
		return nil
	}
	out := *r
	out.Input = cloneMap(r.Input)
	out.Output = cloneMap(r.Output)
	out.Failure = r.Failure.clone()
	if r.Channels != nil {
		out.Channels = make(Channels, len(r.Channels))
		for i, c := range r.Channels {
			out.Channels[i] = c.clone()
		}
	}
	out.BarrierSeen = cloneEach(r.BarrierSeen, slices.Clone)
	out.ChangedChannels = slices.Clone(r.ChangedChannels)
	out.PendingNodes = slices.Clone(r.PendingNodes)
	out.ActiveTasks = cloneEach(r.ActiveTasks, TaskState.clone)
	if r.PendingWrites != nil {
		out.PendingWrites = make([]PendingWrite, len(r.PendingWrites))
		for i, w := range r.PendingWrites {
			w.Value = value.Clone(w.Value)
			out.PendingWrites[i] = w
		}
	}
	out.Interrupts = cloneEach(r.Interrupts, Interrupt.clone)
	out.Timers = maps.Clone(r.Timers) // Timer holds no containers
	out.Metadata = cloneMap(r.Metadata)
	return &out
}

func (c Channel) clone() Channel {
	c.Value = value.Clone(c.Value)
	return c
}

func (f *Failure) clone() *Failure {
	if f == nil {
		return nil
	}
	out := *f
	out.Details = cloneMap(f.Details)
	return &out
}

func (t TaskState) clone() TaskState {
	t.Snapshot = cloneMap(t.Snapshot)
	t.SourceVersions = maps.Clone(t.SourceVersions)
	t.Failures = slices.Clone(t.Failures)
	t.Metadata = cloneMap(t.Metadata)
	return t
}

func (i Interrupt) clone() Interrupt {
	i.Schema = cloneMap(i.Schema)
	i.Metadata = cloneMap(i.Metadata)
	return i
}

// cloneMap deep-copies a portable map, keeping nil as nil (value.Clone would
// turn it into an empty map, and nil versus empty is meaningful for Output).
func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = value.Clone(v)
	}
	return out
}

// cloneEach copies a map, cloning each element, keeping nil as nil.
func cloneEach[V any](m map[string]V, clone func(V) V) map[string]V {
	if m == nil {
		return nil
	}
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = clone(v)
	}
	return out
}
