package memory_test

import (
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunLifecycleKeepsOperationalStateLikePostgres(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	owner := ports.Tenant("acme")
	inserted := f.insertRun(owner, "run-1")

	info := f.inspect("run-1")
	assert.Equal(t, t0, info.WakeAt, "insert records the first wake")
	assert.False(t, info.Claimed())
	assert.Equal(t, run.CheckpointRunInitialized, info.LatestCheckpointType)
	assert.Equal(t, owner, info.Owner)

	// Claim: token, claimed_at = request now, no wake, attempts 1; the
	// document and its updated_at stay as committed.
	claimAt := t0.Add(time.Second)
	lease := f.claimOne(claimAt)
	assert.Equal(t, owner, lease.Owner)
	assert.Equal(t, int64(1), lease.CheckpointSeq)
	assert.Equal(t, 1, lease.Attempt)
	assert.Equal(t, claim.ClassReady, lease.Class)
	info = f.inspect("run-1")
	assert.Equal(t, claimAt, info.ClaimedAt)
	assert.True(t, info.WakeAt.IsZero())
	assert.Equal(t, 1, info.ClaimAttempts)
	assert.Equal(t, inserted, info.Run, "claiming never touches the document")

	// Retained commit: claimed_at takes the store clock, counters reset.
	f.clock.Set(t0.Add(2 * time.Second))
	m := next(inserted, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, t0.Add(2*time.Second))
	committed, err := f.store.Commit(f.ctx, owner, ports.CommitParams{Moment: m, ClaimToken: lease.Token})
	require.NoError(t, err)
	assert.Equal(t, int64(2), committed.CheckpointSeq)
	info = f.inspect("run-1")
	assert.Equal(t, t0.Add(2*time.Second), info.ClaimedAt)
	assert.Equal(t, 0, info.ClaimAttempts)
	assert.Equal(t, run.CheckpointStepCommitted, info.LatestCheckpointType)

	// Park until a future time: claim released, wake at T, nothing due yet.
	wake := t0.Add(time.Minute)
	m = next(committed, run.StatusRunning, run.CheckpointRetryScheduled, run.Disposition{Kind: run.DispositionAt, At: wake, Reason: run.ReasonRetryBackoff}, t0.Add(3*time.Second))
	committed, err = f.store.Commit(f.ctx, owner, ports.CommitParams{Moment: m, ClaimToken: lease.Token})
	require.NoError(t, err)
	info = f.inspect("run-1")
	assert.Equal(t, wake, info.WakeAt)
	assert.False(t, info.Claimed())
	batch, err := f.store.ClaimDue(f.ctx, request(wake.Add(-time.Microsecond), 1))
	require.NoError(t, err)
	assert.Empty(t, batch.Leases, "a future wake is not due")

	// The old token lost its authority with the release.
	err = f.store.RefreshClaim(f.ctx, "run-1", lease.Token, wake)
	assert.ErrorIs(t, err, ports.ErrClaimLost)

	// At the wake the run is claimable again and finishes.
	lease = f.claimOne(wake)
	m = next(committed, run.StatusDone, run.CheckpointRunCompleted, run.Disposition{Kind: run.DispositionTerminal, Reason: run.ReasonRunCompleted}, wake)
	done, err := f.store.Commit(f.ctx, owner, ports.CommitParams{Moment: m, ClaimToken: lease.Token})
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
	info = f.inspect("run-1")
	assert.True(t, info.WakeAt.IsZero())
	assert.False(t, info.Claimed())

	page, err := f.store.ListEvents(f.ctx, owner, "run-1", ports.ListEventsParams{Limit: 100})
	require.NoError(t, err)
	assert.Len(t, page.Events, 4, "one checkpoint event per moment")
	assert.Equal(t, done.EventSeq, page.LatestSeq)
}

func TestStoredStateCannotBeAliased(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
	m := initMoment("run-1", "g", hash, t0)
	inserted, err := f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: t0})
	require.NoError(t, err)

	// Mutate everything the caller holds: the proposal and every result.
	m.Run.Input["n"] = int64(99)
	m.Events[len(m.Events)-1].Metadata.Seq = 99
	inserted.Input["n"] = int64(98)
	fetched, err := f.store.FetchRun(f.ctx, ports.Tenantless(), "run-1")
	require.NoError(t, err)
	fetched.Input["n"] = int64(97)
	ev, err := f.store.FetchEvent(f.ctx, ports.Tenantless(), "run-1", 1)
	require.NoError(t, err)
	ev.Metadata.Map()["checkpoint_seq"] = int64(96)

	again, err := f.store.FetchRun(f.ctx, ports.Tenantless(), "run-1")
	require.NoError(t, err)
	assert.Equal(t, int64(1), again.Input["n"])
	ev, err = f.store.FetchEvent(f.ctx, ports.Tenantless(), "run-1", 1)
	require.NoError(t, err)
	assert.Equal(t, int64(1), ev.Metadata.Map()["checkpoint_seq"])
}

func TestCommitIsAllOrNothingOnEventConflict(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	lease := f.claimOne(t0)
	before := f.inspect("run-1")

	m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionImmediate}, t0)
	// Rewrite the proposal to carry a different event at stored seq 1.
	conflicting := m.Events[0]
	conflicting.Seq = 1
	conflicting.Payload = map[string]any{"other": true}
	m.Events = append([]run.Event{conflicting}, m.Events...)
	_, err := f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
	var conflict *ports.EventConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, int64(1), conflict.Seq)

	assert.Equal(t, before, f.inspect("run-1"), "nothing changed")
	_, err = f.store.FetchEvent(f.ctx, ports.Tenantless(), "run-1", 2)
	assert.ErrorIs(t, err, ports.ErrNotFound, "the new event was not written")
}

func TestClaimOperationsLeaveUpdatedAtAlone(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run-1")
	lease := f.claimOne(t0)
	f.clock.Set(t0.Add(time.Hour))
	require.NoError(t, f.store.RefreshClaim(f.ctx, "run-1", lease.Token, t0.Add(time.Hour)))
	require.NoError(t, f.store.ReleaseClaim(f.ctx, "run-1", lease.Token, t0.Add(time.Hour)))
	lease = f.claimOne(t0.Add(time.Hour))
	res, err := f.store.AbandonClaim(f.ctx, "run-1", lease.Token, claim.AbandonParams{
		ExpectedSeq: 1, Now: t0.Add(time.Hour), RetryAt: t0.Add(2 * time.Hour), MaxClaimAbandons: 1,
	})
	require.NoError(t, err)
	assert.Equal(t, ports.AbandonRescheduled, res)
	assert.Equal(t, r, f.inspect("run-1").Run)
}
