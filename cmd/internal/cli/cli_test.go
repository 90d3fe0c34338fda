package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
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
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
)

func TestUsageMistakesExitTwoWithOneLine(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	for _, args := range [][]string{
		{"frobnicate"},
		{"runs", "frobnicate"},
		{"runs"},
		{"runs", "list", "--no-such-flag"},
		{"runs", "show"},
		{"runs", "show", "a", "b"},
		{"runs", "list", "--status", "sleeping"},
		{"runs", "list", "--limit", "0"},
		{"runs", "retry"},
		{"interrupts", "resolve", "run_1", "approval"},
		{"graph", "validate"},
		{"graph", "render", "--format", "png", "x"},
		{"migrate", "down"},
		{"migrate", "up", "--target", "9"},
		{"prune", "--run-retention", "30d"},
		{"worker", "--max-finishing", "-1"},
		{"demo", "--runs", "0"},
		{"events", "tail", "run_1", "--after", "yesterday"},
		{"--log-level", "loud", "runs", "list"},
	} {
		res := c.fails(ExitUsage, args...)
		assert.Empty(t, res.stdout, args)
	}
}

func TestBadEnvironmentValuesAreUsageErrors(t *testing.T) {
	t.Parallel()
	res := newCLI(t, map[string]string{"DOCKET_JSON": "maybe"}).fails(ExitUsage, "graph", "validate", "x.json")
	assert.Contains(t, res.stderr, "DOCKET_JSON")
}

// A flag value of the wrong type is told in the flag's terms, not in the
// parser's (strconv.ParseInt: parsing "abc": invalid syntax).
func TestFlagValuesOfTheWrongTypeSayWhatTheFlagWants(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "list", "--limit", "abc"}, `--limit "abc": want an integer`},
		{[]string{"runs", "list", "--limit", "99999999999999999999"}, `--limit "99999999999999999999": out of range`},
		{[]string{"runs", "list", "--all=maybe"}, `--all "maybe": want true or false`},
		{[]string{"runs", "await", "run_1", "--timeout", "5"}, `--timeout "5": want a duration with a unit`},
		{[]string{"events", "tail", "-f=maybe"}, `--follow "maybe": want true or false`},
	} {
		res := c.fails(ExitUsage, tc.args...)
		assert.Contains(t, res.stderr, tc.want, tc.args)
		assert.NotContains(t, res.stderr, "strconv", tc.args)
		assert.NotContains(t, res.stderr, "time:", tc.args)
	}
	for env, want := range map[string]string{
		"DOCKET_JSON":  `DOCKET_JSON="maybe": want true or false`,
		"DOCKET_LIMIT": `DOCKET_LIMIT="maybe": want an integer`,
	} {
		res := newCLI(t, map[string]string{env: "maybe"}).fails(ExitUsage, "runs", "list")
		assert.Contains(t, res.stderr, want)
		assert.NotContains(t, res.stderr, "strconv")
	}
}

