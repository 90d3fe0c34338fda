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
