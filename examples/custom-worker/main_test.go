package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func noEnv(string) string { return "" }

// Every profile (notifier x telemetry) assembles a working engine that
// drives the worker's own nodes to the end.
func TestEveryProfileTriagesTickets(t *testing.T) {
	db := pgtest.SharedDatabase(t)
	for _, profile := range []struct{ notifier, telemetry string }{
		{"listen", "otel"}, {"listen", "none"}, {"poll", "otel"}, {"poll", "none"},
	} {
		pollOnly := "--poll-only=" + strconv.FormatBool(profile.notifier == "poll")
		t.Run(profile.notifier+"_"+profile.telemetry, func(t *testing.T) {
			t.Parallel()
			schema := db.NewSchema(t)
			spans := filepath.Join(t.TempDir(), "telemetry.jsonl")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{
				"--database-url", db.URL, "--schema", schema, "--migrate", "--runs", "4",
				pollOnly, "--telemetry", profile.telemetry, "--telemetry-out", spans,
				"--poll-interval", "50ms",
			}, noEnv, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())

			lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
			require.Len(t, lines, 4)
			assert.Contains(t, lines[0], "done billing: Re: Charged twice")
			assert.Contains(t, lines[1], "done technical: Re: App crashes on start")
			assert.Contains(t, stderr.String(), "notifier "+profile.notifier+", telemetry "+profile.telemetry)

			exported, err := os.ReadFile(spans)
			if profile.telemetry == "none" {
				assert.True(t, os.IsNotExist(err) || len(exported) == 0, "no telemetry without OpenTelemetry")
				return
			}
			require.NoError(t, err)
			assert.Contains(t, string(exported), `"Name":"docket.`, "spans of the engine reach the exporter")
			assert.NotContains(t, string(exported), "claim_token")
		})
	}
}

func TestBadFlagsAreUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--poll-only=smoke"}, {"--telemetry", "x"}, {"extra"}, {"--runs", "-1"}, {"--concurrency", "0"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, noEnv, &stdout, &stderr), args)
		assert.NotEmpty(t, stderr.String())
	}
}

// The usage text (on -h, or after a mistyped flag) never prints the
// password of the DATABASE_URL the process was started with.
func TestUsageNeverPrintsTheDatabasePassword(t *testing.T) {
	t.Parallel()
	env := func(name string) string {
		if name == "DATABASE_URL" {
			return "postgres://app:s3cret-pw@db.internal:5432/app"
		}
		return ""
	}
	for _, args := range [][]string{{"-h"}, {"--runs", "many"}, {"--bogus"}} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), args, env, &stdout, &stderr)
		assert.Contains(t, stderr.String(), "--database-url", args)
		assert.NotContains(t, stderr.String()+stdout.String(), "s3cret-pw", args)
	}
}

// Without -database-url the worker connects to DATABASE_URL.
func TestDatabaseURLComesFromTheEnvironment(t *testing.T) {
	t.Parallel()
	env := func(name string) string {
		if name == "DATABASE_URL" {
			return "postgres://app@db.internal/app"
		}
		return ""
	}
	c, err := parse(nil, env, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "postgres://app@db.internal/app", c.databaseURL)
	c, err = parse([]string{"--database-url", "postgres://other/db"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "postgres://other/db", c.databaseURL, "the flag wins")
}

// The worker takes the engine flags of docket worker: the same arguments
// give the engine configuration wiring.WorkerFlags gives docket worker.
func TestEngineFlagsAreDocketWorkers(t *testing.T) {
	t.Parallel()
	args := []string{"--concurrency", "4", "--poll-only", "--max-attempt-elapsed", "2m", "--drain-max-elapsed", "2m",
		"--orphan-ttl", "5m", "--max-claim-attempts", "3", "--max-claim-abandons", "2",
		"--event-retention", "7d", "--run-retention", "30d", "--prune-interval", "2h", "--batch-size", "200"}
	var f wiring.WorkerFlags
	fs := pflag.NewFlagSet("docket worker", pflag.ContinueOnError)
	f.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	want, err := f.EngineConfig()
	require.NoError(t, err)

	c, err := parse(args, noEnv, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, want, c.engine)
	assert.True(t, c.engine.PollOnly, "--poll-only picks a profile without a listener")
	assert.Equal(t, "pruning every 2h0m0s (events after 7d, finished runs after 30d)", c.pruning)
}

// Engine limits that do not fit together are refused before connecting,
// by their flags' names, as docket worker refuses them.
func TestInvalidEngineFlagsNameTheFlags(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--database-url", "postgres://docket@127.0.0.1:1/none", "--max-attempt-elapsed", "2m"},
		noEnv, &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "--drain-max-elapsed (3s) must be at least --max-attempt-elapsed (2m0s)")
	assert.Contains(t, stderr.String(), "--orphan-ttl (1m0s) must exceed --drain-max-elapsed")
	assert.NotContains(t, stderr.String(), "Dispatcher.")
}

// A ticket that no worker claims within the wait is reported with why, as
// `docket runs await` reports it: here an engine that claims nothing (a
// manual one, as a process whose engine never polls would be).
func TestATicketNoWorkerClaimedSaysSo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	c := config{databaseURL: db.URL, schema: schema}
	require.NoError(t, migrate(ctx, c))
	rt, cleanup, err := pollPlain(ctx, wiring.Settings{
		DatabaseURL: wiring.DatabaseURL(db.URL), Schema: wiring.SchemaName(schema),
		Engine: engine.Config{Mode: engine.ModeManual}, Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	t.Cleanup(cleanup)

	var stdout bytes.Buffer
	err = triage(ctx, rt.Engine, 1, time.Millisecond, &stdout)
	require.ErrorIs(t, err, engine.ErrAwaitTimeout)
	assert.Contains(t, err.Error(), "no worker has claimed it")
	assert.Empty(t, stdout.String())
}
