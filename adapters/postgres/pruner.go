package postgres

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
)

// PruneConfig is the retention of one prune pass (spec §13). Every field
// is required; there are no defaults.
type PruneConfig struct {
	// EventRetention: events inserted strictly before now - EventRetention
	// are deleted (>= 0, <= RunRetention).
	EventRetention time.Duration
	// RunRetention: terminal runs whose document was last updated strictly
	// before now - RunRetention are deleted with their events (>= 0).
	RunRetention time.Duration
	// BatchSize bounds the rows each of the three deletes selects (> 0);
	// it does not bound the events a deleted run cascades to.
	BatchSize int
	// KeepGraphVersions is how many newest versions of each (owner, graph
	// id) survive (> 0; ports.DefaultKeptGraphVersions).
	KeepGraphVersions int
}

// Validate names the first invalid field.
func (c PruneConfig) Validate() error {
	switch {
	case c.EventRetention < 0:
		return invalidArg("EventRetention", "must not be negative")
	case c.RunRetention < 0:
		return invalidArg("RunRetention", "must not be negative")
	case c.EventRetention > c.RunRetention:
		return invalidArg("EventRetention", "must not exceed RunRetention")
	// Both counts are bound as 32-bit integers.
	case c.BatchSize < 1 || c.BatchSize > math.MaxInt32:
		return invalidArg("BatchSize", fmt.Sprintf("must be in 1..%d", math.MaxInt32))
	case c.KeepGraphVersions < 1 || c.KeepGraphVersions > math.MaxInt32:
		return invalidArg("KeepGraphVersions", fmt.Sprintf("must be in 1..%d", math.MaxInt32))
	}
	return nil
}

// PruneResult reports one pass. Locked means another pass of the same
// schema held the pruner lock, so this one deleted nothing. Now is the
// time the pass's cutoffs were taken from (zero when Locked): passing it to the next pass
// keeps a series of passes on one set of cutoffs, so it ends even while
// new rows keep ageing past them.
type PruneResult struct {
	Now                  time.Time
	Locked               bool
	EventsDeleted        int
	RunsDeleted          int
	CascadeEventsDeleted int
	GraphsDeleted        int
}

// PrunePass runs one bounded prune pass in one transaction: it takes the
// schema's pruner lock without waiting (pg_try_advisory_xact_lock on
// "docket:pruner:<schema>"; held elsewhere means Locked and nothing
// deleted), then deletes old events, old terminal runs (events cascade)
// and unreferenced surplus graph versions, each bounded by BatchSize and
// skipping rows other writers hold. "Now" is the database's transaction
// time unless now is non-zero (a series of passes, or tests). Nothing is
// announced.
func (s *Store) PrunePass(ctx context.Context, cfg PruneConfig, now time.Time) (PruneResult, error) {
	if err := cfg.Validate(); err != nil {
		return PruneResult{}, err
	}
	ctx, span := s.telemetry.StartSpan(ctx, "pruner.pass")
	passNow := now
	res, err := s.prunePass(ctx, cfg.KeepGraphVersions, cfg.BatchSize, func(tx pgx.Tx) (events, runs time.Time, err error) {
		if passNow.IsZero() {
			if err := tx.QueryRow(ctx, s.stmt.pruneNow).Scan(&passNow); err != nil {
				return time.Time{}, time.Time{}, err
			}
		}
		return passNow.Add(-cfg.EventRetention), passNow.Add(-cfg.RunRetention), nil
	})
	if err != nil {
		result := ports.ResultError
		if ctx.Err() != nil {
			result = ports.ResultSkipped // stopped by its caller, not failed
		}
		span.End(result, nil)
		return PruneResult{}, err
	}
	result := ports.ResultOK
	if res.Locked {
		result, passNow = ports.ResultLocked, time.Time{}
	}
	span.End(result, ports.Measurements{
		"events_deleted":         float64(res.Events),
		"runs_deleted":           float64(res.Runs),
		"cascade_events_deleted": float64(res.CascadeEvents),
		"graphs_deleted":         float64(res.Graphs),
	})
	return PruneResult{Now: passNow, Locked: res.Locked, EventsDeleted: res.Events, RunsDeleted: res.Runs,
		CascadeEventsDeleted: res.CascadeEvents, GraphsDeleted: res.Graphs}, nil
}

