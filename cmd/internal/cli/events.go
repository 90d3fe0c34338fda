package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// tailOverlap is how far before an all-runs cursor a resumed tail looks
// again: events are stamped by the engine that committed them, so a
// commit from a host whose clock lags can carry a time just before the
// cursor. Events seen twice share (run_id, seq); deduplicate on that.
const tailOverlap = 2 * time.Second

func (a *app) eventsCommand() *cobra.Command {
	var after string
	var follow bool
	var interval, since time.Duration
	tail := &cobra.Command{
		Use:   "tail [RUN_ID]",
		Short: "Print new events of one run or of all runs, with a cursor to resume from",
		Long: "tail prints the events of RUN_ID after --after (a sequence number, default 0), or of every\n" +
			"run after --after (a time printed by an earlier tail; default: --since ago). With --follow\n" +
			"it keeps polling: following one run ends when the run finishes, following all runs ends on\n" +
			"Ctrl-C. It then prints the cursor to resume from on stderr. With --json every event is one\n" +
			"line of JSON carrying its own cursor. Delivery is at least once: deduplicate by\n" +
			"(run_id, seq).",
		Args: rangeArgs(0, 1, "at most one run id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if interval <= 0 {
				return usagef("--interval must be positive")
			}
			if len(args) == 1 {
				seq := int64(0)
				if after != "" {
					n, err := strconv.ParseInt(after, 10, 64)
					if err != nil || n < 0 {
						return usagef("--after %q: following one run, the cursor is a sequence number", after)
					}
					seq = n
				}
				return a.tailRun(cmd.Context(), args[0], seq, follow, interval)
			}
			if since < 0 {
				return usagef("--since must not be negative")
			}
			cursor := ports.Micros(time.Now().Add(-since)) // printed as every time is
			if after != "" {
				t, err := time.Parse(time.RFC3339Nano, after)
				if err != nil {
					return usagef("--after %q: following all runs, the cursor is a time printed by tail", after)
				}
				cursor = t
			}
			return a.tailAll(cmd.Context(), cursor, after != "", follow, interval)
		},
	}
	tail.Flags().StringVar(&after, "after", "", "resume after this cursor")
	tail.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	tail.Flags().DurationVar(&interval, "interval", 500*time.Millisecond, "poll interval when following")
	tail.Flags().DurationVar(&since, "since", time.Hour, "all runs without --after: start this long ago")
	return groupCommand("events", "Follow run events", tail)
}

// printEvent writes one event line (JSON with --json).
func (a *app) printEvent(e run.Event, cursor string) error {
	if a.json {
		j := toEventJSON(e)
		j.Cursor = cursor
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(a.io.Out, string(b))
		return err
	}
	_, err := fmt.Fprintf(a.io.Out, "%s  %s  #%-4d step %-3d %-21s %s\n",
		e.Timestamp.UTC().Format("15:04:05.000000"), e.RunID, e.Seq, e.Step, e.Type, eventDetail(e))
	return err
}

// printCursor reports where to resume, on stderr; resume is what the
// suggested command names before --after (a shell-quoted run id and a
// space, or nothing).
func (a *app) printCursor(cursor, resume string) {
	if a.json {
		b, _ := json.Marshal(map[string]string{"cursor": cursor})
		fmt.Fprintln(a.io.Err, string(b))
		return
	}
	a.say("cursor: %s (resume with: docket events tail %s--after %s)", cursor, resume, shellQuote(cursor))
}

// sleep waits d or until ctx ends, reporting whether to go on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stopped reports an end by Ctrl-C, which is a normal end of a follow.
func stopped(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}

