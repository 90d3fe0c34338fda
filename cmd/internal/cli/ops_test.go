package cli

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
)

// The operational commands' behaviour at their edges: what they refuse,
// what they report when part of their work fails, and when they end.

// finishedRun publishes the example graph on a fresh database and has a
// worker drive one run of it to its end.
func finishedRun(t *testing.T) (*cli, runJSON) {
	t.Helper()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	c.worker()
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "15s")
	require.Equal(t, "done", string(r.Status))
	return c, r
}

func TestPruneTakesNoTenant(t *testing.T) {
	t.Parallel()
	c, other := finishedRun(t)

	res := c.fails(ExitUsage, "prune", "--tenant", "acme", "--event-retention", "0s", "--run-retention", "0s")
	assert.Contains(t, res.stderr, "every tenant alike")
	c.ok("runs", "show", other.RunID) // nothing of another scope was pruned
}

func TestTailFollowOfAFinishedRunEndsWhenItsEventsWerePruned(t *testing.T) {
	t.Parallel()
	c, r := finishedRun(t)
	c.ok("prune", "--event-retention", "0s", "--run-retention", "90d")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := c.runContext(ctx, "events", "tail", r.RunID, "--follow", "--interval", "20ms")
	require.NoError(t, ctx.Err(), "tail --follow of a finished run never returned")
	assert.Equal(t, ExitOK, res.code, res.stderr)
}

func TestTailOfAnUnknownRunIsOneErrorLine(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	res := c.fails(ExitNotFound, "events", "tail", "run_missing")
	assert.NotContains(t, res.stderr, "resume with", "no cursor for a tail that never ran")
}

func TestStartAwaitEndedEarlyStillNamesTheRun(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t) // no worker: the run stays running
	c.ok("graph", "publish", "--example")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second) // as Ctrl-C would
	defer cancel()
	res := c.runContext(ctx, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "30s", "--json")
	require.Equal(t, ExitInterrupted, res.code)
	var started runJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &started), "stdout: %q", res.stdout)
	var list runPageJSON
	c.okJSON(&list, "runs", "list")
	require.Len(t, list.Runs, 1)
	assert.Equal(t, list.Runs[0].RunID, started.RunID, "the started run is named, so it can be awaited again")
}

func TestCancelTriesEveryRunAndReportsEach(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var a, b runJSON
	c.okJSON(&a, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)
	c.okJSON(&b, "runs", "start", demo.GraphID, "--input", `{"customer":"Bo","amount":10.0}`)
	res := c.run("runs", "cancel", a.RunID, "run_missing", b.RunID, "--json")
	assert.Equal(t, ExitNotFound, res.code, "the first failure sets the exit code")
	var results []signalJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &results), "stdout: %q", res.stdout)
	require.Len(t, results, 3)
	assert.Equal(t, "cancelled", results[0].Result)
	assert.Equal(t, "error", results[1].Result)
	var raw []map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &raw))
	assert.NotContains(t, raw[1], "status", "a failed signal has no status to report")
	assert.Equal(t, "cancelled", results[2].Result, "the run after the failure is cancelled too")
	for _, id := range []string{a.RunID, b.RunID} {
		var shown runJSON
		c.okJSON(&shown, "runs", "show", id)
		assert.Equal(t, "cancelled", string(shown.Status))
	}
}

func TestUsageErrorsAreJSONWhenAsked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{nil, []string{"runs", "list", "--bogus", "--json"}},
		{nil, []string{"runs", "list", "--limit", "abc", "--json"}},
		{nil, []string{"frobnicate", "--json"}},
		{map[string]string{"DOCKET_JSON": "true"}, []string{"runs", "show"}},
		{map[string]string{"DOCKET_JSON": "true"}, []string{"runs", "list", "--bogus"}},
	} {
		res := newCLI(t, tc.env).run(tc.args...)
		assert.Equal(t, ExitUsage, res.code, "%v %v", tc.env, tc.args)
		var e map[string]any
		assert.NoError(t, json.Unmarshal([]byte(res.stderr), &e), "%v %v: %q", tc.env, tc.args, res.stderr)
	}
}

func TestStdinFeedsOneFlagOnly(t *testing.T) {
	t.Parallel()
	res := newCLI(t, nil).fails(ExitUsage, "runs", "start", demo.GraphID, "--input", "-", "--metadata", "-")
	assert.Contains(t, res.stderr, "cannot both read stdin")
}

func TestAWorkerStoppedWhileConnectingExitsCleanly(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // SIGTERM before the worker is up
	res := c.runContext(ctx, "worker")
	assert.Equal(t, ExitOK, res.code, res.stderr)
	assert.Contains(t, res.stderr, "stopped before it started")
}

