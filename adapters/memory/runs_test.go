package memory_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListRunsWalksEveryRowOnceNewestFirst(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
	f.saveGraph(ports.Tenant("acme"), testGraph("g", ""))
	// Ties on started_at are broken by run id, descending.
	for i, id := range []string{"b", "a", "c", "d"} {
		started := t0.Add(time.Duration(i/2) * time.Second)
		_, err := f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment(id, "g", hash, started), WakeAt: started})
		require.NoError(t, err)
	}
	_, err := f.store.InsertRun(f.ctx, ports.Tenant("acme"), ports.InsertRunParams{Moment: initMoment("tenant-run", "g", hash, t0), WakeAt: t0})
	require.NoError(t, err)

	var walked []string
	p := ports.ListRunsParams{Limit: 3}
	for {
		page, err := f.store.ListRuns(f.ctx, ports.Tenantless(), p)
		require.NoError(t, err)
		for _, s := range page.Runs {
			walked = append(walked, s.RunID)
		}
		if !page.HasMore {
			empty, err := f.store.ListRuns(f.ctx, ports.Tenantless(), ports.ListRunsParams{Limit: 3, Before: page.NextBefore})
			require.NoError(t, err)
			assert.Empty(t, empty.Runs)
			assert.Equal(t, page.NextBefore, empty.NextBefore, "an empty page keeps the cursor")
			break
		}
		p.Before = page.NextBefore
	}
	assert.Equal(t, []string{"d", "c", "b", "a"}, walked)

	all, err := f.store.ListRuns(f.ctx, ports.System(), ports.ListRunsParams{Limit: 10, Statuses: []run.Status{run.StatusRunning}})
	require.NoError(t, err)
	assert.Len(t, all.Runs, 5, "system sees every scope")

	_, err = f.store.ListRuns(f.ctx, ports.System(), ports.ListRunsParams{Limit: 0})
	assert.ErrorIs(t, err, ports.ErrInvalidArgument)
	_, err = f.store.ListRuns(f.ctx, ports.System(), ports.ListRunsParams{Limit: 1, Statuses: []run.Status{run.StatusCreated}})
	assert.ErrorIs(t, err, ports.ErrInvalidArgument)
}

func TestRunIDsAreUniqueAcrossScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.insertRun(ports.Tenant("a"), "run-1")
	hash := f.saveGraph(ports.Tenant("b"), testGraph("g", ""))
	_, err := f.store.InsertRun(f.ctx, ports.Tenant("b"), ports.InsertRunParams{Moment: initMoment("run-1", "g", hash, t0), WakeAt: t0})
	assert.ErrorIs(t, err, ports.ErrConflict)
	_, err = f.store.FetchRun(f.ctx, ports.Tenant("b"), "run-1")
	assert.ErrorIs(t, err, ports.ErrNotFound, "the other tenant still cannot see it")
}

func TestInsertNeedsThePublishedGraphInTheOwnerScope(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hash := f.saveGraph(ports.Tenant("a"), testGraph("g", ""))
	_, err := f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: initMoment("run-1", "g", hash, t0), WakeAt: t0})
	assert.ErrorIs(t, err, ports.ErrNotFound)
	_, err = f.store.InsertRun(f.ctx, ports.System(), ports.InsertRunParams{Moment: initMoment("run-1", "g", hash, t0), WakeAt: t0})
	assert.ErrorIs(t, err, ports.ErrInvalidScope)
	_, err = f.store.InsertRun(f.ctx, ports.Tenant("a"), ports.InsertRunParams{Moment: initMoment("run-1", "g", hash, t0)})
	assert.ErrorIs(t, err, ports.ErrInvalidCommit, "a first wake is required")
}

func TestClaimTokensNeverLeak(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.insertRun(ports.Tenantless(), "run-1")
	lease := f.claimOne(t0)
	raw := lease.Token.Reveal()
	require.NotEmpty(t, raw)

	var rendered []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		rendered = append(rendered, fmt.Sprintf(verb, lease), fmt.Sprintf(verb, lease.Token))
	}
	js, err := json.Marshal(lease)
	require.NoError(t, err)
	rendered = append(rendered, string(js))
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("lease", "token", lease.Token, "lease", lease)
	rendered = append(rendered, logged.String())
	info := f.inspect("run-1")
	rendered = append(rendered, fmt.Sprintf("%+v", info))

	// Errors from every token-bearing operation.
	stale := next(info.Run, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, t0)
	stale.Run.CheckpointSeq = 5 // ahead of stored + 1: invalid
	_, err = f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: stale, ClaimToken: lease.Token})
	require.Error(t, err)
	rendered = append(rendered, err.Error())
	require.NoError(t, f.store.ReleaseClaim(f.ctx, "run-1", lease.Token, t0))
	err = f.store.RefreshClaim(f.ctx, "run-1", lease.Token, t0)
	require.ErrorIs(t, err, ports.ErrClaimLost)
	rendered = append(rendered, err.Error())

	for _, s := range rendered {
		assert.NotContains(t, s, raw)
	}
}
