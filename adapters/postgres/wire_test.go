package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// commitTraces counts the claimed commits a pool tracer saw start and end.
type commitTraces struct {
	mu           sync.Mutex
	starts, ends int
}

func (c *commitTraces) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "moved AS") && strings.Contains(d.SQL, "proposed AS") {
		c.mu.Lock()
		c.starts++
		c.mu.Unlock()
		return context.WithValue(ctx, commitTraces{}, true)
	}
	return ctx
}

func (c *commitTraces) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if ctx.Value(commitTraces{}) != nil && d.Err == nil {
		c.mu.Lock()
		c.ends++
		c.mu.Unlock()
	}
}

// The batched insertion and the claimed commit bind their parameters
// themselves on a pool that caches statements (a statement prepared under its own name), stays visible to
// the pool's tracer, and goes the ordinary way on a simple-protocol pool.
func TestBatchedWritesBindTheirOwnParameters(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		simple bool
		wire   int
	}{
		{"statement cache", false, 2},
		{"simple protocol", true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			traces := &commitTraces{}
			env := newEnv(t, envOptions{simple: tt.simple, maxConns: 1, tracer: traces})
			ctx := context.Background()
			// The owner's first insertion ensures its claim partition in a
			// transaction (through pgx); the second is the batched one.
			env.insertRun(t, ports.Tenantless(), t0, t0.Add(time.Hour))
			r := env.insertRun(t, ports.Tenantless(), t0, t0)
			batch, err := env.store.ClaimDue(ctx, claim.Request{Now: t0, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
			require.NoError(t, err)
			require.Len(t, batch.Leases, 1)
			m := nextMoment(r, "retain", continueDisposition, t0)
			traces.mu.Lock()
			traces.starts, traces.ends = 0, 0 // the insertion has the same shape
			traces.mu.Unlock()
			_, err = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: batch.Leases[0].Token, NoResult: true})
			require.NoError(t, err)
			stored, err := env.store.FetchRun(ctx, ports.Tenantless(), r.ID)
			require.NoError(t, err)
			assert.Equal(t, m.Run.CheckpointSeq, stored.CheckpointSeq)

			var prepared int
			require.NoError(t, env.pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE name LIKE 'docket_wire_%'`).Scan(&prepared))
			assert.Equal(t, tt.wire, prepared, "statements prepared by the store itself on its only connection (the insertion's and the commit's)")
			assert.Equal(t, 1, traces.starts, "the pool tracer saw the commit start")
			assert.Equal(t, 1, traces.ends, "and end")
		})
	}
}

// A batched write reads only rows naming an element of its batch: a row
// of another shape, an element out of range or a count that is not an
// integer is an error on either path, never a panic or a miscount.
func TestBatchedWriteRefusesAMalformedResultRow(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	for _, inTx := range []bool{false, true} {
		written, err := env.store.BatchedWriteForTest(ctx, `SELECT 1::int4, 7::int8, 0::int8`, 2, inTx)
		require.NoError(t, err, "in a transaction: %v", inTx)
		assert.Equal(t, []int64{-1, 7}, written, "the element without a row is missed")

		for _, sql := range []string{
			`SELECT 0::int4, 7::int8`,
			`SELECT 2::int4, 7::int8, 0::int8`,
			`SELECT -1::int4, 7::int8, 0::int8`,
			`SELECT 0::int4, 'seven'::text, 0::int8`,
		} {
			_, err := env.store.BatchedWriteForTest(ctx, sql, 2, inTx)
			assert.Error(t, err, "%s (in a transaction: %v)", sql, inTx)
		}
	}
}
