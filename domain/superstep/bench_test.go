package superstep_test

import (
	"fmt"
	"testing"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// chainGraph is $start→n0→…→n(k-1)→$finish, every node writing "out".
func chainGraph(b testing.TB, k int) *graph.Compiled {
	d := newDoc("chain").input("in", str(), nil).field("out", str(), nil).output("out", "out")
	prev := "$start"
	for i := range k {
		id := fmt.Sprintf("n%02d", i)
		d.nodes(id).edge("e_"+id, prev, id, nil)
		prev = id
	}
	d.edge("e_finish", prev, "$finish", nil)
	return d.compile(b, graph.Options{})
}

// BenchmarkChain10 measures the domain cost of a whole 10-node run: init,
// ten supersteps (plan, settle) and completion.
func BenchmarkChain10(b *testing.B) {
	g := chainGraph(b, 10)
	env := superstep.Env{Now: t0}
	results := []superstep.Result{{Outcome: superstep.OutcomeUpdate, Update: map[string]any{"out": "v"}}}
	b.ReportAllocs()
	for b.Loop() {
		m, err := superstep.Start(g, superstep.StartParams{RunID: "run_b", Input: map[string]any{"in": "x"}}, env)
		if err != nil {
			b.Fatal(err)
		}
		r := m.Run
		for r.Status == run.StatusRunning {
			step, err := superstep.Advance(g, r, env)
			if err != nil {
				b.Fatal(err)
			}
			switch step.Kind {
			case superstep.Commit:
				r = step.Moment.Run
			case superstep.Execute:
				m, err := superstep.Settle(g, r, step, results, env)
				if err != nil {
					b.Fatal(err)
				}
				r = m.Run
			default:
				b.Fatalf("unexpected step %v", step.Kind)
			}
		}
		if r.Status != run.StatusDone {
			b.Fatalf("run ended %s", r.Status)
		}
	}
}
