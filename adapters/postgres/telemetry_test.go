package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// spanRecorder keeps every ended span of one store.
type spanRecorder struct {
	ports.NopTelemetry
	mu    sync.Mutex
	spans []endedSpan
}

type endedSpan struct {
	operation string
	labels    []ports.Label
	result    string
	m         ports.Measurements
}

func (r *spanRecorder) StartSpan(ctx context.Context, operation string, labels ...ports.Label) (context.Context, ports.Span) {
	return ctx, &recordedSpan{r: r, operation: operation, labels: labels}
}

// last is the latest ended span of operation.
func (r *spanRecorder) last(t *testing.T, operation string) endedSpan {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.spans) - 1; i >= 0; i-- {
		if r.spans[i].operation == operation {
			return r.spans[i]
		}
	}
	t.Fatalf("no %s span ended", operation)
	return endedSpan{}
}

type recordedSpan struct {
	r         *spanRecorder
	operation string
	labels    []ports.Label
}

func (s *recordedSpan) End(result string, m ports.Measurements) {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.spans = append(s.r.spans, endedSpan{s.operation, s.labels, result, m})
}

// The claim health recipe in docs/telemetry.md watches steals and the
// claim operations' matches: the store must report them.
func TestClaimSpansReportStealsAndMatches(t *testing.T) {
	t.Parallel()
	rec := &spanRecorder{}
	clock := conformance.NewManualClock(t0)
	env := newEnv(t, envOptions{telemetry: rec, clock: clock})
	ctx := context.Background()
	env.insertRun(t, ports.Tenantless(), t0, t0)
	now := t0

	first, err := env.store.ClaimDue(ctx, claim.Request{Now: now, Limit: 2, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	require.Len(t, first.Leases, 1)
	span := rec.last(t, "run_store.claim")
	assert.Equal(t, ports.Measurements{"demand": 2, "leases": 1, "poisoned": 0, "claim_attempts": 1, "ready_candidates": 1,
		"expired_candidates": 0, "ready_selected": 1, "expired_selected": 0, "steals": 0}, span.m)

	clock.Set(now.Add(2 * time.Hour))
	stolen, err := env.store.ClaimDue(ctx, claim.Request{Now: now.Add(2 * time.Hour), Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	require.Len(t, stolen.Leases, 1)
	span = rec.last(t, "run_store.claim")
	assert.Equal(t, 1.0, span.m["steals"], "a lease of the expired class is a steal")
	assert.Equal(t, 1.0, span.m["expired_selected"])
	assert.Equal(t, 2.0, span.m["claim_attempts"])

	runID := stolen.Leases[0].RunID
	require.NoError(t, env.store.ReleaseClaim(ctx, runID, first.Leases[0].Token, now))
	release := rec.last(t, "claim.operation")
	assert.Equal(t, []ports.Label{{Key: "operation", Value: "release"}}, release.labels)
	assert.Equal(t, 0.0, release.m["matched"], "the stolen token's release matches nothing")
	require.NoError(t, env.store.ReleaseClaim(ctx, runID, stolen.Leases[0].Token, now))
	assert.Equal(t, 1.0, rec.last(t, "claim.operation").m["matched"])

	require.ErrorIs(t, env.store.RefreshClaim(ctx, runID, stolen.Leases[0].Token, now), ports.ErrClaimLost)
	refresh := rec.last(t, "claim.operation")
	assert.Equal(t, "claim_lost", refresh.result)
	assert.Equal(t, 0.0, refresh.m["matched"])
}
