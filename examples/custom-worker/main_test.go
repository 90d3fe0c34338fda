package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
		t.Run(profile.notifier+"_"+profile.telemetry, func(t *testing.T) {
			t.Parallel()
			schema := db.NewSchema(t)
			spans := filepath.Join(t.TempDir(), "telemetry.jsonl")
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), []string{
				"-database-url", db.URL, "-schema", schema, "-migrate", "-runs", "4",
				"-notifier", profile.notifier, "-telemetry", profile.telemetry, "-telemetry-out", spans,
				"-poll-interval", "50ms",
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
	for _, args := range [][]string{{"-notifier", "smoke"}, {"-telemetry", "x"}, {"extra"}, {"-runs", "-1"}} {
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
	for _, args := range [][]string{{"-h"}, {"-runs", "many"}, {"-bogus"}} {
		var stdout, stderr bytes.Buffer
		run(context.Background(), args, env, &stdout, &stderr)
		assert.Contains(t, stderr.String(), "-database-url", args)
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
	c, err = parse([]string{"-database-url", "postgres://other/db"}, env, &bytes.Buffer{})
	require.NoError(t, err)
	assert.Equal(t, "postgres://other/db", c.databaseURL, "the flag wins")
}
