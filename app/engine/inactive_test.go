package engine_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// levelLog keeps the level and message of every log record.
type levelLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *levelLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}
func (h *levelLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *levelLog) WithGroup(string) slog.Handler      { return h }

// messages are the messages logged at level.
func (h *levelLog) messages(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level == level {
			out = append(out, r.Message)
		}
	}
	return out
}

// countedClaims counts the claim polls that reach the store.
type countedClaims struct {
	ports.Backend
	claims atomic.Int64
}

func (b *countedClaims) ClaimDue(ctx context.Context, req claim.Request) (*ports.ClaimBatch, error) {
	b.claims.Add(1)
	return b.Backend.ClaimDue(ctx, req)
}

// openStore opens a store of policy on s (with its own pool), which makes
// policy the schema's.
func openStore(t *testing.T, s *pgSchema, policy claim.Policy) {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), s.config.Copy())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store, err := postgres.New(context.Background(), postgres.Config{Pool: pool, Schema: s.schema, Policy: policy})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
}

// An engine whose claim policy another engine replaced as the schema's
// ("last boot wins") says so once, not on every poll, and its Health says
// why it claims nothing: its claims are refused as the inactive engine's,
// not unanswered. Once its policy is the schema's again it claims, says so
// once, and is healthy again.
func TestAnInactiveEngineSaysSoOnceAndInItsHealth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	store := &countedClaims{Backend: s.store(t, nil, false, 4)} // legacy
	logs := &levelLog{}
	k := newKit()
	e := startEngine(t, engine.Config{Backend: store, Nodes: k.registry, Logger: slog.New(logs),
		Dispatcher: engine.DispatcherConfig{PollInterval: 5 * time.Millisecond, DrainTimeout: 5 * time.Second}})
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	eventually(t, "a poll answered", func() bool { return !e.Health().LastPoll.IsZero() })
	assert.Empty(t, e.Health().ClaimPolicyUnavailable)

	openStore(t, s, claim.WindowedInterleave) // another engine boots tenant-fair
	eventually(t, "the engine inactive", func() bool {
		return e.Health().ClaimPolicyUnavailable == ports.UnavailableInactiveEngine
	})
	r, err := e.StartRun(ctx, ref, map[string]any{"value": "hi"})
	require.NoError(t, err)
	refused := store.claims.Load()
	eventually(t, "twenty more polls", func() bool { return store.claims.Load() >= refused+20 })

	h := e.Health()
	assert.Equal(t, engine.HealthRunning, h.State)
	assert.Equal(t, ports.UnavailableInactiveEngine, h.ClaimPolicyUnavailable)
	assert.False(t, h.UnansweredSince.IsZero(), "its polls claim nothing")
	got, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err)
	assert.Equal(t, r.CheckpointSeq, got.CheckpointSeq, "the inactive engine drives nothing")
	warnings := logs.messages(slog.LevelWarn)
	require.Len(t, warnings, 1, "one warning over twenty refused polls: %q", warnings)
	assert.Contains(t, warnings[0], "inactive")
	assert.Contains(t, warnings[0], "another engine made tenant_fair the schema's claim policy")
	assert.Contains(t, warnings[0], "running legacy")
	assert.Contains(t, warnings[0], "restart it with the tenant_fair claim policy")

	openStore(t, s, claim.Legacy) // the fleet rolls back to legacy
	done, err := e.AwaitRun(ctx, r.ID, awaitLimit)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status, "it claims again")
	eventually(t, "healthy again", func() bool { return e.Health().ClaimPolicyUnavailable == "" })
	assert.Len(t, logs.messages(slog.LevelWarn), 1)
	var recovered int
	for _, m := range logs.messages(slog.LevelInfo) {
		if strings.Contains(m, "claims runs again") {
			recovered++
		}
	}
	assert.Equal(t, 1, recovered, "the recovery is said once")
}
