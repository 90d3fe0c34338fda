package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// commitAfterListing is a backend whose first ListEvents of one run lets
// another writer commit to that run right after the page was read: the
// page is then stale by the time its reader asks for the run.
type commitAfterListing struct {
	ports.Backend
	runID  string
	once   sync.Once
	commit func()
}

func (b *commitAfterListing) ListEvents(ctx context.Context, scope ports.Scope, runID string, p ports.ListEventsParams) (*ports.EventPage, error) {
	page, err := b.Backend.ListEvents(ctx, scope, runID, p)
	if runID == b.runID {
		b.once.Do(b.commit)
	}
	return page, err
}

// openStore is a store on the CLI's schema, closed when the test ends.
func openStore(t *testing.T, pool *pgxpool.Pool, schema string) *postgres.Store {
	t.Helper()
	store, err := postgres.New(context.Background(), postgres.Config{Pool: pool, Schema: schema})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// jsonTail is a tail of every run from an hour ago, printing JSON lines
// into out.
func jsonTail(c *engine.Client) (tail *allRunsTail, out *bytes.Buffer) {
	out = &bytes.Buffer{}
	a := &app{io: IO{Out: out, Err: &bytes.Buffer{}}, json: true}
	from := time.Now().Add(-time.Hour)
	return newAllRunsTail(a, c, from, from), out
}

// TestTailAllRunsPrintsTheLastEventsOfARunThatFinishesWhileItIsRead: a
// run that commits its final moment between the tail's read of its events
// and its read of the run is finished, but its final events are not
// printed yet; the tail must read them on its next poll instead of
// dropping the run as done.
func TestTailAllRunsPrintsTheLastEventsOfARunThatFinishesWhileItIsRead(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)

	ctx := context.Background()
	store := openStore(t, db.Pool(t), schema)
	backend := &commitAfterListing{Backend: store, runID: r.RunID, commit: func() {
		c.ok("runs", "cancel", r.RunID)
	}}
	eng, err := engine.New(engine.Config{Backend: backend, Mode: engine.ModeManual})
	require.NoError(t, err)

	tail, out := jsonTail(eng.Client)
	require.NoError(t, tail.poll(ctx, true))
	require.NoError(t, tail.poll(ctx, false))

	var types []run.EventType
	for _, e := range jsonLines[eventJSON](t, out.String()) {
		types = append(types, e.Type)
	}
	assert.Contains(t, types, run.EventRunCancelled, "the cancellation committed during the first poll is printed:\n%s",
		strings.TrimSpace(out.String()))
}

// TestTailAllRunsCursorCoversEventsCommittedDuringAPoll: a poll reads the
// runs one after another, so a run read early can commit while later runs
// are read, with events stamped well before the newest event the poll
// prints. The cursor printed with that newest event must still resume at
// the early run's new events, not skip them.
func TestTailAllRunsCursorCoversEventsCommittedDuringAPoll(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var early, late runJSON
	c.okJSON(&early, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--run-id", "run_a")
	c.okJSON(&late, "runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":10.0}`, "--run-id", "run_b")

	ctx := context.Background()
	store := openStore(t, db.Pool(t), schema)
	// Once run_a is read, it commits; the poll goes on reading for longer
	// than a resume looks back, and run_b commits before it is read.
	backend := &commitAfterListing{Backend: store, runID: early.RunID, commit: func() {
		c.ok("runs", "cancel", early.RunID)
		time.Sleep(tailOverlap + 500*time.Millisecond)
		c.ok("runs", "cancel", late.RunID)
	}}
	eng, err := engine.New(engine.Config{Backend: backend, Mode: engine.ModeManual})
	require.NoError(t, err)

	tail, out := jsonTail(eng.Client)
	require.NoError(t, tail.poll(ctx, true))
	lines := jsonLines[eventJSON](t, out.String())
	require.NotEmpty(t, lines)
	last := lines[len(lines)-1]
	require.Equal(t, late.RunID, last.RunID, "run_b's cancellation is the newest event printed:\n%s", out.String())

	// A consumer that stops after that line resumes from its cursor.
	resumed := jsonLines[eventJSON](t, c.ok("events", "tail", "--after", last.Cursor, "--json").stdout)
	var cancelled []string
	for _, e := range resumed {
		if e.Type == run.EventRunCancelled {
			cancelled = append(cancelled, e.RunID)
		}
	}
	assert.Contains(t, cancelled, early.RunID, "run_a's cancellation, committed during the poll, is not skipped")
}

// TestTailAllRunsForgetsFinishedRunsOnceTooOldToBeListedAgain: a follow
// goes on for as long as its consumer runs; it must not keep every
// finished run it ever printed.
func TestTailAllRunsForgetsFinishedRunsOnceTooOldToBeListedAgain(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)
	c.ok("runs", "cancel", r.RunID)

	ctx := context.Background()
	store := openStore(t, db.Pool(t), schema)
	eng, err := engine.New(engine.Config{Backend: store, Mode: engine.ModeManual})
	require.NoError(t, err)

	tail, out := jsonTail(eng.Client)
	tail.polled = time.Now()
	require.NoError(t, tail.poll(ctx, true))
	printed := out.Len()
	require.NotZero(t, printed)
	require.NoError(t, tail.poll(ctx, false)) // the run is still within the look-back
	assert.Len(t, tail.done, 1)

	// Polls later, the run started long before the look-back.
	tail.polled = time.Now().Add(time.Minute)
	require.NoError(t, tail.poll(ctx, false))
	assert.Empty(t, tail.done, "a finished run no poll can list again is forgotten")
	assert.Equal(t, printed, out.Len(), "and nothing is printed again")
}

// TestTailAllRunsKeepsARunsEventsInSequenceOrder: the engines that commit
// one run's moments may stamp them with clocks that disagree, so a later
// moment can carry an earlier time. The run's events still print in
// sequence order, and once each.
func TestTailAllRunsKeepsARunsEventsInSequenceOrder(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":5000.0}`)

	ctx := context.Background()
	store := openStore(t, db.Pool(t), schema)
	driver, err := engine.New(engine.Config{Backend: store, Mode: engine.ModeManual, Nodes: demo.Registry()})
	require.NoError(t, err)
	_, err = driver.DrainRuns(ctx, 0)
	require.NoError(t, err)
	// An engine whose clock lags a second behind answers the approval:
	// the run goes on, its newest events stamped before the older ones.
	lagging, err := engine.New(engine.Config{Backend: store, Mode: engine.ModeManual, Nodes: demo.Registry(),
		Clock: ports.ClockFunc(func() time.Time { return time.Now().Add(-time.Second) })})
	require.NoError(t, err)
	resolved, err := lagging.ResolveInterrupt(ctx, r.RunID, demo.ApprovalInterruptID, "approved")
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, resolved.Status)

	eng, err := engine.New(engine.Config{Backend: store, Mode: engine.ModeManual})
	require.NoError(t, err)
	tail, out := jsonTail(eng.Client)
	tail.polled = time.Now()
	require.NoError(t, tail.poll(ctx, true))
	var seqs []int64
	for _, e := range jsonLines[eventJSON](t, out.String()) {
		seqs = append(seqs, e.Seq)
	}
	require.NotEmpty(t, seqs)
	assert.IsIncreasing(t, seqs, "the run's events in sequence order")
	assert.EqualValues(t, resolved.EventSeq, seqs[len(seqs)-1])

	printed := out.Len()
	require.NoError(t, tail.poll(ctx, false))
	assert.Equal(t, printed, out.Len(), "nothing is printed twice")
}
