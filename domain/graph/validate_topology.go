package graph

import (
	"slices"
	"strings"

	"github.com/docketgo/docket/domain/value"
)

// ---------------------------------------------------------------------------
// Topology
// ---------------------------------------------------------------------------

func isStartEdge(e *Edge) bool { return !e.Barrier && len(e.From) == 1 && e.From[0] == Start }

// topology requires an entry point and reports nodes no run can reach. An
// empty graph (no nodes, no edges) gets no topology diagnostics.
func (v *validator) topology() {
	if len(v.g.Nodes) == 0 && len(v.g.Edges) == 0 {
		return
	}
	hasStart := false
	for _, e := range v.g.Edges {
		hasStart = hasStart || isStartEdge(e)
	}
	if !hasStart {
		v.d.errorf(CodeNoEntrypoint, pathOf("edges"), "",
			"the graph has no edge from $start, so no node can ever run; add an edge from $start to a node")
		return
	}
	reachable, _ := reachableFromStart(v.g)
	for _, id := range value.SortedKeys(v.g.Nodes) {
		if !reachable[id] {
			v.d.errorf(CodeUnreachableNode, pathOf("nodes", id), id,
				"node %q is not reachable from $start; connect it or remove it (a barrier edge counts only when all its sources are reachable)", id)
		}
	}
}