func TestAnExplicitJSONFlagBeatsItsVariableForErrorsToo(t *testing.T) {
	t.Parallel()
	res := newCLI(t, map[string]string{"DOCKET_JSON": "true"}).fails(ExitUsage, "prune", "--json=false")
	assert.Equal(t, "docket: no retention given: both --event-retention and --run-retention are required (for example 7d and 30d)\n", res.stderr)
	assert.True(t, wantsJSON([]string{"runs", "list", "--json=t"}, ""), "every spelling the flag parser takes")
	assert.False(t, wantsJSON([]string{"runs", "list", "--json", "--json=false"}, "true"), "the last one wins")
	assert.False(t, wantsJSON([]string{"runs", "--json-something"}, ""))
}

// A prune given one retention names the one it lacks.
func TestPruneWithOneRetentionNamesTheOther(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	res := c.fails(ExitUsage, "prune", "--event-retention", "7d")
	assert.Contains(t, res.stderr, "--run-retention is missing")
	res = c.fails(ExitUsage, "prune", "--run-retention", "30d")
	assert.Contains(t, res.stderr, "--event-retention is missing")
}

// A prune whose later pass finds the lock taken by another pruner still
// reports what its earlier passes deleted before it fails.
func TestPruneStoppedByAnotherPrunerReportsWhatItDeleted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	c.worker()
	for range 4 {
		c.ok("runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "15s")
	}
	conn := db.Connect(t)
	// Copies of the runs' events (at sequence numbers past their own) give
	// the command thousands of one-event passes, so the other pruner below
	// takes the lock long before the command could run out of work,
	// however slowly this test's goroutines are scheduled.
	eventsTable := pgx.Identifier{schema, "docket_events"}.Sanitize()
	_, err := conn.Exec(ctx, `INSERT INTO `+eventsTable+` (run_id, seq, type, step, node_id, channel_id, task_id, payload, metadata, occurred_at, inserted_at)
SELECT run_id, seq + 1000 * copy, type, step, node_id, channel_id, task_id, payload, metadata, occurred_at, inserted_at
FROM `+eventsTable+`, generate_series(1, 50) AS copy`)
	require.NoError(t, err)
	var events int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM `+eventsTable).Scan(&events))
	require.Greater(t, events, 1000)

	// Once the command's first pass has deleted an event, another pruner
	// takes the lock and keeps it until the command has ended.
	holder := db.Connect(t)
	locked := make(chan error, 1)
	release := make(chan struct{})
	held := make(chan struct{}) // closed when the holder's transaction is over
	go func() {
		defer close(held)
		for {
			var left int
			err := conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "docket_events"}.Sanitize()).Scan(&left)
			if err != nil || left < events {
				if err != nil {
					locked <- err
					return
				}
				break
			}
			time.Sleep(time.Millisecond)
		}
		tx, err := holder.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "docket:pruner:"+schema)
			defer func() { _ = tx.Rollback(ctx) }()
		}
		locked <- err
		<-release
	}()
	res := c.run("prune", "--event-retention", "0s", "--run-retention", "90d", "--batch-size", "1", "--json")
	// The other pruner may hold the lock before its goroutine has heard
	// so: the command can see the lock taken first. A command that ended
	// without meeting the lock fails the exit code check below.
	var lockErr error
	select {
	case lockErr = <-locked:
	case <-ctx.Done():
		lockErr = errors.New("the other pruner never took the lock")
	}
	close(release)
	<-held
	require.NoError(t, lockErr)

	assert.Equal(t, ExitFailure, res.code, res.stderr)
	assert.Contains(t, res.stderr, "another prune pass holds the lock")
	var total pruneJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &total), res.stdout)
	assert.Positive(t, total.Passes)
	assert.Positive(t, total.EventsDeleted, "the events its passes deleted are reported")
	var left int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "docket_events"}.Sanitize()).Scan(&left))
	assert.Equal(t, events-total.EventsDeleted, left)
}

// A prune setting the engine or the store would refuse is reported by the
// flag that sets it, not by the name of a Go configuration field.
func TestInvalidPruneSettingsNameTheirFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"prune", "--event-retention", "2h", "--run-retention", "1h"}, "--event-retention"},
		{[]string{"prune", "--event-retention", "1h", "--run-retention", "2h", "--batch-size", "0"}, "--batch-size"},
		{[]string{"prune", "--event-retention", "1h", "--run-retention", "2h", "--keep-graph-versions", "0"}, "--keep-graph-versions"},
		{[]string{"worker", "--event-retention", "7d", "--run-retention", "1d"}, "--event-retention"},
		{[]string{"worker", "--event-retention", "1d", "--run-retention", "7d", "--batch-size", "0"}, "--batch-size"},
		{[]string{"worker", "--event-retention", "1d", "--run-retention", "7d", "--prune-interval", "0s"}, "--prune-interval"},
	} {
		res := c.fails(ExitUsage, tc.args...)
		assert.Contains(t, res.stderr, tc.flag, tc.args)
		assert.NotContains(t, res.stderr, "Retention", tc.args)
		assert.NotContains(t, res.stderr, "BatchSize", tc.args)
		assert.NotContains(t, res.stderr, "KeepGraphVersions", tc.args)
		assert.NotContains(t, res.stderr, "Interval", tc.args)
	}
}

// Awaiting a poisoned run fails at once, and the error says how to retry
// it, as runs show does.
func TestAwaitingAPoisonedRunSaysHowToRetryIt(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)
	poisonAll(t, db.Pool(t), schema)

	res := c.fails(ExitFailure, "runs", "await", r.RunID, "--timeout", "5s")
	assert.Contains(t, res.stderr, "poisoned")
	assert.Contains(t, res.stderr, "docket runs retry "+r.RunID)
}

// A worker's status line says whether it prunes, and with what retention,
// so that an operator need not read its command line to know.
func TestAWorkerSaysWhetherItPrunes(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	res := c.ok("worker", "--for", "10ms", "--event-retention", "7d", "--run-retention", "30d", "--prune-interval", "2h")
	assert.Contains(t, res.stderr, "pruning every 2h0m0s (events after 7d, finished runs after 30d)")
	res = c.ok("worker", "--for", "10ms")
	assert.Contains(t, res.stderr, "no pruning")
}

// TestWorkerEngineLimitsAreFlags: the limits that decide how long a node
// may run and how soon a dead worker's runs are recovered are flags of the
// worker, checked together and reported by their flag names.
func TestWorkerEngineLimitsAreFlags(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	res := c.fails(ExitUsage, "worker", "--max-attempt-elapsed", "2m", "--for", "10ms")
	assert.Contains(t, res.stderr, "--drain-max-elapsed (3s) must be at least --max-attempt-elapsed (2m0s)")
	assert.Contains(t, res.stderr, "--orphan-ttl (1m0s) must exceed --drain-max-elapsed")
	assert.NotContains(t, res.stderr, "Dispatcher.", "no Go field names")
	c.fails(ExitUsage, "worker", "--orphan-ttl", "0s", "--for", "10ms")
	c.fails(ExitUsage, "worker", "--max-claim-abandons", "0", "--for", "10ms")

	for _, bad := range [][]string{
		{"--concurrency", "2000000", "--concurrency must be at most"},
		{"--poll-interval", "1us", "--poll-interval must be at least 1ms"},
	} {
		res := c.fails(ExitUsage, "worker", bad[0], bad[1], "--for", "10ms")
		assert.Contains(t, res.stderr, bad[2])
		assert.NotContains(t, res.stderr, "Dispatcher.", "no Go field names")
	}

	c.ok("graph", "publish", "--example")
	c.ok("worker", "--max-attempt-elapsed", "2m", "--drain-max-elapsed", "2m", "--orphan-ttl", "5m",
		"--max-claim-attempts", "3", "--max-claim-abandons", "2", "--for", "10ms")
}

// An engine setting the worker would refuse is reported by its flags before
// the worker connects: here no database answers, and the usage error still
// comes first.
func TestWorkerRefusesItsEngineFlagsBeforeConnecting(t *testing.T) {
	t.Parallel()
	c := newCLI(t, map[string]string{"DOCKET_DATABASE_URL": "postgres://docket@127.0.0.1:1/none?connect_timeout=2"})
	res := c.fails(ExitUsage, "worker", "--max-attempt-elapsed", "2m", "--concurrency", "0", "--for", "10ms")
	assert.Contains(t, res.stderr, "--concurrency must be positive")
	res = c.fails(ExitUsage, "worker", "--max-attempt-elapsed", "2m", "--for", "10ms")
	assert.Contains(t, res.stderr, "--drain-max-elapsed (3s) must be at least --max-attempt-elapsed (2m0s)")
	assert.Contains(t, res.stderr, "--orphan-ttl (1m0s) must exceed --drain-max-elapsed")
	assert.NotContains(t, res.stderr, "connect")
	c.fails(ExitUsage, "worker", "--for", "-1s")
}
