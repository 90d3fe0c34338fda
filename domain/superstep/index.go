package superstep

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// index holds lookups derived from one compiled graph. A compiled graph is
// never mutated after Compile, so the index is built once, on first use,
// and dropped when the graph is garbage collected. It must not point back at
// the *graph.Compiled itself, or the graph could never be collected.
type index struct {
	// slots lists every input and state field, sorted by public ID: the keys
	// of the public state view.
	slots []slot
	// slotsByChannel is slots in channel ID order, the order of a run's
	// channels, so one walk of both finds the written slots.
	slotsByChannel []*slot
	// fields and inputs map public IDs to their slot.
	fields map[string]*slot
	inputs map[string]*slot
	// subscribers maps an edge channel to the nodes it activates.
	subscribers map[string][]string
	// boxed holds node IDs, edge IDs, edge targets, output and input IDs
	// already converted to any, so event payloads do not allocate them
	// again.
	boxed map[string]any
	// nodes holds, by node ID, what a superstep needs of each node of the
	// graph, so planning and the barrier find it with one lookup.
	nodes map[string]*nodeEntry
	// versionKeys are the slots as run.Versions reads them.
	versionKeys []run.VersionKey
	// unwrittenValues is the view of a run that wrote no channel (see
	// valuesOf); never written.
	unwrittenValues map[string]any
	// plainDefaults says every default is a scalar that planning takes as
	// portable without a check (nil, bool, string, int64), so a view's
	// checks need only its written values.
	plainDefaults bool
	// sortedOutputs is the graph's outputs by ID, the order of completion.
	sortedOutputs []*graph.RuntimeOutput
	payloads      sharedPayloads
	// longestTimeoutMS and shortestTimeoutMS bound the explicit timeout_ms
	// of the nodes with valid policies (0 when none sets one), so runners
	// check them once per call without walking the nodes.
	longestTimeoutMS, shortestTimeoutMS int
}

// nodeEntry is one node of the graph as a superstep uses it.
type nodeEntry struct {
	node   *graph.RuntimeNode
	policy resolvedPolicy
	// boxedID is the node ID as an interface value (see index.boxed).
	boxedID any
	// soleWriter is channel_updated's payload when the node is a field's
	// only writer.
	soleWriter map[string]any
	// outgoing is the node's outgoing edges the graph holds, sorted by ID,
	// each with its edge_triggered payload.
	outgoing []edgeEntry
}

// edgeEntry is one edge of the graph with its edge_triggered payload.
type edgeEntry struct {
	edge      *graph.RuntimeEdge
	triggered map[string]any
}

type resolvedPolicy struct {
	policy graph.NodePolicy
	err    error
	// flatConfig says no value of the node's config is a list or a map
	// (see Activation.FlatConfig).
	flatConfig bool
}

// slot is one input or state channel seen through its public ID.
type slot struct {
	publicID  string
	channelID string
	input     bool
	channel   *graph.Channel
}

var indexes sync.Map // weak.Pointer[graph.Compiled] -> *index

// lastIndex remembers the most recent lookup: a driver plans and settles
// the same graph over and over, and weak.Make costs a runtime lookup.
// Holding only the weak pointer keeps the graph collectable.
var lastIndex atomic.Pointer[indexEntry]

type indexEntry struct {
	key weak.Pointer[graph.Compiled]
	idx *index
}

func indexOf(g *graph.Compiled) *index {
	if e := lastIndex.Load(); e != nil && g != nil && e.key.Value() == g {
		return e.idx
	}
	idx := lookupIndex(g)
	lastIndex.Store(&indexEntry{key: weak.Make(g), idx: idx})
	return idx
}

func lookupIndex(g *graph.Compiled) *index {
	key := weak.Make(g)
	if v, ok := indexes.Load(key); ok {
		return v.(*index)
	}
	idx := buildIndex(g)
	actual, loaded := indexes.LoadOrStore(key, idx)
	if !loaded {
		runtime.AddCleanup(g, func(k weak.Pointer[graph.Compiled]) { indexes.Delete(k) }, key)
	}
	return actual.(*index)
}

