package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/prune"
)

func (a *app) workerCommand() *cobra.Command {
	var concurrency, maxFinishing int
	var pollInterval, drainTimeout, runFor, pruneInterval time.Duration
	var orphanTTL, maxAttemptElapsed, drainMaxElapsed time.Duration
	var maxClaimAttempts, maxClaimAbandons int
	var pollOnly bool
	var metricsAddr string
	var events, runs retention
	var batch int
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run an engine with the built-in example nodes until stopped",
		Long: "worker claims due runs and drives them with the built-in example nodes (demo.*), waking on\n" +
			"LISTEN/NOTIFY (unless --poll-only) and polling every --poll-interval. Start as many workers\n" +
			"as you like on one database. Ctrl-C or SIGTERM stops claiming, lets running work reach its\n" +
			"next checkpoint for up to --drain-timeout, and exits 0. With --run-retention and\n" +
			"--event-retention (both) the worker also prunes every --prune-interval. With\n" +
			"--metrics-addr it serves its docket.* metrics (Prometheus text) on /metrics and its health\n" +
			"on /healthz.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := engine.Config{
				PollOnly:          pollOnly,
				MaxAttemptElapsed: maxAttemptElapsed,
				Dispatcher: engine.DispatcherConfig{
					Concurrency:      concurrency,
					MaxFinishing:     maxFinishing,
					PollInterval:     pollInterval,
					DrainTimeout:     drainTimeout,
					OrphanTTL:        orphanTTL,
					MaxClaimAttempts: maxClaimAttempts,
				},
				Vehicle: engine.VehicleConfig{
					DrainBudget:      engine.DrainBudget{MaxElapsed: drainMaxElapsed},
					MaxClaimAbandons: maxClaimAbandons,
				},
			}
			if orphanTTL <= 0 || maxAttemptElapsed <= 0 || drainMaxElapsed <= 0 || maxClaimAttempts < 1 || maxClaimAbandons < 1 {
				return usagef("--orphan-ttl, --max-attempt-elapsed, --drain-max-elapsed, --max-claim-attempts and --max-claim-abandons must be positive")
			}
			if events.set != runs.set {
				return usagef("pruning needs both --event-retention and --run-retention")
			}
			if runs.set {
				if err := checkPruneFlags(events, runs, batch); err != nil {
					return err
				}
				if pruneInterval <= 0 {
					return usagef("--prune-interval must be positive")
				}
				cfg.Pruner = &prune.Config{Interval: pruneInterval, EventRetention: events.d, RunRetention: runs.d, BatchSize: batch}
			}
			if concurrency < 1 || pollInterval <= 0 || drainTimeout < 0 || runFor < 0 || maxFinishing < 0 {
				return usagef("--concurrency and --poll-interval must be positive, --drain-timeout, --max-finishing and --for not negative")
			}
			pruning := "no pruning"
			if cfg.Pruner != nil {
				pruning = fmt.Sprintf("pruning every %s (events after %s, finished runs after %s)", pruneInterval, events.s, runs.s)
			}
			a.admits = true
			return a.worker(cmd.Context(), cfg, runFor, pruning, metricsAddr)
		},
	}
	cmd.Flags().IntVar(&concurrency, "concurrency", engine.DefaultConcurrency, "runs driven at once")
	cmd.Flags().IntVar(&maxFinishing, "max-finishing", 0, "runs whose final commit may be in flight after giving their place up (0: 16 × --concurrency)")
	cmd.Flags().DurationVar(&pollInterval, "poll-interval", engine.DefaultPollInterval, "longest wait between polls")
	cmd.Flags().DurationVar(&drainTimeout, "drain-timeout", engine.DefaultDrainTimeout, "how long stopping waits for running work")
	cmd.Flags().BoolVar(&pollOnly, "poll-only", false, "do not LISTEN for wake-ups (e.g. behind PgBouncer transaction pooling)")
	cmd.Flags().StringVar(&a.claimPolicyFlag, "claim-policy", "",
		"claim policy: legacy (FIFO) or tenant-fair (default: tenant-fair with --tenant, else legacy); the last worker started sets the schema's")
	cmd.Flags().DurationVar(&runFor, "for", 0, "stop after this long (0: until Ctrl-C or SIGTERM)")
	cmd.Flags().Var(&events, "event-retention", "prune events older than this (e.g. 7d)")
	cmd.Flags().Var(&runs, "run-retention", "prune finished runs older than this (e.g. 30d)")
	cmd.Flags().DurationVar(&pruneInterval, "prune-interval", time.Hour, "time between prune passes")
	cmd.Flags().IntVar(&batch, "batch-size", 1000, "rows of each kind one prune pass deletes at most")
	cmd.Flags().DurationVar(&maxAttemptElapsed, "max-attempt-elapsed", engine.DefaultMaxAttemptElapsed,
		"longest node attempt (raise with --drain-max-elapsed and --orphan-ttl, keeping max-attempt-elapsed ≤ drain-max-elapsed < orphan-ttl)")
	cmd.Flags().DurationVar(&drainMaxElapsed, "drain-max-elapsed", engine.DefaultDrainMaxElapsed, "longest a claimed run keeps starting supersteps before it is handed on")
	cmd.Flags().DurationVar(&orphanTTL, "orphan-ttl", engine.DefaultOrphanTTL, "how long a dead worker's claim holds its run before another worker takes it over")
	cmd.Flags().IntVar(&maxClaimAttempts, "max-claim-attempts", engine.DefaultMaxClaimAttempts, "claims without progress before a run is poisoned")
	cmd.Flags().IntVar(&maxClaimAbandons, "max-claim-abandons", engine.DefaultMaxClaimAbandons, "hand-backs without progress (a graph this worker cannot run) before a run is poisoned")
	cmd.Flags().StringVar(&metricsAddr, "metrics-addr", "",
		"serve /metrics (Prometheus) and /healthz on this address, e.g. :9464 (empty: no endpoint)")
	return cmd
}

