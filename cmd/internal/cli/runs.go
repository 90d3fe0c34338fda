package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

func (a *app) runsCommand() *cobra.Command {
	return groupCommand("runs", "Start, list, inspect and steer runs",
		a.runsListCommand(), a.runsShowCommand(), a.runsEventsCommand(), a.runsStartCommand(),
		a.runsAwaitCommand(), a.runsCancelCommand(), a.runsRetryCommand())
}

// ---------------------------------------------------------------- list

type runFilter struct {
	statuses []string
	graphID  string
	hash     string
}

func (f *runFilter) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.statuses, "status", nil, "only runs in these statuses: running, waiting, done, failed, cancelled")
	cmd.Flags().StringVar(&f.graphID, "graph", "", "only runs of this graph id")
	cmd.Flags().StringVar(&f.hash, "hash", "", "only runs of this graph version")
}

func (f *runFilter) params() (ports.ListRunsParams, error) {
	p := ports.ListRunsParams{GraphID: f.graphID, GraphHash: f.hash}
	if err := checkHash(f.hash); err != nil {
		return p, err
	}
	for _, s := range f.statuses {
		status := run.Status(strings.TrimSpace(s))
		switch status {
		case run.StatusRunning, run.StatusWaiting, run.StatusDone, run.StatusFailed, run.StatusCancelled:
			p.Statuses = append(p.Statuses, status)
		default:
			return p, usagef("--status %q: want running, waiting, done, failed or cancelled", s)
		}
	}
	return p, nil
}

// checkHash refuses a --hash that is not a whole graph hash (64 lowercase
// hex digits): tables print versions abbreviated, and an abbreviation
// would match no version, silently in a list. "" means none.
func checkHash(hash string) error {
	if hash == "" {
		return nil
	}
	if len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		return usagef("--hash %q: want the whole 64-digit graph hash (docket graph show prints it)", hash)
	}
	return nil
}

// formatRunCursor and parseRunCursor encode a ListRuns position as
// "<started_at RFC 3339>/<run id>".
func formatRunCursor(c *ports.RunCursor) string {
	if c == nil {
		return ""
	}
	return c.StartedAt.UTC().Format(time.RFC3339Nano) + "/" + c.RunID
}

func parseRunCursor(s string) (*ports.RunCursor, error) {
	at, id, ok := strings.Cut(s, "/")
	t, err := time.Parse(time.RFC3339Nano, at)
	if !ok || err != nil || id == "" {
		return nil, usagef("--before %q: want a cursor printed by runs list (<time>/<run id>)", s)
	}
	return &ports.RunCursor{StartedAt: ports.Micros(t), RunID: id}, nil
}

type runPageJSON struct {
	Runs       []summaryJSON `json:"runs"`
	NextBefore string        `json:"next_before,omitempty"`
	HasMore    bool          `json:"has_more"`
}

func (a *app) runsListCommand() *cobra.Command {
	var filter runFilter
	var limit int
	var before string
	var all bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List runs, newest first",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := filter.params()
			if err != nil {
				return err
			}
			if limit < 1 || limit > ports.MaxPageLimit {
				return usagef("--limit %d: want 1 to %d", limit, ports.MaxPageLimit)
			}
			p.Limit = limit
			if before != "" {
				if p.Before, err = parseRunCursor(before); err != nil {
					return err
				}
			}
			return a.runsList(cmd.Context(), p, all)
		},
	}
	filter.register(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "runs per page (1 to 1000)")
	cmd.Flags().StringVar(&before, "before", "", "continue after this cursor (printed by the previous page)")
	cmd.Flags().BoolVar(&all, "all", false, "list every page")
	return cmd
}