// reachableFromStart is forward reachability from $start. A barrier edge
// makes its target reachable only when every source is: a barrier that can
// never fully fire is not a path. Each edge is visited once per source
// (plus once at the start), and the count of those visits is returned with
// the set.
func reachableFromStart(g *Graph) (map[string]bool, int) {
	reachable := map[string]bool{}
	var queue []string
	reach := func(id string) {
		if !reachable[id] {
			reachable[id] = true
			queue = append(queue, id)
		}
	}
	visits := 0
	missing := map[*Edge]int{}       // barrier edge: sources not yet reached
	outgoing := map[string][]*Edge{} // source node: edges it may open
	for _, id := range value.SortedKeys(g.Edges) {
		visits++
		e := g.Edges[id]
		switch {
		case e.To == Finish || e.To == "":
		case !e.Barrier && len(e.From) == 1 && e.From[0] == Start:
			reach(e.To)
		case !e.Barrier && len(e.From) == 1:
			outgoing[e.From[0]] = append(outgoing[e.From[0]], e)
		case e.Barrier && len(e.From) > 0 && !slices.Contains(e.From, Start):
			sources := slices.Clone(e.From)
			slices.Sort(sources)
			sources = slices.Compact(sources)
			missing[e] = len(sources)
			for _, src := range sources {
				outgoing[src] = append(outgoing[src], e)
			}
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, e := range outgoing[id] {
			visits++
			if e.Barrier {
				if missing[e]--; missing[e] > 0 {
					continue
				}
			}
			reach(e.To)
		}
	}
	return reachable, visits
}

// ---------------------------------------------------------------------------
// Cycles
// ---------------------------------------------------------------------------

// cycles warns about strongly connected components (self-loops included):
// unbounded_cycle when no superstep limit applies, unguarded_cycle when a
// limit applies but no edge inside the component has a guard. An invalid
// limit already has its invalid_policy error, so it suppresses both.
func (v *validator) cycles() {
	components := cyclicComponents(v.g)
	if len(components) == 0 {
		return
	}
	limit, ok := maxSupersteps(v.g.Policies, v.opts.MaxSupersteps)
	if !ok {
		return
	}
	for _, component := range components {
		meta := map[string]any{"nodes": stringList(component)}
		members := strings.Join(component, ", ")
		if limit == 0 {
			v.d.warnMeta(CodeUnboundedCycle, pathOf("policies", PolicyMaxSupersteps), "", meta,
				"nodes %s form a cycle with no superstep limit, so a run may never end; set the graph policy max_supersteps", members)
			continue
		}
		if !componentGuarded(v.g, component) {
			v.d.warnMeta(CodeUnguardedCycle, pathOf("nodes", component[0]), component[0], meta,
				"nodes %s form a cycle with no guarded edge, so it stops only at the limit of %d supersteps; guard an edge of the cycle", members, limit)
		}
	}
}

func componentGuarded(g *Graph, component []string) bool {
	for _, e := range g.Edges {
		if e.Guard == nil || !slices.Contains(component, e.To) {
			continue
		}
		for _, src := range e.From {
			if slices.Contains(component, src) {
				return true
			}
		}
	}
	return false
}

// nodeAdjacency maps every node to the sorted distinct nodes its edges lead
// to; each source of a barrier edge leads to the target.
func nodeAdjacency(g *Graph) map[string][]string {
	adj := make(map[string][]string, len(g.Nodes))
	for id := range g.Nodes {
		adj[id] = nil
	}
	for _, id := range value.SortedKeys(g.Edges) {
		e := g.Edges[id]
		if _, ok := g.Nodes[e.To]; !ok {
			continue
		}
		for _, src := range e.From {
			if _, ok := g.Nodes[src]; ok {
				adj[src] = append(adj[src], e.To)
			}
		}
	}
	for id := range adj {
		slices.Sort(adj[id])
		adj[id] = slices.Compact(adj[id])
	}
	return adj
}

// cyclicComponents returns the strongly connected components that contain
// a cycle (more than one node, or a self-loop), each sorted, ordered by
// first member (components are disjoint, so that order is total).
func cyclicComponents(g *Graph) [][]string {
	adj := nodeAdjacency(g)
	t := tarjan{adj: adj, index: map[string]int{}, low: map[string]int{}, onStack: map[string]bool{}}
	for _, id := range value.SortedKeys(adj) {
		if _, seen := t.index[id]; !seen {
			t.connect(id)
		}
	}
	var out [][]string
	for _, c := range t.components {
		if len(c) > 1 || slices.Contains(adj[c[0]], c[0]) {
			slices.Sort(c)
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
	return out
}

// tarjan is Tarjan's strongly connected components algorithm.
type tarjan struct {
	adj        map[string][]string
	next       int
	index      map[string]int
	low        map[string]int
	stack      []string
	onStack    map[string]bool
	components [][]string
}

func (t *tarjan) connect(n string) {
	t.index[n], t.low[n] = t.next, t.next
	t.next++
	t.stack = append(t.stack, n)
	t.onStack[n] = true
	for _, m := range t.adj[n] {
		if _, seen := t.index[m]; !seen {
			t.connect(m)
			t.low[n] = min(t.low[n], t.low[m])
		} else if t.onStack[m] {
			t.low[n] = min(t.low[n], t.index[m])
		}
	}
	if t.low[n] != t.index[n] {
		return
	}
	var component []string
	for {
		top := t.stack[len(t.stack)-1]
		t.stack = t.stack[:len(t.stack)-1]
		t.onStack[top] = false
		component = append(component, top)
		if top == n {
			break
		}
	}
	t.components = append(t.components, component)
}

// ---------------------------------------------------------------------------
// Termination
// ---------------------------------------------------------------------------

// deadEnds warns once when no edge reaches $finish, else about each node
// reachable from $start that cannot reach $finish. Unreachable nodes already
// carry unreachable_node and are skipped. A graph with no $finish edge still
// compiles: a run also ends by quiescence.
func (v *validator) deadEnds() {
	if len(v.g.Nodes) == 0 {
		return
	}
	finishers := map[string]bool{}
	for _, e := range v.g.Edges {
		if e.To == Finish {
			for _, src := range e.From {
				finishers[src] = true
			}
		}
	}
	if !v.hasFinishEdge() {
		v.d.warnf(CodeNoTerminalEdge, pathOf("edges"), "",
			"no edge leads to $finish; runs end only by quiescence, so add an edge to $finish if the graph has a natural end")
		return
	}
	reachable, _ := reachableFromStart(v.g)
	reaching, _ := nodesReachingFinish(v.g, finishers)
	for _, id := range value.SortedKeys(v.g.Nodes) {
		if reachable[id] && !reaching[id] {
			v.d.warnf(CodeDeadEndNode, pathOf("nodes", id), id,
				"node %q is reachable from $start but cannot reach $finish; add an edge onward or to $finish", id)
		}
	}
}

func (v *validator) hasFinishEdge() bool {
	for _, e := range v.g.Edges {
		if e.To == Finish {
			return true
		}
	}
	return false
}

// nodesReachingFinish is backward reachability from $finish. Each source of
// a barrier edge counts as reaching its target: an over-approximation that
// keeps dead-end warnings conservative. Each adjacency entry is visited
// once, and the count of those visits is returned with the set.
func nodesReachingFinish(g *Graph, finishers map[string]bool) (map[string]bool, int) {
	reaching := make(map[string]bool, len(finishers))
	var queue []string
	for _, id := range value.SortedKeys(finishers) {
		reaching[id] = true
		queue = append(queue, id)
	}
	adj := nodeAdjacency(g)
	incoming := make(map[string][]string, len(adj))
	for _, id := range value.SortedKeys(adj) {
		for _, to := range adj[id] {
			incoming[to] = append(incoming[to], id)
		}
	}
	visits := 0
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		for _, from := range incoming[id] {
			visits++
			if !reaching[from] {
				reaching[from] = true
				queue = append(queue, from)
			}
		}
	}
	return reaching, visits
}

// ---------------------------------------------------------------------------
// Orphaned fields
// ---------------------------------------------------------------------------

// orphanedFields warns about state fields named nowhere. Nodes read and
// write fields dynamically, so usage is over-approximated by every string in
// an output source, a guard, or a node config value (keys are not scanned).
func (v *validator) orphanedFields() {
	referenced := map[string]bool{}
	for _, o := range v.g.Outputs {
		referenced[o.Source] = true
	}
	for _, e := range v.g.Edges {
		if e.Guard != nil {
			collectGuardStrings(e.Guard, referenced)
		}
	}
	for _, n := range v.g.Nodes {
		collectStrings(n.Config, referenced)
	}
	for _, id := range value.SortedKeys(v.g.Fields) {
		if !referenced[id] {
			v.d.warnf(CodeOrphanedField, pathOf("fields", id), id,
				"state field %q is not named by any output, guard or node config value; delete it unless node code reads or writes it (node code is not scanned, so such a field is reported too)", id)
		}
	}
}

func collectGuardStrings(g *Guard, into map[string]bool) {
	for _, arg := range g.Args {
		if nested, ok := arg.(*Guard); ok {
			collectGuardStrings(nested, into)
			continue
		}
		collectStrings(arg, into)
	}
}

func collectStrings(v any, into map[string]bool) {
	switch x := v.(type) {
	case string:
		into[x] = true
	case []any:
		for _, e := range x {
			collectStrings(e, into)
		}
	case map[string]any:
		for _, e := range x {
			collectStrings(e, into)
		}
	}
}
