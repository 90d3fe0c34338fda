// Package render draws graph documents for people: Mermaid flowcharts,
// Graphviz DOT, and a plain-text picture for terminals, each optionally
// overlaid with the state of one run (which nodes completed, run, retry,
// wait for an interrupt or failed, and which edges fired).
//
// Rendering is deterministic: nodes follow a breadth-first walk from
// $start (ties by id), edges follow their source, then their id.
package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// NodeState is the overlay state of one node.
type NodeState string

// Node states, from the run's point of view.
const (
	NodeCompleted NodeState = "completed"
	NodeRunning   NodeState = "running"
	NodeRetrying  NodeState = "retrying"
	NodeWaiting   NodeState = "waiting"
	NodeFailed    NodeState = "failed"
)

// Overlay is one run's state drawn over its graph.
type Overlay struct {
	RunID  string
	Status run.Status
	// Nodes maps node ids to their state; absent nodes have not run.
	Nodes map[string]NodeState
	// Edges holds the ids of edges that fired at least once.
	Edges map[string]bool
}

// OverlayOf derives the overlay of r, a run of g, from its document and
// its retained events. The document keeps, whatever was pruned, the edges
// into nodes that fired (their channels' versions) and so the nodes they
// fired from, and the sources a join has seen: those marks survive event
// retention. A node whose completion fired no such edge (only edges to
// $finish, or only edges whose guards failed) is marked completed by its
// node_completed event alone, so not once that event is pruned.
func OverlayOf(g *graph.Graph, r *run.Run, events []run.Event) *Overlay {
	o := &Overlay{RunID: r.ID, Status: r.Status, Nodes: map[string]NodeState{}, Edges: map[string]bool{}}
	for _, ch := range r.Channels {
		edgeID, ok := strings.CutPrefix(ch.ID, graph.EdgePrefix)
		if !ok || ch.Version < 1 {
			continue
		}
		o.Edges[edgeID] = true
		if e := edgeOf(g, edgeID); e != nil {
			for _, from := range e.From {
				o.completed(g, from)
			}
		}
	}
	for _, seen := range r.BarrierSeen {
		for _, from := range seen {
			o.completed(g, from)
		}
	}
	for _, e := range events {
		switch e.Type {
		case run.EventNodeCompleted:
			o.Nodes[e.NodeID] = NodeCompleted
		case run.EventNodeFailed:
			if permanent, _ := e.Payload["permanent"].(bool); permanent {
				o.Nodes[e.NodeID] = NodeFailed
			}
		case run.EventEdgeTriggered:
			if id, ok := e.Payload["edge_id"].(string); ok {
				o.Edges[id] = true
			}
		}
	}
	// The committed document says what is happening now; it wins over
	// history.
	for _, t := range r.ActiveTasks {
		if t.Status == run.TaskRetryScheduled {
			o.Nodes[t.NodeID] = NodeRetrying
		} else {
			o.Nodes[t.NodeID] = NodeRunning
		}
	}
	for _, in := range r.Interrupts {
		if in.Status == run.InterruptOpen {
			o.Nodes[in.NodeID] = NodeWaiting
		}
	}
	if r.Failure != nil && r.Failure.NodeID != "" {
		o.Nodes[r.Failure.NodeID] = NodeFailed
	}
	return o
}

// completed marks node id of g completed ($start is no node).
func (o *Overlay) completed(g *graph.Graph, id string) {
	if g != nil && g.Nodes[id] != nil {
		o.Nodes[id] = NodeCompleted
	}
}

// edgeOf is edge id of g, or nil.
func edgeOf(g *graph.Graph, id string) *graph.Edge {
	if g == nil {
		return nil
	}
	return g.Edges[id]
}

func (o *Overlay) node(id string) NodeState {
	if o == nil {
		return ""
	}
	return o.Nodes[id]
}

func (o *Overlay) fired(edgeID string) bool { return o != nil && o.Edges[edgeID] }

// layout is the deterministic drawing order of a graph.
type layout struct {
	g     *graph.Graph
	nodes []string      // node ids in walk order
	edges []*graph.Edge // edges by source order, then id
}

func layoutOf(g *graph.Graph) layout {
	l := layout{g: g}
	// Walk from $start: a node is placed when the first edge reaching it
	// is followed; unreachable nodes go last, by id.
	out := map[string][]*graph.Edge{}
	for _, id := range sortedKeys(g.Edges) {
		e := g.Edges[id]
		for _, from := range e.From {
			out[from] = append(out[from], e)
		}
	}
	placed := map[string]bool{}
	queue := []string{graph.Start}
	for len(queue) > 0 {
		from := queue[0]
		queue = queue[1:]
		for _, e := range out[from] {
			if _, isNode := g.Nodes[e.To]; isNode && !placed[e.To] {
				placed[e.To] = true
				l.nodes = append(l.nodes, e.To)
				queue = append(queue, e.To)
			}
		}
	}
	for _, id := range sortedKeys(g.Nodes) {
		if !placed[id] {
			l.nodes = append(l.nodes, id)
		}
	}
	rank := map[string]int{graph.Start: -1}
	for i, id := range l.nodes {
		rank[id] = i
	}
	for _, id := range sortedKeys(g.Edges) {
		l.edges = append(l.edges, g.Edges[id])
	}
	slices.SortStableFunc(l.edges, func(a, b *graph.Edge) int {
		return edgeRank(a, rank) - edgeRank(b, rank)
	})
	return l
}