// PruneWholePass runs a pass at the caller's cutoffs, as PrunePass does
// (one transaction under the schema's pruner lock), for a pruner that
// keeps its own clock and reports the pass itself (see ports.PassPruner).
// When the caller says which now its cutoffs come from and the store
// clock is behind it, both cutoffs move back by the difference: a pruner
// on a host whose clock runs ahead keeps every row its retention keeps by
// the database's clock.
func (s *Store) PruneWholePass(ctx context.Context, p ports.PrunePassParams) (ports.PrunePassResult, error) {
	// Both counts are bound as 32-bit integers.
	switch {
	case p.BatchSize < 1 || p.BatchSize > math.MaxInt32:
		return ports.PrunePassResult{}, invalidArg("BatchSize", fmt.Sprintf("must be in 1..%d", math.MaxInt32))
	case p.KeepGraphVersions < 1 || p.KeepGraphVersions > math.MaxInt32:
		return ports.PrunePassResult{}, invalidArg("KeepGraphVersions", fmt.Sprintf("must be in 1..%d", math.MaxInt32))
	}
	return s.prunePass(ctx, p.KeepGraphVersions, p.BatchSize, func(tx pgx.Tx) (time.Time, time.Time, error) {
		if p.Now.IsZero() {
			return p.EventsBefore, p.RunsBefore, nil
		}
		storeNow, err := s.passNow(ctx, tx)
		if err != nil {
			return time.Time{}, time.Time{}, err
		}
		lead := max(ports.Micros(p.Now).Sub(storeNow), 0)
		return p.EventsBefore.Add(-lead), p.RunsBefore.Add(-lead), nil
	})
}

// passNow is the store clock of a prune pass: the override, else the
// transaction's timestamp.
func (s *Store) passNow(ctx context.Context, tx pgx.Tx) (time.Time, error) {
	if now := s.storeNow(); now != nil {
		return *now, nil
	}
	var now time.Time
	err := tx.QueryRow(ctx, s.stmt.pruneNow).Scan(&now)
	return now, err
}

// prunePass is one pass in one transaction under the pruner lock; cutoffs
// names its strict cutoffs once the lock is held.
func (s *Store) prunePass(ctx context.Context, keepVersions, batch int, cutoffs func(pgx.Tx) (events, runs time.Time, err error)) (ports.PrunePassResult, error) {
	var res ports.PrunePassResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var acquired bool
		if err := tx.QueryRow(ctx, s.stmt.pruneLock, "docket:pruner:"+s.schema).Scan(&acquired); err != nil {
			return err
		}
		if !acquired {
			res.Locked = true
			return nil
		}
		eventsBefore, runsBefore, err := cutoffs(tx)
		if err != nil {
			return err
		}
		// Rounded up: stored stamps are whole microseconds, and a row in
		// the cutoff's own microsecond but before it is still older.
		if res.Events, err = s.pruneEvents(ctx, tx, ports.CeilMicros(eventsBefore), batch); err != nil {
			return keep(err)
		}
		runs, err := s.pruneRuns(ctx, tx, ports.CeilMicros(runsBefore), batch)
		if err != nil {
			return keep(err)
		}
		res.Runs, res.CascadeEvents = runs.Runs, runs.CascadeEvents
		if res.Graphs, err = s.pruneGraphs(ctx, tx, keepVersions, batch); err != nil {
			return keep(err)
		}
		return nil
	})
	if err != nil {
		return ports.PrunePassResult{}, unkept("prune pass", err)
	}
	return res, nil
}

// String summarizes a pass for logs.
func (r PruneResult) String() string {
	if r.Locked {
		return "prune pass skipped: another pass holds the lock"
	}
	return fmt.Sprintf("pruned %d events, %d runs (%d cascaded events), %d graph versions",
		r.EventsDeleted, r.RunsDeleted, r.CascadeEventsDeleted, r.GraphsDeleted)
}
