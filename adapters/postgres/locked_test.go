package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// holdRun keeps runID's row lock the way a signal being decided does.
func holdRun(t *testing.T, store ports.RunStore, runID string) (release func()) {
	t.Helper()
	held, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = store.MutateRun(context.Background(), ports.System(), runID, func(*run.Run) (*run.Moment, error) {
			close(held)
			<-done
			return nil, errors.New("abandoned by the test")
		})
	}()
	<-held
	return func() { close(done); <-finished }
}

// A row another writer holds is skipped and the next due run of its scope
// takes its place, under either policy.
func TestALockedHeadIsSkippedAndTheNextRunClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, policy := range []claim.Policy{claim.Legacy, claim.WindowedInterleave} {
		t.Run(policy.Name(), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, envOptions{policy: policy})
			head := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-40*time.Second))
			next := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-30*time.Second))
			release := holdRun(t, env.store, head.ID)
			defer release()
			batch, err := env.store.ClaimDue(ctx, readyAt(t0, 1))
			require.NoError(t, err)
			require.Equal(t, []string{next.ID}, leaseIDs(batch))
		})
	}
}

// An expired claim another writer holds is skipped by a steal, not waited
// on: the next expired claim is stolen in its place, under either policy.
func TestALockedExpiredClaimIsSkippedAndTheNextStolen(t *testing.T) {
	t.Parallel()
	for _, policy := range []claim.Policy{claim.Legacy, claim.WindowedInterleave} {
		t.Run(policy.Name(), func(t *testing.T) {
			t.Parallel()
			clock := conformance.NewManualClock(t0.Add(-time.Minute))
			env := newEnv(t, envOptions{policy: policy, clock: clock})
			first := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-2*time.Minute))
			second := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-2*time.Minute))
			steal := claim.Request{Now: t0.Add(-time.Minute), Limit: 2, OrphanTTL: time.Second, MaxClaimAttempts: 5}
			batch, err := env.store.ClaimDue(context.Background(), steal)
			require.NoError(t, err)
			require.ElementsMatch(t, []string{first.ID, second.ID}, leaseIDs(batch))
			release := holdRun(t, env.store, first.ID)
			defer release()
			clock.Set(t0)
			// A claim waiting on the held row would never return: the
			// deadline turns that wait into a failure.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			steal.Now, steal.Limit = t0, 1
			batch, err = env.store.ClaimDue(ctx, steal)
			require.NoError(t, err)
			require.Equal(t, []string{second.ID}, leaseIDs(batch))
			assert.Equal(t, claim.ClassExpired, batch.Leases[0].Class)
		})
	}
}

// Held rows never make a tenant-fair claim come short while other due
// runs are free: with N free due runs across tenants, a claim for N leases
// N, whichever scopes the claim sampled and whatever they hold.
func TestAWindowedClaimIsNotShortenedByHeldRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("a sampled scope whose page is all held", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, envOptions{policy: claim.WindowedInterleave, maxConns: 8})
		a, b := ports.Tenant(newRunID("a")), ports.Tenant(newRunID("b"))
		// Both due scopes are sampled at limit 2; a's page (2 × limit)
		// is its four oldest runs, all held.
		var held []*run.Run
		for i := range 4 {
			held = append(held, env.insertRun(t, a, t0.Add(-time.Hour), t0.Add(time.Duration(i-50)*time.Second)))
		}
		fifth := env.insertRun(t, a, t0.Add(-time.Hour), t0.Add(-40*time.Second))
		other := env.insertRun(t, b, t0.Add(-time.Hour), t0.Add(-30*time.Second))
		for _, r := range held {
			release := holdRun(t, env.store, r.ID)
			defer release()
		}
		batch, err := env.store.ClaimDue(ctx, readyAt(t0, 2))
		require.NoError(t, err)
		assert.ElementsMatch(t, []string{fifth.ID, other.ID}, leaseIDs(batch))
	})

	t.Run("sampled scopes whose only run is held", func(t *testing.T) {
		t.Parallel()
		env := newEnv(t, envOptions{policy: claim.WindowedInterleave, maxConns: 8})
		// Six scopes with one due run each, two of them held: a claim of
		// four samples four of the six scopes, most often a held one.
		var free []string
		for i := range 6 {
			r := env.insertRun(t, ports.Tenant(newRunID("t")), t0.Add(-time.Hour), t0.Add(time.Duration(i-50)*time.Second))
			if i < 2 {
				release := holdRun(t, env.store, r.ID)
				defer release()
				continue
			}
			free = append(free, r.ID)
		}
		for range 5 {
			batch, err := env.store.ClaimDue(ctx, readyAt(t0, 4))
			require.NoError(t, err)
			require.ElementsMatch(t, free, leaseIDs(batch))
			for _, l := range batch.Leases {
				require.NoError(t, env.store.ReleaseClaim(ctx, l.RunID, l.Token, t0.Add(-time.Minute)))
			}
		}
	})
}

