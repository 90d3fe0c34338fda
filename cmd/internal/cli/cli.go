// Package cli is the docket command tree: configuration from flags,
// DOCKET_* variables and the standard PostgreSQL environment, human tables
// or --json output, progress bars on terminals, and one-line errors with
// documented exit codes (docs/cli.md). The engine and its store are
// assembled by google/wire (wire.go, wire_gen.go).
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/docketgo/docket/cmd/internal/embedpg"
	"github.com/docketgo/docket/ports"
)

// IO is where a command reads and writes.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Options are the process-level dependencies of Main; the zero value
// means the real process (os.Getenv, terminal detection on os.Stderr,
// PostgreSQL binaries on PATH).
type Options struct {
	// Getenv reads configuration variables (default os.Getenv).
	Getenv func(string) string
	// Terminal reports whether w is an interactive terminal; progress
	// bars are drawn only there (default: a terminal *os.File).
	Terminal func(w io.Writer) bool
	// PostgresBinaries finds initdb and postgres for the demo's embedded
	// database (default: PATH, then /usr/lib/postgresql/*/bin).
	PostgresBinaries embedpg.Finder
}

// Main runs the command line args and returns the process exit code. It
// never panics: an internal error is reported as one line (with a stack
// trace only when DOCKET_DEBUG is set).
func Main(ctx context.Context, args []string, stdio IO, opts Options) (code int) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Terminal == nil {
		opts.Terminal = isTerminal
	}
	// Ids and values are printed as text: nothing written raw to stdout
	// may drive the reader's terminal (progress bars, drawn on stderr, are
	// the CLI's own).
	stdio.Out = safeWriter{stdio.Out}
	a := &app{io: stdio, opts: opts}
	defer func() {
		if r := recover(); r != nil {
			detail := ""
			if opts.Getenv("DOCKET_DEBUG") != "" {
				detail = "\n" + string(debug.Stack())
			}
			fmt.Fprintf(stdio.Err, "docket: internal error: %s (please report it)%s\n", terminalSafe(fmt.Sprint(r)), detail)
			code = ExitFailure
		}
	}()
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdio.In)
	root.SetOut(stdio.Out)
	root.SetErr(stdio.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		err = &exitError{code: ExitInterrupted, kind: "interrupted", err: errors.New("interrupted")}
	}
	// A usage error can come before the flags (or their variables) were
	// bound: JSON was still asked for if the command line or DOCKET_JSON
	// says so.
	a.json = wantsJSON(args, opts.Getenv(envName("json")))
	return a.report(err)
}

// wantsJSON reads --json as the flag parser would from raw arguments (the
// last one wins), else from its variable's value.
func wantsJSON(args []string, env string) bool {
	flag, set := false, false
	for _, arg := range args {
		if arg == "--" {
			break
		}
		switch v, ok := strings.CutPrefix(arg, "--json"); {
		case !ok:
		case v == "":
			flag, set = true, true
		case strings.HasPrefix(v, "="):
			if on, err := strconv.ParseBool(v[1:]); err == nil {
				flag, set = on, true
			}
		}
	}
	if set {
		return flag
	}
	on, err := strconv.ParseBool(env)
	return err == nil && on
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// app is one invocation: its streams, options and global flags.
type app struct {
	io   IO
	opts Options

	databaseURL string
	schema      string
	tenant      string
	json        bool
	noProgress  bool
	logLevel    string

	// claimPolicyFlag is the worker's --claim-policy; admits is set by the
	// commands that claim runs (worker, demo): only their stores take the
	// schema's admission authority.
	claimPolicyFlag string
	admits          bool
	// telemetry is what the engine reports to: the worker's
	// --metrics-addr endpoint's, else nil (none).
	telemetry ports.Telemetry
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "docket",
		Short: "Durable graph workflows on PostgreSQL",
		Long: "docket operates Docket: migrate the schema, publish and render graphs, start, inspect and\n" +
			"steer runs, follow events, prune history, run a worker, check an adapter's conformance,\n" +
			"or run the demo (no setup needed).\n\n" +
			"Every flag can also be set with a DOCKET_* variable (--database-url: DOCKET_DATABASE_URL).\n" +
			"The database also comes from DATABASE_URL or the standard PG* variables.",
		SilenceUsage:      true,
		SilenceErrors:     true, // Main prints one line
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.bindEnv(cmd) },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(flagValueError(err)) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.databaseURL, "database-url", "", "PostgreSQL connection string (also DATABASE_URL, or the PG* variables)")
	pf.StringVar(&a.schema, "schema", "", "Docket schema (default: where the search_path finds docket_runs; migrate: else public)")
	pf.StringVar(&a.tenant, "tenant", "", "act as this tenant (tenant-required mode); runs of other tenants are not found")
	pf.BoolVar(&a.json, "json", false, "print machine-readable JSON instead of tables")
	pf.BoolVar(&a.noProgress, "no-progress", false, "never draw progress bars (they are drawn only on a terminal)")
	pf.StringVar(&a.logLevel, "log-level", "warn", "log level on stderr: debug, info, warn or error")
	root.AddCommand(
		a.migrateCommand(),
		a.graphCommand(),
		a.runsCommand(),
		a.interruptsCommand(),
		a.eventsCommand(),
		a.workerCommand(),
		a.demoCommand(),
		a.pruneCommand(),
		a.conformanceCommand(),
	)
	return root
}

