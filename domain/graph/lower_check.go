package graph

import (
	"github.com/docketgo/docket/domain/value"
)

// checkLowered verifies the invariants the runtime relies on. A failure is a
// compiler bug or an unsupported shape; it is still reported as diagnostics
// (never a panic) so a bad graph can never reach a run.
func checkLowered(c *Compiled) []Diagnostic {
	var d diagnostics
	lowerErr := func(code string, path []any, publicID, runtimeID, format string, args ...any) {
		d.errorf(code, path, publicID, format, args...)
		d[len(d)-1].RuntimeID = runtimeID
	}

	// Runtime IDs are unique across channels, nodes and outputs.
	counts := map[string]int{}
	for _, key := range value.SortedKeys(c.Channels) {
		ch := c.Channels[key]
		counts[ch.ID]++
		if ch.ID != key {
			lowerErr(CodeLoweringInvariantFailed, []any{}, ch.PublicID, key,
				"runtime channel %q is stored under the key %q", ch.ID, key)
		}
	}
	for _, id := range value.SortedKeys(c.Nodes) {
		counts[c.Nodes[id].RuntimeID]++
	}
	for _, o := range c.Outputs {
		counts[o.RuntimeID]++
	}
	for _, rid := range value.SortedKeys(counts) {
		if counts[rid] > 1 {
			lowerErr(CodeRuntimeIDCollision, []any{}, "", rid,
				"generated runtime ID %q is used %d times; runtime IDs must be unique", rid, counts[rid])
		}
	}

	mapping, _ := c.Metadata[MetaRuntimeToPublic].(map[string]any)
	subscribed := map[string]bool{}
	for _, id := range value.SortedKeys(c.Nodes) {
		n := c.Nodes[id]
		for _, ch := range n.Subscribe {
			subscribed[ch] = true
			if _, ok := c.Channels[ch]; !ok {
				lowerErr(CodeMissingRuntimeChannel, pathOf("nodes", id), id, ch,
					"runtime node %q subscribes to the missing channel %q", n.RuntimeID, ch)
			}
		}
		for _, edgeID := range n.OutgoingEdges {
			e, ok := c.Edges[edgeID]
			if !ok {
				lowerErr(CodeLoweringInvariantFailed, pathOf("nodes", id), id, n.RuntimeID,
					"runtime node %q lists the outgoing edge %q, which was not lowered", n.RuntimeID, edgeID)
				continue
			}
			if _, ok := c.Channels[e.ChannelID]; !ok {
				lowerErr(CodeLoweringInvariantFailed, pathOf("nodes", id), id, n.RuntimeID,
					"runtime node %q lists the outgoing edge %q, whose channel %q is missing", n.RuntimeID, edgeID, e.ChannelID)
			}
		}
		if !mapsToPublic(c.Effective, mapping, n.RuntimeID) {
			lowerErr(CodeLoweringInvariantFailed, pathOf("nodes", id), id, n.RuntimeID,
				"runtime node %q does not map back to a public node", n.RuntimeID)
		}
	}
	for _, key := range value.SortedKeys(c.Channels) {
		if !mapsToPublic(c.Effective, mapping, key) {
			lowerErr(CodeLoweringInvariantFailed, []any{}, c.Channels[key].PublicID, key,
				"runtime channel %q does not map back to a public input, field or edge", key)
		}
	}
	for _, o := range c.Outputs {
		if _, ok := c.Channels[o.SourceChannel]; !ok {
			lowerErr(CodeMissingRuntimeChannel, pathOf("outputs", o.ID), o.ID, o.RuntimeID,
				"output %q publishes the missing channel %q", o.ID, o.SourceChannel)
		}
	}
	for _, id := range value.SortedKeys(c.Edges) {
		e := c.Edges[id]
		start := len(e.From) == 1 && e.From[0] == Start && !e.Barrier
		if _, ok := c.Nodes[e.To]; start && e.To != Finish && !ok {
			lowerErr(CodeLoweringInvariantFailed, pathOf("edges", id), id, e.ChannelID,
				"start edge %q activates the missing runtime node %q", id, e.To)
		}
		if e.To == Finish && subscribed[e.ChannelID] {
			lowerErr(CodeLoweringInvariantFailed, pathOf("edges", id), id, e.ChannelID,
				"finish edge %q has a node subscribed to its channel; nothing may subscribe to a $finish edge", id)
		}
	}
	return d
}

// mapsToPublic reports whether a runtime ID maps back to a record of the
// effective graph through the lowering metadata.
func mapsToPublic(g *Graph, mapping map[string]any, runtimeID string) bool {
	entry, _ := mapping[runtimeID].(map[string]any)
	id, _ := entry["id"].(string)
	if g == nil || id == "" {
		return false
	}
	var ok bool
	switch entry["kind"] {
	case "input":
		_, ok = g.Inputs[id]
	case "field":
		_, ok = g.Fields[id]
	case "node":
		_, ok = g.Nodes[id]
	case "edge":
		_, ok = g.Edges[id]
	case "output":
		_, ok = g.Outputs[id]
	}
	return ok
}
