package postgres

import (
	"context"
	"fmt"
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
	case c.BatchSize < 1:
		return invalidArg("BatchSize", "must be at least 1")
	case c.KeepGraphVersions < 1:
		return invalidArg("KeepGraphVersions", "must be at least 1")
	}
	return nil
}

// PruneResult reports one pass. Locked means another pass of the same
// schema held the pruner lock, so this one deleted nothing.
type PruneResult struct {
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
// time unless now is non-zero (tests). Nothing is announced.
func (s *Store) PrunePass(ctx context.Context, cfg PruneConfig, now time.Time) (PruneResult, error) {
	if err := cfg.Validate(); err != nil {
		return PruneResult{}, err
	}
	ctx, span := s.telemetry.StartSpan(ctx, "pruner.pass")
	var res PruneResult
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var acquired bool
		if err := tx.QueryRow(ctx, s.stmt.pruneLock, "docket:pruner:"+s.schema).Scan(&acquired); err != nil {
			return err
		}
		if !acquired {
			res.Locked = true
			return nil
		}
		var txNow time.Time
		if err := tx.QueryRow(ctx, s.stmt.pruneNow, optTime(now)).Scan(&txNow); err != nil {
			return err
		}
		txNow = ports.Micros(txNow)
		var err error
		if res.EventsDeleted, err = s.pruneEvents(ctx, tx, ports.Micros(txNow.Add(-cfg.EventRetention)), cfg.BatchSize); err != nil {
			return keep(err)
		}
		runs, err := s.pruneRuns(ctx, tx, ports.Micros(txNow.Add(-cfg.RunRetention)), cfg.BatchSize)
		if err != nil {
			return keep(err)
		}
		res.RunsDeleted, res.CascadeEventsDeleted = runs.Runs, runs.CascadeEvents
		if res.GraphsDeleted, err = s.pruneGraphs(ctx, tx, cfg.KeepGraphVersions, cfg.BatchSize); err != nil {
			return keep(err)
		}
		return nil
	})
	if err != nil {
		span.End(ports.ResultError, nil)
		return PruneResult{}, unkept("prune pass", err)
	}
	result := ports.ResultOK
	if res.Locked {
		result = ports.ResultSkipped
	}
	span.End(result, ports.Measurements{
		"events_deleted":         float64(res.EventsDeleted),
		"runs_deleted":           float64(res.RunsDeleted),
		"cascade_events_deleted": float64(res.CascadeEventsDeleted),
		"graphs_deleted":         float64(res.GraphsDeleted),
	})
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
