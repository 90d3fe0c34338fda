package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

// A checkpoint's metadata is stored as the canonical bytes of its wire
// form, read back as the same typed value, and a row whose metadata is not
// checkpoint metadata is reported as corrupt, never read as something else.
func TestCheckpointMetadataIsStoredInItsWireFormAndReadBackStrictly(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	now := time.Now()
	r := env.insertRun(t, ports.Tenantless(), now, now)

	latest, err := env.store.FetchLatestEvent(ctx, ports.System(), r.ID)
	require.NoError(t, err)
	require.Equal(t, run.EventCheckpointCommitted, latest.Type)
	require.NotNil(t, latest.Metadata)
	assert.Equal(t, int64(1), latest.Metadata.Seq)
	assert.Equal(t, run.CheckpointRunInitialized, latest.Metadata.Type)
	assert.Equal(t, run.DispositionContinue, latest.Metadata.WakeDisposition)

	var stored []byte
	require.NoError(t, env.pool.QueryRow(ctx, `SELECT metadata FROM `+env.table("docket_events")+
		` WHERE run_id = $1 AND seq = $2`, r.ID, latest.Seq).Scan(&stored))
	wire, err := value.Canonical(latest.Metadata.Map())
	require.NoError(t, err)
	assert.Equal(t, string(wire), string(stored), "the stored bytes are the canonical wire form")

	page, err := env.store.ListEvents(ctx, ports.System(), r.ID, ports.ListEventsParams{Limit: 100})
	require.NoError(t, err)
	for _, e := range page.Events {
		if e.Type != run.EventCheckpointCommitted {
			assert.Nil(t, e.Metadata, "event %d: only checkpoint events carry metadata", e.Seq)
		}
	}

	_, err = env.pool.Exec(ctx, `UPDATE `+env.table("docket_events")+
		` SET metadata = '{"checkpoint_seq":"1"}' WHERE run_id = $1 AND seq = $2`, r.ID, latest.Seq)
	require.NoError(t, err)
	_, err = env.store.FetchLatestEvent(ctx, ports.System(), r.ID)
	assert.ErrorIs(t, err, ports.ErrCorruptEvent)
	_, err = env.store.ListEvents(ctx, ports.System(), r.ID, ports.ListEventsParams{Limit: 100})
	assert.ErrorIs(t, err, ports.ErrCorruptEvent)
}