func TestErrorsAreJSONWithTheJSONFlag(t *testing.T) {
	t.Parallel()
	res := newCLI(t, nil).run("graph", "validate", "/no/such/file.json", "--json")
	require.Equal(t, ExitUsage, res.code)
	var e struct {
		Error    string `json:"error"`
		Kind     string `json:"kind"`
		ExitCode int    `json:"exit_code"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stderr), &e), res.stderr)
	assert.Equal(t, ExitUsage, e.ExitCode)
	assert.Equal(t, "usage", e.Kind)
	assert.Contains(t, e.Error, "no such file")
}

func TestGraphValidate(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	valid := demoGraphFile(t)

	t.Run("a valid graph reports its hash", func(t *testing.T) {
		var out []validationJSON
		c.okJSON(&out, "graph", "validate", valid)
		require.Len(t, out, 1)
		assert.True(t, out[0].Valid)
		assert.Equal(t, demo.GraphID, out[0].GraphID)
		assert.Len(t, out[0].Hash, 64)
		assert.Contains(t, c.ok("graph", "validate", valid).stdout, "is valid")
	})

	t.Run("an invalid graph lists every diagnostic and exits 1", func(t *testing.T) {
		bad := graphFile(t, `{"schema_version":1,"id":"bad","nodes":{"a":{"implementation":{"type":"module","implementation":"demo.intake"}}},
			"edges":{"s":{"from":"$start","to":"a"},"x":{"from":"a","to":"ghost"}}}`)
		res := c.run("graph", "validate", bad, "--json")
		require.Equal(t, ExitFailure, res.code, res.stderr)
		var out []validationJSON
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
		assert.False(t, out[0].Valid)
		var codes []string
		for _, d := range out[0].Diagnostics {
			codes = append(codes, d.Code)
		}
		assert.Contains(t, codes, "unknown_edge_target")
		assert.Contains(t, res.stderr, "1 of 1 graph document(s) are invalid")
		assert.NotContains(t, res.stderr, "--any-nodes", "its nodes are all known")
	})

	t.Run("a malformed file is a one-line usage error", func(t *testing.T) {
		res := c.fails(ExitUsage, "graph", "validate", graphFile(t, `{"schema_version": 1, "id": `))
		assert.Contains(t, res.stderr, "graph.json")
		res = c.fails(ExitUsage, "graph", "validate", graphFile(t, `{"schema_version":1,"id":"g","nodes":{"a":{"bogus":1}}}`))
		assert.Contains(t, res.stderr, "invalid_document")
	})

	t.Run("a graph id no store can hold is invalid", func(t *testing.T) {
		id := strings.Repeat("g", ports.MaxIDBytes+1)
		file := graphFile(t, `{"schema_version":1,"id":"`+id+`","nodes":{"a":{"implementation":{"type":"module","implementation":"mine.node"}}},
			"edges":{"s":{"from":"$start","to":"a"},"f":{"from":"a","to":"$finish"}}}`)
		res := c.run("graph", "validate", file, "--any-nodes", "--json")
		require.Equal(t, ExitFailure, res.code, res.stderr)
		var out []validationJSON
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
		require.Len(t, out, 1)
		assert.False(t, out[0].Valid)
		require.Len(t, out[0].Diagnostics, 1)
		assert.Equal(t, graph.CodeInvalidPublicID, out[0].Diagnostics[0].Code)
		assert.Equal(t, "/id", out[0].Diagnostics[0].Path)

		atLimit, err := os.ReadFile(file)
		require.NoError(t, err)
		c.ok("graph", "validate", graphFile(t, strings.Replace(string(atLimit), id, id[1:], 1)), "--any-nodes")
	})

	t.Run("every problem of a malformed file is listed", func(t *testing.T) {
		file := graphFile(t, `{"schema_version":1,"id":"g","nodes":{"a":{"bogus":1,"label":2}},"edges":{"e":{"to":["x"]}}}`)
		res := c.fails(ExitUsage, "graph", "validate", file)
		lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
		require.Len(t, lines, 4, res.stdout)
		assert.Equal(t, file+": not a graph document (3 problems)", lines[0])
		assert.Contains(t, lines[1], "invalid_document: nodes.a.bogus: unknown key")
		assert.Contains(t, lines[2], "invalid_document: nodes.a.label: must be a string")
		assert.Contains(t, lines[3], "invalid_document: edges.e.to: must be a string")

		res = c.run("graph", "validate", file, "--json")
		require.Equal(t, ExitUsage, res.code, res.stderr)
		var out []validationJSON
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out))
		require.Len(t, out, 1)
		for _, path := range []string{"nodes.a.bogus", "nodes.a.label", "edges.e.to"} {
			assert.Contains(t, out[0].Error, path)
		}
	})

	t.Run("a malformed file does not hide the other files' reports", func(t *testing.T) {
		malformed := graphFile(t, `{"schema_version":1,"id":"g","nodes":{"a":{"bogus":1}}}`)
		invalid := graphFile(t, `{"schema_version":1,"id":"bad","edges":{"x":{"from":"$start","to":"ghost"}}}`)

		res := c.run("graph", "validate", valid, malformed, invalid, "--json")
		require.Equal(t, ExitUsage, res.code, res.stderr)
		assert.Contains(t, res.stderr, "invalid_document")
		var out []validationJSON
		require.NoError(t, json.Unmarshal([]byte(res.stdout), &out), res.stdout)
		require.Len(t, out, 3, "every file gets a report")
		assert.True(t, out[0].Valid)
		assert.False(t, out[1].Valid)
		assert.Contains(t, out[1].Error, "nodes.a.bogus")
		assert.False(t, out[2].Valid)
		require.NotEmpty(t, out[2].Diagnostics)
		assert.Equal(t, "unknown_edge_target", out[2].Diagnostics[0].Code)

		res = c.run("graph", "validate", malformed, valid)
		require.Equal(t, ExitUsage, res.code, res.stderr)
		assert.Contains(t, res.stdout, malformed+": not a graph document: ")
		assert.Contains(t, res.stdout, valid+`: graph "`+demo.GraphID+`" is valid`)
	})

	t.Run("unknown nodes need --any-nodes", func(t *testing.T) {
		custom := graphFile(t, `{"schema_version":1,"id":"custom","nodes":{"a":{"implementation":{"type":"module","implementation":"mine.node"}}},
			"edges":{"s":{"from":"$start","to":"a"},"f":{"from":"a","to":"$finish"}}}`)
		res := c.run("graph", "validate", custom)
		assert.Equal(t, ExitFailure, res.code)
		assert.Contains(t, res.stderr, "--any-nodes accepts the nodes only your own worker registers", "the way out is named")
		c.ok("graph", "validate", "--any-nodes", custom)
	})

	t.Run("stdin", func(t *testing.T) {
		g, err := demo.Graph()
		require.NoError(t, err)
		b, err := json.Marshal(g)
		require.NoError(t, err)
		in := newCLI(t, nil)
		in.stdin = string(b)
		in.ok("graph", "validate", "-")
	})
}

func TestGraphRenderFromAFileNeedsNoDatabase(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	file := demoGraphFile(t)
	mermaid := c.ok("graph", "render", file).stdout
	assert.True(t, strings.HasPrefix(mermaid, "flowchart TD\n"))
	assert.Contains(t, mermaid, `n_decide -->|"route == #quot;manual#quot;"| n_manager__approval`)
	dot := c.ok("graph", "render", file, "--format", "dot").stdout
	assert.Contains(t, dot, `digraph "loan-review" {`)
	assert.Contains(t, dot, `"join:checks_done" -> "decide"`)
	text := c.ok("graph", "render", file, "--format", "text").stdout
	assert.Contains(t, text, "credit_check + fraud_check ══▶ decide")
	var out renderJSON
	c.okJSON(&out, "graph", "render", file, "--format", "dot")
	assert.Equal(t, dot, out.Diagram)
}

func TestMigrateUpStatusDown(t *testing.T) {
	t.Parallel()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	c := newCLI(t, map[string]string{"DATABASE_URL": db.URL}) // the standard variable works too

	var status migrateStatusJSON
	c.okJSON(&status, "migrate", "status", "--schema", schema)
	assert.Equal(t, migrateStatusJSON{Schema: schema, Version: 0, CurrentVersion: migrations.CurrentVersion, UpToDate: false,
		Problem: status.Problem}, status)
	assert.Contains(t, status.Problem, "docket migrate up")
	assert.True(t, strings.HasPrefix(status.Problem, "schema "), "the problem, without the library's program name: %s", status.Problem)
	unmigrated := c.fails(ExitFailure, "runs", "list", "--schema", schema)
	assert.True(t, strings.HasPrefix(unmigrated.stderr, "docket: schema "), "one program name, not the library's too: %s", unmigrated.stderr)

	var up migrateJSON
	c.okJSON(&up, "migrate", "up", "--schema", schema)
	assert.Equal(t, migrateJSON{Schema: schema, From: 0, To: migrations.CurrentVersion, Changed: true}, up)
	assert.Contains(t, c.ok("migrate", "up", "--schema", schema).stdout, "nothing to do")
	c.okJSON(&status, "migrate", "status", "--schema", schema)
	assert.True(t, status.UpToDate)

	c.fails(ExitUsage, "migrate", "down", "--schema", schema)
	var down migrateJSON
	c.okJSON(&down, "migrate", "down", "--yes", "--target", "1", "--schema", schema)
	assert.Equal(t, migrateJSON{Schema: schema, From: 2, To: 1, Changed: true}, down)
	c.okJSON(&down, "migrate", "down", "--yes", "--schema", schema)
	assert.Equal(t, 0, down.To)
}

// Without --schema, migrate acts where every other command does: on the
// schema in which the search_path finds Docket's tables. Down deletes that
// schema's data only when it is named.
func TestMigrateFollowsTheSearchPathLikeTheOtherCommands(t *testing.T) {
	t.Parallel()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	c := newCLI(t, nil)
	c.ok("migrate", "up", "--schema", schema, "--database-url", db.URL)
	sep := "?"
	if strings.Contains(db.URL, "?") {
		sep = "&"
	}
	onPath := db.URL + sep + "search_path=" + schema

	var status migrateStatusJSON
	c.okJSON(&status, "migrate", "status", "--database-url", onPath)
	assert.Equal(t, schema, status.Schema)
	assert.True(t, status.UpToDate)
	var up migrateJSON
	c.okJSON(&up, "migrate", "up", "--database-url", onPath)
	assert.Equal(t, migrateJSON{Schema: schema, From: migrations.CurrentVersion, To: migrations.CurrentVersion}, up)

	refused := c.fails(ExitUsage, "migrate", "down", "--yes", "--database-url", onPath)
	assert.Contains(t, refused.stderr, "--schema "+schema)
	c.okJSON(&status, "migrate", "status", "--schema", schema, "--database-url", db.URL)
	assert.True(t, status.UpToDate, "a refused down changes nothing")
	var down migrateJSON
	c.okJSON(&down, "migrate", "down", "--yes", "--schema", schema, "--database-url", onPath)
	assert.Equal(t, 0, down.To)
}

// A migrator that read the version before another migrator took the lock
// finds the work done when its turn comes, and says so.
func TestMigrateUpAfterAConcurrentMigratorReportsNothingDone(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	c := newCLI(t, map[string]string{"DATABASE_URL": db.URL, "DOCKET_SCHEMA": schema})

	holder, err := db.Connect(t).Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = holder.Rollback(ctx) }()
	_, err = holder.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, "docket:migrate:"+schema)
	require.NoError(t, err)
	monitor := db.Connect(t)
	waitForWaiters := func(n int) {
		require.Eventually(t, func() bool {
			var waiting int
			err := monitor.QueryRow(ctx, `SELECT count(*) FROM pg_locks
				WHERE locktype = 'advisory' AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
				  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)`, "docket:migrate:"+schema).Scan(&waiting)
			return err == nil && waiting == n
		}, 30*time.Second, 10*time.Millisecond)
	}

	// The first in the lock's queue migrates the whole way in one go...
	first := make(chan error, 1)
	go func() {
		_, err := migrations.Up(ctx, db.Connect(t), migrations.Options{Schema: schema})
		first <- err
	}()
	waitForWaiters(1)
	// ...while the CLI, queued behind it, has already read version 0.
	second := make(chan result, 1)
	go func() { second <- c.run("migrate", "up", "--json") }()
	waitForWaiters(2)
	require.NoError(t, holder.Rollback(ctx))

	require.NoError(t, <-first)
	res := <-second
	require.Equal(t, ExitOK, res.code, res.stderr)
	var up migrateJSON
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &up), res.stdout)
	assert.Equal(t, migrateJSON{Schema: schema, From: migrations.CurrentVersion, To: migrations.CurrentVersion, Changed: false}, up,
		"the other migrator did the work")
}

func TestCommandsOnAnUnmigratedSchemaSayWhatToRun(t *testing.T) {
	t.Parallel()
	db := pgtest.SharedDatabase(t)
	c := newCLI(t, map[string]string{"DOCKET_DATABASE_URL": db.URL, "DOCKET_SCHEMA": db.NewSchema(t)})
	res := c.fails(ExitFailure, "runs", "list")
	assert.Contains(t, res.stderr, "docket migrate up")
}

func TestUnreachableDatabaseIsAOneLineFailure(t *testing.T) {
	t.Parallel()
	c := newCLI(t, map[string]string{"DOCKET_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"})
	res := c.fails(ExitFailure, "runs", "list")
	assert.Contains(t, res.stderr, "connect to PostgreSQL at 127.0.0.1:1/none")
	res = newCLI(t, map[string]string{"DOCKET_DATABASE_URL": "postgres://user:secret@host:notaport/db"}).fails(ExitUsage, "runs", "list")
	assert.NotContains(t, res.stderr, "secret", "the password is never echoed")
}

func TestPublishShowAndRenderStoredGraphs(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	file := demoGraphFile(t)

	var first, again versionJSON
	c.okJSON(&first, "graph", "publish", file)
	c.okJSON(&again, "graph", "publish", "--example")
	assert.Equal(t, demo.GraphID, first.GraphID)
	assert.Equal(t, first, again, "publishing the same content is idempotent")

	var shown graphShowJSON
	c.okJSON(&shown, "graph", "show", demo.GraphID)
	assert.Equal(t, first.Hash, shown.Hash)
	require.Len(t, shown.Versions, 1)
	assert.Len(t, shown.Document.Nodes, 7)
	human := c.ok("graph", "show", demo.GraphID).stdout
	assert.Contains(t, human, "needs_manager  decide")
	assert.Contains(t, c.ok("graph", "render", demo.GraphID, "--format", "dot").stdout, `"decide" -> "auto_approve"`)

	c.fails(ExitNotFound, "graph", "show", "no-such-graph")
	c.fails(ExitNotFound, "graph", "show", demo.GraphID, "--hash", strings.Repeat("0", 64))
	c.fails(ExitNotFound, "graph", "render", "no-such-graph")
	res := c.fails(ExitUsage, "graph", "publish", graphFile(t, `{"schema_version":1,"id":"g","edges":{"x":{"from":"$start","to":"nowhere"}}}`))
	assert.NotContains(t, res.stderr, "worker binary", "a graph of the example nodes is only invalid")

	// The CLI knows only the example nodes: a graph of the application's
	// own is published by its own worker, and the refusal says so.
	custom := graphFile(t, `{"schema_version":1,"id":"custom","nodes":{"a":{"implementation":{"type":"module","implementation":"mine.node"}}},
		"edges":{"s":{"from":"$start","to":"a"},"f":{"from":"a","to":"$finish"}}}`)
	res = c.fails(ExitUsage, "graph", "publish", custom)
	assert.Contains(t, res.stderr, `implementation "mine.node" is not registered`)
	assert.Contains(t, res.stderr, "from your own worker binary")
}

// Ids longer than the stores hold are input mistakes (exit 2), never
// database failures.
func TestIDsBeyondTheLimitExitTwo(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	g, err := demo.Graph()
	require.NoError(t, err)
	g.ID = strings.Repeat("g", 6000)
	b, err := json.Marshal(g)
	require.NoError(t, err)
	c.fails(ExitUsage, "graph", "publish", graphFile(t, string(b)))

	c.ok("graph", "publish", "--example")
	c.fails(ExitUsage, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`,
		"--run-id", strings.Repeat("r", 6000))
}

// The whole life of a run through the CLI, driven by an in-process worker.
func TestRunLifecycleWithAWorker(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.worker()
	c.ok("graph", "publish", "--example")

	var started runJSON
	c.okJSON(&started, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":1500.0}`,
		"--metadata", `{"ticket":"T-1"}`, "--await", "15s")
	require.Equal(t, "waiting", string(started.Status), "the manager's approval is needed")
	runID := started.RunID

	var open []interruptJSON
	c.okJSON(&open, "interrupts", "list")
	require.Len(t, open, 1)
	assert.Equal(t, interruptJSON{RunID: runID, ID: demo.ApprovalInterruptID, NodeID: "manager_approval", Status: "open",
		ResumeChannel: "approval", Schema: open[0].Schema, Metadata: map[string]any{"question": "Approve 1500 for Ada?"},
		CreatedAt: open[0].CreatedAt}, open[0])

	c.fails(ExitUsage, "interrupts", "resolve", runID, demo.ApprovalInterruptID, "--string", "maybe")
	c.fails(ExitNotFound, "interrupts", "resolve", runID, "no-such-interrupt", "--string", "approved")
	c.ok("interrupts", "resolve", runID, demo.ApprovalInterruptID, "--value", `"approved"`)
	c.fails(ExitConflict, "interrupts", "resolve", runID, demo.ApprovalInterruptID, "--string", "approved")

	var done runJSON
	c.okJSON(&done, "runs", "await", runID, "--timeout", "15s")
	require.Equal(t, "done", string(done.Status))
	assert.Equal(t, "approved", done.Output["approval"])
	assert.Equal(t, []any{"intake", "credit", "fraud"}, done.Output["checks"])

	var shown runJSON
	c.okJSON(&shown, "runs", "show", runID)
	assert.Equal(t, jsonMap{"customer": "Ada", "amount": 1500.0}, shown.Input)
	assert.Equal(t, jsonMap{"ticket": "T-1"}, shown.Metadata)
	assert.Contains(t, c.ok("runs", "show", runID, "--json").stdout, "1500.0", "a float input stays a float in JSON")
	require.NotNil(t, shown.Operational)
	assert.False(t, shown.Operational.Poisoned)
	assert.Equal(t, "run_completed", string(shown.Operational.LatestCheckpointType))
	assert.Contains(t, c.ok("runs", "show", runID).stdout, "status       done")

	var events eventPageJSON
	c.okJSON(&events, "runs", "events", runID)
	require.NotEmpty(t, events.Events)
	last := events.Events[len(events.Events)-1]
	assert.Equal(t, "checkpoint_committed", string(last.Type))
	assert.Equal(t, shown.EventSeq, last.Seq)
	assert.Equal(t, "run_completed", last.Metadata["checkpoint_type"], "the checkpoint metadata in its wire form")
	assert.Equal(t, "terminal", last.Metadata["wake_disposition"])
	assert.Equal(t, float64(shown.CheckpointSeq), last.Metadata["checkpoint_seq"])
	assert.Contains(t, last.Metadata, "node_attempts")
	assert.Equal(t, jsonMap{}, events.Events[0].Metadata, "a runtime event has empty metadata")
	assert.Contains(t, c.ok("runs", "events", runID).stdout, "run_completed → terminal (run_completed)")
	for i, e := range events.Events {
		assert.Equal(t, int64(i+1), e.Seq, "contiguous")
	}
	var page eventPageJSON
	c.okJSON(&page, "runs", "events", runID, "--after", "3", "--limit", "2")
	assert.Equal(t, []int64{4, 5}, []int64{page.Events[0].Seq, page.Events[1].Seq})
	assert.True(t, page.HasMore)
	assert.Equal(t, int64(5), page.NextAfterSeq)

	var list runPageJSON
	c.okJSON(&list, "runs", "list", "--status", "done", "--graph", demo.GraphID)
	require.Len(t, list.Runs, 1)
	assert.Equal(t, runID, list.Runs[0].RunID)
	c.okJSON(&list, "runs", "list", "--status", "running,waiting")
	assert.Empty(t, list.Runs)

	overlay := c.ok("graph", "render", "--run", runID).stdout
	assert.Contains(t, overlay, "class n_intake,n_credit__check,n_fraud__check,n_decide,n_manager__approval,n_summarize completed")
	assert.Contains(t, overlay, "n_decide ==>|")
	assert.Contains(t, c.ok("graph", "render", "--run", runID, "--format", "text").stdout, "decide ✓")

	tail := c.ok("events", "tail", runID, "--json")
	lines := jsonLines[eventJSON](t, tail.stdout)
	assert.Len(t, lines, len(events.Events))
	assert.Equal(t, "12", lines[11].Cursor)
	assert.Contains(t, tail.stderr, `{"cursor":"`+lines[len(lines)-1].Cursor+`"}`)
	assert.Empty(t, c.ok("events", "tail", runID, "--after", lines[len(lines)-1].Cursor, "--follow").stdout,
		"following a finished run from its end prints nothing and returns")

	res := c.fails(ExitConflict, "runs", "cancel", runID)
	assert.Contains(t, res.stdout, "not cancelled (cancel run: inactive_run: ", "the operation is named once")
	c.fails(ExitNotFound, "runs", "cancel", "run_does_not_exist")
	assert.Equal(t, "docket: run \"run_does_not_exist\": not found\n", c.fails(ExitNotFound, "runs", "show", "run_does_not_exist").stderr,
		"the run is named once")
}

func TestCancelAndFollowARunningRun(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.worker()
	c.ok("graph", "publish", "--example")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Alan","amount":2500.0}`, "--await", "15s")
	require.Equal(t, "waiting", string(r.Status))

	// Following a waiting run keeps polling until it finishes.
	followed := make(chan result, 1)
	go func() { followed <- c.run("events", "tail", r.RunID, "--follow", "--interval", "20ms") }()
	var cancelled []signalJSON
	c.okJSON(&cancelled, "runs", "cancel", r.RunID)
	assert.Equal(t, []signalJSON{{RunID: r.RunID, Status: "cancelled", Result: "cancelled"}}, cancelled)
	c.ok("runs", "cancel", r.RunID) // idempotent
	select {
	case res := <-followed:
		require.Equal(t, ExitOK, res.code, res.stderr)
		assert.Contains(t, res.stdout, "run_cancelled")
	case <-time.After(15 * time.Second):
		t.Fatal("tail --follow did not end when the run finished")
	}
}

func TestWrongTenantAndUnknownRunsAreNotFound(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example", "--tenant", "acme")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--tenant", "acme", "--input", `{"customer":"Ada","amount":10.0}`)
	var shown runJSON
	c.okJSON(&shown, "runs", "show", r.RunID, "--tenant", "acme")
	assert.Equal(t, "acme", shown.Tenant)

	for _, args := range [][]string{
		{"runs", "show", r.RunID, "--tenant", "globex"},
		{"runs", "show", r.RunID},
		{"runs", "events", r.RunID, "--tenant", "globex"},
		{"runs", "cancel", r.RunID, "--tenant", "globex"},
		{"interrupts", "resolve", r.RunID, "approval", "--string", "approved", "--tenant", "globex"},
		{"runs", "show", "run_unknown"},
		{"runs", "await", "run_unknown"},
		{"graph", "show", demo.GraphID}, // published for acme only
	} {
		res := c.fails(ExitNotFound, args...)
		assert.Contains(t, res.stderr, "not found", args)
	}
	var list runPageJSON
	c.okJSON(&list, "runs", "list", "--tenant", "globex")
	assert.Empty(t, list.Runs)
	c.okJSON(&list, "runs", "list", "--tenant", "acme")
	assert.Len(t, list.Runs, 1)

	// A tenant that does not find a graph is told that it sees only its
	// own, whether or not another scope holds one of that id.
	for _, id := range []string{demo.GraphID, "no-such-graph"} {
		for _, args := range [][]string{
			{"runs", "start", id, "--tenant", "globex"},
			{"graph", "show", id, "--tenant", "globex"},
			{"graph", "render", id, "--tenant", "globex"},
		} {
			res := c.fails(ExitNotFound, args...)
			assert.Contains(t, res.stderr, `tenant "globex" sees only the graphs published with --tenant globex`, args)
		}
	}
	res := c.fails(ExitNotFound, "runs", "start", "no-such-graph")
	assert.NotContains(t, res.stderr, "tenant", "without a tenant there is nothing to say of one")
}

