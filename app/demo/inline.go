package demo

import (
	"context"
	"fmt"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/domain/run"
)

// Result is a finished inline demo run with every checkpoint of both calls.
type Result struct {
	Run         *run.Run
	Checkpoints []run.Checkpoint
}

// Execute runs one demo application inline, without a store: it drives the
// run until it waits for approval, resolves the interrupt with "approved",
// and drives it to the end. opts are passed to both inline calls (tests
// inject a clock or a sleeper).
func Execute(ctx context.Context, opts ...inline.Option) (*Result, error) {
	g, err := Graph()
	if err != nil {
		return nil, err
	}
	opts = append([]inline.Option{inline.WithRegistry(Registry())}, opts...)
	r, cps, err := inline.RunInline(ctx, g, Input, opts...)
	if err != nil {
		return nil, fmt.Errorf("demo: run: %w", err)
	}
	if r.Status != run.StatusWaiting {
		return nil, fmt.Errorf("demo: expected the run to wait for approval, it is %s", r.Status)
	}
	r, more, err := inline.ResolveInterruptInline(ctx, g, r, ApprovalInterruptID, "approved", opts...)
	cps = append(cps, more...)
	if err != nil {
		return nil, fmt.Errorf("demo: resolve approval: %w", err)
	}
	return &Result{Run: r, Checkpoints: cps}, nil
}
