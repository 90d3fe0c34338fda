package run

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/value"
)

// ErrInvalidRun is wrapped by Validate failures.
var ErrInvalidRun = errors.New("invalid run")

// ValidationError lists every durable invariant a run breaks. It wraps
// ErrInvalidRun.
type ValidationError struct {
	Problems []string // one sentence per violation, in a stable order
}

func (e *ValidationError) Error() string {
	return "invalid run: " + strings.Join(e.Problems, "; ")
}

// Unwrap lets errors.Is match ErrInvalidRun.
func (e *ValidationError) Unwrap() error { return ErrInvalidRun }

// Validate checks the durable invariants of a stored run (spec §5) and
// reports every violation at once as a *ValidationError. Beyond the spec's
// list it requires what exact storage round trips rely on: timestamps in UTC
// with microsecond precision, sorted sets without duplicates, UTF-8 text
// in every string, portable values everywhere, and parked tasks shaped as
// parked tasks.
func (r *Run) Validate() error {
	if r == nil {
		return &ValidationError{Problems: []string{"run is nil"}}
	}
	v := &validator{}
	v.top(r)
	v.channels(r)
	v.superstep(r)
	v.interrupts(r)
	if len(v.problems) > 0 {
		return &ValidationError{Problems: v.problems}
	}
	return nil
}

type validator struct{ problems []string }

func (v *validator) addf(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) nonEmpty(what, s string) {
	if s == "" {
		v.addf("%s is empty", what)
	}
	v.text(what, s)
}

// text checks that s is UTF-8: the document would hold U+FFFD for any
// other byte, and a store would hand back another run than it was given.
func (v *validator) text(what, s string) {
	if !utf8.ValidString(s) {
		v.addf("%s %q is not UTF-8 text", what, s)
	}
}

func (v *validator) portable(what string, x any) {
	if err := value.Check(x); err != nil {
		v.addf("%s: %v", what, err)
	}
}

// timestamp checks a required (or, if optional, possibly zero) time.
func (v *validator) timestamp(what string, t time.Time, required bool) {
	switch {
	case t.IsZero():
		if required {
			v.addf("%s is missing", what)
		}
	case !isStorableTime(t):
		v.addf("%s is not a UTC timestamp with microsecond precision in years 1-9999", what)
	}
}

// isStorableTime reports whether t survives the codec unchanged: UTC,
// whole microseconds, a four-digit year. The zero time means "absent".
func isStorableTime(t time.Time) bool {
	if t.IsZero() {
		return true
	}
	y := t.Year()
	return t.Location() == time.UTC && t.Nanosecond()%int(time.Microsecond) == 0 && y >= 1 && y <= 9999
}

func (v *validator) sortedSet(what string, s []string) {
	if !isSortedSet(s) {
		v.addf("%s is not a sorted set of non-empty UTF-8 IDs", what)
	}
}

// isSortedSet reports whether s is strictly ascending with no empty IDs
// and no ID that is not UTF-8.
func isSortedSet(s []string) bool {
	for i := range s {
		if s[i] == "" || (i > 0 && s[i-1] >= s[i]) || !utf8.ValidString(s[i]) {
			return false
		}
	}
	return true
}

func (v *validator) top(r *Run) {
	switch r.Status {
	case StatusRunning, StatusWaiting, StatusDone, StatusFailed, StatusCancelled:
	default:
		v.addf("status %q is not a durable status", r.Status)
	}
	v.nonEmpty("id", r.ID)
	v.nonEmpty("graph_id", r.GraphID)
	v.nonEmpty("graph_hash", r.GraphHash)
	if r.Step < 0 {
		v.addf("step %d is negative", r.Step)
	}
	if r.CheckpointSeq < 0 {
		v.addf("checkpoint_seq %d is negative", r.CheckpointSeq)
	}
	if r.EventSeq < 0 {
		v.addf("event_seq %d is negative", r.EventSeq)
	}
	v.portable("input", r.Input)
	v.portable("metadata", r.Metadata)
	if r.Output != nil {
		v.portable("output", r.Output)
		if r.Status != StatusDone {
			v.addf("output is set on a %s run; only done runs have output", r.Status)
		}
	}
	switch {
	case r.Status == StatusFailed && r.Failure == nil:
		v.addf("failed run has no failure")
	case r.Status != StatusFailed && r.Failure != nil:
		v.addf("failure is set on a %s run; only failed runs have one", r.Status)
	}
	if f := r.Failure; f != nil {
		v.nonEmpty("failure code", f.Code)
		v.nonEmpty("failure message", f.Message)
		v.text("failure node_id", f.NodeID)
		v.portable("failure details", f.Details)
	}
	v.timestamp("started_at", r.StartedAt, true)
	v.timestamp("updated_at", r.UpdatedAt, true)
	v.timestamp("finished_at", r.FinishedAt, false)
	if r.Status.Terminal() != !r.FinishedAt.IsZero() {
		v.addf("finished_at must be set exactly on terminal runs (status %s)", r.Status)
	}
	v.sortedSet("changed_channels", r.ChangedChannels)
	v.sortedSet("pending_nodes", r.PendingNodes)
}