// The runs a tenant-fair claim takes in place of held ones keep the
// order of their scope: a scope's admitted runs are leased before its
// queued ones, however old, as when nothing is held (docs/postgres.md,
// tenant-fair admission).
func TestAWindowedClaimFillsAdmittedRunsBeforeQueuedOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, limit := range []int{1, 2} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, envOptions{policy: claim.WindowedInterleave, maxConns: 8})
			scope := ports.Tenant(newRunID("t"))
			admit := func(r *run.Run) {
				_, err := env.pool.Exec(ctx, "UPDATE "+env.table("docket_runs")+
					" SET tenant_admitted_at = $2 WHERE run_id = $1", r.ID, t0.Add(-time.Hour))
				require.NoError(t, err)
			}
			// The scope's page (2 × limit, admitted first) is all held.
			for i := range 2 * limit {
				r := env.insertRun(t, scope, t0.Add(-time.Hour), t0.Add(time.Duration(i-50)*time.Second))
				admit(r)
				release := holdRun(t, env.store, r.ID)
				defer release()
			}
			admitted := env.insertRun(t, scope, t0.Add(-time.Hour), t0.Add(-10*time.Second))
			admit(admitted)
			var queued []string
			for i := range limit {
				queued = append(queued, env.insertRun(t, scope, t0.Add(-time.Hour), t0.Add(time.Duration(i-90)*time.Second)).ID)
			}
			batch, err := env.store.ClaimDue(ctx, readyAt(t0, limit))
			require.NoError(t, err)
			want := append([]string{admitted.ID}, queued[:limit-1]...)
			assert.ElementsMatch(t, want, leaseIDs(batch), "the free admitted run first, then the oldest queued ones")
		})
	}
}

// Past the first ranks of the sampled scopes' pages, a tenant-fair claim
// whose first ranks are all held still goes breadth first: each scope's
// next free run before any scope's second, not the oldest free runs.
func TestAWindowedClaimPastHeldHeadsStaysBreadthFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newEnv(t, envOptions{policy: claim.WindowedInterleave, maxConns: 8})
	a, b := ports.Tenant(newRunID("a")), ports.Tenant(newRunID("b"))
	due := func(scope ports.OwnerScope, seconds int) *run.Run {
		return env.insertRun(t, scope, t0.Add(-time.Hour), t0.Add(time.Duration(seconds)*time.Second))
	}
	// A claim of two samples both scopes and reads their first two ranks
	// first: all four held.
	for _, r := range []*run.Run{due(a, -50), due(a, -49), due(b, -10), due(b, -9)} {
		release := holdRun(t, env.store, r.ID)
		defer release()
	}
	a3, _, b3 := due(a, -48), due(a, -47), due(b, -8)
	batch, err := env.store.ClaimDue(ctx, readyAt(t0, 2))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{a3.ID, b3.ID}, leaseIDs(batch), "each scope's third run, not a's third and fourth")
}

