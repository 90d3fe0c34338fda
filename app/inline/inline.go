// Package inline runs a graph to completion within one call: the same
// plan, execute, settle and commit loop as the durable worker, with the
// store replaced by "accept the moment and keep it". It is meant for
// tests, examples and tools that want a workflow's semantics (checkpoints,
// retries, interrupts, reducers, guards) without a database.
//
// By default the loop runs on a goroutine of its own that the caller's
// goroutine watches, so a node that ignores its context cannot hold the
// call past the node's deadline or the caller's context; with
// OnCallingGoroutine it runs on the caller's goroutine, as a plain
// function call would.
//
// Every function takes the graph first (after the context), then the run
// or input it works on, then the options. Every call returns the latest
// committed run and the checkpoints accepted during the call, in order,
// even when it returns an error.
package inline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// Graph is what the runner accepts: an authored document, compiled with
// profile run against the registry (node-config defaults materialized), or
// an already compiled graph.
type Graph interface {
	*graph.Graph | *graph.Compiled
}

// ErrNoRun is returned when a call that continues a run is given none.
var ErrNoRun = errors.New("inline: no run given")

// RunInline compiles g, checks its execution policy, initializes a new run
// from input and drives it until it is terminal, waits on an interrupt, or
// reaches the WithMaxSteps limit.
//
// A graph that does not compile returns an error wrapping
// graph.ErrInvalidGraph (a *graph.CompileError with every diagnostic); an
// invalid input returns a superstep invalid_input error; neither returns a
// run or checkpoints.
func RunInline[G Graph](ctx context.Context, g G, input map[string]any, opts ...Option) (*run.Run, []run.Checkpoint, error) {
	d, err := newDriver(g, opts)
	if err != nil {
		return nil, nil, err
	}
	r, err := d.start(d.cfg.runID, input, d.cfg.metadata)
	if err != nil {
		return nil, nil, err
	}
	r, err = d.drive(ctx, r)
	return r, d.checkpoints, err
}

// NewRun returns a created (never stored) run of g for StepInline, built
// from input and the WithRunID and WithMetadata options.
func NewRun[G Graph](g G, input map[string]any, opts ...Option) (*run.Run, error) {
	d, err := newDriver(g, opts)
	if err != nil {
		return nil, err
	}
	id := d.cfg.runID
	if id == "" {
		id = d.cfg.newID("run_")
	}
	return &run.Run{
		ID:        id,
		GraphID:   d.g.GraphID,
		GraphHash: d.g.Hash,
		Status:    run.StatusCreated,
		Input:     input,
		Metadata:  d.cfg.metadata,
	}, nil
}

// StepInline commits exactly one transition of r: a created run is only
// initialized; a running run commits its next superstep, retry park or
// terminal moment (waiting out uncommitted retry deadlines first); a
// waiting or terminal run is returned unchanged with no checkpoints. A nil
// graph is an error wrapping graph.ErrInvalidGraph.
func StepInline[G Graph](ctx context.Context, g G, r *run.Run, opts ...Option) (*run.Run, []run.Checkpoint, error) {
	if r == nil {
		return nil, nil, ErrNoRun
	}
	d, err := newDriver(g, opts)
	if err != nil {
		return r, nil, err
	}
	switch {
	case r.Status == run.StatusCreated:
		next, err := d.startCreated(r)
		if err != nil {
			return r, nil, err
		}
		return next, d.checkpoints, nil
	case r.Status.Terminal():
		return r, nil, nil
	}
	next, err := d.watch(ctx, r, true)
	return next, d.checkpoints, err
}

// ResumeInline continues a saved run: it commits a saved init (a
// run_initialized checkpoint with {"resumed": true}) and drives on. A
// terminal run is returned unchanged; a created run is initialized afresh.
// A run of another graph version fails with graph_mismatch.
func ResumeInline[G Graph](ctx context.Context, g G, r *run.Run, opts ...Option) (*run.Run, []run.Checkpoint, error) {
	if r == nil {
		return nil, nil, ErrNoRun
	}
	d, err := newDriver(g, opts)
	if err != nil {
		return r, nil, err
	}
	var next *run.Run
	if r.Status == run.StatusCreated {
		next, err = d.startCreated(r)
	} else {
		var m *run.Moment
		m, err = superstep.Resume(d.g, r, d.env(time.Time{}))
		if err == nil && m == nil {
			return r, nil, nil // terminal: nothing to resume
		}
		if err == nil {
			next, err = d.accept(r, m)
		}
	}
	if err != nil {
		return r, nil, err
	}
	next, err = d.drive(ctx, next)
	return next, d.checkpoints, err
}