// poisonAll makes every due run of the schema poisoned, as a crashing
// worker would after max_claim_attempts launches.
func poisonAll(t *testing.T, pool *pgxpool.Pool, schema string) {
	t.Helper()
	ctx := context.Background()
	req := claim.Request{Now: time.Now().Add(time.Minute), Limit: 100, OrphanTTL: time.Millisecond, MaxClaimAttempts: 1}
	// The store's clock agrees with the claimer's, which jumps ahead: a
	// store bounds each claim by its own clock.
	store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: schema, Clock: ports.ClockFunc(func() time.Time { return req.Now })})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	leased, err := store.ClaimDue(ctx, req)
	require.NoError(t, err)
	require.NotEmpty(t, leased.Leases)
	req.Now = req.Now.Add(time.Second) // the claims expire without progress
	poisoned, err := store.ClaimDue(ctx, req)
	require.NoError(t, err)
	require.Len(t, poisoned.Poisoned, len(leased.Leases))
}

func TestRetryPoisonedRuns(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var a, b runJSON
	c.okJSON(&a, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)
	c.okJSON(&b, "runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":20.0}`)
	poisonAll(t, db.Pool(t), schema)

	var shown runJSON
	c.okJSON(&shown, "runs", "show", a.RunID)
	require.True(t, shown.Operational.Poisoned)
	assert.Equal(t, claim.ReasonMaxClaimAttempts, shown.Operational.PoisonReason)
	assert.Contains(t, c.ok("runs", "show", a.RunID).stdout, "docket runs retry "+a.RunID)

	var one retryJSON
	c.okJSON(&one, "runs", "retry", a.RunID)
	assert.Equal(t, []signalJSON{{RunID: a.RunID, Status: "running", Result: "retried", Reason: claim.ReasonMaxClaimAttempts}}, one.Runs)
	c.okJSON(&one, "runs", "retry", a.RunID)
	assert.Equal(t, "not_poisoned", one.Runs[0].Result, "retry leaves a healthy run alone")

	var bulk retryJSON
	c.okJSON(&bulk, "runs", "retry", "--all-poisoned", "--graph", demo.GraphID)
	assert.Equal(t, 2, bulk.Scanned)
	assert.Equal(t, []signalJSON{{RunID: b.RunID, Status: "running", Result: "retried", Reason: claim.ReasonMaxClaimAttempts}}, bulk.Runs)
	c.okJSON(&shown, "runs", "show", b.RunID)
	assert.False(t, shown.Operational.Poisoned)
	assert.Zero(t, shown.Operational.ClaimAttempts)

	c.fails(ExitNotFound, "runs", "retry", "run_unknown")
}

// TestEventsTailCursorIsInMicroseconds: a tail that printed no event ends
// at its start time, which is written like every other time docket prints
// (RFC 3339 in microseconds), not to the nanosecond of the CLI's clock.
func TestEventsTailCursorIsInMicroseconds(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	res := c.ok("events", "tail", "--since", "1m", "--json")
	assert.Empty(t, res.stdout, "no events")
	var cursor struct{ Cursor string }
	require.NoError(t, json.Unmarshal([]byte(res.stderr), &cursor), res.stderr)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$`, cursor.Cursor)
}

