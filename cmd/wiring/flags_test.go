package wiring_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/prune"
	"github.com/docketgo/docket/cmd/wiring"
)

// parseWorkerFlags registers the worker's engine flags on a fresh flag
// set, parses args and returns the engine configuration they ask for.
func parseWorkerFlags(t *testing.T, args ...string) (*wiring.WorkerFlags, engine.Config, error) {
	t.Helper()
	var f wiring.WorkerFlags
	fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
	f.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	cfg, err := f.EngineConfig()
	return &f, cfg, err
}

// Without flags a worker runs on the engine's defaults, and without
// retentions it does not prune.
func TestWorkerFlagsDefaultToTheEngineDefaults(t *testing.T) {
	t.Parallel()
	f, cfg, err := parseWorkerFlags(t)
	require.NoError(t, err)
	assert.Equal(t, engine.Config{
		MaxAttemptElapsed: engine.DefaultMaxAttemptElapsed,
		Dispatcher: engine.DispatcherConfig{
			Concurrency:      engine.DefaultConcurrency,
			PollInterval:     engine.DefaultPollInterval,
			DrainTimeout:     engine.DefaultDrainTimeout,
			OrphanTTL:        engine.DefaultOrphanTTL,
			MaxClaimAttempts: engine.DefaultMaxClaimAttempts,
		},
		Vehicle: engine.VehicleConfig{
			DrainBudget:      engine.DrainBudget{MaxElapsed: engine.DefaultDrainMaxElapsed},
			MaxClaimAbandons: engine.DefaultMaxClaimAbandons,
		},
	}, cfg)
	assert.Equal(t, "no pruning", f.Pruning())
}

// Every flag lands in the engine field it names.
func TestWorkerFlagsSetTheirEngineFields(t *testing.T) {
	t.Parallel()
	f, cfg, err := parseWorkerFlags(t,
		"--concurrency", "7", "--max-finishing", "3", "--poll-interval", "250ms", "--poll-only",
		"--drain-timeout", "5s", "--max-attempt-elapsed", "2m", "--drain-max-elapsed", "2m",
		"--orphan-ttl", "5m", "--max-claim-attempts", "9", "--max-claim-abandons", "4",
		"--event-retention", "7d", "--run-retention", "30d", "--prune-interval", "2h", "--batch-size", "50")
	require.NoError(t, err)
	assert.Equal(t, engine.Config{
		PollOnly:          true,
		MaxAttemptElapsed: 2 * time.Minute,
		Dispatcher: engine.DispatcherConfig{
			Concurrency:      7,
			MaxFinishing:     3,
			PollInterval:     250 * time.Millisecond,
			DrainTimeout:     5 * time.Second,
			OrphanTTL:        5 * time.Minute,
			MaxClaimAttempts: 9,
		},
		Vehicle: engine.VehicleConfig{
			DrainBudget:      engine.DrainBudget{MaxElapsed: 2 * time.Minute},
			MaxClaimAbandons: 4,
		},
		Pruner: &prune.Config{Interval: 2 * time.Hour, EventRetention: 7 * 24 * time.Hour, RunRetention: 30 * 24 * time.Hour, BatchSize: 50},
	}, cfg)
	assert.Equal(t, "pruning every 2h0m0s (events after 7d, finished runs after 30d)", f.Pruning())
}

// What the engine would refuse is refused before anything connects, every
// problem at once, by the flags' names and never by Go field names.
func TestInvalidWorkerFlagsNameTheFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"an attempt longer than the drain and the orphan TTL",
			[]string{"--max-attempt-elapsed", "2m"},
			[]string{"--drain-max-elapsed (3s) must be at least --max-attempt-elapsed (2m0s)",
				"--orphan-ttl (1m0s) must exceed --drain-max-elapsed (3s)"}},
		{"a limit at zero", []string{"--orphan-ttl", "0s", "--max-claim-abandons", "0"},
			[]string{"--orphan-ttl and --max-claim-abandons must be positive"}},
		{"a poll interval below a millisecond", []string{"--poll-interval", "10us"},
			[]string{"--poll-interval must be at least 1ms"}},
		{"too many places", []string{"--concurrency", "2000000"},
			[]string{"--concurrency must be at most"}},
		{"negative drain timeout and finishing", []string{"--drain-timeout", "-1s", "--max-finishing", "-1"},
			[]string{"--drain-timeout must not be negative", "--max-finishing must not be negative"}},
		{"one retention", []string{"--event-retention", "7d"},
			[]string{"pruning needs both --event-retention and --run-retention"}},
		{"events kept longer than runs", []string{"--event-retention", "30d", "--run-retention", "7d"},
			[]string{"--event-retention (30d) must not exceed --run-retention (7d)"}},
		{"prune settings", []string{"--event-retention", "1d", "--run-retention", "7d", "--prune-interval", "0s", "--batch-size", "0"},
			[]string{"--prune-interval must be positive", "--batch-size must be in 1.."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := parseWorkerFlags(t, tc.args...)
			require.ErrorIs(t, err, wiring.ErrInvalidFlag)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			for _, field := range []string{"Dispatcher.", "Vehicle.", "MaxAttemptElapsed", "Pruner", "Retention", "BatchSize", "Backend", "engine config"} {
				assert.NotContains(t, err.Error(), field, "no Go field names")
			}
		})
	}
}

func TestRetentionTakesDurationsAndDays(t *testing.T) {
	t.Parallel()
	var r wiring.Retention
	assert.False(t, r.IsSet())
	assert.Empty(t, r.String())
	require.NoError(t, r.Set("30d"))
	assert.True(t, r.IsSet())
	assert.Equal(t, 30*24*time.Hour, r.Duration())
	assert.Equal(t, "30d", r.String(), "said as given")
	require.NoError(t, r.Set("72h"))
	assert.Equal(t, 72*time.Hour, r.Duration())
	for _, bad := range []string{"-1d", "-2h", "soon", "d", "99999999999999d"} {
		err := r.Set(bad)
		require.Error(t, err, bad)
		assert.True(t, strings.Contains(err.Error(), "want a duration such as 72h or 30d"), bad)
	}
}
