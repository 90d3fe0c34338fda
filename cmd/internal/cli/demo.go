package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/internal/embedpg"
	"github.com/docketgo/docket/cmd/internal/render"
	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/ports"
)

// demoSchema is the schema the demo uses on a database the user names, so
// it never mixes with the deployment's own tables.
const demoSchema = "docket_demo"

type demoOptions struct {
	runs     int
	memory   bool
	dataDir  string
	binDir   string
	reset    bool
	mermaid  bool
	timeout  time.Duration
	pollTick time.Duration
}

func (a *app) demoCommand() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a batch of example workflows end to end (no setup needed)",
		Long: "demo publishes the loan-review graph (fan-out to two checks, one flaky so it retries, a\n" +
			"join, a guarded branch, a manager approval interrupt the demo answers, a summary), runs a\n" +
			"batch of applications through a worker, and prints their outcomes, one run's checkpoint\n" +
			"timeline and the graph.\n\n" +
			"Where the data lives:\n" +
			"  --database-url given    that database, in schema \"docket_demo\" (or --schema)\n" +
			"  otherwise               a private PostgreSQL started from the local binaries (initdb and\n" +
			"                          postgres on PATH or in /usr/lib/postgresql/*/bin) in --data-dir,\n" +
			"                          default <user cache dir>/docket/demo-pg, kept between demos: runs\n" +
			"                          a demo interrupted with Ctrl-C left unfinished resume next time\n" +
			"  no binaries, --memory   the in-memory store (nothing is kept); but a private PostgreSQL\n" +
			"                          asked for with --data-dir or --pg-bin-dir that cannot start is an error",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.runs < 1 || o.runs > 1000 {
				return usagef("--runs %d: want 1 to 1000", o.runs)
			}
			if o.timeout <= 0 {
				return usagef("--timeout must be positive")
			}
			if o.pollTick < time.Millisecond {
				return usagef("--poll-interval must be at least 1ms")
			}
			return a.demo(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.runs, "runs", demo.DefaultBatchSize, "runs in the batch")
	f.BoolVar(&o.memory, "memory", false, "use the in-memory store even when PostgreSQL is available")
	f.StringVar(&o.dataDir, "data-dir", "", "directory of the private PostgreSQL, new or empty or an earlier demo's (default: <user cache dir>/docket/demo-pg)")
	f.StringVar(&o.binDir, "pg-bin-dir", "", "directory holding initdb and postgres (default: PATH, then /usr/lib/postgresql/*/bin)")
	f.BoolVar(&o.reset, "reset", false, "delete the private PostgreSQL's data first")
	f.BoolVar(&o.mermaid, "mermaid", false, "print the graph as Mermaid instead of text")
	f.DurationVar(&o.timeout, "timeout", demo.DefaultBatchTimeout, "how long to wait for the batch")
	f.DurationVar(&o.pollTick, "poll-interval", 100*time.Millisecond, "the demo worker's poll interval")
	return cmd
}

// demoEngineConfig is a worker tuned for a short interactive batch. Its
// short orphan TTL lets a resumed demo take over, within seconds, the
// runs an interrupted one still held claims on (the demo's nodes are
// quick, so a one-second attempt limit is plenty).
func demoEngineConfig(poll time.Duration) engine.Config {
	return engine.Config{
		Dispatcher: engine.DispatcherConfig{
			Concurrency: 8, PollInterval: poll, DrainTimeout: 5 * time.Second, OrphanTTL: 5 * time.Second,
		},
		Vehicle:           engine.VehicleConfig{DrainBudget: engine.DrainBudget{MaxElapsed: 2 * time.Second}},
		MaxAttemptElapsed: time.Second,
		AwaitPollInterval: 100 * time.Millisecond,
	}
}

// demoBackend is where the demo runs and how to describe it.
type demoBackend struct {
	kind     string // "postgres" or "memory"
	database string // "url", "embedded" or "memory"
	where    string
	rt       *wiring.Runtime
	close    func()
}