// pauseClaimsAfterTheirSnapshot lets the test make env's claim statements
// wait, after taking their snapshot and before locking any row: from hold
// until resume, paused returning once a claim waits there (and failing the
// test if the claim ended instead: claimed closed). The statement's first
// step reads current_setting, for which env's sessions (ownFunctionsFirst)
// find this stand-in that first waits for an advisory lock the test holds.
// It must be installed before env's first claim, which prepares the
// statement.
func pauseClaimsAfterTheirSnapshot(t *testing.T, env *testEnv) (hold func(), paused func(claimed <-chan struct{}), resume func()) {
	t.Helper()
	ctx := context.Background()
	conn := env.db.Connect(t)
	var key int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT abs(hashtext($1))::bigint", env.schema).Scan(&key))
	fn := env.table("current_setting")
	_, err := conn.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION %s(setting text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_catalog.pg_advisory_xact_lock_shared(%d);
    RETURN pg_catalog.current_setting(setting);
END $$`, fn, key))
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP FUNCTION IF EXISTS "+fn+"(text)") })
	held := false
	hold = func() {
		_, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", key)
		require.NoError(t, err)
		held = true
	}
	resume = func() {
		if held {
			held = false
			_, err := conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", key)
			require.NoError(t, err)
		}
	}
	t.Cleanup(resume)
	paused = func(claimed <-chan struct{}) {
		for {
			select {
			case <-claimed:
				t.Fatal("the claim ended without waiting for the test")
			default:
			}
			var waiting bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
				AND NOT granted AND classid = 0 AND objid = $1::bigint AND objsubid = 1)`, key).Scan(&waiting))
			if waiting {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return hold, paused, resume
}

// A claim whose every chosen row was changed by another writer after the
// claim's snapshot (a commit, a release, a signal) leases nothing, leaves
// the rows as that writer left them, and still reports the candidates it
// found: its telemetry tells a lost race from an empty queue.
func TestAClaimThatLostEveryRowStillReportsItsCandidates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, policy := range []claim.Policy{claim.Legacy, claim.WindowedInterleave} {
		t.Run(policy.Name(), func(t *testing.T) {
			t.Parallel()
			clock := conformance.NewManualClock(t0)
			env := newEnv(t, envOptions{policy: policy, clock: clock, ownFunctionsFirst: true})
			hold, paused, resume := pauseClaimsAfterTheirSnapshot(t, env)
			due := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-time.Minute))
			held := env.insertRun(t, ports.Tenant("b"), t0.Add(-time.Hour), t0.Add(-time.Minute))
			lease, err := env.store.ClaimDue(ctx, claim.Request{Now: t0, Limit: 1, OrphanTTL: time.Hour,
				MaxClaimAttempts: 5, Preference: claim.PreferReady})
			require.NoError(t, err)
			require.Len(t, lease.Leases, 1)
			if lease.Leases[0].RunID == due.ID {
				due, held = held, due
			}
			hold()

			// Two hours on, one run is due and the other's claim expired.
			later := t0.Add(2 * time.Hour)
			clock.Set(later)
			type result struct {
				batch *ports.ClaimBatch
				err   error
			}
			done, claimed := make(chan result, 1), make(chan struct{})
			go func() {
				b, err := env.store.ClaimDue(ctx, claim.Request{Now: later, Limit: 2, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
				done <- result{b, err}
				close(claimed)
			}()
			paused(claimed)
			_, err = env.pool.Exec(ctx, "UPDATE "+env.table("docket_runs")+
				" SET claim_abandons = claim_abandons WHERE run_id = ANY($1)", []string{due.ID, held.ID})
			require.NoError(t, err)
			resume()
			res := <-done
			require.NoError(t, res.err)
			assert.Empty(t, res.batch.Leases)
			assert.Empty(t, res.batch.Poisoned)
			assert.Equal(t, 1, res.batch.ReadyCandidates, "ready candidates")
			assert.Equal(t, 1, res.batch.ExpiredCandidates, "expired candidates")

			again, err := env.store.ClaimDue(ctx, claim.Request{Now: later, Limit: 2, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
			require.NoError(t, err)
			assert.ElementsMatch(t, []string{due.ID, held.ID}, leaseIDs(again), "the next claim takes both")
		})
	}
}
