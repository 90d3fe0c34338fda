package memory_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSaveGraphIsIdempotentAndKeepsPublicationTime(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	g := testGraph("g", "v1")
	hash := f.saveGraph(ports.Tenantless(), g)
	f.clock.Set(t0.Add(time.Hour))
	again, err := f.store.SaveGraph(f.ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: g, Hash: hash})
	require.NoError(t, err)
	assert.Equal(t, t0, again.PublishedAt)

	fetched, err := f.store.FetchGraph(f.ctx, ports.Tenantless(), again.Ref)
	require.NoError(t, err)
	assert.Equal(t, g, fetched)

	_, err = f.store.FetchGraph(f.ctx, ports.Tenant("acme"), again.Ref)
	assert.ErrorIs(t, err, ports.ErrNotFound, "another owner does not see it")
}

func TestSaveGraphRejectsAWrongHashAndTheSystemScope(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	_, err := f.store.SaveGraph(f.ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: testGraph("g", ""), Hash: "00"})
	assert.ErrorIs(t, err, ports.ErrInvalidGraphHash)
	_, err = f.store.SaveGraph(f.ctx, ports.System(), ports.SaveGraphParams{Graph: testGraph("g", "")})
	assert.ErrorIs(t, err, ports.ErrInvalidScope)
	_, err = f.store.FetchLatestGraphRef(f.ctx, ports.Scope{}, "g")
	assert.ErrorIs(t, err, ports.ErrInvalidScope)
	_, err = f.store.SaveGraph(f.ctx, ports.Tenantless(), ports.SaveGraphParams{})
	assert.ErrorIs(t, err, ports.ErrInvalidGraph)
}

func TestGraphVersionsPageNewestFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var hashes []string
	for i := range 5 {
		f.clock.Set(t0.Add(time.Duration(i) * time.Second))
		hashes = append(hashes, f.saveGraph(ports.Tenant("acme"), testGraph("g", fmt.Sprint(i))))
	}
	latest, err := f.store.FetchLatestGraphRef(f.ctx, ports.Tenant("acme"), "g")
	require.NoError(t, err)
	assert.Equal(t, hashes[4], latest.Ref.Hash)

	var walked []string
	p := ports.ListGraphVersionsParams{Limit: 2}
	for {
		page, err := f.store.ListGraphVersions(f.ctx, ports.Tenant("acme"), "g", p)
		require.NoError(t, err)
		for _, v := range page.Versions {
			walked = append(walked, v.Ref.Hash)
		}
		if !page.HasMore {
			break
		}
		p.Before = page.NextBefore
	}
	assert.Equal(t, []string{hashes[4], hashes[3], hashes[2], hashes[1], hashes[0]}, walked)

	empty, err := f.store.ListGraphVersions(f.ctx, ports.Tenant("acme"), "unknown", ports.ListGraphVersionsParams{Limit: 2})
	require.NoError(t, err)
	assert.Empty(t, empty.Versions)
}

func TestPruneGraphVersionsKeepsTheNewestAndReferencedVersions(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	owner := ports.Tenantless()
	var hashes []string
	for i := range 4 {
		f.clock.Set(t0.Add(time.Duration(i) * time.Second))
		hashes = append(hashes, f.saveGraph(owner, testGraph("g", fmt.Sprint(i))))
	}
	// A run pins the oldest version.
	_, err := f.store.InsertRun(f.ctx, owner, ports.InsertRunParams{Moment: initMoment("run-1", "g", hashes[0], t0), WakeAt: t0})
	require.NoError(t, err)

	n, err := f.store.PruneGraphVersions(f.ctx, ports.PruneGraphsParams{Keep: 2, BatchSize: 10})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the unreferenced version beyond the newest two goes")
	_, err = f.store.FetchGraph(f.ctx, owner, ports.GraphRef{GraphID: "g", Hash: hashes[1]})
	assert.ErrorIs(t, err, ports.ErrNotFound)
	for _, h := range []string{hashes[0], hashes[2], hashes[3]} {
		_, err = f.store.FetchGraph(f.ctx, owner, ports.GraphRef{GraphID: "g", Hash: h})
		assert.NoError(t, err)
	}
}
