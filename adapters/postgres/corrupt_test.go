package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/ports"
)

// The row's columns are what listings, admission and event pages show: a
// document that says otherwise (a status, step, event counter or timestamp
// the columns do not carry) is a corrupt row, never read as either side.
func TestRunDocumentDisagreeingWithItsColumnsIsCorrupt(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	now := time.Now()
	tampers := map[string]string{
		"status":     `SET status = 'done', finished_at = updated_at, wake_at = NULL`,
		"step":       `SET step = step + 7`,
		"event_seq":  `SET event_seq = event_seq + 99`,
		"updated_at": `SET updated_at = updated_at + interval '1 second'`,
		"started_at": `SET started_at = started_at - interval '1 day'`,
	}
	for field, set := range tampers {
		r := env.insertRun(t, ports.Tenantless(), now, now)
		_, err := env.pool.Exec(ctx, "UPDATE "+env.table("docket_runs")+" "+set+" WHERE run_id = $1", r.ID)
		require.NoError(t, err, field)

		_, err = env.store.FetchRun(ctx, ports.System(), r.ID)
		var corrupt *ports.CorruptError
		require.ErrorAs(t, err, &corrupt, field)
		assert.ErrorIs(t, err, ports.ErrCorruptRun, field)
		assert.Equal(t, r.ID, corrupt.ID, field)
		assert.Contains(t, err.Error(), field)
		_, err = env.store.InspectRun(ctx, ports.System(), r.ID)
		assert.ErrorIs(t, err, ports.ErrCorruptRun, field)
	}
}
