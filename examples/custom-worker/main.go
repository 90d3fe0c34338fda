// Command custom-worker is an example of a Docket worker binary of your
// own: it registers its own nodes (a support-ticket triage), and is
// assembled by google/wire from the provider sets of
// github.com/docketgo/docket/cmd/wiring, choosing the wake notifier
// (LISTEN/NOTIFY or polling only) and the telemetry (OpenTelemetry or
// none) per deployment. See wire.go for the four profiles. It takes the
// engine flags of `docket worker` (--concurrency, --orphan-ttl,
// --event-retention and the rest) from wiring.WorkerFlags, beside its own.
//
//	custom-worker --database-url postgres://... --migrate --runs 5
//	custom-worker --poll-only --telemetry otel --telemetry-out spans.jsonl
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/wiring"
	docketrun "github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/migrations"
)

func main() {
	// A first Ctrl-C or SIGTERM drains; a second one ends the process.
	ctx, stop := wiring.InterruptContext()
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	databaseURL  string
	schema       string
	telemetry    string
	telemetryOut string
	migrate      bool
	runs         int
	runFor       time.Duration
	// engine is what the engine flags of `docket worker` ask for
	// (wiring.WorkerFlags); --poll-only picks a profile without a
	// listener.
	engine  engine.Config
	pruning string
}

func parse(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	var c config
	fs := pflag.NewFlagSet("custom-worker", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	// Not a flag default: the usage text prints defaults, and the
	// connection string may carry a password.
	fs.StringVar(&c.databaseURL, "database-url", "", "PostgreSQL connection string (default $DATABASE_URL, else the PG* variables)")
	fs.StringVar(&c.schema, "schema", "", "Docket schema (default: found on the search_path)")
	fs.StringVar(&c.telemetry, "telemetry", "none", "telemetry: otel (OpenTelemetry) or none")
	fs.StringVar(&c.telemetryOut, "telemetry-out", "", "file the OpenTelemetry exporters append to (default stderr)")
	fs.BoolVar(&c.migrate, "migrate", false, "install or upgrade the Docket schema first")
	fs.IntVar(&c.runs, "runs", 0, "start this many tickets, wait for them and exit (0: work until stopped)")
	fs.DurationVar(&c.runFor, "for", 0, "without --runs: stop after this long (0: until Ctrl-C)")
	// The engine's flags, as docket worker has them: same names, defaults,
	// help and checks.
	var engineFlags wiring.WorkerFlags
	engineFlags.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		if !errors.Is(err, pflag.ErrHelp) { // -h printed the usage already
			fmt.Fprintf(stderr, "Usage of custom-worker:\n%s", fs.FlagUsages())
		}
		return c, err
	}
	if c.databaseURL == "" {
		c.databaseURL = getenv("DATABASE_URL")
	}
	var err error
	if c.engine, err = engineFlags.EngineConfig(); err != nil {
		return c, err
	}
	c.pruning = engineFlags.Pruning()
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case c.telemetry != "otel" && c.telemetry != "none":
		return c, fmt.Errorf("--telemetry %q: want otel or none", c.telemetry)
	case c.runs < 0 || c.runFor < 0:
		return c, errors.New("--runs and --for must not be negative")
	}
	return c, nil
}

// assemble picks the injector of the chosen profile.
func assemble(ctx context.Context, c config, s wiring.Settings, out TelemetryOutput) (*wiring.Runtime, func(), error) {
	switch {
	case !c.engine.PollOnly && c.telemetry == "otel":
		return listenOTel(ctx, s, out)
	case !c.engine.PollOnly:
		return listenPlain(ctx, s)
	case c.telemetry == "otel":
		return pollOTel(ctx, s, out)
	default:
		return pollPlain(ctx, s)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c, err := parse(args, getenv, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "custom-worker:", err)
		return 2
	}
	if err := work(ctx, c, stdout, stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "custom-worker:", err)
		return 1
	}
	return 0
}