// ResolveInterruptInline resolves an open interrupt of r with v at the
// clock's time, accepts the interrupt_resolved checkpoint and drives on.
func ResolveInterruptInline[G Graph](ctx context.Context, g G, r *run.Run, interruptID string, v any, opts ...Option) (*run.Run, []run.Checkpoint, error) {
	if r == nil {
		return nil, nil, ErrNoRun
	}
	d, err := newDriver(g, opts)
	if err != nil {
		return r, nil, err
	}
	m, err := superstep.ResolveInterrupt(d.g, r, interruptID, v, d.env(time.Time{}))
	if err != nil {
		return r, nil, err
	}
	next, err := d.accept(r, m)
	if err != nil {
		return r, nil, err
	}
	next, err = d.drive(ctx, next)
	return next, d.checkpoints, err
}

// driver holds one call's compiled graph, options and accepted checkpoints.
type driver struct {
	g              *graph.Compiled
	cfg            config
	exec           executor.Executor
	checkpoints    []run.Checkpoint
	newInterruptID func() string // built once: every transition's Env carries it
	// watchEvery is how long the watchdog may sleep without looking at a
	// running attempt: no attempt of the graph has a shorter deadline.
	watchEvery time.Duration
}

func newDriver[G Graph](g G, opts []Option) (*driver, error) {
	d := &driver{}
	if err := setConfig(&d.cfg, opts); err != nil {
		return nil, err
	}
	cfg := &d.cfg
	compiled, err := compile(g, *cfg)
	if err != nil {
		return nil, err
	}
	if err := superstep.CheckExecutionPolicy(compiled, int(cfg.maxAttemptElapsed.Milliseconds())); err != nil {
		return nil, err
	}
	d.g = compiled
	d.exec = executor.Executor{Nodes: cfg.registry, MaxAttemptElapsed: cfg.maxAttemptElapsed}
	d.newInterruptID = func() string { return d.cfg.newID("interrupt_") }
	d.watchEvery = d.exec.Deadline(superstep.ShortestTimeoutMS(compiled))
	return d, nil
}

func compile[G Graph](g G, cfg config) (*graph.Compiled, error) {
	switch g := any(g).(type) {
	case *graph.Graph:
		if g == nil {
			return nil, fmt.Errorf("inline: no graph given: %w", graph.ErrInvalidGraph)
		}
		c, err := graph.Compile(g, cfg.registry, graph.Options{Profile: graph.ProfileRun, MaxSupersteps: cfg.maxSupersteps})
		if err != nil {
			return nil, fmt.Errorf("inline: compile graph %q: %w", g.ID, err)
		}
		return c, nil
	case *graph.Compiled:
		if g == nil {
			return nil, fmt.Errorf("inline: no graph given: %w", graph.ErrInvalidGraph)
		}
		if g.MaxSupersteps == 0 && cfg.maxSupersteps > 0 {
			// The runtime default applies to a graph without its own limit;
			// the caller's compiled graph itself is left alone.
			limited := *g
			limited.MaxSupersteps = cfg.maxSupersteps
			return &limited, nil
		}
		return g, nil
	}
	panic("unreachable: Graph admits only *graph.Graph and *graph.Compiled")
}

// start commits the fresh initialization of a new run.
func (d *driver) start(runID string, input, metadata map[string]any) (*run.Run, error) {
	if runID == "" {
		runID = d.cfg.newID("run_")
	}
	m, err := superstep.Start(d.g, superstep.StartParams{RunID: runID, Input: input, Metadata: metadata}, d.env(time.Time{}))
	if err != nil {
		return nil, err
	}
	return d.accept(uncommitted, m)
}

// uncommitted is what a new run's initialization is fenced on: nothing
// committed, sequence 0. It is never written.
var uncommitted = &run.Run{}

// startCreated initializes a created run built by NewRun (or by hand).
func (d *driver) startCreated(r *run.Run) (*run.Run, error) {
	if (r.GraphID != "" || r.GraphHash != "") && (r.GraphID != d.g.GraphID || r.GraphHash != d.g.Hash) {
		return nil, &superstep.Error{
			Code:    superstep.CodeGraphMismatch,
			Phase:   "init",
			Message: fmt.Sprintf("run %q does not match the supplied graph", r.ID),
			Details: map[string]any{
				"run_graph_id": r.GraphID, "run_graph_hash": r.GraphHash,
				"graph_id": d.g.GraphID, "graph_hash": d.g.Hash,
			},
		}
	}
	return d.start(r.ID, r.Input, r.Metadata)
}