func (a *app) tailRun(ctx context.Context, runID string, after int64, follow bool, interval time.Duration) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	cursor := after
	finished := false // the run was seen finished before the last read
	printCursor := false
	defer func() {
		// Only a tail that ran prints where to resume; a failed one prints
		// its error alone.
		if printCursor {
			a.printCursor(strconv.FormatInt(cursor, 10), shellQuote(runID)+" ")
		}
	}()
	for {
		page, err := c.ListEvents(ctx, runID, ports.ListEventsParams{AfterSeq: cursor, Limit: ports.MaxPageLimit})
		if stopped(ctx, err) {
			printCursor = true
			return nil
		}
		if err != nil {
			return about("run", runID, err)
		}
		printCursor = true
		for _, e := range page.Events {
			if err := a.printEvent(e, strconv.FormatInt(e.Seq, 10)); err != nil {
				return err
			}
			cursor = e.Seq
		}
		if page.HasMore {
			continue
		}
		if !follow {
			return nil
		}
		r, err := c.FetchRun(ctx, runID)
		if stopped(ctx, err) {
			return nil
		}
		if err != nil {
			return about("run", runID, err)
		}
		// A finished run's last event is printed once the cursor reached
		// its event counter; or, when pruning took its last events, once
		// a read after it was seen finished printed nothing more.
		if r.Status.Terminal() {
			if cursor >= r.EventSeq {
				return nil
			}
			if finished {
				return nil
			}
			finished = true
			continue
		}
		if !sleep(ctx, interval) {
			return nil
		}
	}
}

// allRunsTail follows every run visible in the scope. Runs that may emit
// events are the unfinished ones, the ones started since the last poll,
// and the ones it already follows; a resumed tail first scans every run
// updated since the cursor.
type allRunsTail struct {
	a      *app
	c      *engine.Client
	cursor time.Time        // newest event time printed, at most the last poll's start (or the start)
	from   time.Time        // events before this are not printed
	seen   map[string]int64 // run id -> last printed seq
	// done holds the finished runs whose events are all printed, by start
	// time, until they are too old for the look-back for new runs to
	// list them again: a long follow does not keep every run it saw.
	done   map[string]time.Time
	polled time.Time // start of the previous poll
}

// newAllRunsTail is a tail of every run from cursor, listing runs that
// started or changed since from.
func newAllRunsTail(a *app, c *engine.Client, cursor, from time.Time) *allRunsTail {
	return &allRunsTail{a: a, c: c, cursor: cursor, from: from, seen: map[string]int64{}, done: map[string]time.Time{}}
}

func (a *app) tailAll(ctx context.Context, cursor time.Time, resumed, follow bool, interval time.Duration) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	from := cursor
	if resumed {
		from = cursor.Add(-tailOverlap)
	}
	t := newAllRunsTail(a, a.client(rt), cursor, from)
	defer func() { a.printCursor(t.cursor.UTC().Format(time.RFC3339Nano), "") }()
	first := true
	for {
		started := time.Now()
		err := t.poll(ctx, first)
		if stopped(ctx, err) {
			return nil
		}
		if err != nil {
			return err
		}
		first = false
		t.polled = started
		if !follow || !sleep(ctx, interval) {
			return nil
		}
	}
}