// bindEnv sets every flag the command line left unset from DOCKET_<FLAG>
// (dashes become underscores), and --database-url also from DATABASE_URL.
func (a *app) bindEnv(cmd *cobra.Command) error {
	var problems []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Changed || f.Name == "help" {
			return
		}
		names := []string{envName(f.Name)}
		if f.Name == "database-url" {
			names = append(names, "DATABASE_URL")
		}
		for _, name := range names {
			v := a.opts.Getenv(name)
			if v == "" {
				continue
			}
			if err := f.Value.Set(v); err != nil {
				if want, ok := wantedValue(err); ok {
					err = errors.New(want)
				}
				problems = append(problems, usageErr(fmt.Errorf("%s=%q: %v", name, v, err)))
			}
			f.Changed = true
			return
		}
	})
	return errors.Join(problems...)
}

// envName is the variable of a flag: --database-url is DOCKET_DATABASE_URL.
func envName(flag string) string {
	return "DOCKET_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// logger writes structured logs to stderr at --log-level.
func (a *app) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return nil, usageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", a.logLevel))
	}
	return slog.New(slog.NewTextHandler(a.io.Err, &slog.HandlerOptions{Level: level})), nil
}

// say prints a human status line on stderr (never in --json mode's
// stdout, so JSON stays parseable).
func (a *app) say(format string, args ...any) {
	fmt.Fprintln(a.io.Err, terminalSafe(fmt.Sprintf(format, args...)))
}

// noArgs, exactArgs and rangeArgs are cobra argument validators whose
// errors are usage errors (exit 2).
func noArgs(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErr(fmt.Errorf("unexpected argument %q", args[0]))
	}
	return nil
}

func exactArgs(n int, names ...string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErr(fmt.Errorf("expected %s, got %d argument(s)", strings.Join(names, " and "), len(args)))
		}
		return nil
	}
}

func rangeArgs(lo, hi int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageErr(fmt.Errorf("expected %s, got %d argument(s)", what, len(args)))
		}
		return nil
	}
}

// groupCommand is a command that only holds subcommands: run without one,
// it is a usage error naming them.
func groupCommand(use, short string, children ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			names := make([]string, 0, len(cmd.Commands()))
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			if len(args) > 0 {
				return usageErr(fmt.Errorf("unknown command %q for %q (expected %s)", args[0], cmd.CommandPath(), strings.Join(names, ", ")))
			}
			return usageErr(fmt.Errorf("%q needs a subcommand: %s", cmd.CommandPath(), strings.Join(names, ", ")))
		},
	}
	c.AddCommand(children...)
	return c
}
