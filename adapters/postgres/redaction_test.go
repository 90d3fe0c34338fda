package postgres_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5/tracelog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// queryLog is pgx's ordinary query log (tracelog) at its most verbose,
// keeping every entry the way a text and a JSON log handler would render
// it.
type queryLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *queryLog) Log(_ context.Context, _ tracelog.LogLevel, msg string, data map[string]any) {
	rendered := fmt.Sprintf("%s %v %+v", msg, data, data)
	if b, err := json.Marshal(data); err == nil {
		rendered += " " + string(b)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, rendered)
}

func (l *queryLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.entries, "\n")
}

func TestQueryLogNeverSeesAClaimToken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		simple bool
	}{
		{"extended protocol", false},
		{"simple protocol", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &queryLog{}
			env := newEnv(t, envOptions{simple: tt.simple,
				tracer: &tracelog.TraceLog{Logger: log, LogLevel: tracelog.LogLevelTrace}})
			ctx := context.Background()
			claimAt := func(now time.Time) ports.Lease {
				t.Helper()
				batch, err := env.store.ClaimDue(ctx, claim.Request{Now: now, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
				require.NoError(t, err)
				require.Len(t, batch.Leases, 1)
				return batch.Leases[0]
			}
			var tokens []string

			// Every token-bearing statement: refresh, release, abandon and
			// the claimed commit (a retain, then a park).
			r := env.insertRun(t, ports.Tenantless(), t0, t0)
			lease := claimAt(t0)
			tokens = append(tokens, lease.Token.Reveal())
			require.NoError(t, env.store.RefreshClaim(ctx, r.ID, lease.Token, t0))
			require.NoError(t, env.store.ReleaseClaim(ctx, r.ID, lease.Token, t0))

			lease = claimAt(t0)
			tokens = append(tokens, lease.Token.Reveal())
			res, err := env.store.AbandonClaim(ctx, r.ID, lease.Token, claim.AbandonParams{
				ExpectedSeq: lease.CheckpointSeq, Now: t0, RetryAt: t0, MaxClaimAbandons: 5})
			require.NoError(t, err)
			require.Equal(t, ports.AbandonRescheduled, res)

			lease = claimAt(t0)
			tokens = append(tokens, lease.Token.Reveal())
			retained, err := env.store.Commit(ctx, lease.Owner, ports.CommitParams{
				Moment: nextMoment(r, "retain", continueDisposition, t0), ClaimToken: lease.Token})
			require.NoError(t, err)
			_, err = env.store.Commit(ctx, lease.Owner, ports.CommitParams{
				Moment: nextMoment(retained, "yield", immediateDisposition, t0), ClaimToken: lease.Token})
			require.NoError(t, err)

			logged := log.all()
			require.Contains(t, logged, r.ID, "the query log records bind arguments")
			for _, token := range tokens {
				compact := strings.ReplaceAll(token, "-", "")
				raw, err := hex.DecodeString(compact)
				require.NoError(t, err)
				for _, form := range []string{token, compact, strings.ToUpper(compact), fmt.Sprint(raw), fmt.Sprint([16]byte(raw))} {
					assert.False(t, strings.Contains(logged, form), "a claim token reached the query log as %q", form)
				}
			}
		})
	}
}