func TestEventsTailAllRunsPrintsAResumableCursor(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var first runJSON
	c.okJSON(&first, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)

	res := c.ok("events", "tail", "--json")
	events := jsonLines[eventJSON](t, res.stdout)
	require.NotEmpty(t, events)
	for _, e := range events {
		assert.Equal(t, first.RunID, e.RunID)
	}
	var cursor struct{ Cursor string }
	require.NoError(t, json.Unmarshal([]byte(res.stderr), &cursor), res.stderr)
	assert.Equal(t, events[len(events)-1].Cursor, cursor.Cursor)

	// A new run after the cursor shows up when resuming from it; events
	// printed again (the overlap) are the same events, identified by
	// (run_id, seq).
	var second runJSON
	c.okJSON(&second, "runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":20.0}`)
	resumed := jsonLines[eventJSON](t, c.ok("events", "tail", "--after", cursor.Cursor, "--json").stdout)
	seen := map[string]bool{}
	for _, e := range events {
		seen[e.RunID+"#"+jsonInt(e.Seq)] = true
	}
	var fresh []eventJSON
	for _, e := range resumed {
		if !seen[e.RunID+"#"+jsonInt(e.Seq)] {
			fresh = append(fresh, e)
		}
	}
	require.NotEmpty(t, fresh)
	for _, e := range fresh {
		assert.Equal(t, second.RunID, e.RunID)
	}
	assert.Contains(t, c.ok("events", "tail").stderr, "resume with: docket events tail --after ")

	// Following all runs ends on Ctrl-C with exit 0 and the cursor.
	followed := c.runUntilOutput("events", "tail", "--follow", "--interval", "20ms")
	assert.Equal(t, ExitOK, followed.code, followed.stderr)
	assert.NotEmpty(t, followed.stdout, "it printed the runs' events before the interrupt")
	assert.Contains(t, followed.stderr, "cursor: ")
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestPruneDeletesFinishedRuns(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.worker()
	c.ok("graph", "publish", "--example")
	var r runJSON
	c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "15s")
	require.Equal(t, "done", string(r.Status))
	var waiting runJSON
	c.okJSON(&waiting, "runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":5000.0}`, "--await", "15s")
	require.Equal(t, "waiting", string(waiting.Status))

	var pruned pruneJSON
	c.okJSON(&pruned, "prune", "--event-retention", "0s", "--run-retention", "0d", "--batch-size", "5")
	assert.Equal(t, 1, pruned.RunsDeleted)
	assert.Positive(t, pruned.EventsDeleted+pruned.CascadeEventsDeleted)
	assert.GreaterOrEqual(t, pruned.Passes, 2, "bounded passes until nothing is left")
	c.fails(ExitNotFound, "runs", "show", r.RunID)
	c.ok("runs", "show", waiting.RunID) // unfinished runs are never pruned
}

