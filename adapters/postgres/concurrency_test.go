package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConcurrentClaimersLeaseEveryRunExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, policy := range []claim.Policy{claim.Legacy, claim.WindowedInterleave} {
		t.Run(policy.Name(), func(t *testing.T) {
			t.Parallel()
			claimConcurrently(t, policy)
		})
	}
}

// claimConcurrently has 16 claimers with various limits drain a backlog
// of 200 due runs over four tenants under policy.
func claimConcurrently(t *testing.T, policy claim.Policy) {
	const runs, claimers = 200, 16
	env := newEnv(t, envOptions{maxConns: claimers, policy: policy})
	ctx := context.Background()
	past := time.Now().Add(-time.Minute)
	var inserted sync.WaitGroup
	for w := range 4 {
		inserted.Go(func() {
			for range runs / 4 {
				env.insertRun(t, ports.Tenant([]string{"a", "b", "c", "d"}[w]), past, past)
			}
		})
	}
	inserted.Wait()

	var (
		mu      sync.Mutex
		leases  []ports.Lease
		claimed atomic.Int64
		start   = make(chan struct{})
		done    sync.WaitGroup
	)
	deadline := time.Now().Add(30 * time.Second)
	for i := range claimers {
		done.Go(func() {
			<-start
			for claimed.Load() < runs && time.Now().Before(deadline) {
				batch, err := env.store.ClaimDue(ctx, claim.Request{
					Now: time.Now(), Limit: 1 + i%7, OrphanTTL: time.Hour, MaxClaimAttempts: 5,
					Preference: claim.PreferReady,
				})
				if !assert.NoError(t, err) {
					return
				}
				assert.Empty(t, batch.Poisoned)
				assert.LessOrEqual(t, len(batch.Leases), 1+i%7, "a batch never exceeds its limit")
				claimed.Add(int64(len(batch.Leases)))
				mu.Lock()
				leases = append(leases, batch.Leases...)
				mu.Unlock()
			}
		})
	}
	close(start)
	done.Wait()

	require.Len(t, leases, runs, "every due run is leased, none twice")
	runIDs := map[string]bool{}
	tokens := map[ports.ClaimToken]bool{}
	for _, l := range leases {
		assert.False(t, runIDs[l.RunID], "run %s leased twice", l.RunID)
		assert.False(t, tokens[l.Token], "a token was issued twice")
		runIDs[l.RunID], tokens[l.Token] = true, true
		assert.Equal(t, 1, l.Attempt)
		assert.Equal(t, claim.ClassReady, l.Class)
	}
	for _, l := range leases[:10] {
		require.NoError(t, env.store.RefreshClaim(ctx, l.RunID, l.Token, time.Now()), "each lease holds the stored token")
	}
	batch, err := env.store.ClaimDue(ctx, claim.Request{Now: time.Now(), Limit: 10, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	assert.Empty(t, batch.Leases, "nothing is left to lease")
}

func TestConcurrentCommitsAtOneFenceHaveOneWinner(t *testing.T) {
	t.Parallel()
	const committers, rounds = 8, 4
	env := newEnv(t, envOptions{maxConns: committers})
	ctx := context.Background()
	for round := range rounds {
		now := time.Now()
		r := env.insertRun(t, ports.Tenantless(), now, now.Add(-time.Second))
		batch, err := env.store.ClaimDue(ctx, claim.Request{Now: now, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
		require.NoError(t, err)
		require.Len(t, batch.Leases, 1)
		lease := batch.Leases[0]

		moments := make([]*run.Moment, committers)
		for i := range moments {
			moments[i] = nextMoment(r, string(rune('a'+i)), continueDisposition, now.Add(time.Duration(i+1)*time.Microsecond))
		}
		errs := make([]error, committers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range committers {
			wg.Go(func() {
				<-start
				_, errs[i] = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: moments[i], ClaimToken: lease.Token})
			})
		}
		close(start)
		wg.Wait()

		winner := -1
		for i, err := range errs {
			if err == nil {
				require.Equal(t, -1, winner, "round %d: two commits won (%d and %d)", round, winner, i)
				winner = i
				continue
			}
			assert.ErrorIs(t, err, ports.ErrStaleFence, "round %d: loser %d", round, i)
		}
		require.NotEqual(t, -1, winner, "round %d: no commit won", round)
		stored, err := env.store.FetchRun(ctx, ports.System(), r.ID)
		require.NoError(t, err)
		assert.Equal(t, moments[winner].Run.Metadata, stored.Metadata, "the stored run is the winner's")
		for _, e := range moments[winner].Events {
			got, err := env.store.FetchEvent(ctx, ports.System(), r.ID, e.Seq)
			require.NoError(t, err)
			assert.True(t, got.Equal(e), "event %d is the winner's", e.Seq)
		}
	}
}

func TestStealRacingCommitLeavesExactlyOneEffect(t *testing.T) {
	t.Parallel()
	const rounds = 8
	env := newEnv(t, envOptions{maxConns: 4})
	ctx := context.Background()
	outcomes := map[string]int{}
	for round := range rounds {
		now := time.Now()
		r := env.insertRun(t, ports.Tenantless(), now, now.Add(-time.Second))
		req := claim.Request{Now: now, Limit: 1, OrphanTTL: time.Second, MaxClaimAttempts: 5}
		batch, err := env.store.ClaimDue(ctx, req)
		require.NoError(t, err)
		require.Len(t, batch.Leases, 1)
		holder := batch.Leases[0]
		m := nextMoment(r, "holder", continueDisposition, now)

		// The thief's clock is an hour ahead: the claim is expired both
		// before and after the holder's retained commit restamps it. Three
		// orders are possible, each with exactly one effect on the fence.
		var (
			commitErr error
			stolen    *ports.ClaimBatch
			stealErr  error
			wg        sync.WaitGroup
			start     = make(chan struct{})
		)
		wg.Go(func() {
			<-start
			_, commitErr = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: holder.Token})
		})
		wg.Go(func() {
			<-start
			stolen, stealErr = env.store.ClaimDue(ctx, claim.Request{Now: now.Add(time.Hour), Limit: 1, OrphanTTL: time.Second, MaxClaimAttempts: 5})
		})
		close(start)
		wg.Wait()
		require.NoError(t, stealErr)
		require.LessOrEqual(t, len(stolen.Leases), 1)
		stored, err := env.store.FetchRun(ctx, ports.System(), r.ID)
		require.NoError(t, err)
		_, eventErr := env.store.FetchEvent(ctx, ports.System(), r.ID, m.Events[0].Seq)

		switch {
		case len(stolen.Leases) == 0:
			// The steal ran while the commit held the row: SKIP LOCKED
			// passed over it, and only the commit took effect.
			outcomes["commit, steal skipped"]++
			require.NoError(t, commitErr, "round %d: a skipped steal leaves the commit to win", round)
			assert.Equal(t, int64(2), stored.CheckpointSeq)
			assert.NoError(t, eventErr, "the commit's events are stored")
			assert.NoError(t, env.store.RefreshClaim(ctx, r.ID, holder.Token, time.Now()), "the holder keeps the claim")
			finish(t, env, r.ID)
			continue
		case commitErr == nil:
			// Commit first: the steal then took over the committed run.
			outcomes["commit, then steal"]++
			thief := stolen.Leases[0]
			assert.Equal(t, int64(2), thief.CheckpointSeq, "round %d", round)
			assert.Equal(t, 1, thief.Attempt, "the commit reset the attempts before the steal")
			assert.Equal(t, int64(2), stored.CheckpointSeq)
			assert.NoError(t, eventErr, "the commit's events are stored")
		default:
			// Steal first: the holder's fence was lost and nothing of its
			// commit was written.
			outcomes["steal, commit stale"]++
			thief := stolen.Leases[0]
			assert.ErrorIs(t, commitErr, ports.ErrStaleFence, "round %d", round)
			assert.Equal(t, int64(1), thief.CheckpointSeq)
			assert.Equal(t, 2, thief.Attempt)
			assert.Equal(t, int64(1), stored.CheckpointSeq)
			assert.ErrorIs(t, eventErr, ports.ErrNotFound, "the lost commit's events are absent")
		}
		thief := stolen.Leases[0]
		assert.Equal(t, claim.ClassExpired, thief.Class)
		assert.NoError(t, env.store.RefreshClaim(ctx, r.ID, thief.Token, time.Now()), "the thief holds the claim")
		err = env.store.RefreshClaim(ctx, r.ID, holder.Token, time.Now())
		assert.True(t, errors.Is(err, ports.ErrClaimLost), "the holder lost the claim: %v", err)
		finish(t, env, r.ID)
	}
	t.Logf("outcomes: %v", outcomes)
}

// finish cancels a run so that its claim can never be a later round's
// steal candidate.
func finish(t *testing.T, env *testEnv, runID string) {
	t.Helper()
	_, err := env.store.MutateRun(context.Background(), ports.System(), runID, func(r *run.Run) (*run.Moment, error) {
		return superstep.Cancel(r, superstep.Env{Now: time.Now()})
	})
	require.NoError(t, err)
}