// tickOutcome says how one advance ended.
type tickOutcome int

const (
	// advanced: a continue or immediate commit; it counts toward max steps.
	advanced tickOutcome = iota + 1
	// parkedAt: a committed park until a time, already slept through.
	parkedAt
	// waited: nothing was due; the wait was slept through, nothing committed.
	waited
	// stopped: the run needs a signal, is terminal, or an error occurred.
	stopped
)

// drive advances r until it stops, an error occurs, or max steps is reached.
func (d *driver) drive(ctx context.Context, r *run.Run) (*run.Run, error) {
	return d.watch(ctx, r, false)
}

// tick plans, executes and commits at most one moment.
func (v *drive) tick(attempt **executor.Direct) (*run.Run, tickOutcome, time.Time, error) {
	d, ctx, r, floor := v.d, v.ctx, v.r, v.floor
	if err := ctx.Err(); err != nil {
		return r, stopped, floor, err
	}
	step, err := superstep.Advance(d.g, r, d.env(floor))
	if err != nil {
		return r, stopped, floor, err
	}
	switch step.Kind {
	case superstep.Execute:
		results, err := v.execute(step, attempt)
		if err != nil {
			return r, stopped, floor, abandonedSuperstep(r.ID, err)
		}
		return v.settle(step, results)
	case superstep.Commit:
		return v.commit(step.Moment)
	case superstep.Park:
		if err := d.cfg.sleeper(ctx, step.Wait); err != nil {
			return r, stopped, floor, err
		}
		return r, waited, step.ResumeAt, nil
	case superstep.Wait, superstep.Terminal:
		return r, stopped, floor, nil
	default:
		return r, stopped, floor, fmt.Errorf("inline: unknown step kind %d", step.Kind)
	}
}

// settle folds the executed step's results and commits the moment.
func (v *drive) settle(step superstep.Step, results []superstep.Result) (*run.Run, tickOutcome, time.Time, error) {
	// The clock is read again: timestamps and retry deadlines count from
	// the end of execution.
	m, err := superstep.Settle(v.d.g, v.r, step, results, v.d.env(v.floor))
	if err != nil {
		return v.r, stopped, v.floor, err
	}
	return v.commit(m)
}

// commit accepts m and serves a committed park.
func (v *drive) commit(m *run.Moment) (*run.Run, tickOutcome, time.Time, error) {
	next, err := v.d.accept(v.r, m)
	if err != nil {
		return v.r, stopped, v.floor, err
	}
	switch m.Disposition.Kind {
	case run.DispositionContinue, run.DispositionImmediate:
		return next, advanced, time.Time{}, nil
	case run.DispositionAt:
		// The park is accepted before the sleeper runs, as a durable worker
		// commits before releasing its claim.
		if err := v.d.cfg.sleeper(v.ctx, max(0, m.Disposition.At.Sub(next.UpdatedAt))); err != nil {
			return next, stopped, v.floor, err
		}
		return next, parkedAt, m.Disposition.At, nil
	default:
		return next, stopped, v.floor, nil
	}
}

// accept plays the store: the moment must be fenced on the committed run's
// checkpoint sequence; its run becomes the committed run.
func (d *driver) accept(committed *run.Run, m *run.Moment) (*run.Run, error) {
	if m == nil || m.Run == nil {
		return committed, errors.New("inline: the runtime proposed an empty moment")
	}
	if m.ExpectedSeq() != committed.CheckpointSeq {
		return committed, fmt.Errorf("inline: moment proposes checkpoint %d but run %q is at %d",
			m.Run.CheckpointSeq, committed.ID, committed.CheckpointSeq)
	}
	if d.checkpoints == nil {
		// Room for initialization, a superstep per node and completion, so
		// an acyclic run without retries appends without growing; nil
		// until something commits.
		d.checkpoints = make([]run.Checkpoint, 0, len(d.g.NodeIDs)+2)
	}
	d.checkpoints = append(d.checkpoints, m.Checkpoint())
	return m.Run, nil
}

func (d *driver) env(floor time.Time) superstep.Env {
	return superstep.Env{
		Now:            d.cfg.now(),
		ResumeFloor:    floor,
		NewInterruptID: d.newInterruptID,
	}
}