func buildIndex(g *graph.Compiled) *index {
	idx := &index{
		slots:       make([]slot, 0, len(g.InputIDs)+len(g.FieldIDs)),
		fields:      make(map[string]*slot, len(g.FieldIDs)),
		inputs:      make(map[string]*slot, len(g.InputIDs)),
		subscribers: make(map[string][]string),
		boxed:       make(map[string]any, len(g.Nodes)+2*len(g.Edges)+len(g.Outputs)+len(g.InputIDs)),
		nodes:       make(map[string]*nodeEntry, len(g.Nodes)),
	}
	for _, id := range g.InputIDs {
		cid := graph.InputPrefix + id
		if ch := g.Channels[cid]; ch != nil {
			idx.slots = append(idx.slots, slot{publicID: id, channelID: cid, input: true, channel: ch})
		}
	}
	for _, id := range g.FieldIDs {
		cid := graph.StatePrefix + id
		if ch := g.Channels[cid]; ch != nil {
			idx.slots = append(idx.slots, slot{publicID: id, channelID: cid, channel: ch})
		}
	}
	slices.SortFunc(idx.slots, func(a, b slot) int {
		switch {
		case a.publicID < b.publicID:
			return -1
		case a.publicID > b.publicID:
			return 1
		}
		return 0
	})
	idx.slotsByChannel = make([]*slot, len(idx.slots))
	for i := range idx.slots {
		idx.slotsByChannel[i] = &idx.slots[i]
	}
	slices.SortFunc(idx.slotsByChannel, func(a, b *slot) int { return strings.Compare(a.channelID, b.channelID) })
	idx.unwrittenValues = make(map[string]any, len(idx.slots))
	idx.versionKeys = make([]run.VersionKey, len(idx.slots))
	idx.plainDefaults = true
	for i := range idx.slots {
		s := &idx.slots[i]
		idx.versionKeys[i] = run.VersionKey{PublicID: s.publicID, ChannelID: s.channelID}
		if s.channel.Default != nil {
			idx.unwrittenValues[s.publicID] = s.channel.Default
			switch s.channel.Default.(type) {
			case bool, string, int64:
			default:
				idx.plainDefaults = false
			}
		}
		if s.input {
			idx.inputs[s.publicID] = s
		} else {
			idx.fields[s.publicID] = s
		}
	}
	for _, id := range g.NodeIDs {
		n := g.Nodes[id]
		if n == nil {
			continue
		}
		for _, ch := range n.Subscribe {
			idx.subscribers[ch] = append(idx.subscribers[ch], id)
		}
		idx.boxed[id] = id
		pol, err := graph.ResolvePolicies(n.Policies)
		idx.nodes[id] = &nodeEntry{node: n, policy: resolvedPolicy{pol, err, flatMap(n.Config)}}
		if err == nil && pol.TimeoutMS > 0 {
			idx.longestTimeoutMS = max(idx.longestTimeoutMS, pol.TimeoutMS)
			if idx.shortestTimeoutMS == 0 || pol.TimeoutMS < idx.shortestTimeoutMS {
				idx.shortestTimeoutMS = pol.TimeoutMS
			}
		}
	}
	for id, e := range g.Edges {
		idx.boxed[id] = id
		idx.boxed[e.To] = e.To
	}
	for _, o := range g.Outputs {
		idx.boxed[o.ID] = o.ID
	}
	for _, id := range g.InputIDs {
		idx.boxed[id] = id
	}
	idx.sortedOutputs = g.Outputs
	if !slices.IsSortedFunc(g.Outputs, compareOutputs) {
		idx.sortedOutputs = slices.SortedFunc(slices.Values(g.Outputs), compareOutputs)
	}
	idx.buildPayloads(g)
	for id, ne := range idx.nodes {
		ne.boxedID = idx.boxed[id]
		ne.soleWriter = idx.payloads.soleWriter[id]
		for _, eid := range ne.node.OutgoingEdges {
			if e := g.Edges[eid]; e != nil {
				ne.outgoing = append(ne.outgoing, edgeEntry{edge: e, triggered: idx.payloads.edgeTriggered[eid]})
			}
		}
		slices.SortFunc(ne.outgoing, compareEdgeEntries)
	}
	return idx
}

func compareEdgeEntries(a, b edgeEntry) int { return strings.Compare(a.edge.ID, b.edge.ID) }

func compareOutputs(a, b *graph.RuntimeOutput) int { return strings.Compare(a.ID, b.ID) }

// box returns s as an interface value, reusing the index's copy when s is a
// graph ID.
func (idx *index) box(s string) any {
	if v, ok := idx.boxed[s]; ok {
		return v
	}
	return s
}

// box returns the node's boxed ID, or id itself when the graph does not
// hold the node (ne is nil).
func (ne *nodeEntry) box(id string) any {
	if ne == nil {
		return id
	}
	return ne.boxedID
}

// soleWriterPayload is channel_updated's payload when the node is the only
// one of writers writers, else nil.
func (ne *nodeEntry) soleWriterPayload(writers int) map[string]any {
	if ne == nil || writers != 1 {
		return nil
	}
	return ne.soleWriter
}

// boxList is ss as a payload list, reusing the index's copies of graph IDs.
func (idx *index) boxList(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = idx.box(s)
	}
	return out
}

// policy resolves a node's policies. The compiled graph is immutable, so
// the answer is computed once per graph.
func (idx *index) policy(g *graph.Compiled, nodeID string) (graph.NodePolicy, error) {
	pol, _, err := idx.nodePolicy(g, nodeID)
	return pol, err
}

// nodePolicy is policy and whether the node's config is flat, from one
// lookup.
func (idx *index) nodePolicy(g *graph.Compiled, nodeID string) (graph.NodePolicy, bool, error) {
	if ne := idx.nodes[nodeID]; ne != nil {
		return ne.policy.policy, ne.policy.flatConfig, ne.policy.err
	}
	pol, err := graph.ResolvePolicies(g.Nodes[nodeID].Policies)
	return pol, false, err
}

// flatMap says no value of m is a list or a map.
func flatMap(m map[string]any) bool {
	for _, v := range m {
		switch v.(type) {
		case []any, map[string]any:
			return false
		}
	}
	return true
}
