package inlinebench

import (
	"context"
	"fmt"

	"github.com/cloudwego/eino/compose"
)

// einoState is what flows between Eino lambdas: a map, the type Eino merges
// by default at a fan-in.
type einoState = map[string]any

// EinoCase builds the shape as an Eino graph of no-op lambdas (each returns
// a one-entry map naming itself, so the fan-in merges eight distinct keys),
// compiles it once, and invokes it per Op. The chain and the single node
// use Eino's default (Pregel) trigger mode; the fan-out uses
// AllPredecessor so the join runs once, after all eight branches, as
// Docket's barrier edge does.
func EinoCase(ctx context.Context, s Shape) (Case, error) {
	g := compose.NewGraph[einoState, einoState]()
	lambda := func(key string) *compose.Lambda {
		return compose.InvokableLambda(func(_ context.Context, _ einoState) (einoState, error) {
			return einoState{key: nodeValue}, nil
		})
	}
	var opts []compose.GraphCompileOption
	var last string
	switch s {
	case Single, Chain10:
		n := 1
		if s == Chain10 {
			n = 10
		}
		prev := compose.START
		for i := range n {
			id := nodeID("n", i)
			if err := g.AddLambdaNode(id, lambda(id)); err != nil {
				return Case{}, err
			}
			if err := g.AddEdge(prev, id); err != nil {
				return Case{}, err
			}
			prev = id
		}
		last = prev
	case FanOut8:
		if err := g.AddLambdaNode("join", lambda("join")); err != nil {
			return Case{}, err
		}
		for i := range 8 {
			id := nodeID("b", i)
			if err := g.AddLambdaNode(id, lambda(id)); err != nil {
				return Case{}, err
			}
			if err := g.AddEdge(compose.START, id); err != nil {
				return Case{}, err
			}
			if err := g.AddEdge(id, "join"); err != nil {
				return Case{}, err
			}
		}
		last = "join"
		opts = append(opts, compose.WithNodeTriggerMode(compose.AllPredecessor))
	default:
		return Case{}, fmt.Errorf("unknown shape %q", s)
	}
	if err := g.AddEdge(last, compose.END); err != nil {
		return Case{}, err
	}
	runnable, err := g.Compile(ctx, opts...)
	if err != nil {
		return Case{}, err
	}
	input := einoState{"in": "x"}
	return Case{Shape: s, System: Eino, Op: func(ctx context.Context) error {
		out, err := runnable.Invoke(ctx, input)
		if err != nil {
			return err
		}
		if out[last] != nodeValue {
			return fmt.Errorf("eino output %v, want %s=%q", out, last, nodeValue)
		}
		return nil
	}}, nil
}

// Cases builds every case of every shape, in report order: for each shape
// Docket inline, Docket inline on the calling goroutine, Eino, then the
// domain loop.
func Cases(ctx context.Context) ([]Case, error) {
	var out []Case
	for _, s := range Shapes {
		d, err := DocketCase(s)
		if err != nil {
			return nil, fmt.Errorf("docket %s: %w", s, err)
		}
		c, err := DocketCallerCase(s)
		if err != nil {
			return nil, fmt.Errorf("docket on the calling goroutine %s: %w", s, err)
		}
		e, err := EinoCase(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("eino %s: %w", s, err)
		}
		l, err := DomainLoopCase(s)
		if err != nil {
			return nil, fmt.Errorf("domain loop %s: %w", s, err)
		}
		out = append(out, d, c, e, l)
	}
	return out, nil
}