func work(ctx context.Context, c config, stdout, stderr io.Writer) error {
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if c.migrate {
		if err := migrate(ctx, c); err != nil {
			return err
		}
	}
	var out TelemetryOutput = stderr
	if c.telemetryOut != "" {
		f, err := os.OpenFile(c.telemetryOut, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		out = f
	}
	settings := wiring.Settings{
		DatabaseURL: wiring.DatabaseURL(c.databaseURL),
		Schema:      wiring.SchemaName(c.schema),
		Engine:      c.engine,
		Logger:      logger,
	}
	rt, cleanup, err := assemble(ctx, c, settings, out)
	if err != nil {
		return err
	}
	defer cleanup() // after Stop: flushes the telemetry exporters
	e := rt.Engine
	if err := e.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	defer func() {
		// The drain's own budget (--drain-timeout; 0 is the engine's
		// default), and a second to spare.
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cmp.Or(c.engine.Dispatcher.DrainTimeout, engine.DefaultDrainTimeout)+time.Second)
		defer cancel()
		_ = e.Stop(stopCtx)
	}()
	notifier := "listen"
	if c.engine.PollOnly {
		notifier = "poll"
	}
	fmt.Fprintf(stderr, "custom-worker: schema %q, notifier %s, telemetry %s, %s\n", rt.Schema, notifier, c.telemetry, c.pruning)
	if c.runs == 0 {
		wait := ctx
		if c.runFor > 0 {
			var cancel context.CancelFunc
			wait, cancel = context.WithTimeout(ctx, c.runFor)
			defer cancel()
		}
		<-wait.Done()
		return nil
	}
	return triage(ctx, e, c.runs, ticketTimeout, stdout)
}

// ticketTimeout bounds the wait for each ticket of --runs.
const ticketTimeout = 30 * time.Second

func migrate(ctx context.Context, c config) error {
	pool, cleanup, err := wiring.NewPool(ctx, wiring.DatabaseURL(c.databaseURL))
	if err != nil {
		return err
	}
	defer cleanup()
	_, err = migrations.Up(ctx, pool, migrations.Options{Schema: c.schema})
	return err
}

var tickets = []map[string]any{
	{"subject": "Charged twice", "body": "My card shows two charges for March."},
	{"subject": "App crashes on start", "body": "Since the update it closes immediately."},
	{"subject": "Refund request", "body": "Please refund my last invoice."},
	{"subject": "Cannot log in", "body": "The password reset link does not arrive."},
}

// triage publishes the graph, starts n tickets and waits up to timeout
// for each.
func triage(ctx context.Context, e *engine.Engine, n int, timeout time.Duration, stdout io.Writer) error {
	g, err := Graph()
	if err != nil {
		return err
	}
	ref, err := e.SaveGraph(ctx, g)
	if err != nil {
		return err
	}
	ids := make([]string, n)
	for i := range ids {
		r, err := e.StartRun(ctx, ref, tickets[i%len(tickets)])
		if err != nil {
			return err
		}
		ids[i] = r.ID
	}
	for _, id := range ids {
		r, err := e.AwaitRun(ctx, id, timeout)
		if err != nil {
			return stallHint(ctx, e, id, err)
		}
		fmt.Fprintf(stdout, "%s %s %s: %s\n", r.ID, r.Status, r.Output["category"], r.Output["reply"])
	}
	return nil
}

// stallHint adds to an await that timed out what the run's queue state
// says of why it did not move, as `docket runs await` does: no worker ever
// claimed it (this process's engine included), or workers handed it back,
// as a worker does a run of a graph whose nodes it does not register. Any
// other error, or a run that made progress, is returned as it is.
func stallHint(ctx context.Context, e *engine.Engine, id string, err error) error {
	if !errors.Is(err, engine.ErrAwaitTimeout) {
		return err
	}
	info, ierr := e.InspectRun(ctx, id)
	if ierr != nil || info.Run == nil || info.Run.Status.Terminal() || info.Run.Status == docketrun.StatusWaiting {
		return err
	}
	switch {
	case info.ClaimAbandons > 0:
		return fmt.Errorf("%w; workers handed it back %d time(s) without progress, as a worker does a run of a graph whose nodes it does not register (a docket worker on this schema, say): see their logs",
			err, info.ClaimAbandons)
	case info.NeverClaimed():
		why := "busy with other runs of the schema, or refused: any warning it logged is on stderr"
		if reason := e.Health().ClaimPolicyUnavailable; reason != "" {
			why = fmt.Sprintf("it claims no runs (%s): see its warning on stderr", reason)
		}
		return fmt.Errorf("%w; no worker has claimed it, this process's engine included (%s)", err, why)
	}
	return err
}