func (a *app) runsList(ctx context.Context, p ports.ListRunsParams, all bool) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	res := runPageJSON{Runs: []summaryJSON{}}
	for {
		page, err := c.ListRuns(ctx, p)
		if err != nil {
			return err
		}
		for _, s := range page.Runs {
			res.Runs = append(res.Runs, toSummaryJSON(s))
		}
		res.HasMore, res.NextBefore = page.HasMore, formatRunCursor(page.NextBefore)
		if !all || !page.HasMore {
			break
		}
		p.Before = page.NextBefore
	}
	if !res.HasMore {
		res.NextBefore = ""
	}
	if a.json {
		return printJSON(a.io.Out, res)
	}
	if len(res.Runs) == 0 {
		a.say("no runs")
		return nil
	}
	t := newTable(a.io.Out, "RUN", "GRAPH", "STATUS", "STEP", "SEQ", "STARTED", "UPDATED")
	for _, s := range res.Runs {
		t.row(s.RunID, s.GraphID+"@"+short(s.GraphHash), string(s.Status), fmt.Sprint(s.Step), fmt.Sprint(s.CheckpointSeq),
			shortTimeOf(s.StartedAt), shortTimeOf(s.UpdatedAt))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if res.HasMore {
		a.say("more runs: docket runs list --before %s", shellQuote(res.NextBefore))
	}
	return nil
}

// short abbreviates a hash for tables.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

func shortTimeOf(ts string) string {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return orDash(ts)
	}
	return shortTime(t)
}

// ---------------------------------------------------------------- show

func (a *app) runsShowCommand() *cobra.Command {
	var state bool
	show := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run: status, input, output, failure, interrupts, tasks and queue state",
		Args:  exactArgs(1, "a run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, cleanup, err := a.openEngine(ctx, engine.Config{})
			if err != nil {
				return err
			}
			defer cleanup()
			info, err := a.client(rt).InspectRun(ctx, args[0])
			if err != nil {
				return about("run", args[0], err)
			}
			r := toRunJSON(info.Run, info)
			if state {
				r.State = stateOf(info.Run)
			}
			if a.json {
				return printJSON(a.io.Out, r)
			}
			return a.printRun(r)
		},
	}
	show.Flags().BoolVar(&state, "state", false, "also show the run's state fields (their committed values)")
	return show
}

// stateOf is the committed value of each state field r has written; a
// field never written is absent.
func stateOf(r *run.Run) jsonMap {
	out := jsonMap{}
	for _, c := range r.Channels {
		if field, ok := strings.CutPrefix(c.ID, graph.StatePrefix); ok {
			out[field] = c.Value
		}
	}
	return out
}

func (a *app) printRun(r runJSON) error {
	w := a.io.Out
	line := func(label, value string) {
		if value != "" {
			fmt.Fprintf(w, "  %-12s %s\n", label, strings.ReplaceAll(value, "\n", `\u000a`))
		}
	}
	fmt.Fprintf(w, "run %s\n", strings.ReplaceAll(r.RunID, "\n", `\u000a`))
	line("tenant", r.Tenant)
	line("graph", r.GraphID+"@"+r.GraphHash)
	line("status", fmt.Sprintf("%s (step %d, checkpoint %d)", r.Status, r.Step, r.CheckpointSeq))
	line("started", r.StartedAt)
	line("updated", r.UpdatedAt)
	line("finished", r.FinishedAt)
	line("input", compactJSON(r.Input))
	if r.Output != nil {
		line("output", compactJSON(r.Output))
	}
	if len(r.Metadata) > 0 {
		line("metadata", compactJSON(r.Metadata))
	}
	if r.State != nil {
		line("state", compactJSON(r.State))
	}
	if f := r.Failure; f != nil {
		line("failure", failureText(f))
		if len(f.Details) > 0 {
			line("details", compactJSON(f.Details))
		}
	}
	if len(r.PendingNodes) > 0 {
		line("pending", strings.Join(r.PendingNodes, ", "))
	}
	if o := r.Operational; o != nil {
		queue := fmt.Sprintf("claim attempts %d, abandons %d", o.ClaimAttempts, o.ClaimAbandons)
		if o.WakeAt != "" {
			queue = "wake at " + o.WakeAt + ", " + queue
		}
		if o.ClaimedAt != "" {
			queue = "claimed at " + o.ClaimedAt + ", " + queue
		}
		line("queue", queue)
		if o.Poisoned {
			line("poisoned", o.PoisonedAt+": "+o.PoisonReason+" (docket runs retry "+shellQuote(r.RunID)+")")
		}
	}
	if len(r.Interrupts) > 0 {
		fmt.Fprintln(w, "\ninterrupts:")
		t := newTable(w, "  ID", "NODE", "STATUS", "ANSWER", "RESUMES", "METADATA")
		for _, in := range r.Interrupts {
			t.row("  "+in.ID, in.NodeID, in.Status, answerKind(in.Schema), in.ResumeChannel, orDash(compactMeta(in.Metadata)))
		}
		if err := t.flush(); err != nil {
			return err
		}
	}
	if len(r.ActiveTasks) > 0 {
		fmt.Fprintln(w, "\nactive tasks:")
		t := newTable(w, "  TASK", "NODE", "ATTEMPT", "STATUS")
		for _, task := range r.ActiveTasks {
			t.row("  "+task.TaskID, task.NodeID, fmt.Sprint(task.Attempt), task.Status)
		}
		return t.flush()
	}
	return nil
}

