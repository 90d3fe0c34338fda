package graph

import (
	"strings"

	"github.com/docketgo/docket/domain/value"
)

// ---------------------------------------------------------------------------
// Edges
// ---------------------------------------------------------------------------

func (v *validator) edges() {
	for _, id := range value.SortedKeys(v.g.Edges) {
		e := v.g.Edges[id]
		v.record("edges", "edge", id, e.ID, map[string]string{
			"label": e.Label, "description": e.Description,
			"source_handle": e.SourceHandle, "target_handle": e.TargetHandle,
		})
		if e.Barrier {
			v.barrierSources(id, e.From)
		} else {
			v.singleSource(id, e.From)
		}
		v.edgeTarget(id, e.To)
	}
}

func (v *validator) singleSource(id string, from []string) {
	path := pathOf("edges", id, "from")
	if len(from) != 1 {
		v.d.errorf(CodeUnknownEdgeSource, path, id,
			"edge %q must have exactly one source ($start or a node ID), got %d; list several sources only on a barrier edge", id, len(from))
		return
	}
	switch src := from[0]; src {
	case Start:
	case Finish:
		v.d.errorf(CodeInvalidFinishEndpoint, path, id, "edge %q cannot start at $finish; $finish is only a target", id)
	default:
		if _, ok := v.g.Nodes[src]; !ok {
			v.d.errorf(CodeUnknownEdgeSource, path, id, "edge %q starts at unknown node %q; add the node or fix the source", id, src)
		}
	}
}

func (v *validator) barrierSources(id string, from []string) {
	path := pathOf("edges", id, "from")
	if len(from) == 0 {
		v.d.errorf(CodeEmptyEdgeSources, path, id, "edge %q has an empty source list; a barrier edge needs at least one source node", id)
		return
	}
	distinct := distinctInOrder(from)
	for _, src := range distinct {
		switch src {
		case Start:
			v.d.errorf(CodeInvalidStartEndpoint, path, id,
				"edge %q lists $start among barrier sources; use a separate edge from $start", id)
		case Finish:
			v.d.errorf(CodeInvalidFinishEndpoint, path, id,
				"edge %q lists $finish among barrier sources; $finish is only a target", id)
		}
	}
	if len(distinct) != len(from) {
		v.d.errorf(CodeDuplicateEdgeSource, path, id, "edge %q lists a source more than once; list each source node once", id)
	}
	for _, src := range distinct {
		if src == Start || src == Finish {
			continue
		}
		if _, ok := v.g.Nodes[src]; !ok {
			v.d.errorf(CodeUnknownEdgeSource, path, id, "edge %q lists unknown source node %q; add the node or fix the source", id, src)
		}
	}
}

func (v *validator) edgeTarget(id, to string) {
	path := pathOf("edges", id, "to")
	switch to {
	case Finish:
	case Start:
		v.d.errorf(CodeInvalidStartEndpoint, path, id, "edge %q cannot target $start; target a node or $finish", id)
	case "":
		v.d.errorf(CodeUnknownEdgeTarget, path, id, "edge %q has no target; target a node or $finish", id)
	default:
		if _, ok := v.g.Nodes[to]; !ok {
			v.d.errorf(CodeUnknownEdgeTarget, path, id, "edge %q targets unknown node %q; add the node or fix the target", id, to)
		}
	}
}

// ---------------------------------------------------------------------------
// Branch groups (editor metadata, validated but never executed)
// ---------------------------------------------------------------------------

