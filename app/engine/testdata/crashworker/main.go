// Command crashworker is one Docket worker process for the crash-recovery
// tests: an engine on a PostgreSQL schema that drives runs until it gets
// SIGTERM (or is killed). It lives under testdata so it is built only by
// the tests that run it.
//
// It prints one line per vehicle drive that did not end in a park
// ("drain <outcome>") so tests can see lost fences.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/ports"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "crashworker:", err)
		os.Exit(1)
	}
}

func run() error {
	url := flag.String("url", "", "database URL")
	schema := flag.String("schema", "", "Docket schema")
	orphanTTL := flag.Duration("orphan-ttl", 2*time.Second, "orphan TTL")
	drainElapsed := flag.Duration("drain-elapsed", time.Second, "drain budget max elapsed")
	attemptMax := flag.Duration("attempt-max", 500*time.Millisecond, "max attempt elapsed")
	poll := flag.Duration("poll", 50*time.Millisecond, "poll interval")
	concurrency := flag.Int("concurrency", 8, "dispatcher concurrency")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()

	cfg, err := pgxpool.ParseConfig(*url)
	if err != nil {
		return err
	}
	cfg.MaxConns = int32(*concurrency) + 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: cfg.ConnConfig, Schema: *schema})
	if err != nil {
		return err
	}
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: *schema, Notifier: listener})
	if err != nil {
		return err
	}
	defer func() { _ = store.Close() }()

	e, err := engine.New(engine.Config{
		Backend: store,
		Nodes:   Registry(),
		Dispatcher: engine.DispatcherConfig{
			Concurrency:      *concurrency,
			PollInterval:     *poll,
			OrphanTTL:        *orphanTTL,
			MaxClaimAttempts: 1000, // kills must not poison runs
			DrainTimeout:     2 * time.Second,
		},
		MaxAttemptElapsed: *attemptMax,
		Vehicle:           engine.VehicleConfig{DrainBudget: engine.DrainBudget{MaxElapsed: *drainElapsed}},
		Telemetry:         printer{},
		Logger:            slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
	})
	if err != nil {
		return err
	}
	if err := e.Start(ctx); err != nil {
		return err
	}
	fmt.Println("ready")
	<-ctx.Done()
	return e.Stop(context.Background())
}

// Registry holds the test nodes: crash.mark writes {field: "ok"};
// crash.slow sleeps sleep_ms (or until its deadline) first.
func Registry() *node.Registry {
	return node.NewRegistry().
		MustRegister("crash.mark", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
			return node.Update(map[string]any{in.Config["field"].(string): "ok"}), nil
		})).
		MustRegister("crash.slow", node.New(nil, func(ctx context.Context, in node.Input) (node.Output, error) {
			ms, _ := in.Config["sleep_ms"].(int64)
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return node.Output{}, ctx.Err()
			}
			return node.Update(map[string]any{in.Config["field"].(string): "ok"}), nil
		}))
}

// printer reports vehicle drives that did not park.
type printer struct{ ports.NopTelemetry }

func (printer) Emit(_ context.Context, name string, _ ports.Measurements, labels ...ports.Label) {
	if name != ports.FactVehicleDrain {
		return
	}
	for _, l := range labels {
		if l.Key == "outcome" && l.Value != "parked" {
			fmt.Println("drain", l.Value)
		}
	}
}