// failureText is the one-line form of a run's failure: its code, message
// and node (its details, such as each failed node's error, go apart).
func failureText(f *failureJSON) string {
	text := f.Code + ": " + f.Message
	if f.NodeID != "" {
		text += " (node " + f.NodeID + ")"
	}
	return text
}

func compactMeta(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	return compactJSON(m)
}

// ---------------------------------------------------------------- events

type eventPageJSON struct {
	RunID              string      `json:"run_id"`
	Events             []eventJSON `json:"events"`
	NextAfterSeq       int64       `json:"next_after_seq"`
	HasMore            bool        `json:"has_more"`
	OldestAvailableSeq *int64      `json:"oldest_available_seq"`
	LatestAvailableSeq *int64      `json:"latest_available_seq"`
	LatestSeq          int64       `json:"latest_seq"`
}

func (a *app) runsEventsCommand() *cobra.Command {
	var after int64
	var limit int
	var all bool
	cmd := &cobra.Command{
		Use:   "events RUN_ID",
		Short: "List a run's retained events in order",
		Args:  exactArgs(1, "a run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if after < 0 {
				return usagef("--after %d: must not be negative", after)
			}
			if limit < 1 || limit > ports.MaxPageLimit {
				return usagef("--limit %d: want 1 to %d", limit, ports.MaxPageLimit)
			}
			return a.runsEvents(cmd.Context(), args[0], after, limit, all)
		},
	}
	cmd.Flags().Int64Var(&after, "after", 0, "only events after this sequence number")
	cmd.Flags().IntVar(&limit, "limit", ports.DefaultEventPageLimit, "events per page (1 to 1000)")
	cmd.Flags().BoolVar(&all, "all", false, "list every page")
	return cmd
}

func (a *app) runsEvents(ctx context.Context, runID string, after int64, limit int, all bool) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	res := eventPageJSON{RunID: runID, Events: []eventJSON{}}
	var events []run.Event
	for {
		page, err := c.ListEvents(ctx, runID, ports.ListEventsParams{AfterSeq: after, Limit: limit})
		if err != nil {
			return about("run", runID, err)
		}
		for _, e := range page.Events {
			res.Events = append(res.Events, toEventJSON(e))
		}
		events = append(events, page.Events...)
		res.NextAfterSeq, res.HasMore = page.NextAfterSeq, page.HasMore
		res.OldestAvailableSeq, res.LatestAvailableSeq, res.LatestSeq = page.OldestAvailableSeq, page.LatestAvailableSeq, page.LatestSeq
		if !all || !page.HasMore {
			break
		}
		after = page.NextAfterSeq
	}
	if a.json {
		return printJSON(a.io.Out, res)
	}
	if len(events) == 0 {
		a.say("%s", noEvents(after, res))
		return nil
	}
	t := newTable(a.io.Out, "SEQ", "STEP", "TYPE", "DETAIL", "TIME")
	for _, e := range events {
		t.row(fmt.Sprint(e.Seq), fmt.Sprint(e.Step), string(e.Type), eventDetail(e), timestamp(e.Timestamp))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if res.HasMore {
		a.say("more events: docket runs events %s --after %d", shellQuote(runID), res.NextAfterSeq)
	}
	return nil
}

