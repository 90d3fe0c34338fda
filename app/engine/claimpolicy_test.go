package engine_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
)

// tenantFairBackends are the stores of scenarios in TenantRequired mode:
// each backend built with the tenant-fair policy.
var tenantFairBackends = []struct {
	name string
	new  func(t *testing.T, pollOnly bool) *harness
}{
	{"memory", func(_ *testing.T, pollOnly bool) *harness {
		clock := newManualClock()
		return &harness{clock: clock, store: memory.New(memory.Options{Clock: clock, Policy: claim.WindowedInterleave}), pollOnly: pollOnly}
	}},
	{"postgres", func(t *testing.T, pollOnly bool) *harness {
		clock := newManualClock()
		s := newPGSchema(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := s.config.Copy()
		cfg.MaxConns = 8
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		store, err := postgres.New(ctx, postgres.Config{Pool: pool, Schema: s.schema, Clock: clock, Policy: claim.WindowedInterleave})
		require.NoError(t, err)
		t.Cleanup(func() { _ = store.Close() })
		return &harness{clock: clock, store: store, pollOnly: pollOnly}
	}},
}

// onTenantFairBackends runs a scenario on every tenant-fair backend,
// poll-only.
func onTenantFairBackends(t *testing.T, scenario func(t *testing.T, h *harness)) {
	for _, b := range tenantFairBackends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			scenario(t, b.new(t, true))
		})
	}
}

func TestClaimPolicyMustMatchTheBackendAndTenantMode(t *testing.T) {
	t.Parallel()
	fifo := memory.New(memory.Options{})
	fair := memory.New(memory.Options{Policy: claim.WindowedInterleave})
	tests := []struct {
		name   string
		cfg    engine.Config
		errors bool
	}{
		{"tenant-none mode accepts a FIFO backend", engine.Config{Backend: fifo}, false},
		{"tenant-none mode accepts a tenant-fair backend", engine.Config{Backend: fair}, false},
		{"tenant-required mode defaults to tenant-fair", engine.Config{Backend: fair, TenantMode: engine.TenantRequired}, false},
		{"tenant-required mode refuses a FIFO backend", engine.Config{Backend: fifo, TenantMode: engine.TenantRequired}, true},
		{"tenant-required mode refuses the legacy policy",
			engine.Config{Backend: fair, TenantMode: engine.TenantRequired, ClaimPolicy: engine.ClaimPolicyLegacy}, true},
		{"an explicit tenant-fair policy needs a tenant-fair backend",
			engine.Config{Backend: fifo, ClaimPolicy: engine.ClaimPolicyTenantFair}, true},
		{"an explicit legacy policy needs a FIFO backend",
			engine.Config{Backend: fair, ClaimPolicy: engine.ClaimPolicyLegacy}, true},
		{"explicit policies matching the backend are accepted",
			engine.Config{Backend: fair, ClaimPolicy: engine.ClaimPolicyTenantFair}, false},
		{"an unknown policy is refused", engine.Config{Backend: fifo, ClaimPolicy: "round_robin"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := engine.New(tt.cfg)
			if !tt.errors {
				require.NoError(t, err)
				return
			}
			var ce *engine.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, "ClaimPolicy", ce.Field)
			assert.True(t, errors.Is(err, engine.ErrInvalidConfig))
		})
	}
}

func TestClaimPolicyNamesTheDomainPolicyToBuildABackendWith(t *testing.T) {
	t.Parallel()
	assert.Equal(t, claim.Legacy, engine.ClaimPolicyLegacy.Policy())
	assert.Equal(t, claim.WindowedInterleave, engine.ClaimPolicyTenantFair.Policy())
	assert.Nil(t, engine.ClaimPolicy("other").Policy())
}

// TestTenantFairEngineServesASmallTenantAmidAFlood drives runs one at a
// time: the small tenant's run, started after a flood of another
// tenant's, is driven within the first few admissions instead of last.
func TestTenantFairEngineServesASmallTenantAmidAFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := newManualClock()
	store := memory.New(memory.Options{Clock: clock, Policy: claim.NewWindowedInterleave(rand.NewPCG(3, 4))})
	h := &harness{clock: clock, store: store, pollOnly: true}
	e := manual(t, h, newKit(), func(c *engine.Config) { c.TenantMode = engine.TenantRequired })
	flood, small := e.Tenant("flood"), e.Tenant("small")
	floodRef, err := flood.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	for range 10 {
		_, err := flood.StartRun(ctx, floodRef, map[string]any{"value": "bulk"})
		require.NoError(t, err)
	}
	smallRef, err := small.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	mine, err := small.StartRun(ctx, smallRef, map[string]any{"value": "urgent"})
	require.NoError(t, err)

	drives := 0
	for {
		sum, err := e.DrainRuns(ctx, 1)
		require.NoError(t, err)
		require.Equal(t, 1, sum.Drained)
		drives++
		r, err := small.FetchRun(ctx, mine.ID)
		require.NoError(t, err)
		if r.Status == run.StatusDone {
			break
		}
		require.Less(t, drives, 4, "the small tenant waits behind the flood")
	}
}