func (a *app) worker(ctx context.Context, cfg engine.Config, runFor time.Duration, pruning, metricsAddr string) error {
	// Bind the endpoint first: a taken address fails before connecting.
	var metrics *metricsServer
	if metricsAddr != "" {
		var err error
		if metrics, err = newMetricsServer(metricsAddr); err != nil {
			return err
		}
		// For the error paths; the normal one closes it after the drain
		// (the first close is the one that counts).
		defer metrics.close(time.Second)
		a.telemetry = metrics.telemetry
	}
	rt, cleanup, err := a.openEngine(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			// Told to stop while still connecting (a deploy's SIGTERM):
			// nothing was claimed, so this is a clean stop too.
			a.say("docket worker: stopped before it started")
			return nil
		}
		if errors.Is(err, engine.ErrInvalidConfig) {
			return usageErr(errors.New(workerFlagNames.Replace(err.Error())))
		}
		return err
	}
	defer cleanup()
	endpoint := ""
	if metrics != nil {
		// Serving starts before claiming, so the first scrape sees it all.
		metrics.serve(rt.Engine)
		endpoint = fmt.Sprintf(", metrics on http://%s/metrics", metrics.addr())
	}
	if err := rt.Engine.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	wake := "LISTEN/NOTIFY and polling"
	if cfg.PollOnly {
		wake = "polling only"
	}
	a.say("docket worker: schema %q, %s, %s%s, nodes %s; Ctrl-C stops", rt.Schema, wake, pruning, endpoint,
		strings.Join(demo.Registry().Refs(), ", "))
	wait := ctx
	if runFor > 0 {
		var cancel context.CancelFunc
		wait, cancel = context.WithTimeout(ctx, runFor)
		defer cancel()
	}
	<-wait.Done()
	a.say("docket worker: stopping (finishing running work; interrupt again to exit at once)")
	// The stop gets its own budget: the command's context is already done.
	drain := cmp.Or(cfg.Dispatcher.DrainTimeout, engine.DefaultDrainTimeout) // 0 is the engine's default
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drain+time.Second)
	defer cancel()
	if err := rt.Engine.Stop(stopCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("stop the worker: %w", err)
	}
	if metrics != nil {
		// After the drain, so that a scrape during it sees it; a scrape
		// in progress gets a second to finish.
		metrics.close(time.Second)
	}
	a.say("docket worker: stopped")
	return nil
}

// workerFlagNames names the engine settings the worker has flags for as
// those flags, in the engine's configuration errors.
var workerFlagNames = strings.NewReplacer(
	"Vehicle.DrainBudget.MaxElapsed", "--drain-max-elapsed",
	"Vehicle.MaxClaimAbandons", "--max-claim-abandons",
	"Dispatcher.OrphanTTL", "--orphan-ttl",
	"Dispatcher.MaxClaimAttempts", "--max-claim-attempts",
	"MaxAttemptElapsed", "--max-attempt-elapsed",
)