func (v *validator) channels(r *Run) {
	for i := range r.Channels {
		c := &r.Channels[i]
		id := c.ID
		if id == "" {
			v.addf("a channel has an empty ID")
		}
		v.text("channel id", id)
		if i > 0 && r.Channels[i-1].ID >= id {
			v.addf("channel %q is out of order or repeated: channels must be sorted by ID, each once", id)
		}
		if c.Version < 0 {
			v.addf("channel %q has negative version %d", id, c.Version)
		}
		if err := value.Check(c.Value); err != nil {
			v.addf("channel %q value: %v", id, err)
		}
	}
	inOrder(v, r.BarrierSeen, func(id string, seen []string) {
		if !r.Channels.Has(id) {
			v.addf("barrier_seen of channel %q, which the run does not hold", id)
		}
		if !isSortedSet(seen) {
			v.addf("channel %q barrier_seen is not a sorted set of non-empty UTF-8 IDs", id)
		}
	})
}

// inOrder visits m's entries in map order and, only when a visit added a
// problem, takes back what they added and visits them again in key order,
// so that the problems read the same every time; the entries of a valid
// map (the rule, at every commit) are neither gathered nor sorted.
func inOrder[V any](v *validator, m map[string]V, visit func(id string, x V)) {
	before := len(v.problems)
	for id, x := range m {
		visit(id, x)
	}
	if len(v.problems) == before {
		return
	}
	v.problems = v.problems[:before]
	for _, id := range value.SortedKeys(m) {
		visit(id, m[id])
	}
}

func (v *validator) superstep(r *Run) {
	if len(r.ActiveTasks)+len(r.PendingWrites)+len(r.Timers) > 0 && r.Status != StatusRunning {
		v.addf("active superstep state on a %s run; only running runs have one", r.Status)
	}
	if len(r.PendingWrites) > 0 && len(r.ActiveTasks) == 0 {
		v.addf("pending writes without active tasks")
	}
	inOrder(v, r.ActiveTasks, func(id string, _ TaskState) {
		if _, ok := r.Timers[id]; !ok {
			v.addf("active task %q has no timer", id)
		}
	})
	inOrder(v, r.Timers, func(id string, t Timer) {
		if _, ok := r.ActiveTasks[id]; !ok {
			v.addf("timer %q has no active task", id)
		}
		if t.Kind != TimerRetry {
			v.addf("timer %q has kind %q, want %q", id, t.Kind, TimerRetry)
		}
		if t.FiresAt.IsZero() || !isStorableTime(t.FiresAt) {
			v.addf("timer %q fires_at is missing or not a UTC microsecond timestamp", id)
		}
	})
	if len(r.ActiveTasks)+len(r.PendingWrites) == 0 {
		return
	}
	before := len(v.problems)
	v.tasks(r, false)
	if len(v.problems) > before {
		v.problems = v.problems[:before]
		v.tasks(r, true)
	}
}

// tasks checks the active tasks and pending writes, and that no node
// appears twice among them: in map order, or in key order when sorted.
func (v *validator) tasks(r *Run, sorted bool) {
	nodes := make(map[string]int, len(r.ActiveTasks)+len(r.PendingWrites))
	hashed := map[string]map[string]any{} // input hash -> a snapshot known to have it
	visit := func(id string) {
		t := r.ActiveTasks[id]
		nodes[t.NodeID]++
		v.task(r, id, t, hashed)
	}
	if sorted {
		for _, id := range value.SortedKeys(r.ActiveTasks) {
			visit(id)
		}
	} else {
		for id := range r.ActiveTasks {
			visit(id)
		}
	}
	for i, w := range r.PendingWrites {
		nodes[w.NodeID]++
		v.pendingWrite(r, i, w)
	}
	duplicate := func(node string) {
		if nodes[node] > 1 {
			v.addf("node %q appears %d times in the active superstep", node, nodes[node])
		}
	}
	if sorted {
		for _, node := range value.SortedKeys(nodes) {
			duplicate(node)
		}
	} else {
		for node := range nodes {
			duplicate(node)
		}
	}
}

