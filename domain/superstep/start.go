package superstep

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
)

// Start initializes a new run (fresh init, spec 7.1): validates the input,
// writes the provided inputs, fires passing $start edges and returns the
// run_initialized moment (disposition continue). Errors: invalid_input,
// guard_evaluation_failed. Nothing commits on error.
func Start(g *graph.Compiled, p StartParams, env Env) (*run.Moment, error) {
	if g == nil {
		return nil, &Error{Code: CodeGraphMismatch, Phase: "init", Message: "a compiled graph is required"}
	}
	if p.RunID == "" {
		return nil, &Error{Code: CodeInvalidRun, Phase: "init", Message: "run id must be non-empty"}
	}
	idx := indexOf(g)
	input, keys, err := validateInput(idx, p.Input)
	if err != nil {
		return nil, err
	}
	metadata := map[string]any{}
	if len(p.Metadata) > 0 {
		n, err := value.Normalize(p.Metadata)
		if err != nil {
			return nil, invalidInput("init", "run metadata is not portable", []string{"metadata: " + err.Error()})
		}
		metadata = n.(map[string]any)
	}

	channels := make(run.Channels, 0, len(keys)+len(g.StartEdges))
	for _, k := range keys {
		channels.Set(run.Channel{ID: idx.inputs[k].channelID, Value: input[k], Version: 1})
	}

	// $start behaves as a completed virtual source: its edges see the
	// provided inputs as changed.
	var fired []*graph.RuntimeEdge
	var view *graph.View
	startEdges := g.StartEdges
	if !slices.IsSorted(startEdges) {
		startEdges = slices.Sorted(slices.Values(startEdges))
	}
	for _, id := range startEdges {
		e := g.Edges[id]
		if e == nil {
			continue
		}
		if e.Guard != nil {
			if view == nil {
				// Only guards read the changed set: built on first need.
				changed := make(map[string]bool, len(keys))
				for _, k := range keys {
					changed[k] = true
				}
				v := idx.guardView(channels, changed)
				view = &v
			}
			pass, err := e.Guard.Eval(*view)
			if err != nil {
				return nil, &Error{
					Code:    CodeGuardEvaluationFailed,
					Phase:   "init",
					Message: "edge " + id + " guard evaluation failed",
					Details: map[string]any{"edge_id": id, "reasons": stringList(guardReasons(err))},
				}
			}
			if !pass {
				continue
			}
		}
		bump(&channels, e.ChannelID, true)
		fired = append(fired, e)
	}

	now := utc(env.Now)
	changedChannels := make([]string, 0, len(keys)+len(fired))
	events := make([]run.Event, 0, 1+len(keys)+len(fired)+1)
	events = append(events, run.Event{Type: run.EventRunInitialized, Payload: idx.initializedPayload(keys)})
	for _, k := range keys {
		cid := idx.inputs[k].channelID
		changedChannels = append(changedChannels, cid)
		events = append(events, run.Event{Type: run.EventChannelUpdated, ChannelID: cid, Payload: idx.payloads.firstVersion})
	}
	for _, e := range fired {
		changedChannels = append(changedChannels, e.ChannelID)
		events = append(events, run.Event{Type: run.EventEdgeTriggered, ChannelID: e.ChannelID, Payload: idx.payloads.startEdgeTriggered[e.ID]})
	}
	slices.Sort(changedChannels)
	changedChannels = slices.Compact(changedChannels)

	next := run.Run{
		ID:              p.RunID,
		GraphID:         g.GraphID,
		GraphHash:       g.Hash,
		Status:          run.StatusRunning,
		Input:           input,
		StartedAt:       now,
		UpdatedAt:       now,
		Channels:        slices.Clip(channels),
		ChangedChannels: changedChannels,
		Metadata:        metadata,
	}
	return run.ProposeNext(nil, next, events, run.CheckpointRunInitialized, run.Disposition{Kind: run.DispositionContinue}, now), nil
}

// validateInput normalizes and checks a run input (spec 7.1): reasons come
// in the order unknown keys, missing required inputs, schema violations.
// It returns the input with its sorted keys.
func validateInput(idx *index, raw map[string]any) (map[string]any, []string, error) {
	input := make(map[string]any, len(raw))
	var reasons []string
	// Normalizing keeps every key, so these are the input's keys too.
	keys := value.SortedKeys(raw)
	for _, k := range keys {
		v, err := value.Normalize(raw[k])
		if err != nil {
			reasons = append(reasons, "input "+strconv.Quote(k)+": "+err.Error())
			continue
		}
		input[k] = v
	}
	if len(reasons) > 0 {
		return nil, nil, invalidInput("init", "run input is not portable", reasons)
	}
	for _, k := range keys {
		if idx.inputs[k] == nil {
			reasons = append(reasons, "unknown input "+strconv.Quote(k))
		}
	}
	for i := range idx.slots {
		s := &idx.slots[i]
		if !s.input || !s.channel.Required || s.channel.Default != nil {
			continue
		}
		if _, ok := input[s.publicID]; !ok {
			reasons = append(reasons, "required input "+strconv.Quote(s.publicID)+" is missing")
		}
	}
	for _, k := range keys {
		s := idx.inputs[k]
		if s == nil || s.channel.Schema == nil {
			continue
		}
		for _, reason := range s.channel.Schema.Validate(input[k]) {
			reasons = append(reasons, "input "+strconv.Quote(k)+": "+reason)
		}
	}
	if len(reasons) > 0 {
		return nil, nil, invalidInput("init", "run input is invalid", reasons)
	}
	return input, keys, nil
}

// Resume is the saved init of a stored running or waiting run (spec 7.1):
// only UpdatedAt changes and the event is run_initialized {"resumed": true}.
// Terminal runs return (nil, nil). Errors: graph_mismatch, invalid_run.
func Resume(g *graph.Compiled, r *run.Run, env Env) (*run.Moment, error) {
	if err := checkGraph(g, r); err != nil {
		return nil, err
	}
	disposition := run.Disposition{Kind: run.DispositionContinue}
	switch r.Status {
	case run.StatusRunning:
	case run.StatusWaiting:
		disposition = run.Disposition{Kind: run.DispositionExternal, Reason: run.ReasonAwaitingInterrupts}
	case run.StatusCreated:
		return nil, &Error{Code: CodeInvalidRun, Phase: "init", Message: fmt.Sprintf("run %q was never initialized; start it instead", r.ID)}
	default:
		if r.Status.Terminal() {
			return nil, nil
		}
		return nil, unknownStatus(r)
	}
	now := utc(env.Now)
	next := *r
	next.UpdatedAt = now
	events := []run.Event{{Type: run.EventRunInitialized, Step: r.Step, Payload: map[string]any{"resumed": true}}}
	return run.ProposeNext(r, next, events, run.CheckpointRunInitialized, disposition, now), nil
}
