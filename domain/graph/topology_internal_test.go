package graph

import (
	"fmt"
	"testing"
)

// chainTopology is $start→n(k-1)→…→n0→$finish, or the same chain with
// its node and edge IDs in flow order when ascending: sorted IDs then
// either follow the flow or run against it.
func chainTopology(t *testing.T, k int, ascending bool) *Graph {
	t.Helper()
	name := func(i int) string {
		if ascending {
			i = k - 1 - i
		}
		return fmt.Sprintf("n%05d", i)
	}
	b := New("chain")
	prev := Start
	for i := k - 1; i >= 0; i-- {
		b.Node(name(i), "test.node").Edge("e_"+name(i), prev, name(i))
		prev = name(i)
	}
	b.Edge("e_finish", prev, Finish)
	g, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestReachabilityIsLinearInTheGraph bounds the work of the two
// reachability passes of validation by a constant times nodes plus edges,
// whatever order the IDs sort in: a pass per newly reached node makes a
// chain of a few thousand nodes take seconds to validate.
func TestReachabilityIsLinearInTheGraph(t *testing.T) {
	const k = 2000
	for _, ascending := range []bool{true, false} {
		g := chainTopology(t, k, ascending)
		size := len(g.Nodes) + len(g.Edges)
		reachable, forward := reachableFromStart(g)
		if len(reachable) != k {
			t.Fatalf("ascending=%v: %d nodes reachable from $start, want %d", ascending, len(reachable), k)
		}
		reaching, backward := nodesReachingFinish(g, map[string]bool{g.Edges["e_finish"].From[0]: true})
		if len(reaching) != k {
			t.Fatalf("ascending=%v: %d nodes reach $finish, want %d", ascending, len(reaching), k)
		}
		if forward > 4*size || backward > 4*size {
			t.Errorf("ascending=%v: reachability visited %d (forward) and %d (backward) entries of a graph of %d nodes and edges",
				ascending, forward, backward, size)
		}
	}
}