func (v *validator) task(r *Run, key string, t TaskState, hashed map[string]map[string]any) {
	if t.NodeID == "" {
		v.addf("active task %q has an empty node_id", key)
	}
	v.text("active task node_id", t.NodeID)
	v.text("active task input_hash", t.InputHash)
	if t.TaskID != key {
		v.addf("active task %q has task_id %q", key, t.TaskID)
	}
	if want := TaskID(r.ID, r.Step, t.NodeID); t.TaskID != want {
		v.addf("active task %q: task_id %q, want %q", key, t.TaskID, want)
	}
	if t.Step != r.Step {
		v.addf("active task %q: step %d, want the run's step %d", key, t.Step, r.Step)
	}
	if t.Attempt < 1 {
		v.addf("active task %q: attempt %d is below 1", key, t.Attempt)
	}
	if want := IdempotencyKey(t.TaskID, t.Attempt); t.IdempotencyKey != want {
		v.addf("active task %q: idempotency_key %q, want %q", key, t.IdempotencyKey, want)
	}
	if t.Status != TaskRetryScheduled {
		v.addf("active task %q: status %q, want %q", key, t.Status, TaskRetryScheduled)
	}
	v.inputHash(key, t, hashed)
	for id, version := range t.SourceVersions {
		if id == "" || version < 0 || !utf8.ValidString(id) {
			v.addf("active task %q: invalid source version %q=%d", key, id, version)
		}
	}
	if len(t.Failures) != t.Attempt-1 {
		v.addf("active task %q: %d failures for attempt %d, want %d", key, len(t.Failures), t.Attempt, t.Attempt-1)
	}
	for i, f := range t.Failures {
		if f.Attempt != i+1 {
			v.addf("active task %q: failure %d is numbered %d", key, i+1, f.Attempt)
		}
		v.text("active task failure reason", f.Reason)
	}
	if !t.StartedAt.IsZero() || !t.DeadlineAt.IsZero() {
		v.addf("active task %q: a parked task has no started_at or deadline_at", key)
	}
	if err := value.Check(t.Metadata); err != nil {
		v.addf("active task %q metadata: %v", key, err)
	}
}

// inputHash checks a task's input hash against its snapshot. The tasks of
// one superstep share one snapshot, so a snapshot equal to one already
// verified under the same hash is not hashed again.
func (v *validator) inputHash(key string, t TaskState, hashed map[string]map[string]any) {
	if known, ok := hashed[t.InputHash]; ok && value.Equal(known, t.Snapshot) {
		return
	}
	if err := value.Check(t.Snapshot); err != nil {
		v.addf("active task %q snapshot: %v", key, err)
		return
	}
	if want := InputHash(t.Snapshot); t.InputHash != want {
		v.addf("active task %q: input_hash %q does not match its snapshot (%q)", key, t.InputHash, want)
		return
	}
	hashed[t.InputHash] = t.Snapshot
}

func (v *validator) pendingWrite(r *Run, i int, w PendingWrite) {
	if w.NodeID == "" {
		v.addf("pending write %d has an empty node_id", i)
	}
	v.text("pending write node_id", w.NodeID)
	if want := TaskID(r.ID, r.Step, w.NodeID); w.TaskID != want {
		v.addf("pending write %d: task_id %q, want %q", i, w.TaskID, want)
	}
	if w.Attempt < 1 {
		v.addf("pending write %d: attempt %d is below 1", i, w.Attempt)
	}
	if w.Kind != WriteUpdate && w.Kind != WriteInterrupt {
		v.addf("pending write %d: kind %q is neither %q nor %q", i, w.Kind, WriteUpdate, WriteInterrupt)
	}
	if _, ok := w.Value.(map[string]any); !ok {
		v.addf("pending write %d: value is a %T, want a map", i, w.Value)
	} else if err := value.Check(w.Value); err != nil {
		v.addf("pending write %d value: %v", i, err)
	}
}

// interrupts checks every interrupt, answered ones included: a run keeps
// them for its life, so a long session carries hundreds to every commit.
// They are checked in map order, and only when one fails again in ID
// order (inOrder).
func (v *validator) interrupts(r *Run) {
	inOrder(v, r.Interrupts, v.interrupt)
}

func (v *validator) interrupt(id string, in Interrupt) {
	if id == "" || in.ID != id {
		v.addf("interrupt %q has id %q", id, in.ID)
	}
	if in.NodeID == "" {
		v.addf("interrupt %q has an empty node_id", id)
	}
	if in.ResumeChannel == "" {
		v.addf("interrupt %q has an empty resume_channel", id)
	}
	v.text("interrupt id", id)
	v.text("interrupt node_id", in.NodeID)
	v.text("interrupt resume_channel", in.ResumeChannel)
	if err := value.Check(in.Schema); err != nil {
		v.addf("interrupt %q schema: %v", id, err)
	}
	if err := value.Check(in.Metadata); err != nil {
		v.addf("interrupt %q metadata: %v", id, err)
	}
	if in.CreatedAt.IsZero() || !isStorableTime(in.CreatedAt) {
		v.addf("interrupt %q created_at is missing or not a UTC microsecond timestamp", id)
	}
	if !isStorableTime(in.ResolvedAt) {
		v.addf("interrupt %q resolved_at is not a UTC microsecond timestamp", id)
	}
	switch in.Status {
	case InterruptOpen:
		if !in.ResolvedAt.IsZero() {
			v.addf("interrupt %q is open but has resolved_at", id)
		}
	case InterruptResolved:
		if in.ResolvedAt.IsZero() {
			v.addf("interrupt %q is resolved but has no resolved_at", id)
		}
	default:
		v.addf("interrupt %q has status %q", id, in.Status)
	}
}
