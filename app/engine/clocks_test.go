package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// skewedEngine is a manual engine on store whose clock reads the wall
// clock shifted by skew, as on a host whose clock has drifted.
func skewedEngine(t *testing.T, store ports.Backend, k *kit, skew time.Duration) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{
		Backend: store, Nodes: k.registry, Mode: engine.ModeManual,
		Clock: ports.ClockFunc(func() time.Time { return time.Now().Add(skew) }),
		// A gated attempt may wait for the test for a while.
		MaxAttemptElapsed: 20 * time.Second,
		Vehicle:           engine.VehicleConfig{DrainBudget: engine.DrainBudget{MaxElapsed: 20 * time.Second}},
	})
	require.NoError(t, err)
	return e
}

// Engines on hosts whose clocks disagree by far more than the orphan TTL
// share one PostgreSQL, which keeps its own clock: a host whose clock is
// ahead neither steals a run its owner is driving nor holds back the runs
// it starts, and one whose clock is behind claims a run as soon as the
// database finds it due.
func TestEnginesWithSkewedClocksNeitherStealLiveRunsNorMissDueOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	store := s.store(t, nil, false, 8) // the database's clock
	skew := time.Hour                  // far beyond the default orphan TTL (60s)

	t.Run("a host whose clock is ahead does not steal a live run", func(t *testing.T) {
		k := newKit()
		owner := skewedEngine(t, store, k, 0)
		ahead := skewedEngine(t, store, k, skew)
		ref, err := owner.SaveGraph(ctx, build(t, single("gated", refGated)))
		require.NoError(t, err)
		r, err := owner.StartRun(ctx, ref, nil)
		require.NoError(t, err)

		driven := make(chan engine.DrainSummary, 1)
		go func() {
			sum, err := owner.DrainRuns(ctx, 1)
			assert.NoError(t, err)
			driven <- sum
		}()
		k.waitStarted(t) // the owner holds the claim and runs the node

		sum, err := ahead.DrainRuns(ctx, 0)
		require.NoError(t, err)
		assert.Zero(t, sum.Drained, "the host an hour ahead claimed the live run")

		k.releaseGate()
		assert.Equal(t, 1, (<-driven).Drained)
		done, err := owner.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)
		assert.Len(t, k.attemptsOf("node"), 1, "the node ran once")
	})

	t.Run("a run started by a host whose clock is ahead is due at once for the others", func(t *testing.T) {
		k := newKit()
		starter := skewedEngine(t, store, k, skew)
		worker := skewedEngine(t, store, k, 0)
		ref, err := starter.SaveGraph(ctx, build(t, minimalLinear()))
		require.NoError(t, err)
		r, err := starter.StartRun(ctx, ref, map[string]any{"value": "v"})
		require.NoError(t, err)

		sum, err := worker.DrainRuns(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, 1, sum.Drained, "the run waited for the starter's lead")
		done, err := worker.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)
	})

	t.Run("a host whose clock is behind claims a due run", func(t *testing.T) {
		k := newKit()
		starter := skewedEngine(t, store, k, 0)
		behind := skewedEngine(t, store, k, -skew)
		ref, err := starter.SaveGraph(ctx, build(t, minimalLinear()))
		require.NoError(t, err)
		r, err := starter.StartRun(ctx, ref, map[string]any{"value": "v"})
		require.NoError(t, err)

		sum, err := behind.DrainRuns(ctx, 0)
		require.NoError(t, err)
		assert.Equal(t, 1, sum.Drained, "the host an hour behind left the due run waiting")
		done, err := starter.FetchRun(ctx, r.ID)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)
	})
}
