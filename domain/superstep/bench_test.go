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
	results := []superstep.Result{{Outcome: superstep.OutcomeUpdate, Update: map[string]any{"out": "v"}}}
	b.ReportAllocs()
	for b.Loop() {
		runToEnd(b, g, func(superstep.Step) []superstep.Result { return results })
	}
}

// fanJoinGraph is $start → b0…b(k-1) → join (one barrier edge over every
// branch) → $finish; no node writes state.
func fanJoinGraph(b testing.TB, k int) *graph.Compiled {
	d := newDoc("fanjoin").input("in", str(), nil).field("out", str(), nil).output("out", "out")
	from := make([]any, k)
	for i := range k {
		id := fmt.Sprintf("b%05d", i)
		d.nodes(id).edge("e_"+id, "$start", id, nil)
		from[k-1-i] = id // sources listed out of node order
	}
	d.nodes("join").edge("e_join", from, "join", nil).edge("e_finish", "join", "$finish", nil)
	return d.compile(b, graph.Options{})
}

// BenchmarkFanJoin measures a whole run of a wide fan-out and join, whose
// cost must grow about linearly with the number of branches.
func BenchmarkFanJoin(b *testing.B) {
	for _, k := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			g := fanJoinGraph(b, k)
			b.ReportAllocs()
			for b.Loop() {
				runToEnd(b, g, func(step superstep.Step) []superstep.Result {
					results := make([]superstep.Result, len(step.Activations))
					for i := range results {
						results[i] = superstep.Result{Outcome: superstep.OutcomeUpdate, Update: map[string]any{}}
					}
					return results
				})
			}
		})
	}
}

// runToEnd drives a run of g from its start until it is done, settling
// every execute step with the results results gives.
func runToEnd(b *testing.B, g *graph.Compiled, results func(superstep.Step) []superstep.Result) {
	env := superstep.Env{Now: t0}
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
			m, err := superstep.Settle(g, r, step, results(step), env)
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
