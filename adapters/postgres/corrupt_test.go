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

// A graph row is its exact canonical bytes, the bytes its hash covers:
// bytes that decode to the same document but are not those bytes do not
// hash to the row's key, so the row is corrupt (the same bytes a re-save
// of the document reports as a content conflict).
func TestGraphRowWhoseBytesDoNotHashToItsKeyIsCorrupt(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	c := compiledFixture(t)
	ref := ports.GraphRef{GraphID: c.Effective.ID, Hash: c.Hash}
	_, err := env.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	require.NoError(t, err)
	_, err = env.pool.Exec(ctx, "UPDATE "+env.table("docket_graph_versions")+
		` SET graph = graph || '\x20'::bytea WHERE graph_id = $1 AND graph_hash = $2`, ref.GraphID, ref.Hash)
	require.NoError(t, err)

	_, err = env.store.FetchGraph(ctx, ports.Tenantless(), ref)
	var corrupt *ports.CorruptError
	require.ErrorAs(t, err, &corrupt)
	assert.ErrorIs(t, err, ports.ErrCorruptGraph)
	assert.Equal(t, ref.GraphID, corrupt.ID)
	assert.Equal(t, ref.Hash, corrupt.Hash)
	_, err = env.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	assert.ErrorIs(t, err, ports.ErrGraphContentConflict, "the store itself does not take these bytes for the document")
}

// A lease carries its run's document only when the document agrees with
// the row; otherwise the holder's own read reports the corruption.
func TestALeaseCarriesOnlyADocumentThatAgreesWithItsRow(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	now := time.Now()
	healthy := env.insertRun(t, ports.Tenantless(), now, now)
	b, err := env.store.ClaimDue(ctx, claimNow(now.Add(time.Second), nil))
	require.NoError(t, err)
	require.Len(t, b.Leases, 1)
	stored, err := env.store.FetchRun(ctx, ports.System(), healthy.ID)
	require.NoError(t, err)
	assert.Equal(t, stored, b.Leases[0].Run, "a healthy lease needs no second read")

	tampered := env.insertRun(t, ports.Tenantless(), now, now)
	_, err = env.pool.Exec(ctx, "UPDATE "+env.table("docket_runs")+
		" SET started_at = started_at - interval '1 hour' WHERE run_id = $1", tampered.ID)
	require.NoError(t, err)
	b, err = env.store.ClaimDue(ctx, claimNow(now.Add(time.Second), nil))
	require.NoError(t, err)
	require.Len(t, b.Leases, 1)
	assert.Equal(t, tampered.ID, b.Leases[0].RunID)
	assert.Nil(t, b.Leases[0].Run)
	_, err = env.store.FetchRun(ctx, ports.System(), tampered.ID)
	assert.ErrorIs(t, err, ports.ErrCorruptRun)
}