// noEvents says why a page of a run's events after the cursor after is
// empty: pruning deleted the run's events, or the cursor is at its last.
func noEvents(after int64, res eventPageJSON) string {
	switch {
	case res.LatestAvailableSeq == nil && res.LatestSeq > 0:
		return fmt.Sprintf("no events: pruning deleted the run's %d event(s)", res.LatestSeq)
	case after > 0:
		return fmt.Sprintf("no events after %d (the run's last event is %d)", after, res.LatestSeq)
	}
	return "no events"
}

// ---------------------------------------------------------------- start

func (a *app) runsStartCommand() *cobra.Command {
	var hash, input, metadata, key, runID string
	var await time.Duration
	cmd := &cobra.Command{
		Use:   "start GRAPH_ID",
		Short: "Start a run of a published graph",
		Long: "start initializes a run of the newest version of GRAPH_ID (or --hash) with --input, a JSON\n" +
			"object given inline, as @FILE, or - for stdin. Numbers keep their JSON form: 1500 is an\n" +
			"integer, 1500.0 a float. A worker drives the run; --await waits for it to finish or to\n" +
			"wait for input.",
		Args: exactArgs(1, "a graph id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if await < 0 {
				return usagef("--await must not be negative")
			}
			if err := checkHash(hash); err != nil {
				return err
			}
			if input == "-" && metadata == "-" {
				return usagef("--input and --metadata cannot both read stdin; give one as @FILE")
			}
			in, err := a.readObject("--input", input)
			if err != nil {
				return err
			}
			meta, err := a.readObject("--metadata", metadata)
			if err != nil {
				return err
			}
			if len(meta) == 0 {
				meta = nil
			}
			var opts []engine.StartOption
			if cmd.Flags().Changed("idempotency-key") {
				// Given but empty is refused by StartRun; only an absent
				// flag means a start without a key.
				opts = append(opts, engine.WithIdempotencyKey(key))
			}
			if runID != "" {
				opts = append(opts, engine.WithRunID(runID))
			}
			if meta != nil {
				opts = append(opts, engine.WithMetadata(meta))
			}
			return a.runsStart(cmd.Context(), args[0], hash, in, opts, await)
		},
	}
	cmd.Flags().StringVar(&hash, "hash", "", "graph version (default: the newest)")
	cmd.Flags().StringVar(&input, "input", "{}", "run input: a JSON object, @FILE or -")
	cmd.Flags().StringVar(&metadata, "metadata", "", "application metadata: a JSON object, @FILE or -")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "start at most one run per key (a repeat returns the same run)")
	cmd.Flags().StringVar(&runID, "run-id", "", "the new run's id (default: generated)")
	cmd.Flags().DurationVar(&await, "await", 0, "wait this long for the run to finish or wait for input")
	return cmd
}

// readObject decodes a JSON object from an inline value, @FILE or -.
func (a *app) readObject(flag, raw string) (map[string]any, error) {
	v, err := a.readValue(flag, raw)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, usagef("%s: want a JSON object, got %s", flag, value.KindName(v))
	}
	return m, nil
}

// readValue decodes a portable JSON value from an inline value, @FILE or
// - (stdin); "" is nil.
func (a *app) readValue(flag, raw string) (any, error) {
	var data []byte
	switch {
	case raw == "":
		return nil, nil
	case raw == "-":
		b, err := io.ReadAll(a.io.In)
		if err != nil {
			return nil, usagef("%s: read stdin: %v", flag, err)
		}
		data = b
	case strings.HasPrefix(raw, "@"):
		b, err := os.ReadFile(raw[1:])
		if err != nil {
			return nil, usagef("%s: %v", flag, err)
		}
		data = b
	default:
		data = []byte(raw)
	}
	v, err := value.DecodeJSON(data)
	if err != nil {
		return nil, usagef("%s: not valid JSON: %v", flag, err)
	}
	return v, nil
}

