// Package prune is the retention loop: at a fixed interval it deletes
// events older than the event retention, terminal runs (with their
// remaining events) whose last commit is older than the run retention, and
// graph versions beyond the newest ports.DefaultKeptGraphVersions of each
// graph that no run references. Each pass deletes at most one batch of
// each kind, so a backlog drains over several passes without long writes.
//
// Retention is an intentional loss boundary, so nothing here has a
// default: every duration and the batch size must be configured. Running
// runs are never pruned; the store enforces that.
package prune

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/docketgo/docket/ports"
)

// Config is the explicit retention policy. There are no defaults.
type Config struct {
	// Interval between the end of one pass and the start of the next
	// (> 0). The first pass runs at start.
	Interval time.Duration
	// EventRetention: events inserted before now-EventRetention are
	// deleted (>= 0, <= RunRetention).
	EventRetention time.Duration
	// RunRetention: terminal runs last committed before now-RunRetention
	// are deleted with their events (>= 0).
	RunRetention time.Duration
	// BatchSize bounds the rows each kind of deletion selects per pass
	// (> 0).
	BatchSize int
}

// ErrInvalidConfig is wrapped by every ConfigError.
var ErrInvalidConfig = errors.New("invalid pruner configuration")

// ConfigError names the offending field.
type ConfigError struct {
	Field  string
	Reason string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("pruner: %s %s", e.Field, e.Reason) }

