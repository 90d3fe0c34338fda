package graph

import (
	"slices"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// Keys of Compiled.Metadata (the lowering metadata).
const (
	MetaPublicToRuntime = "public_to_runtime" // collection -> public ID -> runtime ID
	MetaRuntimeToPublic = "runtime_to_public" // runtime ID -> {"kind", "id"}
	MetaGenerated       = "generated"         // edge channel ID -> {"kind": "activation_channel", "public_edge_id"}
	MetaBranches        = "branches"          // node ID -> group -> edge IDs
)

// lower turns a validated effective graph into its runtime form (spec
// §4.4). Every list is sorted and every value is derived only from the
// graph and opts, so compiling twice gives equal results. The lowered parts
// share no mutable containers with eff, which Compiled keeps as Effective.
func lower(eff *Graph, hash string, opts Options) *Compiled {
	limit, _ := maxSupersteps(eff.Policies, opts.MaxSupersteps)
	c := &Compiled{
		ID:            eff.ID + "@" + hash[:idHashPrefix],
		GraphID:       eff.ID,
		Hash:          hash,
		Effective:     eff,
		Channels:      map[string]*Channel{},
		Nodes:         map[string]*RuntimeNode{},
		Edges:         map[string]*RuntimeEdge{},
		Outputs:       []*RuntimeOutput{},
		StartEdges:    []string{},
		InputIDs:      value.SortedKeys(eff.Inputs),
		FieldIDs:      value.SortedKeys(eff.Fields),
		NodeIDs:       value.SortedKeys(eff.Nodes),
		MaxSupersteps: limit,
	}

	for _, id := range c.InputIDs {
		f := eff.Inputs[id]
		c.Channels[InputPrefix+id] = &Channel{
			ID:         InputPrefix + id,
			PublicID:   id,
			Kind:       ChannelInput,
			Schema:     cloneSchema(f.Schema),
			Reducer:    reducer.Reducer{Type: reducer.LastValue},
			Default:    value.Clone(f.Default),
			HasDefault: f.Default != nil,
			Required:   f.Required,
		}
	}

	for _, id := range c.FieldIDs {
		f := eff.Fields[id]
		ch := &Channel{
			ID:       StatePrefix + id,
			PublicID: id,
			Kind:     ChannelState,
			Schema:   cloneSchema(f.Schema),
			Reducer:  reducer.Reducer{Type: reducer.LastValue},
		}
		if f.Reducer != nil {
			ch.Reducer = reducer.Reducer{Type: f.Reducer.Type, Opts: cloneMap(f.Reducer.Opts)}
		}
		// Unlike the reference (field.default || zero), an explicit false
		// default is kept: only nil means "no default".
		if f.Default != nil {
			ch.Default, ch.HasDefault = value.Clone(f.Default), true
		} else if zero, ok := ch.Reducer.Zero(); ok {
			ch.Default, ch.HasDefault = value.Clone(zero), true
		}
		c.Channels[ch.ID] = ch
	}

	subscribers := map[string][]string{} // node -> edge channel IDs
	outgoing := map[string][]string{}    // node -> edge IDs
	for _, id := range value.SortedKeys(eff.Edges) {
		e := eff.Edges[id]
		ch := &Channel{ID: EdgePrefix + id, PublicID: id, Kind: ChannelEphemeral}
		if e.Barrier {
			ch.Kind = ChannelBarrier
			ch.Sources = slices.Sorted(slices.Values(e.From))
		}
		c.Channels[ch.ID] = ch
		guard, _ := canonicalGuard(e.Guard, nil) // already canonical: a plain deep copy
		c.Edges[id] = &RuntimeEdge{
			ID:        id,
			ChannelID: ch.ID,
			From:      slices.Clone(e.From),
			To:        e.To,
			Guard:     guard,
			Barrier:   e.Barrier,
		}
		if isStartEdge(e) {
			c.StartEdges = append(c.StartEdges, id)
		}
		if e.To != Finish {
			subscribers[e.To] = append(subscribers[e.To], ch.ID)
		}
		for _, src := range distinctInOrder(e.From) {
			outgoing[src] = append(outgoing[src], id)
		}
	}

	for _, id := range c.NodeIDs {
		n := eff.Nodes[id]
		subscribe := slices.Sorted(slices.Values(subscribers[id]))
		if subscribe == nil {
			subscribe = []string{}
		}
		out := slices.Sorted(slices.Values(outgoing[id]))
		if out == nil {
			out = []string{}
		}
		c.Nodes[id] = &RuntimeNode{
			ID:             id,
			RuntimeID:      NodePrefix + id,
			Implementation: n.Implementation.Ref,
			Config:         cloneMap(n.Config),
			Policies:       cloneMap(n.Policies),
			Metadata:       cloneMap(n.Metadata),
			Subscribe:      subscribe,
			OutgoingEdges:  out,
		}
	}

	for _, id := range value.SortedKeys(eff.Outputs) {
		o := eff.Outputs[id]
		source, channel := eff.Inputs[o.Source], InputPrefix+o.Source
		if source == nil {
			source, channel = eff.Fields[o.Source], StatePrefix+o.Source
		}
		s := o.Schema
		if s == nil {
			s = source.Schema
		}
		c.Outputs = append(c.Outputs, &RuntimeOutput{
			ID:            id,
			RuntimeID:     OutputPrefix + id,
			SourceChannel: channel,
			Schema:        cloneSchema(s),
		})
	}

	c.Metadata = loweringMetadata(eff)
	return c
}

// loweringMetadata maps every runtime ID back to public intent, names the
// generated activation channels and carries the branch groups for editors.
// It holds only portable values.
func loweringMetadata(g *Graph) map[string]any {
	publicToRuntime := map[string]any{}
	runtimeToPublic := map[string]any{}
	add := func(collection, kind, prefix string, ids []string) {
		m := make(map[string]any, len(ids))
		for _, id := range ids {
			m[id] = prefix + id
			runtimeToPublic[prefix+id] = map[string]any{"kind": kind, "id": id}
		}
		publicToRuntime[collection] = m
	}
	add("inputs", "input", InputPrefix, value.SortedKeys(g.Inputs))
	add("fields", "field", StatePrefix, value.SortedKeys(g.Fields))
	add("nodes", "node", NodePrefix, value.SortedKeys(g.Nodes))
	add("edges", "edge", EdgePrefix, value.SortedKeys(g.Edges))
	add("outputs", "output", OutputPrefix, value.SortedKeys(g.Outputs))

	generated := make(map[string]any, len(g.Edges))
	for id := range g.Edges {
		generated[EdgePrefix+id] = map[string]any{"kind": "activation_channel", "public_edge_id": id}
	}

	branches := map[string]any{}
	for id, n := range g.Nodes {
		if len(n.Branches) == 0 {
			continue
		}
		groups := make(map[string]any, len(n.Branches))
		for group, edges := range n.Branches {
			groups[group] = stringList(edges)
		}
		branches[id] = groups
	}

	return map[string]any{
		MetaPublicToRuntime: publicToRuntime,
		MetaRuntimeToPublic: runtimeToPublic,
		MetaGenerated:       generated,
		MetaBranches:        branches,
	}
}

func cloneSchema(s *schema.Schema) *schema.Schema {
	if s == nil {
		return nil
	}
	return s.Clone()
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return value.Clone(m).(map[string]any)
}
