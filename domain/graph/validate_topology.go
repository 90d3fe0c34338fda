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
	reachable := reachableFromStart(v.g)
	for _, id := range value.SortedKeys(v.g.Nodes) {
		if !reachable[id] {
			v.d.errorf(CodeUnreachableNode, pathOf("nodes", id), id,
				"node %q is not reachable from $start; connect it or remove it (a barrier edge counts only when all its sources are reachable)", id)
		}
	}
}

// reachableFromStart is the fixpoint of forward reachability from $start. A
// barrier edge makes its target reachable only when every source is: a
// barrier that can never fully fire is not a path.
func reachableFromStart(g *Graph) map[string]bool {
	reachable := map[string]bool{}
	edgeIDs := value.SortedKeys(g.Edges)
	for changed := true; changed; {
		changed = false
		for _, id := range edgeIDs {
			e := g.Edges[id]
			if e.To == Finish || e.To == "" || reachable[e.To] || !traversable(e, reachable) {
				continue
			}
			reachable[e.To] = true
			changed = true
		}
	}
	return reachable
}

func traversable(e *Edge, reachable map[string]bool) bool {
	if !e.Barrier {
		return len(e.From) == 1 && (e.From[0] == Start || reachable[e.From[0]])
	}
	if len(e.From) == 0 {
		return false
	}
	for _, src := range e.From {
		if !reachable[src] {
			return false
		}
	}
	return true
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
			if _, ok := g.Nodes[src]; ok && !slices.Contains(adj[src], e.To) {
				adj[src] = append(adj[src], e.To)
			}
		}
	}
	for id := range adj {
		slices.Sort(adj[id])
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
	reachable := reachableFromStart(v.g)
	reaching := nodesReachingFinish(v.g, finishers)
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
// keeps dead-end warnings conservative.
func nodesReachingFinish(g *Graph, finishers map[string]bool) map[string]bool {
	reaching := make(map[string]bool, len(finishers))
	for id := range finishers {
		reaching[id] = true
	}
	adj := nodeAdjacency(g)
	ids := value.SortedKeys(adj)
	for changed := true; changed; {
		changed = false
		for _, id := range ids {
			if reaching[id] {
				continue
			}
			for _, to := range adj[id] {
				if reaching[to] {
					reaching[id] = true
					changed = true
					break
				}
			}
		}
	}
	return reaching
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
				"state field %q is not named by any output, guard or node config value; delete it if nothing uses it", id)
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
