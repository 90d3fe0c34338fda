package superstep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// Advance plans the next step of a committed run (spec 7.2): resume a parked
// superstep, execute the next one, complete, fail on the superstep limit or
// a bad policy, wait on open interrupts, or report a terminal run.
func Advance(g *graph.Compiled, r *run.Run, env Env) (Step, error) {
	switch r.Status {
	case run.StatusRunning, run.StatusWaiting:
	case run.StatusCreated:
		return Step{}, &Error{Code: CodeInvalidRun, Phase: "plan", Message: fmt.Sprintf("run %q must be initialized before planning", r.ID)}
	default:
		if r.Status.Terminal() {
			return Step{Kind: Terminal}, nil
		}
		return Step{}, unknownStatus(r)
	}
	if err := checkGraph(g, r); err != nil {
		return Step{}, err
	}
	idx := indexOf(g)
	now := utc(env.Now)
	if len(r.ActiveTasks) > 0 {
		return resumeSuperstep(g, idx, r, env, now)
	}

	// Candidates are collected in a stack buffer: the common superstep
	// activates a handful of nodes, and only their IDs are kept.
	var buf [16]string
	candidates, open := planCandidates(buf[:0], g, idx, r)
	switch {
	case len(candidates) == 0 && len(open) == 0:
		return Step{Kind: Commit, Moment: complete(idx, r, now)}, nil
	case len(candidates) == 0:
		return Step{Kind: Wait, InterruptIDs: open}, nil
	case g.MaxSupersteps > 0 && r.Step >= g.MaxSupersteps:
		limit := g.MaxSupersteps
		m := planFailure(r, FailureMaxSuperstepsExceeded,
			"run exceeded the superstep limit of "+strconv.Itoa(limit), "",
			map[string]any{"limit": int64(limit)}, now)
		return Step{Kind: Commit, Moment: m}, nil
	}

	view, err := idx.plannedView(r.Channels)
	if err != nil {
		return Step{}, &Error{Code: CodeInvalidRun, Phase: "plan", Message: "committed state is not portable: " + err.Error()}
	}
	acts := make([]Activation, len(candidates))
	keys, stepLen := firstAttemptKeys(r.ID, r.Step, candidates)
	for i, id := range candidates {
		// Every candidate is a node of the graph (appendCandidates), so
		// the index holds it.
		ne := idx.nodes[id]
		node, pol, flatConfig := ne.node, ne.policy.policy, ne.policy.flatConfig
		if err := ne.policy.err; err != nil {
			return Step{Kind: Commit, Moment: policyFailure(r, id, err, now)}, nil
		}
		n := len(r.ID) + stepLen + len(id) + 2 + len(firstAttemptSuffix)
		key := keys[:n]
		keys = keys[n:]
		acts[i] = Activation{
			TaskID:         key[:len(key)-len(firstAttemptSuffix)],
			NodeID:         id,
			Step:           r.Step,
			Attempt:        1,
			IdempotencyKey: key,
			Snapshot:       view.values,
			SourceVersions: view.versions,
			Implementation: node.Implementation,
			Config:         node.Config,
			Policy:         pol,
			Owned:          len(candidates) == 1,
			FlatSnapshot:   view.flat,
			FlatConfig:     flatConfig,
		}
	}
	return Step{Kind: Execute, Activations: acts}, nil
}

// firstAttemptSuffix ends the idempotency key of attempt 1.
const firstAttemptSuffix = ":1"

// firstAttemptKeys returns run.IdempotencyKey(run.TaskID(runID, step, id),
// 1) for every node, concatenated, and the length of step's decimal form:
// the caller cuts the keys apart, and each task ID is a prefix of its key,
// so a superstep's identities cost one allocation.
func firstAttemptKeys(runID string, step int, nodeIDs []string) (string, int) {
	var stepBuf [20]byte
	stepText := strconv.AppendInt(stepBuf[:0], int64(step), 10)
	size := 0
	for _, id := range nodeIDs {
		size += len(runID) + len(stepText) + len(id) + 2 + len(firstAttemptSuffix)
	}
	var stack [256]byte
	b := stack[:0]
	if size > len(stack) {
		b = make([]byte, 0, size)
	}
	for _, id := range nodeIDs {
		b = append(b, runID...)
		b = append(b, ':')
		b = append(b, stepText...)
		b = append(b, ':')
		b = append(b, id...)
		b = append(b, firstAttemptSuffix...)
	}
	return string(b), len(stepText)
}

// planCandidates appends to dst the sorted nodes the next superstep
// activates and returns them with the sorted open interrupt IDs. A
// candidate is a node without an open interrupt that is pending
// (interrupted earlier) or subscribes to a channel the last transition
// changed; only edge channels are subscribed, so a state change alone never
// activates a node.
func planCandidates(dst []string, g *graph.Compiled, idx *index, r *run.Run) (candidates, open []string) {
	open, interrupted := openInterrupts(r)
	candidates = appendCandidates(dst, idx, r, interrupted, false)
	if len(candidates) > 1 {
		slices.Sort(candidates)
		candidates = slices.Compact(candidates)
	}
	return candidates, open
}