func (a *app) runsStart(ctx context.Context, graphID, hash string, input map[string]any, opts []engine.StartOption, await time.Duration) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	ref := ports.GraphRef{GraphID: graphID, Hash: hash}
	if hash == "" {
		v, err := c.LatestGraphRef(ctx, graphID)
		if err != nil {
			return a.aboutGraph(graphID, err)
		}
		ref = v.Ref
	}
	// Starting a run runs no node: the graph may be of nodes only the
	// application's own worker registers.
	if c, err = a.knowingClient(ctx, rt, ref); err != nil {
		return err
	}
	r, err := c.StartRun(ctx, ref, input, opts...)
	if err != nil {
		return err
	}
	if await > 0 {
		done, err := c.AwaitRun(ctx, r.ID, await)
		if err != nil {
			err = stallHint(ctx, c, r.ID, retryHint(r.ID, err))
			// The run exists whatever ended the wait: say which it is, so
			// a script can await it again rather than start another.
			if perr := a.printStarted(r); perr != nil {
				return perr
			}
			return err
		}
		r = done
	}
	if a.json {
		return printJSON(a.io.Out, toRunJSON(r, nil))
	}
	fmt.Fprintf(a.io.Out, "run %s of %s@%s: %s\n", r.ID, r.GraphID, short(r.GraphHash), r.Status)
	a.printRested(r)
	return nil
}

// retryHint adds to an await's report that the run is poisoned the
// command that retries it.
func retryHint(id string, err error) error {
	if !errors.Is(err, engine.ErrPoisoned) {
		return err
	}
	return fmt.Errorf("%w; once its cause is fixed: docket runs retry %s", err, shellQuote(id))
}

// stallHint adds to an await that timed out what the run's queue state
// says of why it did not move: no worker ever claimed it, or workers
// handed it back, as a worker does a run of a graph whose nodes it lacks.
// Any other error, or a run that made progress, is returned as it is.
func stallHint(ctx context.Context, c *engine.Client, id string, err error) error {
	if !errors.Is(err, engine.ErrAwaitTimeout) {
		return err
	}
	info, ierr := c.InspectRun(ctx, id)
	if ierr != nil || info.Run == nil || info.Run.Status.Terminal() || info.Run.Status == run.StatusWaiting {
		return err
	}
	switch {
	case info.ClaimAbandons > 0:
		return fmt.Errorf("%w; workers handed it back %d time(s) without progress, as a worker does a run of a graph whose nodes it does not register: see their logs", err, info.ClaimAbandons)
	case info.NeverClaimed():
		return fmt.Errorf("%w; no worker has claimed it: is one running on this schema (docket worker, or your own worker binary for graphs of your own nodes)?", err)
	}
	return err
}

// printRested follows the status line of an awaited run with what the
// status leaves open: the output of a done run, why a failed run failed,
// or what a waiting run waits for and how to answer it.
func (a *app) printRested(r *run.Run) {
	w := a.io.Out
	oneLine := func(s string) string { return strings.ReplaceAll(s, "\n", `\u000a`) }
	if r.Output != nil {
		fmt.Fprintf(w, "output: %s\n", compactJSON(r.Output))
	}
	if f := toFailureJSON(r.Failure); f != nil {
		fmt.Fprintf(w, "failure: %s\n", oneLine(failureText(f)))
		if len(f.Details) > 0 {
			fmt.Fprintf(w, "details: %s\n", oneLine(compactJSON(f.Details)))
		}
	}
	tenant := ""
	if a.tenant != "" {
		tenant = " --tenant " + shellQuote(a.tenant)
	}
	for _, in := range r.OpenInterrupts() {
		fmt.Fprintf(w, "waiting for: interrupt %s of node %s, answered with: docket interrupts resolve %s %s%s %s\n",
			oneLine(in.ID), oneLine(in.NodeID), oneLine(shellQuote(r.ID)), oneLine(shellQuote(in.ID)), oneLine(tenant), oneLine(answerFlag(in.Schema)))
	}
}

// answerFlag is how the answer to an interrupt of schema s (its wire form)
// is given: --string for a string, with an enum's values, since an answer
// such as approved is not JSON and --value would refuse it; else --value.
func answerFlag(s map[string]any) string {
	typ, _ := s["type"].(string)
	values, _ := s["values"].([]any)
	switch {
	case typ == "string":
		return "--string TEXT"
	case typ == "enum" && len(values) > 0:
		flag := "--string TEXT"
		each := make([]string, len(values))
		for i, v := range values {
			if _, ok := v.(string); !ok {
				flag = "--value JSON"
			}
			each[i] = compactJSON(v)
		}
		return flag + " (one of " + strings.Join(each, ", ") + ")"
	}
	return "--value JSON"
}