// noSource stands for the source of a single-source edge whose document
// names none: render draws invalid drafts too, and the compiler reports the
// edge.
const noSource = "(no source)"

// sourceOf is the source a single-source edge is drawn from.
func sourceOf(e *graph.Edge) string {
	if len(e.From) == 0 {
		return noSource
	}
	return e.From[0]
}

// edgeRank orders an edge by its latest source, so a join is drawn after
// every branch it waits for.
func edgeRank(e *graph.Edge, rank map[string]int) int {
	r := -1
	for _, from := range e.From {
		if v, ok := rank[from]; ok && v > r {
			r = v
		}
	}
	return r
}

func (l layout) label(id string) string {
	if n := l.g.Nodes[id]; n != nil && n.Label != "" {
		return n.Label
	}
	return id
}

// GuardText renders a guard as a short expression: route == "manual",
// not (...), a and b, exists(x), changed(x), version(x) >= 2.
func GuardText(g *graph.Guard) string {
	if g == nil {
		return ""
	}
	switch g.Op {
	case graph.OpEquals:
		if len(g.Args) == 2 {
			return refText(g.Args[0]) + " == " + operandText(g.Args[1])
		}
	case graph.OpNot:
		if len(g.Args) == 1 {
			if inner, ok := g.Args[0].(*graph.Guard); ok && inner.Op == graph.OpEquals && len(inner.Args) == 2 {
				return refText(inner.Args[0]) + " != " + operandText(inner.Args[1])
			}
			return "not (" + argText(g.Args[0]) + ")"
		}
	case graph.OpAll, graph.OpAny:
		if len(g.Args) == 0 {
			if g.Op == graph.OpAll {
				return "true"
			}
			return "false"
		}
		joiner := " and "
		if g.Op == graph.OpAny {
			joiner = " or "
		}
		parts := make([]string, len(g.Args))
		for i, a := range g.Args {
			parts[i] = argText(a)
			if inner, ok := a.(*graph.Guard); ok && (inner.Op == graph.OpAll || inner.Op == graph.OpAny) && len(inner.Args) > 1 {
				parts[i] = "(" + parts[i] + ")"
			}
		}
		return strings.Join(parts, joiner)
	case graph.OpExists, graph.OpChanged:
		if len(g.Args) == 1 {
			return g.Op + "(" + refText(g.Args[0]) + ")"
		}
	case graph.OpVersionAtLeast:
		if len(g.Args) == 2 {
			return "version(" + refText(g.Args[0]) + ") >= " + operandText(g.Args[1])
		}
	case graph.OpPath:
		return pathText(g)
	}
	// An unusual shape: show it generically rather than guess.
	parts := make([]string, len(g.Args))
	for i, a := range g.Args {
		parts[i] = argText(a)
	}
	return g.Op + "(" + strings.Join(parts, ", ") + ")"
}

func argText(a any) string {
	if g, ok := a.(*graph.Guard); ok {
		return GuardText(g)
	}
	return operandText(a)
}

// refText renders a field reference (a field id or a path).
func refText(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case *graph.Guard:
		return GuardText(v)
	}
	return operandText(a)
}

func pathText(g *graph.Guard) string {
	if len(g.Args) == 0 {
		return "path()"
	}
	field, _ := g.Args[0].(string)
	var b strings.Builder
	b.WriteString(field)
	if len(g.Args) > 1 {
		segments, _ := g.Args[1].([]any)
		for _, s := range segments {
			switch v := s.(type) {
			case string:
				b.WriteString("." + v)
			case int64:
				b.WriteString("[" + strconv.FormatInt(v, 10) + "]")
			default:
				fmt.Fprintf(&b, "[%v]", v)
			}
		}
	}
	return b.String()
}

// operandText renders a literal the way JSON would (strings quoted).
func operandText(a any) string {
	switch v := a.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case *graph.Guard:
		return GuardText(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = operandText(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := sortedKeys(v)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ": " + operandText(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(a)
}

// policyText describes a node's policies (its retries and its attempt
// timeout), or "" when it sets none.
func policyText(n *graph.Node) string {
	policy, err := graph.ResolvePolicies(n.Policies)
	if err != nil {
		return ""
	}
	var parts []string
	if policy.MaxAttempts > 1 {
		parts = append(parts, fmt.Sprintf("retries: up to %d attempts, %dms backoff", policy.MaxAttempts, policy.BackoffMS))
	}
	if policy.TimeoutMS > 0 {
		parts = append(parts, fmt.Sprintf("timeout: %dms per attempt", policy.TimeoutMS))
	}
	return strings.Join(parts, "; ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
