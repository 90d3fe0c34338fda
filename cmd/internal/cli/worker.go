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
	"github.com/docketgo/docket/cmd/wiring"
)

func (a *app) workerCommand() *cobra.Command {
	// The engine's flags are wiring.WorkerFlags, which worker binaries of
	// one's own register too; the rest are the command's.
	var engineFlags wiring.WorkerFlags
	var runFor time.Duration
	var metricsAddr string
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
			cfg, err := engineFlags.EngineConfig()
			if runFor < 0 {
				err = errors.Join(err, errors.New("--for must not be negative"))
			}
			if err != nil {
				return usageErr(err)
			}
			a.admits = true
			return a.worker(cmd.Context(), cfg, runFor, engineFlags.Pruning(), metricsAddr)
		},
	}
	engineFlags.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&a.claimPolicyFlag, "claim-policy", "",
		"claim policy: legacy (FIFO) or tenant-fair (default: tenant-fair with --tenant, else legacy); the last worker started sets the schema's")
	cmd.Flags().DurationVar(&runFor, "for", 0, "stop after this long (0: until Ctrl-C or SIGTERM)")
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
			// The flags' own settings were checked already: this is one
			// of the global flags' (--tenant, --claim-policy).
			return usageErr(err)
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