func (v *validator) branches() {
	for _, nodeID := range value.SortedKeys(v.g.Nodes) {
		n := v.g.Nodes[nodeID]
		counts := map[string]int{}
		for _, group := range value.SortedKeys(n.Branches) {
			path := pathOf("nodes", nodeID, "branches", group)
			for _, edgeID := range n.Branches[group] {
				counts[edgeID]++
				e, ok := v.g.Edges[edgeID]
				switch {
				case !ok:
					v.d.errorf(CodeUnknownBranchEdge, path, nodeID,
						"node %q branch %q lists unknown edge %q; remove it or add the edge", nodeID, group, edgeID)
				case e.Barrier || len(e.From) != 1 || e.From[0] != nodeID:
					v.d.errorf(CodeBranchEdgeSourceMismatch, path, nodeID,
						"node %q branch %q lists edge %q, which does not start at %q; a branch may only list the node's own single-source edges",
						nodeID, group, edgeID, nodeID)
				case e.Guard == nil:
					v.d.warnf(CodeUnguardedBranchEdge, path, edgeID,
						"node %q branch %q edge %q has no guard, so it always fires; add a guard to make the branch a decision",
						nodeID, group, edgeID)
				}
			}
		}
		// Counted across groups without de-duplicating per group, so a
		// repeat inside one group is caught as well as one across groups.
		for _, edgeID := range value.SortedKeys(counts) {
			if counts[edgeID] > 1 {
				v.d.errorMeta(CodeDuplicateBranchEdge, pathOf("nodes", nodeID, "branches"), nodeID,
					map[string]any{"edge_id": edgeID},
					"node %q lists edge %q %d times in its branch groups; an edge may sit in one branch position only",
					nodeID, edgeID, counts[edgeID])
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Guards
// ---------------------------------------------------------------------------

// guards checks every edge guard. Unlike the reference, three shapes that
// would only fail when evaluated are rejected here as invalid_guard: a path
// in a boolean position (including the top level), a reference that is a
// guard other than path, and an equals value that is a guard other than
// path. A path in the equals value position is checked like a reference.
func (v *validator) guards() {
	for _, id := range value.SortedKeys(v.g.Edges) {
		if g := v.g.Edges[id].Guard; g != nil {
			v.condition(id, g)
		}
	}
}

func (v *validator) guardError(code, edgeID, format string, args ...any) {
	v.d.errorf(code, pathOf("edges", edgeID, "guard"), edgeID, "edge %q guard: "+format, append([]any{edgeID}, args...)...)
}

// condition checks a guard in a boolean position.
func (v *validator) condition(edgeID string, g *Guard) {
	malformed := func() {
		v.guardError(CodeInvalidGuard, edgeID, "%q has malformed arguments %s", g.Op, describeArgs(g.Args))
	}
	switch g.Op {
	case OpAll, OpAny:
		for i, arg := range g.Args {
			nested, ok := arg.(*Guard)
			if !ok {
				v.guardError(CodeInvalidGuard, edgeID, "argument %d of %q must be a guard, got %s", i, g.Op, describeValue(arg))
				continue
			}
			v.condition(edgeID, nested)
		}
	case OpNot:
		nested, ok := onlyGuard(g.Args)
		if !ok {
			malformed()
			return
		}
		v.condition(edgeID, nested)
	case OpChanged:
		if len(g.Args) != 1 {
			malformed()
			return
		}
		v.guardField(edgeID, g.Args[0])
	case OpVersionAtLeast:
		if len(g.Args) != 2 {
			malformed()
			return
		}
		v.guardField(edgeID, g.Args[0])
		if n, ok := g.Args[1].(int64); !ok || n < 0 {
			v.guardError(CodeInvalidGuard, edgeID, "version_at_least needs a non-negative integer version, got %s", describeValue(g.Args[1]))
		}
	case OpExists:
		if len(g.Args) != 1 {
			malformed()
			return
		}
		v.guardRef(edgeID, g.Args[0])
	case OpEquals:
		if len(g.Args) != 2 {
			malformed()
			return
		}
		v.guardRef(edgeID, g.Args[0])
		if nested, ok := g.Args[1].(*Guard); ok {
			if nested.Op != OpPath {
				v.guardError(CodeInvalidGuard, edgeID,
					"the value compared by equals may be a path but not a %q guard", nested.Op)
				return
			}
			v.guardPath(edgeID, nested)
		}
	case OpPath:
		v.guardError(CodeInvalidGuard, edgeID,
			"a path is a reference, not a condition; wrap it in exists or equals")
	default:
		v.guardError(CodeInvalidGuard, edgeID,
			"operator %q is not supported; use all, any, not, changed, version_at_least, exists or equals", g.Op)
	}
}

// guardRef checks a reference: a field ID or a path guard.
func (v *validator) guardRef(edgeID string, ref any) {
	switch r := ref.(type) {
	case string:
		v.guardField(edgeID, r)
	case *Guard:
		if r.Op != OpPath {
			v.guardError(CodeInvalidGuard, edgeID, "a reference must be a field ID or a path, not a %q guard", r.Op)
			return
		}
		v.guardPath(edgeID, r)
	default:
		v.guardError(CodeInvalidGuard, edgeID, "a reference must be a field ID or a path, got %s", describeValue(ref))
	}
}

func (v *validator) guardPath(edgeID string, p *Guard) {
	if len(p.Args) != 2 {
		v.guardError(CodeInvalidGuard, edgeID, "path needs [field, segments], got %s", describeArgs(p.Args))
		return
	}
	v.guardField(edgeID, p.Args[0])
	segments, ok := p.Args[1].([]any)
	if !ok {
		v.guardError(CodeInvalidGuardPath, edgeID, "path segments must be a list of keys and indexes, got %s", describeValue(p.Args[1]))
		return
	}
	for _, seg := range segments {
		switch seg.(type) {
		case string, int64:
		default:
			v.guardError(CodeInvalidGuardPath, edgeID, "path segment %s must be a string key or an integer index", describeValue(seg))
		}
	}
}

func (v *validator) guardField(edgeID string, ref any) {
	id, ok := ref.(string)
	if !ok {
		v.guardError(CodeUnknownGuardField, edgeID, "a field reference must be an input or state field ID, got %s", describeValue(ref))
		return
	}
	if _, ok := v.g.Inputs[id]; ok {
		return
	}
	if _, ok := v.g.Fields[id]; ok {
		return
	}
	v.guardError(CodeUnknownGuardField, edgeID, "references unknown field %q; name an input or state field", id)
}

func onlyGuard(args []any) (*Guard, bool) {
	if len(args) != 1 {
		return nil, false
	}
	g, ok := args[0].(*Guard)
	return g, ok
}

// describeArgs renders guard arguments for a message; nested guards show
// their operator.
func describeArgs(args []any) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if g, ok := a.(*Guard); ok {
			parts[i] = g.Op + "(…)"
			continue
		}
		parts[i] = describeValue(a)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func distinctInOrder(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