// openInterrupts returns the sorted open interrupt IDs and their nodes.
func openInterrupts(r *run.Run) (open, interrupted []string) {
	for id, in := range r.Interrupts {
		if in.Status == run.InterruptOpen {
			open = append(open, id)
			interrupted = append(interrupted, in.NodeID)
		}
	}
	slices.Sort(open)
	return open, interrupted
}

// appendCandidates appends the (unsorted, possibly repeated) candidates of
// r to dst; with first it stops at the first one.
func appendCandidates(dst []string, idx *index, r *run.Run, interrupted []string, first bool) []string {
	for _, n := range r.PendingNodes {
		if idx.nodes[n] != nil && !slices.Contains(interrupted, n) {
			dst = append(dst, n)
			if first {
				return dst
			}
		}
	}
	for _, ch := range r.ChangedChannels {
		for _, n := range idx.subscribers[ch] {
			if !slices.Contains(interrupted, n) {
				dst = append(dst, n)
				if first {
					return dst
				}
			}
		}
	}
	return dst
}

// resumeSuperstep continues a parked superstep (spec 7.8): only attempts
// whose retry timer is due run, with their stored identity and snapshot.
func resumeSuperstep(g *graph.Compiled, idx *index, r *run.Run, env Env, now time.Time) (Step, error) {
	due := now
	if floor := utc(env.ResumeFloor); floor.After(due) {
		due = floor
	}
	var earliest time.Time
	anyDue := false
	for id := range r.ActiveTasks {
		t, ok := r.Timers[id]
		if !ok || !t.FiresAt.After(due) {
			anyDue = true
			break
		}
		if earliest.IsZero() || t.FiresAt.Before(earliest) {
			earliest = t.FiresAt
		}
	}
	if !anyDue {
		return Step{Kind: Park, ResumeAt: earliest, Wait: max(0, earliest.Sub(due))}, nil
	}

	tasks := make([]*run.TaskState, 0, len(r.ActiveTasks))
	for id := range r.ActiveTasks {
		t := r.ActiveTasks[id]
		tasks = append(tasks, &t)
	}
	slices.SortFunc(tasks, func(a, b *run.TaskState) int {
		if c := strings.Compare(a.NodeID, b.NodeID); c != 0 {
			return c
		}
		return strings.Compare(a.TaskID, b.TaskID)
	})
	acts := make([]Activation, 0, len(tasks))
	for _, t := range tasks {
		node := g.Nodes[t.NodeID]
		if node == nil {
			m := planFailure(r, CodeInvalidRun,
				fmt.Sprintf("active task %q references unknown node %q", t.TaskID, t.NodeID), t.NodeID, nil, now)
			return Step{Kind: Commit, Moment: m}, nil
		}
		pol, flatConfig, err := idx.nodePolicy(g, t.NodeID)
		if err != nil {
			return Step{Kind: Commit, Moment: policyFailure(r, t.NodeID, err, now)}, nil
		}
		if timer, ok := r.Timers[t.TaskID]; ok && timer.FiresAt.After(due) {
			continue
		}
		acts = append(acts, Activation{
			TaskID:         t.TaskID,
			NodeID:         t.NodeID,
			Step:           t.Step,
			Attempt:        t.Attempt,
			IdempotencyKey: run.IdempotencyKey(t.TaskID, t.Attempt),
			Snapshot:       t.Snapshot,
			SourceVersions: run.VersionsOf(t.SourceVersions),
			Implementation: node.Implementation,
			Config:         node.Config,
			Policy:         pol,
			FlatConfig:     flatConfig,
		})
	}
	return Step{Kind: Execute, Activations: acts}, nil
}

func policyFailure(r *run.Run, nodeID string, err error, now time.Time) *run.Moment {
	msg := err.Error()
	if pe, ok := err.(*graph.PolicyError); ok && len(pe.Reasons) > 0 {
		msg = strings.Join(pe.Reasons, "; ")
	}
	return planFailure(r, FailureInvalidPolicy, msg, nodeID, nil, now)
}

func checkGraph(g *graph.Compiled, r *run.Run) error {
	if g == nil {
		return &Error{Code: CodeGraphMismatch, Message: fmt.Sprintf("run %q needs its compiled graph", r.ID)}
	}
	if r.GraphID != g.GraphID || r.GraphHash != g.Hash {
		return &Error{
			Code:    CodeGraphMismatch,
			Message: fmt.Sprintf("run %q does not match the supplied graph", r.ID),
			Details: map[string]any{
				"run_graph_id":   r.GraphID,
				"run_graph_hash": r.GraphHash,
				"graph_id":       g.GraphID,
				"graph_hash":     g.Hash,
			},
		}
	}
	return nil
}

func unknownStatus(r *run.Run) error {
	return &Error{Code: CodeInvalidRun, Message: fmt.Sprintf("run %q has unknown status %q", r.ID, r.Status)}
}