// printStarted reports a started run whose wait ended without it.
func (a *app) printStarted(r *run.Run) error {
	if a.json {
		return printJSON(a.io.Out, toRunJSON(r, nil))
	}
	_, err := fmt.Fprintf(a.io.Out, "run %s of %s@%s: started, not awaited to its end\n", r.ID, r.GraphID, short(r.GraphHash))
	return err
}

// ---------------------------------------------------------------- await

func (a *app) runsAwaitCommand() *cobra.Command {
	var timeout time.Duration
	var untilFinished bool
	cmd := &cobra.Command{
		Use:   "await RUN_ID",
		Short: "Wait until a run finishes or waits for input",
		Long: "await returns once the run is done, failed, cancelled or waiting for an interrupt (with\n" +
			"--until-finished: once it is done, failed or cancelled, its interrupts being answered\n" +
			"elsewhere), and exits 5 when --timeout passes first. A poisoned run is reported at once\n" +
			"(exit 1).",
		Args: exactArgs(1, "a run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if timeout < 0 {
				return usagef("--timeout must not be negative")
			}
			rt, cleanup, err := a.openEngine(ctx, engine.Config{})
			if err != nil {
				return err
			}
			defer cleanup()
			var opts []engine.AwaitOption
			if untilFinished {
				opts = append(opts, engine.UntilFinished())
			}
			c := a.client(rt)
			r, err := c.AwaitRun(ctx, args[0], timeout, opts...)
			if err != nil {
				return about("run", args[0], stallHint(ctx, c, args[0], retryHint(args[0], err)))
			}
			if a.json {
				return printJSON(a.io.Out, toRunJSON(r, nil))
			}
			fmt.Fprintf(a.io.Out, "run %s: %s\n", r.ID, r.Status)
			a.printRested(r)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait")
	cmd.Flags().BoolVar(&untilFinished, "until-finished", false, "wait through waiting for interrupts, until the run is done, failed or cancelled")
	return cmd
}

// ---------------------------------------------------------------- cancel

type signalJSON struct {
	RunID  string     `json:"run_id"`
	Status run.Status `json:"status,omitempty"` // absent when the signal failed
	Result string     `json:"result"`
	Reason string     `json:"reason,omitempty"`
}

func (a *app) runsCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel RUN_ID...",
		Short: "Cancel running or waiting runs",
		Long: "cancel commits a cancellation of each run; a worker executing it loses its commit.\n" +
			"Cancelling a cancelled run changes nothing; a done or failed run is a conflict (exit 4).",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("expected at least one run id")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rt, cleanup, err := a.openEngine(ctx, engine.Config{})
			if err != nil {
				return err
			}
			defer cleanup()
			c := a.client(rt)
			// Every run is tried and reported; the first failure sets the
			// exit code, so what was done before it is never hidden.
			var results []signalJSON
			var first error
			for _, id := range args {
				if ctx.Err() != nil {
					first = cmp.Or(first, ctx.Err()) // Ctrl-C: report what was done
					break
				}
				r, err := c.CancelRun(ctx, id)
				if err != nil {
					err = about("run", id, err) // the engine says it was a cancel
					first = cmp.Or(first, err)
					results = append(results, signalJSON{RunID: id, Result: "error", Reason: err.Error()})
					continue
				}
				results = append(results, signalJSON{RunID: r.ID, Status: r.Status, Result: "cancelled"})
			}
			if a.json {
				if err := printJSON(a.io.Out, results); err != nil {
					return err
				}
				return first
			}
			for _, res := range results {
				if res.Result == "error" {
					fmt.Fprintf(a.io.Out, "run %s: not cancelled (%s)\n", res.RunID, res.Reason)
					continue
				}
				fmt.Fprintf(a.io.Out, "run %s: %s\n", res.RunID, res.Status)
			}
			return first
		},
	}
}