func TestConformanceAgainstALiveDatabase(t *testing.T) {
	t.Parallel()
	db := pgtest.SharedDatabase(t)
	c := newCLI(t, nil)
	res := c.ok("conformance", "--database-url", db.URL)
	for _, inv := range conformance.Invariants() {
		assert.Contains(t, res.stdout, inv.ID, "every invariant is reported")
	}
	assert.Contains(t, res.stdout, " 0 fail, ")

	var out conformanceJSON
	c.okJSON(&out, "conformance", "--database-url", db.URL)
	assert.True(t, out.Passed)
	assert.Len(t, out.Invariants, len(conformance.Invariants()))
	assert.Zero(t, out.Counts["fail"])

	// Every scratch schema of the JSON run (it names its prefix) is gone;
	// other tests may run the command on this database at the same time.
	pool := db.Pool(t)
	var left []string
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT coalesce(array_agg(nspname::text), '{}') FROM pg_namespace WHERE starts_with(nspname, $1)`,
		out.SchemaPrefix+"_").Scan(&left))
	assert.NotEmpty(t, out.SchemaPrefix)
	assert.Empty(t, left)
}

func TestDemoOnTheMemoryStore(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]*cli{
		"flag": newCLI(t, nil),
		"env":  newCLI(t, map[string]string{"DOCKET_MEMORY": "1"}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			args := []string{"demo", "--runs", "6"}
			if name == "flag" {
				args = append(args, "--memory")
			}
			var out demoJSON
			c.okJSON(&out, args...)
			assert.Equal(t, "memory", out.Backend)
			checkDemo(t, out, 6)
		})
	}
}

func checkDemo(t *testing.T, out demoJSON, runs int) {
	t.Helper()
	require.Len(t, out.Runs, runs)
	for _, r := range out.Runs {
		assert.Equal(t, "done", string(r.Status), r.RunID)
		assert.NotEmpty(t, r.Output["summary"])
	}
	assert.Equal(t, demo.GraphID, out.GraphID)
	var types []string
	for i, cp := range out.Timeline.Checkpoints {
		types = append(types, cp.Type)
		assert.Equal(t, int64(i+1), cp.Seq, "checkpoint seqs run 1, 2, 3, …")
		switch cp.Type {
		case "retry_scheduled":
			assert.Equal(t, "at", cp.Disposition)
			assert.Equal(t, "retry_backoff", cp.ParkReason)
		case "step_committed":
			assert.Empty(t, cp.ParkReason, "a continue has no park reason")
		}
	}
	final := out.Timeline.Checkpoints[len(out.Timeline.Checkpoints)-1]
	assert.Equal(t, "terminal", final.Disposition)
	assert.Equal(t, "run_completed", final.ParkReason)
	assert.Contains(t, types, "retry_scheduled")
	assert.Contains(t, types, "interrupt_requested")
	assert.Contains(t, types, "interrupt_resolved")
	assert.Equal(t, "run_completed", types[len(types)-1])
	assert.Contains(t, out.Diagram, "credit_check ✓ + fraud_check ✓ ══▶ decide ✓")
}

func TestDemoSaysPlainlyWhenNoPostgreSQLIsInstalled(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	empty := t.TempDir()
	c.opts.PostgresBinaries.Path = empty
	c.opts.PostgresBinaries.Glob = empty + "/*/bin"
	res := c.ok("demo", "--runs", "3")
	assert.Contains(t, res.stderr, "Docket demo on the in-memory store: no PostgreSQL server binaries found")
	assert.Contains(t, res.stdout, "3 runs finished")
	assert.Contains(t, res.stdout, "Checkpoint timeline of run")
}

func TestDemoMemoryFlagWinsOverAConfiguredDatabase(t *testing.T) {
	t.Parallel()
	// An unreachable URL: the demo must not so much as try it.
	c := newCLI(t, map[string]string{"DOCKET_DATABASE_URL": "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"})
	res := c.ok("demo", "--memory", "--runs", "3")
	assert.Contains(t, res.stderr, "the in-memory store (--memory)")
	assert.Contains(t, res.stdout, "3 runs finished")
}

// A demo of one run says so in the singular.
func TestDemoOfOneRunSaysRun(t *testing.T) {
	t.Parallel()
	res := newCLI(t, nil).ok("demo", "--memory", "--runs", "1")
	assert.Contains(t, res.stdout, "1 run finished in")
}

// The demo's --poll-interval is checked as the flag, before any store is
// opened, and its error names the flag rather than the engine's field.
func TestDemoPollIntervalOutOfRangeNamesTheFlag(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	for _, v := range []string{"1us", "-1s"} {
		res := c.fails(ExitUsage, "demo", "--memory", "--runs", "1", "--poll-interval", v)
		assert.Contains(t, res.stderr, "--poll-interval must be at least 1ms", v)
		assert.NotContains(t, res.stderr, "Dispatcher.", "no Go field names")
		assert.Empty(t, res.stdout, "nothing ran")
	}
}

func TestProgressBarsOnlyOnATerminal(t *testing.T) {
	t.Parallel()
	c := newCLI(t, nil)
	c.terminal = true
	res := c.ok("demo", "--memory", "--runs", "3")
	assert.Contains(t, res.stderr, "running 3 loan applications")
	assert.Contains(t, res.stdout, "3 runs finished", "the bar never reaches stdout")
	res = c.ok("demo", "--memory", "--runs", "3", "--no-progress")
	assert.NotContains(t, res.stderr, "loan applications")
	c.terminal = false
	assert.NotContains(t, c.ok("demo", "--memory", "--runs", "3").stderr, "loan applications")
}

// TestEventsTailFollowsRunsQuietBeforeItsStart: a run that is unfinished
// but committed nothing since the tail's start point, and finishes right
// after the tail's first poll, still has its new events printed.
func TestEventsTailFollowsRunsQuietBeforeItsStart(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	var quiet runJSON
	c.okJSON(&quiet, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)
	// Older than the tail's start and than its look-back for new runs.
	time.Sleep(tailOverlap + time.Second)
	var fresh runJSON
	c.okJSON(&fresh, "runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":10.0}`)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout lockedBuffer
	cancelled := make(chan result, 1)
	out := &onFirstWrite{w: &stdout, first: func() {
		// The first poll has chosen its runs: the quiet run finishes
		// before the next poll.
		cancelled <- c.run("runs", "cancel", quiet.RunID)
	}}
	done := make(chan int, 1)
	go func() {
		opts := c.opts
		opts.Getenv = func(k string) string { return c.env[k] }
		opts.Terminal = func(io.Writer) bool { return false }
		done <- Main(ctx, []string{"events", "tail", "--follow", "--since", "1s", "--interval", "50ms", "--json"},
			IO{In: strings.NewReader(""), Out: out, Err: io.Discard}, opts)
	}()
	require.Equal(t, ExitOK, (<-cancelled).code)
	assert.Eventually(t, func() bool { return strings.Contains(stdout.String(), `"run_cancelled"`) },
		5*time.Second, 20*time.Millisecond, "the quiet run's cancellation is followed")
	cancel()
	assert.Equal(t, ExitOK, <-done)
	for _, e := range jsonLines[eventJSON](t, stdout.String()) {
		if e.Type == run.EventRunCancelled {
			assert.Equal(t, quiet.RunID, e.RunID)
		}
	}
}