func (t *allRunsTail) poll(ctx context.Context, full bool) error {
	// The cursor never passes this poll's start. The runs are read one
	// after another, so one read early may commit while later ones are
	// read, with events stamped before the newest event printed here: a
	// cursor at that newest event would resume past them.
	ceiling := ports.Micros(time.Now())
	candidates := map[string]bool{}
	for id := range t.seen {
		candidates[id] = true
	}
	// Every run updated since the cursor, and every unfinished one, on the
	// first poll; afterwards the unfinished runs and those started since
	// the previous poll. An unfinished run quiet since before the cursor
	// is followed from the first poll on: should it finish before the
	// second, no later poll would list it.
	p := ports.ListRunsParams{Limit: ports.MaxPageLimit}
	if !full {
		p.Statuses = []run.Status{run.StatusRunning, run.StatusWaiting}
	}
	if err := t.scan(ctx, p, func(s ports.RunSummary) bool {
		if !s.UpdatedAt.Before(t.from) || !s.Status.Terminal() {
			candidates[s.RunID] = true
		}
		return true
	}); err != nil {
		return err
	}
	if !full {
		since := t.polled.Add(-tailOverlap)
		for id, started := range t.done {
			if started.Before(since) {
				delete(t.done, id)
			}
		}
		if err := t.scan(ctx, ports.ListRunsParams{Limit: 100}, func(s ports.RunSummary) bool {
			if s.StartedAt.Before(since) {
				return false // newest first: the rest started earlier
			}
			candidates[s.RunID] = true
			return true
		}); err != nil {
			return err
		}
	}
	// Each event is printed at its run's newest time so far: the engines
	// committing one run may stamp a later moment before an earlier one
	// (their clocks disagree), and a run's events must still print in
	// sequence order.
	type tailed struct {
		e  run.Event
		at time.Time
	}
	var batch []tailed
	finished := map[string]time.Time{}
	for _, id := range sortedKeys(candidates) {
		if _, ok := t.done[id]; ok {
			continue
		}
		events, r, err := t.newEvents(ctx, id)
		if errors.Is(err, ports.ErrNotFound) {
			delete(t.seen, id) // pruned
			continue
		}
		if err != nil {
			return err
		}
		var at time.Time
		for _, e := range events {
			if e.Timestamp.After(at) {
				at = e.Timestamp
			}
			batch = append(batch, tailed{e, at})
		}
		if r.Status.Terminal() {
			finished[id] = r.StartedAt
		}
	}
	slices.SortFunc(batch, func(x, y tailed) int {
		if c := x.at.Compare(y.at); c != 0 {
			return c
		}
		if c := strings.Compare(x.e.RunID, y.e.RunID); c != 0 {
			return c
		}
		return cmp.Compare(x.e.Seq, y.e.Seq)
	})
	for _, b := range batch {
		e, at := b.e, b.at
		if at.After(ceiling) {
			at = ceiling
		}
		if at.After(t.cursor) {
			t.cursor = at
		}
		if err := t.a.printEvent(e, t.cursor.UTC().Format(time.RFC3339Nano)); err != nil {
			return err
		}
		t.seen[e.RunID] = e.Seq
	}
	// A finished run emits nothing more: stop following it.
	for id, started := range finished {
		delete(t.seen, id)
		t.done[id] = started
	}
	return nil
}

// scan pages ListRuns until visit returns false.
func (t *allRunsTail) scan(ctx context.Context, p ports.ListRunsParams, visit func(ports.RunSummary) bool) error {
	for {
		page, err := t.c.ListRuns(ctx, p)
		if err != nil {
			return err
		}
		for _, s := range page.Runs {
			if !visit(s) {
				return nil
			}
		}
		if !page.HasMore {
			return nil
		}
		p.Before = page.NextBefore
	}
}

// newEvents returns the run's events after the last printed one (or, for
// a run not followed yet, from t.from on), and the run as read before
// them: when it is finished, these are all its events.
func (t *allRunsTail) newEvents(ctx context.Context, runID string) ([]run.Event, *run.Run, error) {
	after, known := t.seen[runID]
	// The run is read before its events: once finished it commits nothing
	// more, so the events read after it was seen finished are all of them.
	// Read the other way round, a final commit landing between the two
	// reads would mark the run done with its last events never printed.
	r, err := t.c.FetchRun(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	var out []run.Event
	for {
		page, err := t.c.ListEvents(ctx, runID, ports.ListEventsParams{AfterSeq: after, Limit: ports.MaxPageLimit})
		if err != nil {
			return nil, nil, err
		}
		for _, e := range page.Events {
			if known || !e.Timestamp.Before(t.from) {
				out = append(out, e)
			}
			after = e.Seq
		}
		if !page.HasMore {
			if len(out) == 0 && !known {
				// Nothing to print yet: remember where we are so the next
				// poll reads only what is new.
				t.seen[runID] = after
			}
			return out, r, nil
		}
	}
}