func (a *app) demo(ctx context.Context, o demoOptions) error {
	b, err := a.demoBackend(ctx, o)
	if err != nil {
		return err
	}
	defer b.close()
	a.say("Docket demo on %s", b.where)

	e := b.rt.Engine
	if err := e.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	stop := func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = e.Stop(stopCtx)
	}
	c := a.client(b.rt)
	bar := a.progress(o.runs, "running "+fmt.Sprint(o.runs)+" loan applications")
	began := time.Now()
	res, err := demo.Batch(ctx, c, demo.BatchOptions{
		Size:     o.runs,
		Timeout:  o.timeout,
		Progress: func(finished, _ int) { bar.set(finished) },
	})
	bar.finish()
	elapsed := time.Since(began)
	if err != nil {
		stop()
		if ctx.Err() != nil && b.kind == "postgres" {
			unfinished := "the unfinished runs are"
			if n, err := unfinishedDemoRuns(context.WithoutCancel(ctx), c); err == nil {
				unfinished = fmt.Sprintf("%d unfinished run(s) are", n)
			}
			a.say("interrupted: %s kept; run `docket demo` again to resume them", unfinished)
		}
		return err
	}
	report, err := a.demoReport(ctx, c, b, res, elapsed)
	stop()
	if err != nil {
		return err
	}
	if a.json {
		return printJSON(a.io.Out, report)
	}
	return a.printDemo(report, res, o.mermaid)
}

// unfinishedDemoRuns counts the demo runs the store holds running or
// waiting. Asked once the worker has stopped, it is what the next demo
// finds to resume: the batch's own view is older (runs finished while it
// was still starting others, or while the worker drained).
func unfinishedDemoRuns(ctx context.Context, c *engine.Client) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p := ports.ListRunsParams{Limit: ports.MaxPageLimit, GraphID: demo.GraphID,
		Statuses: []run.Status{run.StatusRunning, run.StatusWaiting}}
	n := 0
	for {
		page, err := c.ListRuns(ctx, p)
		if err != nil {
			return 0, err
		}
		n += len(page.Runs)
		if !page.HasMore {
			return n, nil
		}
		p.Before = page.NextBefore
	}
}

// demoPostgresFlags names the flags that asked for the private PostgreSQL.
func demoPostgresFlags(o demoOptions) string {
	var flags []string
	if o.dataDir != "" {
		flags = append(flags, "--data-dir "+shellQuote(o.dataDir))
	}
	if o.binDir != "" {
		flags = append(flags, "--pg-bin-dir "+shellQuote(o.binDir))
	}
	return strings.Join(flags, " and ")
}

// demoBackend picks the database: memory when --memory says so, else the
// configured URL, else a private PostgreSQL, else (no binaries, a failed
// start) memory; but a private PostgreSQL asked for with --data-dir or
// --pg-bin-dir that does not start is an error.
func (a *app) demoBackend(ctx context.Context, o demoOptions) (*demoBackend, error) {
	cfg := demoEngineConfig(o.pollTick)
	a.admits = true // the demo drives its runs
	switch {
	case o.memory:
		return a.memoryDemoBackend(cfg, "the in-memory store (--memory); nothing is kept after the demo")
	case a.databaseURL != "":
		if a.schema == "" {
			a.schema = demoSchema
		}
		if err := a.migrateQuietly(ctx); err != nil {
			return nil, err
		}
		rt, cleanup, err := a.openEngine(ctx, cfg)
		if err != nil {
			return nil, err
		}
		return &demoBackend{kind: "postgres", database: "url", rt: rt, close: cleanup,
			where: fmt.Sprintf("the configured PostgreSQL (schema %q)", a.schema)}, nil
	}
	if o.reset {
		dir, err := embedpg.Reset(o.dataDir)
		if err != nil {
			return nil, err
		}
		a.say("removed the demo database in %s", dir)
	}
	srv, err := embedpg.Start(ctx, embedpg.Options{
		Dir:    o.dataDir,
		BinDir: o.binDir,
		Finder: a.opts.PostgresBinaries,
		Say:    func(format string, args ...any) { a.say(format, args...) },
	})
	switch {
	case err != nil && ctx.Err() == nil && (o.dataDir != "" || o.binDir != ""):
		// A private PostgreSQL asked for by name is no fallback's to
		// replace: the user would think the runs kept.
		return nil, fmt.Errorf("the private PostgreSQL of %s did not start: %w (--memory runs the demo on the in-memory store)",
			demoPostgresFlags(o), err)
	case errors.Is(err, embedpg.ErrNoBinaries):
		return a.memoryDemoBackend(cfg, fmt.Sprintf("the in-memory store: %v; install PostgreSQL (or pass --database-url) "+
			"to see runs survive a restart. Nothing is kept after the demo", err))
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil:
		return a.memoryDemoBackend(cfg, fmt.Sprintf("the in-memory store: the private PostgreSQL did not start (%v). Nothing is kept after the demo", oneLine(err.Error())))
	}
	stopServer := func() {
		if err := srv.Stop(); err != nil {
			a.say("docket: stop the demo database: %v", err)
		}
	}
	a.databaseURL, a.schema = srv.URL, ""
	if err := a.migrateQuietly(ctx); err != nil {
		stopServer()
		return nil, err
	}
	rt, cleanup, err := a.openEngine(ctx, cfg)
	if err != nil {
		stopServer()
		return nil, err
	}
	state := "kept between demos"
	if srv.Initialized {
		state = "new; kept between demos"
	}
	return &demoBackend{kind: "postgres", database: "embedded", rt: rt,
		where: fmt.Sprintf("a private PostgreSQL in %s (%s)", srv.Dir, state),
		close: func() { cleanup(); stopServer() }}, nil
}

