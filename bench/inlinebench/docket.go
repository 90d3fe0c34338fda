// Package inlinebench builds the inline (no database) benchmark workloads:
// the same three graph shapes — one node, a 10-node chain, and an 8-way
// fan-out joined by a fan-in node — as Docket graphs run through
// app/inline, as the bare domain loop of domain/superstep (no executor),
// and as Eino compose graphs of no-op lambdas.
//
// Every workload is a Case: a name, the system it measures and an Op that
// runs one whole graph from input to output. The Go benchmarks and the
// docketbench command measure the same Ops, so both report the same thing.
//
// It is not a test of behaviour: it checks only what a benchmark must (that
// a run finished and produced its output), so a broken Op cannot report a
// fast time.
package inlinebench

import (
	"context"
	"fmt"
	"time"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

// Shape names one graph shape.
type Shape string

// The measured shapes.
const (
	// Single is $start → n00 → $finish.
	Single Shape = "single"
	// Chain10 is $start → n00 → … → n09 → $finish.
	Chain10 Shape = "chain10"
	// FanOut8 is $start → b0…b7 (in parallel) → join (a barrier edge
	// waiting for all eight) → $finish.
	FanOut8 Shape = "fanout8"
)

// Shapes lists every shape in report order.
var Shapes = []Shape{Single, Chain10, FanOut8}

// System names what runs a case.
type System string

// The measured systems.
const (
	// Docket is app/inline.RunInline: the whole inline runner with the
	// executor, building the run document, events and checkpoints.
	Docket System = "docket-inline"
	// DocketCaller is Docket with inline.OnCallingGoroutine: the loop and
	// single-node supersteps' nodes run on the caller's goroutine, as
	// Eino's do.
	DocketCaller System = "docket-inline-caller"
	// DomainLoop is domain/superstep's Start/Advance/Settle without the
	// executor (results are supplied directly): the pure domain cost.
	DomainLoop System = "docket-domain"
	// Eino is a compiled cloudwego/eino compose graph of no-op lambdas.
	Eino System = "eino"
)

// Case is one measurable workload. Op runs one whole graph and returns an
// error when it did not produce the expected result.
type Case struct {
	Shape  Shape
	System System
	Op     func(context.Context) error
}

// Name is "<system>/<shape>".
func (c Case) Name() string { return string(c.System) + "/" + string(c.Shape) }

// noopRef is the registry reference of the no-op node.
const noopRef = "bench.noop"

// nodeOutput is what every Docket node writes: its own state field, the
// counterpart of an Eino lambda handing its value on.
const nodeValue = "v"

// registry holds the one node implementation every shape uses: it writes
// {config.field: "v"}, so each node produces one state update (a fold, a
// channel_updated event) as an Eino lambda produces one output.
func registry() *node.Registry {
	return node.NewRegistry().MustRegister(noopRef, node.New(
		schema.Object(map[string]*schema.Schema{"field": schema.String().AsRequired()}),
		func(_ context.Context, in node.Input) (node.Output, error) {
			return node.Update(map[string]any{in.Config["field"].(string): nodeValue}), nil
		}))
}

func nodeID(prefix string, i int) string { return fmt.Sprintf("%s%02d", prefix, i) }

// DocketGraph builds the document of a shape. Every node writes its own
// state field; the output "out" is the last node's field.
func DocketGraph(s Shape) (*graph.Graph, error) {
	b := graph.New("bench-"+string(s)).Input("in", schema.String(), graph.Required())
	writes := func(field string) graph.RecordOption {
		return graph.Config(map[string]any{"field": field})
	}
	switch s {
	case Single, Chain10:
		n := 1
		if s == Chain10 {
			n = 10
		}
		prev := graph.Start
		for i := range n {
			id := nodeID("n", i)
			b.State(id, schema.String()).Node(id, noopRef, writes(id)).Edge("e_"+id, prev, id)
			prev = id
		}
		b.Edge("e_finish", prev, graph.Finish).Output("out", prev)
	case FanOut8:
		branches := make([]string, 8)
		for i := range branches {
			id := nodeID("b", i)
			branches[i] = id
			b.State(id, schema.String()).Node(id, noopRef, writes(id)).Edge("e_"+id, graph.Start, id)
		}
		b.State("join", schema.String()).Node("join", noopRef, writes("join")).
			Join("e_join", branches, "join").
			Edge("e_finish", "join", graph.Finish).
			Output("out", "join")
	default:
		return nil, fmt.Errorf("unknown shape %q", s)
	}
	return b.Build()
}

// steps is the number of supersteps a shape commits.
func steps(s Shape) int {
	switch s {
	case Chain10:
		return 10
	case FanOut8:
		return 2
	}
	return 1
}

// frozen is the clock of every Docket case: reading the real clock is not
// what is being measured, and a frozen clock keeps runs byte-identical.
var frozen = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// DocketCase runs the shape through inline.RunInline against a graph
// compiled once (as Eino's graph is compiled once), with a fixed run ID and
// a frozen clock. The run must end done with out = "v" and
// steps+2 checkpoints (init, one per superstep, completion).
func DocketCase(s Shape) (Case, error) { return docketCase(s, Docket) }

// DocketCallerCase is DocketCase with inline.OnCallingGoroutine.
func DocketCallerCase(s Shape) (Case, error) {
	return docketCase(s, DocketCaller, inline.OnCallingGoroutine())
}

func docketCase(s Shape, system System, extra ...inline.Option) (Case, error) {
	doc, err := DocketGraph(s)
	if err != nil {
		return Case{}, err
	}
	reg := registry()
	compiled, err := graph.Compile(doc, reg, graph.Options{Profile: graph.ProfileRun})
	if err != nil {
		return Case{}, err
	}
	opts := []inline.Option{
		inline.WithRegistry(reg),
		inline.WithRunID("run_bench"),
		inline.WithClock(func() time.Time { return frozen }),
	}
	opts = append(opts, extra...)
	input := map[string]any{"in": "x"}
	want := steps(s) + 2
	return Case{Shape: s, System: system, Op: func(ctx context.Context) error {
		r, cps, err := inline.RunInline(ctx, compiled, input, opts...)
		if err != nil {
			return err
		}
		return checkDone(r, len(cps), want)
	}}, nil
}

// DomainLoopCase runs the shape through superstep.Start, Advance and
// Settle with every activation's result supplied directly: the cost of the
// domain alone, including the run document, events and checkpoint metadata.
func DomainLoopCase(s Shape) (Case, error) {
	doc, err := DocketGraph(s)
	if err != nil {
		return Case{}, err
	}
	compiled, err := graph.Compile(doc, registry(), graph.Options{Profile: graph.ProfileRun})
	if err != nil {
		return Case{}, err
	}
	env := superstep.Env{Now: frozen}
	params := superstep.StartParams{RunID: "run_bench", Input: map[string]any{"in": "x"}}
	// One prepared update per node, as the executor would return it.
	updates := make(map[string][]superstep.Result, len(compiled.NodeIDs))
	for _, id := range compiled.NodeIDs {
		field := compiled.Nodes[id].Config["field"].(string)
		updates[id] = []superstep.Result{{Outcome: superstep.OutcomeUpdate, Update: map[string]any{field: nodeValue}}}
	}
	want := steps(s) + 2
	return Case{Shape: s, System: DomainLoop, Op: func(context.Context) error {
		m, err := superstep.Start(compiled, params, env)
		if err != nil {
			return err
		}
		r, moments := m.Run, 1
		var results []superstep.Result
		for !r.Status.Terminal() {
			step, err := superstep.Advance(compiled, r, env)
			if err != nil {
				return err
			}
			switch step.Kind {
			case superstep.Commit:
				m = step.Moment
			case superstep.Execute:
				results = results[:0]
				for _, a := range step.Activations {
					results = append(results, updates[a.NodeID]...)
				}
				if m, err = superstep.Settle(compiled, r, step, results, env); err != nil {
					return err
				}
			default:
				return fmt.Errorf("unexpected step kind %d", step.Kind)
			}
			_ = m.Checkpoint()
			r = m.Run
			moments++
		}
		return checkDone(r, moments, want)
	}}, nil
}

func checkDone(r *run.Run, checkpoints, want int) error {
	switch {
	case r.Status != run.StatusDone:
		return fmt.Errorf("run ended %s", r.Status)
	case r.Output["out"] != nodeValue:
		return fmt.Errorf("run output %v, want out=%q", r.Output, nodeValue)
	case checkpoints != want:
		return fmt.Errorf("%d checkpoints, want %d", checkpoints, want)
	}
	return nil
}
