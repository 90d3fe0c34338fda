package cli

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/ports"
)

// checkPruneFlags refuses, naming the flags, the prune settings that the
// pruner's own validation would refuse by the names of its Go fields.
func checkPruneFlags(events, runs wiring.Retention, batch int) error {
	if err := wiring.CheckRetentions(&events, &runs); err != nil {
		return usageErr(err)
	}
	if batch < 1 || batch > math.MaxInt32 {
		return usagef("--batch-size must be in 1..%d", math.MaxInt32)
	}
	return nil
}

type pruneJSON struct {
	Passes               int `json:"passes"`
	EventsDeleted        int `json:"events_deleted"`
	RunsDeleted          int `json:"runs_deleted"`
	CascadeEventsDeleted int `json:"cascade_events_deleted"`
	GraphsDeleted        int `json:"graphs_deleted"`
}

func (a *app) pruneCommand() *cobra.Command {
	var events, runs wiring.Retention
	var batch, keep, maxPasses int
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete old events, finished runs and unused graph versions",
		Long: "prune deletes events older than --event-retention, finished runs (with their events) last\n" +
			"updated before --run-retention, and graph versions beyond the newest --keep-graph-versions\n" +
			"of each graph that no run references. It runs bounded passes (--batch-size rows of each\n" +
			"kind) until one deletes nothing. Running and waiting runs are never deleted. Retention is\n" +
			"a deliberate loss: both retentions are required. It prunes the whole schema, every\n" +
			"tenant's rows alike, so it takes no --tenant.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.tenant != "" {
				return usagef("prune covers the whole schema, every tenant alike; run it without --tenant")
			}
			if missing := missingRetentions(events.IsSet(), runs.IsSet()); missing != "" {
				return usagef("%s: both --event-retention and --run-retention are required (for example 7d and 30d)", missing)
			}
			if err := checkPruneFlags(events, runs, batch); err != nil {
				return err
			}
			if keep < 1 || keep > math.MaxInt32 {
				return usagef("--keep-graph-versions must be in 1..%d", math.MaxInt32)
			}
			cfg := postgres.PruneConfig{EventRetention: events.Duration(), RunRetention: runs.Duration(), BatchSize: batch, KeepGraphVersions: keep}
			if err := cfg.Validate(); err != nil {
				return usageErr(err)
			}
			if maxPasses < 0 {
				return usagef("--max-passes must not be negative")
			}
			return a.prune(cmd.Context(), cfg, maxPasses)
		},
	}
	cmd.Flags().Var(&events, "event-retention", "delete events older than this (e.g. 7d, 72h)")
	cmd.Flags().Var(&runs, "run-retention", "delete finished runs last updated longer ago than this (e.g. 30d)")
	cmd.Flags().IntVar(&batch, "batch-size", wiring.DefaultPruneBatchSize, "rows of each kind one pass deletes at most")
	cmd.Flags().IntVar(&keep, "keep-graph-versions", ports.DefaultKeptGraphVersions, "newest versions of each graph to keep")
	cmd.Flags().IntVar(&maxPasses, "max-passes", 0, "stop after this many passes (0: until nothing is left)")
	return cmd
}

func (a *app) prune(ctx context.Context, cfg postgres.PruneConfig, maxPasses int) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	var total pruneJSON
	b := a.progress(-1, "pruning")
	// Every pass cuts at the first pass's time, so the series ends even
	// while a busy system keeps ageing rows past a moving cutoff.
	var now time.Time
	for maxPasses == 0 || total.Passes < maxPasses {
		res, err := rt.Postgres.PrunePass(ctx, cfg, now)
		if err == nil && res.Locked {
			err = failuref("another prune pass holds the lock of schema %q; try again when it is done", rt.Schema)
		}
		if err != nil {
			b.finish()
			if total.Passes == 0 {
				return err
			}
			// What earlier passes deleted is gone: say so before failing.
			if perr := a.printPruned(total); perr != nil {
				return perr
			}
			return fmt.Errorf("stopped after %d pass(es): %w", total.Passes, err)
		}
		now = res.Now
		total.Passes++
		total.EventsDeleted += res.EventsDeleted
		total.RunsDeleted += res.RunsDeleted
		total.CascadeEventsDeleted += res.CascadeEventsDeleted
		total.GraphsDeleted += res.GraphsDeleted
		deleted := res.EventsDeleted + res.RunsDeleted + res.GraphsDeleted
		b.add(deleted)
		b.describe(fmt.Sprintf("pruning (pass %d)", total.Passes))
		if deleted == 0 {
			break
		}
	}
	b.finish()
	return a.printPruned(total)
}

func (a *app) printPruned(total pruneJSON) error {
	if a.json {
		return printJSON(a.io.Out, total)
	}
	_, err := fmt.Fprintf(a.io.Out, "pruned %d events, %d runs (with %d of their events) and %d graph versions in %d pass(es)\n",
		total.EventsDeleted, total.RunsDeleted, total.CascadeEventsDeleted, total.GraphsDeleted, total.Passes)
	return err
}

// missingRetentions names the retention flags prune was not given, or is
// empty when it has both.
func missingRetentions(events, runs bool) string {
	switch {
	case !events && !runs:
		return "no retention given"
	case !events:
		return "--event-retention is missing"
	case !runs:
		return "--run-retention is missing"
	}
	return ""
}
