package superstep

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
)

type anyConfig struct{}

func (anyConfig) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

// drawGraph compiles a random acyclic graph: nodes n0..nk, each reached
// from $start or from earlier nodes (one or several sources, a join when
// several), some edges to $finish, some nodes with a retry policy.
func drawGraph(t *rapid.T) *graph.Compiled {
	n := rapid.IntRange(1, 7).Draw(t, "nodes")
	b := graph.New("drawn").Input("in", schema.String())
	for i := range n {
		id := fmt.Sprintf("n%d", i)
		var opts []graph.RecordOption
		if rapid.Bool().Draw(t, "retry "+id) {
			opts = append(opts, graph.Retry(2, 0))
		}
		b.State(id, schema.String()).Node(id, "impl", opts...)
		var from []string
		for j := range i {
			if rapid.IntRange(0, 2).Draw(t, fmt.Sprintf("edge n%d-%s", j, id)) == 0 {
				from = append(from, fmt.Sprintf("n%d", j))
			}
		}
		switch {
		case len(from) == 0:
			b.Edge("e_"+id, graph.Start, id)
		case len(from) == 1 || rapid.Bool().Draw(t, "split "+id):
			for _, src := range from {
				b.Edge("e_"+src+"_"+id, src, id)
			}
		default:
			b.Join("j_"+id, from, id)
		}
		if i == n-1 || rapid.IntRange(0, 3).Draw(t, "finish "+id) == 0 {
			b.Edge("f_"+id, id, graph.Finish)
		}
	}
	doc, err := b.Build()
	require.NoError(t, err)
	g, err := graph.Compile(doc, anyConfig{}, graph.Options{Profile: graph.ProfileRun})
	require.NoError(t, err)
	return g
}

// The index's node entries say what the graph's maps say: a superstep that
// finds a node, its policy, its outgoing edges and their payloads through
// one entry sees what the string-keyed lookups of the graph would give.
func TestPropertyNodeEntriesAgreeWithTheGraph(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := drawGraph(t)
		idx := buildIndex(g)
		require.Len(t, idx.nodes, len(g.Nodes))
		for id, node := range g.Nodes {
			ne := idx.nodes[id]
			require.NotNil(t, ne, id)
			require.Same(t, node, ne.node)
			pol, err := graph.ResolvePolicies(node.Policies)
			require.Equal(t, pol, ne.policy.policy)
			require.Equal(t, err, ne.policy.err)
			require.Equal(t, id, ne.box(id))
			require.Equal(t, map[string]any{"writers": []any{id}}, ne.soleWriterPayload(1))
			require.Nil(t, ne.soleWriterPayload(2))
			var want []string
			for _, eid := range node.OutgoingEdges {
				if g.Edges[eid] != nil {
					want = append(want, eid)
				}
			}
			got := make([]string, len(ne.outgoing))
			for i, ee := range ne.outgoing {
				got[i] = ee.edge.ID
				require.Same(t, g.Edges[ee.edge.ID], ee.edge)
				require.Equal(t, map[string]any{"edge_id": ee.edge.ID, "to": ee.edge.To}, ee.triggered)
			}
			require.Equal(t, len(want), len(got))
			if len(want) > 0 {
				require.Equal(t, want, got, "outgoing edges in ID order")
			}
		}
	})
}

// A node the graph does not hold has no entry, and the barrier's helpers
// fall back to the plain ID and to building the payload.
func TestMissingNodeEntryFallsBack(t *testing.T) {
	var ne *nodeEntry
	require.Equal(t, "ghost", ne.box("ghost"))
	require.Nil(t, ne.soleWriterPayload(1))
}
