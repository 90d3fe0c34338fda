package superstep

import (
	"slices"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/value"
)

// sharedPayloads are the event payloads that depend on the graph alone,
// built once per graph and carried by every event of every run of the
// graph that needs one. Events are read-only values (see run.Event); a map
// per event was, for a ten-node chain, about a seventh of everything a run
// allocates.
type sharedPayloads struct {
	// edgeTriggered is {"edge_id", "to"} by edge ID; startEdgeTriggered
	// is {"edge_id"}, what an edge fired at initialization carries. Every
	// edge of the graph has both.
	edgeTriggered, startEdgeTriggered map[string]map[string]any
	// soleWriter is {"writers": [node ID]} by node ID: a channel update
	// with one writer.
	soleWriter map[string]map[string]any
	// firstAttempt is {"attempt": 1}: a node completing its first attempt.
	firstAttempt map[string]any
	// firstVersion is {"version": 1}: an input written at initialization.
	firstVersion map[string]any
	// everyInput is {"inputs": everyInputID}: initialization with every
	// input given.
	everyInput   map[string]any
	everyInputID []string
	// outputs is {"outputs": [every output ID, sorted]}: completion.
	outputs map[string]any
}

func (idx *index) buildPayloads(g *graph.Compiled) {
	p := &idx.payloads
	p.edgeTriggered = make(map[string]map[string]any, len(g.Edges))
	p.startEdgeTriggered = make(map[string]map[string]any, len(g.StartEdges))
	for id, e := range g.Edges {
		p.edgeTriggered[id] = map[string]any{"edge_id": idx.box(id), "to": idx.box(e.To)}
	}
	for _, id := range g.StartEdges {
		p.startEdgeTriggered[id] = map[string]any{"edge_id": idx.box(id)}
	}
	p.soleWriter = make(map[string]map[string]any, len(g.NodeIDs))
	for _, id := range g.NodeIDs {
		p.soleWriter[id] = map[string]any{"writers": []any{idx.box(id)}}
	}
	p.firstAttempt = map[string]any{"attempt": int64(1)}
	p.firstVersion = map[string]any{"version": int64(1)}
	p.everyInputID = value.SortedKeys(idx.inputs)
	p.everyInput = map[string]any{"inputs": idx.boxList(p.everyInputID)}
	ids := make([]any, len(idx.sortedOutputs))
	for i, o := range idx.sortedOutputs {
		ids[i] = idx.box(o.ID)
	}
	p.outputs = map[string]any{"outputs": ids}
}

// completedPayload is node_completed's payload for attempt.
func (idx *index) completedPayload(attempt int) map[string]any {
	if attempt == 1 {
		return idx.payloads.firstAttempt
	}
	return map[string]any{"attempt": int64(attempt)}
}

// writersPayload is channel_updated's payload for writers (boxed node IDs).
func (idx *index) writersPayload(writers []any) map[string]any {
	if len(writers) == 1 {
		if id, ok := writers[0].(string); ok {
			if p, ok := idx.payloads.soleWriter[id]; ok {
				return p
			}
		}
	}
	return map[string]any{"writers": slices.Clone(writers)}
}

// initializedPayload is run_initialized's payload for the given inputs
// (sorted).
func (idx *index) initializedPayload(given []string) map[string]any {
	if slices.Equal(given, idx.payloads.everyInputID) {
		return idx.payloads.everyInput
	}
	return map[string]any{"inputs": idx.boxList(given)}
}
