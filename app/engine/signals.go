package engine

import (
	"context"
	"errors"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// ResolveInterrupt answers an open interrupt with v and commits the
// resolution; a dispatcher then drives the run on. It returns the
// committed run.
//
// Errors: ErrNotFound (run, or interrupt id unknown); a *RuleError for
// an already resolved interrupt (superstep.ErrAlreadyResolved), a terminal
// run (also ErrInactiveRun) or a value the interrupt's schema or resume
// field rejects (superstep.ErrInvalidInput); ErrStaleFence when other
// writers kept winning the run (nothing committed).
func (c *Client) ResolveInterrupt(ctx context.Context, runID, interruptID string, v any) (*run.Run, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	fctx, cancel := c.e.storeCall(ctx)
	current, err := c.e.backend.FetchRun(fctx, owner, runID)
	cancel()
	if err != nil {
		return nil, err
	}
	// The checks that need no graph come first: a finished run is
	// inactive even on a host where its graph no longer compiles.
	if err := superstep.CheckResolvable(current, interruptID); err != nil {
		return nil, ruleError("resolve interrupt", err)
	}
	g, err := c.e.compiled(ctx, owner, GraphRef{GraphID: current.GraphID, Hash: current.GraphHash})
	if err != nil {
		return nil, err
	}
	return c.e.signal(ctx, owner, runID, "resolve interrupt", func(r *run.Run) (*run.Moment, error) {
		return superstep.ResolveInterrupt(g, r, interruptID, v, c.e.env())
	})
}

// CancelRun cancels a running or waiting run and returns the committed
// cancelled run. Cancelling a cancelled run returns it unchanged; a done
// or failed run is a *RuleError matching ErrInactiveRun. A vehicle that
// is executing the run when the cancellation commits loses its commit.
func (c *Client) CancelRun(ctx context.Context, runID string) (*run.Run, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	return c.e.signal(ctx, owner, runID, "cancel run", func(r *run.Run) (*run.Moment, error) {
		return superstep.Cancel(r, c.e.env())
	})
}

// RetryPoisonedRun clears poison from a non-terminal run and makes it due
// now (its claim counters reset; the document and its checkpoint sequence
// do not change). A healthy run is returned unchanged. A terminal run is
// ErrInactiveRun.
func (c *Client) RetryPoisonedRun(ctx context.Context, runID string) (*run.Run, error) {
	owner, err := c.owner()
	if err != nil {
		return nil, err
	}
	sctx, cancel := c.e.storeCall(ctx)
	defer cancel()
	r, err := c.e.backend.RetryPoisonedRun(sctx, owner, runID, c.e.now())
	if err == nil {
		// A recovered run is due now; a healthy one costs a poll that
		// finds what it would have found anyway.
		c.e.nudge()
	}
	return r, err
}

// signal commits one pure mutation through RunStore.MutateRun, which
// serializes it with every other writer of the run and revokes any claim,
// so an in-flight vehicle loses its fence. A lost sequence race is
// re-evaluated up to SignalStaleRetries times.
func (e *Engine) signal(ctx context.Context, owner ports.OwnerScope, runID, op string, mutate func(*run.Run) (*run.Moment, error)) (*run.Run, error) {
	ctx, span := e.cfg.Telemetry.StartSpan(ctx, ports.FactLifecycleTransition,
		ports.Label{Key: ports.LabelOperation, Value: operationSignal})
	for attempt := 0; ; attempt++ {
		var proposed *run.Moment
		mctx, cancel := e.storeCall(ctx)
		stored, err := e.backend.MutateRun(mctx, owner, runID, func(current *run.Run) (*run.Moment, error) {
			m, err := mutate(current)
			proposed = m
			return m, err
		})
		cancel()
		if errors.Is(err, ports.ErrStaleFence) && attempt < SignalStaleRetries {
			continue
		}
		if err != nil {
			span.End(resultOf(err), nil)
			return nil, ruleError(op, err)
		}
		if proposed == nil {
			// Nothing to change (a repeat): no transition was committed.
			span.End(ports.ResultSkipped, nil)
			return stored, nil
		}
		e.afterCommit(ctx, owner, proposed)
		if dueAt(proposed, e.now()) {
			e.nudge()
		}
		span.End(ports.ResultOK, nil)
		return stored, nil
	}
}

// Operations of the lifecycle.transition span (moments have their own
// span, reported by the vehicle).
const (
	operationStart  = "start"
	operationSignal = "signal"
)

func (e *Engine) env() superstep.Env {
	return superstep.Env{Now: e.now(), NewInterruptID: func() string { return e.newID("interrupt_") }}
}