func (a *app) memoryDemoBackend(cfg engine.Config, where string) (*demoBackend, error) {
	s, err := a.settings(cfg)
	if err != nil {
		return nil, err
	}
	rt, err := openMemory(s)
	if err != nil {
		return nil, err
	}
	return &demoBackend{kind: "memory", database: "memory", rt: rt, where: where, close: func() {}}, nil
}

// migrateQuietly installs or upgrades the demo's schema.
func (a *app) migrateQuietly(ctx context.Context) error {
	pool, cleanup, err := a.openPool(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	schema, err := a.migrationSchema(ctx, pool)
	if err != nil {
		return err
	}
	_, err = migrations.Up(ctx, pool, migrations.Options{Schema: schema})
	return err
}

type demoJSON struct {
	Backend  string          `json:"backend"`
	Database string          `json:"database"`
	GraphID  string          `json:"graph_id"`
	Hash     string          `json:"hash"`
	Resumed  int             `json:"resumed"`
	Elapsed  float64         `json:"elapsed_seconds"`
	Runs     []demoRunJSON   `json:"runs"`
	Timeline demoTimeline    `json:"timeline"`
	Overlay  *render.Overlay `json:"-"`
	Diagram  string          `json:"diagram"`
}

type demoRunJSON struct {
	RunID          string     `json:"run_id"`
	Customer       string     `json:"customer"`
	Amount         float64    `json:"amount"`
	Route          string     `json:"route"`
	CreditAttempts int        `json:"credit_attempts"`
	Decision       string     `json:"decision,omitempty"`
	Resumed        bool       `json:"resumed"`
	Status         run.Status `json:"status"`
	Output         jsonMap    `json:"output"`
}

type demoTimeline struct {
	RunID       string               `json:"run_id"`
	Checkpoints []demoCheckpointJSON `json:"checkpoints"`
}

type demoCheckpointJSON struct {
	Seq         int64    `json:"seq"`
	Type        string   `json:"type"`
	Step        int      `json:"step"`
	Disposition string   `json:"disposition"`
	ParkReason  string   `json:"park_reason,omitempty"`
	Events      []string `json:"events"`
}

func (a *app) demoReport(ctx context.Context, c *engine.Client, b *demoBackend, res *demo.BatchResult, elapsed time.Duration) (*demoJSON, error) {
	report := &demoJSON{Backend: b.kind, Database: b.database, GraphID: res.Ref.GraphID, Hash: res.Ref.Hash,
		Resumed: res.Resumed, Elapsed: elapsed.Seconds()}
	chosen := -1
	events := map[string][]run.Event{}
	for i, br := range res.Runs {
		evs, err := allEvents(ctx, c, br.Run.ID)
		if err != nil {
			return nil, err
		}
		events[br.Run.ID] = evs
		attempts := 1
		for _, e := range evs {
			if e.Type == run.EventNodeFailed && e.NodeID == "credit_check" {
				attempts++
			}
		}
		route := "auto"
		if br.Application.Amount > demo.ManualReviewAbove {
			route = "manual"
		}
		report.Runs = append(report.Runs, demoRunJSON{
			RunID: br.Run.ID, Customer: br.Application.Customer, Amount: br.Application.Amount, Route: route,
			CreditAttempts: attempts, Decision: br.Decision, Resumed: br.Resumed, Status: br.Run.Status, Output: br.Run.Output,
		})
		// The most instructive run retried and waited for the manager.
		if chosen < 0 && route == "manual" && attempts > 1 {
			chosen = i
		}
	}
	if chosen < 0 {
		chosen = 0
	}
	r := res.Runs[chosen].Run
	report.Timeline = demoTimeline{RunID: r.ID, Checkpoints: timeline(events[r.ID])}
	g, err := demo.Graph()
	if err != nil {
		return nil, err
	}
	report.Overlay = render.OverlayOf(g, r, events[r.ID])
	report.Diagram = render.Text(g, report.Overlay)
	return report, nil
}

// timeline groups a run's events by the checkpoint that committed them:
// every moment ends with its checkpoint_committed event.
func timeline(events []run.Event) []demoCheckpointJSON {
	var out []demoCheckpointJSON
	var pending []run.Event
	for _, e := range events {
		if e.Type != run.EventCheckpointCommitted {
			pending = append(pending, e)
			continue
		}
		cp := demoCheckpointJSON{Step: e.Step, Events: describeEvents(pending)}
		if m := e.Metadata; m != nil {
			cp.Seq, cp.Type, cp.Disposition = m.Seq, string(m.Type), string(m.WakeDisposition)
			if m.WakeDisposition != run.DispositionContinue {
				cp.ParkReason = m.ParkReason
			}
		}
		out = append(out, cp)
		pending = nil
	}
	return out
}

// describeEvents summarizes the runtime events of one checkpoint, with
// channel updates gathered in one entry.
func describeEvents(events []run.Event) []string {
	var parts, channels []string
	for _, e := range events {
		switch e.Type {
		case run.EventChannelUpdated:
			channels = append(channels, e.ChannelID)
		case run.EventNodeFailed:
			parts = append(parts, fmt.Sprintf("node_failed %s#%v: %v", e.NodeID, e.Payload["attempt"], e.Payload["reason"]))
		case run.EventEdgeTriggered:
			parts = append(parts, fmt.Sprintf("edge %v", e.Payload["edge_id"]))
		case run.EventNodeCompleted, run.EventInterruptRequested, run.EventInterruptResolved:
			parts = append(parts, string(e.Type)+" "+e.NodeID)
		default:
			parts = append(parts, string(e.Type))
		}
	}
	if len(channels) > 0 {
		parts = append(parts, "updated "+strings.Join(channels, ", "))
	}
	return parts
}

func (a *app) printDemo(report *demoJSON, res *demo.BatchResult, mermaid bool) error {
	w := a.io.Out
	fmt.Fprintf(w, "Published graph %s@%s.\n", report.GraphID, short(report.Hash))
	if report.Resumed > 0 {
		fmt.Fprintf(w, "Resumed %d run(s) an interrupted demo left unfinished.\n", report.Resumed)
	}
	runs := "runs"
	if len(report.Runs) == 1 {
		runs = "run"
	}
	fmt.Fprintf(w, "%d %s finished in %.1fs.\n\n", len(report.Runs), runs, report.Elapsed)
	t := newTable(w, "RUN", "CUSTOMER", "AMOUNT", "ROUTE", "CREDIT CHECK", "OUTCOME", "STATUS")
	for _, r := range report.Runs {
		attempts := "1 attempt"
		if r.CreditAttempts > 1 {
			attempts = fmt.Sprintf("%d attempts", r.CreditAttempts)
		}
		outcome := fmt.Sprint(r.Output["approval"])
		if r.Route == "manual" {
			outcome += " by manager"
		} else {
			outcome += " by policy"
		}
		id := r.RunID
		if r.Resumed {
			id += " (resumed)"
		}
		t.row(id, r.Customer, fmt.Sprintf("%.0f", r.Amount), r.Route, attempts, outcome, string(r.Status))
	}
	if err := t.flush(); err != nil {
		return err
	}
	chosen := report.Timeline.RunID
	for _, r := range report.Runs {
		if r.RunID == chosen {
			fmt.Fprintf(w, "\nOutputs of run %s (%s, %.0f):\n", chosen, r.Customer, r.Amount)
			for _, k := range sortedKeys(r.Output) {
				fmt.Fprintf(w, "  %-9s %s\n", k, compactJSON(r.Output[k]))
			}
		}
	}
	fmt.Fprintf(w, "\nCheckpoint timeline of run %s:\n", chosen)
	t = newTable(w, "  SEQ", "CHECKPOINT", "STEP", "WAKE", "EVENTS")
	for _, cp := range report.Timeline.Checkpoints {
		wake := cp.Disposition
		if cp.ParkReason != "" {
			wake += " (" + cp.ParkReason + ")"
		}
		t.row(fmt.Sprintf("  %d", cp.Seq), cp.Type, fmt.Sprint(cp.Step), wake, strings.Join(cp.Events, "; "))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nThe graph, with run %s overlaid:\n\n", chosen)
	if mermaid {
		g, err := demo.Graph()
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, render.Mermaid(g, report.Overlay))
		return err
	}
	if _, err := io.WriteString(w, indent(report.Diagram, "  ")); err != nil {
		return err
	}
	fmt.Fprintln(w, "\n(--mermaid prints it as a Mermaid flowchart; `docket graph render` draws stored graphs and runs.)")
	return nil
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}