// Unwrap lets errors.Is match ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Validate reports every invalid field at once, each as a *ConfigError
// (joined with errors.Join when there are several).
func (c Config) Validate() error {
	var problems []error
	bad := func(field, reason string) { problems = append(problems, &ConfigError{Field: field, Reason: reason}) }
	if c.Interval <= 0 {
		bad("Interval", "must be positive")
	}
	switch {
	case c.EventRetention < 0:
		bad("EventRetention", "must not be negative")
	case c.EventRetention > c.RunRetention && c.RunRetention >= 0:
		bad("EventRetention", "must not exceed RunRetention")
	}
	if c.RunRetention < 0 {
		bad("RunRetention", "must not be negative")
	}
	switch {
	case c.BatchSize < 1:
		bad("BatchSize", "must be at least 1")
	case c.BatchSize > math.MaxInt32:
		// Stores bind it as a 32-bit integer; every pass would fail.
		bad("BatchSize", fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	return errors.Join(problems...)
}

// Store is what a pass deletes through. A store that is also a
// ports.PassPruner runs each pass itself as one exclusive unit, so passes
// of several engines never run beside each other; otherwise the pass is
// the three deletions one after the other.
type Store interface {
	PruneEvents(ctx context.Context, p ports.PruneParams) (int, error)
	PruneRuns(ctx context.Context, p ports.PruneParams) (ports.PruneRunsResult, error)
	PruneGraphVersions(ctx context.Context, p ports.PruneGraphsParams) (int, error)
}

// Pass counts what one pass deleted. Locked: another pruner's pass held
// the store's pruner lock, so this one deleted nothing.
type Pass struct {
	Locked        bool
	Events        int
	Runs          int
	CascadeEvents int
	Graphs        int
}

// Pruner runs passes. Build it with New.
type Pruner struct {
	cfg       Config
	store     Store
	timeout   time.Duration
	clock     ports.Clock
	telemetry ports.Telemetry
	logger    *slog.Logger
	// newTimer times the wait before each pass (time.NewTimer; tests
	// record the waits).
	newTimer func(time.Duration) *time.Timer
}

// Options are the pruner's collaborators; nil fields take the system
// clock, no telemetry and slog.Default().
type Options struct {
	Clock     ports.Clock
	Telemetry ports.Telemetry
	Logger    *slog.Logger
	// StoreTimeout bounds each call to the store (0: unbounded), so a hung
	// pass ends and the next one runs after the interval.
	StoreTimeout time.Duration
}

// New validates cfg and returns a pruner.
func New(store Store, cfg Config, opts Options) (*Pruner, error) {
	if store == nil {
		return nil, errors.New("pruner: store is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = ports.SystemClock{}
	}
	if opts.Telemetry == nil {
		opts.Telemetry = ports.NopTelemetry{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Pruner{cfg: cfg, store: store, timeout: opts.StoreTimeout, clock: opts.Clock, telemetry: opts.Telemetry, logger: opts.Logger,
		newTimer: time.NewTimer}, nil
}

// Pass runs one pass at the pruner's clock. It stops at the first error
// and reports what it deleted before it.
func (p *Pruner) Pass(ctx context.Context) (Pass, error) {
	started := time.Now()
	now := ports.Micros(p.clock.Now())
	var out Pass
	err := p.pass(ctx, now, &out)
	result := ports.ResultOK
	switch {
	case err != nil && ctx.Err() != nil:
		// Cut short by its context (the engine stopping), not failed.
		result = ports.ResultSkipped
	case err != nil:
		result = ports.ResultError
	case out.Locked:
		result = ports.ResultLocked
	}
	p.telemetry.Emit(ctx, ports.FactPrunerPass, ports.Measurements{
		"events_deleted":         float64(out.Events),
		"runs_deleted":           float64(out.Runs),
		"cascade_events_deleted": float64(out.CascadeEvents),
		"graphs_deleted":         float64(out.Graphs),
		"duration_ms":            float64(time.Since(started)) / float64(time.Millisecond),
	}, ports.Label{Key: ports.LabelResult, Value: result})
	return out, err
}

func (p *Pruner) pass(ctx context.Context, now time.Time, out *Pass) error {
	if whole, ok := p.store.(ports.PassPruner); ok {
		ctx, cancel := p.bounded(ctx)
		defer cancel()
		res, err := whole.PruneWholePass(ctx, ports.PrunePassParams{
			EventsBefore: now.Add(-p.cfg.EventRetention), RunsBefore: now.Add(-p.cfg.RunRetention),
			KeepGraphVersions: ports.DefaultKeptGraphVersions, BatchSize: p.cfg.BatchSize, Now: now})
		if err != nil {
			return fmt.Errorf("prune pass: %w", err)
		}
		*out = Pass{Locked: res.Locked, Events: res.Events, Runs: res.Runs, CascadeEvents: res.CascadeEvents, Graphs: res.Graphs}
		return nil
	}
	var err error
	out.Events, err = call(ctx, p, func(ctx context.Context) (int, error) {
		return p.store.PruneEvents(ctx, ports.PruneParams{Before: now.Add(-p.cfg.EventRetention), BatchSize: p.cfg.BatchSize})
	})
	if err != nil {
		return fmt.Errorf("prune events: %w", err)
	}
	runs, err := call(ctx, p, func(ctx context.Context) (ports.PruneRunsResult, error) {
		return p.store.PruneRuns(ctx, ports.PruneParams{Before: now.Add(-p.cfg.RunRetention), BatchSize: p.cfg.BatchSize})
	})
	if err != nil {
		return fmt.Errorf("prune runs: %w", err)
	}
	out.Runs, out.CascadeEvents = runs.Runs, runs.CascadeEvents
	out.Graphs, err = call(ctx, p, func(ctx context.Context) (int, error) {
		return p.store.PruneGraphVersions(ctx, ports.PruneGraphsParams{Keep: ports.DefaultKeptGraphVersions, BatchSize: p.cfg.BatchSize})
	})
	if err != nil {
		return fmt.Errorf("prune graph versions: %w", err)
	}
	return nil
}

// bounded is ctx under the store timeout, if any.
func (p *Pruner) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if p.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, p.timeout)
}

// call runs one store call under the store timeout.
func call[T any](ctx context.Context, p *Pruner, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := p.bounded(ctx)
	defer cancel()
	return f(ctx)
}

// Run passes immediately, then Interval after each pass ends, until ctx
// ends. A pass that deletes rows is logged at info level with its counts;
// a failed pass is logged as a warning and the schedule continues.
func (p *Pruner) Run(ctx context.Context) {
	var wait time.Duration // the first pass runs at once
	for {
		timer := p.newTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		res, err := p.Pass(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			p.logger.Warn("docket pruner pass failed; retrying after the interval", slog.String("error", err.Error()))
		case err == nil && res.Events+res.Runs+res.Graphs > 0:
			p.logger.Info("docket pruner pass deleted rows past their retention",
				slog.Int("events", res.Events), slog.Int("runs", res.Runs),
				slog.Int("cascade_events", res.CascadeEvents), slog.Int("graph_versions", res.Graphs))
		}
		wait = p.cfg.Interval
	}
}