// onFirstWrite passes writes on and calls first after the first one.
type onFirstWrite struct {
	w     io.Writer
	once  sync.Once
	first func()
}

func (o *onFirstWrite) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.once.Do(o.first)
	return n, err
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestNegativeDurationsAreRefusedBeforeAnythingIsCommitted: a negative
// --await is a usage mistake, not a start without waiting, and a negative
// --since would start an all-runs tail in the future, printing a cursor
// that skips what is committed until then.
func TestNegativeDurationsAreRefusedBeforeAnythingIsCommitted(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	c.fails(ExitUsage, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "-1s")
	var list struct{ Runs []runJSON }
	c.okJSON(&list, "runs", "list")
	assert.Empty(t, list.Runs, "no run was started")
	res := c.fails(ExitUsage, "events", "tail", "--since", "-5m")
	assert.NotContains(t, res.stderr, "cursor")
}

// TestAbbreviatedGraphHashesAreUsageErrors: tables print a graph version
// abbreviated (loan-review@31ca565e83f3); given back to --hash, it used to
// match no run silently. Every --hash wants the whole hash.
func TestAbbreviatedGraphHashesAreUsageErrors(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	var published struct{ Hash string }
	c.okJSON(&published, "graph", "publish", "--example")
	c.ok("runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`)
	short := published.Hash[:12]
	for _, args := range [][]string{
		{"runs", "list", "--hash", short},
		{"runs", "start", demo.GraphID, "--hash", short, "--input", `{"customer":"Ada","amount":10.0}`},
		{"graph", "show", demo.GraphID, "--hash", short},
		{"graph", "render", demo.GraphID, "--hash", short},
	} {
		res := c.fails(ExitUsage, args...)
		assert.Contains(t, res.stderr, "--hash", args)
	}
	var list struct{ Runs []runJSON }
	c.okJSON(&list, "runs", "list", "--hash", published.Hash)
	assert.Len(t, list.Runs, 1, "the whole hash matches")
}

// TestGraphShowOfAnOlderVersionHasItsPublicationTime: a version older
// than the ones the show lists is still a published version, with its
// publication time.
func TestGraphShowOfAnOlderVersionHasItsPublicationTime(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	var oldest versionJSON
	for i := range 22 {
		g, err := demo.Graph()
		require.NoError(t, err)
		g.Description = fmt.Sprintf("version %d", i)
		doc, err := json.Marshal(g)
		require.NoError(t, err)
		var v versionJSON
		c.okJSON(&v, "graph", "publish", graphFile(t, string(doc)))
		if i == 0 {
			oldest = v
		}
	}
	require.NotEmpty(t, oldest.PublishedAt)
	var shown graphShowJSON
	c.okJSON(&shown, "graph", "show", demo.GraphID, "--hash", oldest.Hash)
	assert.Equal(t, oldest.Hash, shown.Hash)
	assert.Equal(t, oldest.PublishedAt, shown.PublishedAt)
}

// TestGraphPublishReportsThePublicationTimeOfAnOldVersion: publishing a
// version again reports when it was first published, however many newer
// versions there are.
func TestGraphPublishReportsThePublicationTimeOfAnOldVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, db, sch := onDatabase(t)
	var first versionJSON
	c.okJSON(&first, "graph", "publish", "--example")
	require.NotEmpty(t, first.PublishedAt)

	// More newer versions than one page of versions holds.
	e, err := engine.New(engine.Config{Backend: openStore(t, db.Pool(t), sch), Mode: engine.ModeManual, Nodes: demo.Registry()})
	require.NoError(t, err)
	for i := range ports.MaxPageLimit {
		g, err := demo.Graph()
		require.NoError(t, err)
		g.Description = fmt.Sprintf("version %d", i)
		_, err = e.SaveGraph(ctx, g)
		require.NoError(t, err)
	}

	var again versionJSON
	c.okJSON(&again, "graph", "publish", "--example")
	assert.Equal(t, first, again, "the first publication, with its time")
}

// TestInterruptsListSaysWhenWaitingRunsWereLeftOut: the list looks at the
// newest --limit waiting runs; when more are waiting it says so, as runs
// list does, rather than look like every open interrupt.
func TestInterruptsListSaysWhenWaitingRunsWereLeftOut(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.worker()
	c.ok("graph", "publish", "--example")
	for _, customer := range []string{"Ada", "Bob"} {
		var r runJSON
		c.okJSON(&r, "runs", "start", demo.GraphID, "--input", `{"customer":"`+customer+`","amount":1500.0}`, "--await", "15s")
		require.Equal(t, "waiting", string(r.Status))
	}
	var open []interruptJSON
	res := c.ok("interrupts", "list", "--limit", "1", "--json")
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &open))
	assert.Len(t, open, 1)
	assert.Contains(t, res.stderr, "--limit", "the left-out waiting runs are announced")
	assert.Empty(t, c.ok("interrupts", "list", "--limit", "2").stderr, "nothing is left out")
}