// ---------------------------------------------------------------- retry

func (a *app) runsRetryCommand() *cobra.Command {
	var allPoisoned bool
	var graphID string
	cmd := &cobra.Command{
		Use:   "retry [RUN_ID...]",
		Short: "Clear poison from runs so workers claim them again",
		Long: "retry clears the poison of each poisoned run (claim counters reset, due now; the run's\n" +
			"document and checkpoints do not change). Healthy runs are left alone. --all-poisoned\n" +
			"retries every poisoned run (optionally of one --graph) instead of named ones.",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case allPoisoned && len(args) > 0:
				return usagef("give run ids or --all-poisoned, not both")
			case !allPoisoned && len(args) == 0:
				return usagef("expected run ids or --all-poisoned")
			case graphID != "" && !allPoisoned:
				return usagef("--graph filters --all-poisoned only")
			}
			return a.runsRetry(cmd.Context(), args, allPoisoned, graphID)
		},
	}
	cmd.Flags().BoolVar(&allPoisoned, "all-poisoned", false, "retry every poisoned run")
	cmd.Flags().StringVar(&graphID, "graph", "", "with --all-poisoned: only runs of this graph id")
	return cmd
}

type retryJSON struct {
	Scanned int          `json:"scanned"`
	Runs    []signalJSON `json:"runs"`
}

func (a *app) runsRetry(ctx context.Context, ids []string, all bool, graphID string) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	if all {
		// Poison lives on running rows only (admission never claims a
		// waiting or finished run).
		p := ports.ListRunsParams{Limit: ports.MaxPageLimit, GraphID: graphID, Statuses: []run.Status{run.StatusRunning}}
		for {
			page, err := c.ListRuns(ctx, p)
			if err != nil {
				return err
			}
			for _, s := range page.Runs {
				ids = append(ids, s.RunID)
			}
			if !page.HasMore {
				break
			}
			p.Before = page.NextBefore
		}
	}
	res := retryJSON{Runs: []signalJSON{}}
	b := a.progress(len(ids), "checking runs")
	defer b.finish()
	// Every run is tried and reported; the first failure sets the exit
	// code, so what was done before it is never hidden.
	var first error
	failed := func(id string, err error) {
		first = cmp.Or(first, err)
		res.Runs = append(res.Runs, signalJSON{RunID: id, Result: "error", Reason: err.Error()})
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			first = cmp.Or(first, ctx.Err()) // Ctrl-C: report what was done
			break
		}
		info, err := c.InspectRun(ctx, id)
		b.add(1)
		switch {
		case all && errors.Is(err, ports.ErrNotFound):
			continue // pruned or gone since the listing
		case err != nil:
			failed(id, about("run", id, err))
			continue
		}
		res.Scanned++
		if !info.Poisoned() {
			if !all {
				res.Runs = append(res.Runs, signalJSON{RunID: id, Status: info.Run.Status, Result: "not_poisoned"})
			}
			continue
		}
		r, err := c.RetryPoisonedRun(ctx, id)
		if err != nil {
			failed(id, fmt.Errorf("retry: %w", about("run", id, err)))
			continue
		}
		res.Runs = append(res.Runs, signalJSON{RunID: id, Status: r.Status, Result: "retried", Reason: info.PoisonReason})
	}
	b.finish()
	if a.json {
		if err := printJSON(a.io.Out, res); err != nil {
			return err
		}
		return first
	}
	retried := 0
	for _, r := range res.Runs {
		switch r.Result {
		case "retried":
			retried++
			fmt.Fprintf(a.io.Out, "run %s: poison cleared (was %s), due now\n", r.RunID, r.Reason)
		case "error":
			fmt.Fprintf(a.io.Out, "run %s: not retried (%s)\n", r.RunID, r.Reason)
		default:
			fmt.Fprintf(a.io.Out, "run %s: not poisoned, left alone\n", r.RunID)
		}
	}
	if all {
		fmt.Fprintf(a.io.Out, "retried %d poisoned run(s) of %d checked\n", retried, res.Scanned)
	}
	return first
}
