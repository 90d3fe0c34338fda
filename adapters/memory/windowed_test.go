package memory_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConformanceWindowedInterleave holds the store to the shared suite
// under the tenant-fair policy, FAIR-* included, with a seeded scope
// sample so a failure replays.
func TestConformanceWindowedInterleave(t *testing.T) {
	conformance.Run(t, conformance.Features{WakeNotifications: true, TenantFairPolicy: true}, func(conformance.T) conformance.Adapter {
		clock := conformance.NewManualClock(time.Time{})
		policy := claim.NewWindowedInterleave(rand.NewPCG(1, 2))
		return conformance.Adapter{Backend: memory.New(memory.Options{Clock: clock, Policy: policy}), Clock: clock}
	})
}

func newWindowedFixture(t *testing.T, seed uint64) *fixture {
	t.Helper()
	clock := conformance.NewManualClock(t0)
	policy := claim.NewWindowedInterleave(rand.NewPCG(seed, seed))
	return &fixture{t: t, ctx: t.Context(), clock: clock, store: memory.New(memory.Options{Clock: clock, Policy: policy})}
}

// insertDue inserts a run of owner due at wake.
func (f *fixture) insertDue(owner ports.OwnerScope, runID string, wake time.Time) *run.Run {
	f.t.Helper()
	hash := f.saveGraph(owner, testGraph("g", ""))
	stored, err := f.store.InsertRun(f.ctx, owner, ports.InsertRunParams{Moment: initMoment(runID, "g", hash, t0.Add(-time.Hour)), WakeAt: wake})
	require.NoError(f.t, err)
	return stored
}

func (f *fixture) claimIDs(r claim.Request) []string {
	f.t.Helper()
	batch, err := f.store.ClaimDue(f.ctx, r)
	require.NoError(f.t, err)
	ids := []string{}
	for _, l := range batch.Leases {
		ids = append(ids, l.RunID)
	}
	return ids
}

func TestWindowedInterleaveAdmitsBreadthFirstAcrossScopes(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		f := newWindowedFixture(t, seed)
		f.insertDue(ports.Tenant("a"), "a-1", t0.Add(-40*time.Second))
		f.insertDue(ports.Tenant("a"), "a-2", t0.Add(-39*time.Second))
		f.insertDue(ports.Tenant("b"), "b-1", t0.Add(-2*time.Second))
		f.insertDue(ports.Tenant("b"), "b-2", t0.Add(-time.Second))
		assert.ElementsMatch(t, []string{"a-1", "b-1"}, f.claimIDs(request(t0, 2)), "seed %d", seed)
		assert.ElementsMatch(t, []string{"a-2", "b-2"}, f.claimIDs(request(t0, 2)), "seed %d", seed)
	}
}

func TestWindowedInterleaveGivesEveryBusyScopeItsShare(t *testing.T) {
	t.Parallel()
	f := newWindowedFixture(t, 11)
	// One tenant floods the queue with older work; three others each
	// have a little. Under FIFO the flood would take every slot.
	for i := range 30 {
		f.insertDue(ports.Tenant("flood"), fmt.Sprintf("flood-%d", i), t0.Add(-time.Hour))
	}
	for _, tenant := range []string{"x", "y", "z"} {
		for i := range 3 {
			f.insertDue(ports.Tenant(tenant), fmt.Sprintf("%s-%d", tenant, i), t0)
		}
	}
	// Batches of four: every batch has room for all four busy scopes'
	// heads, so the small tenants are drained within three batches.
	served := map[string]int{}
	for range 3 {
		batch, err := f.store.ClaimDue(f.ctx, request(t0, 4))
		require.NoError(t, err)
		require.Len(t, batch.Leases, 4)
		for _, l := range batch.Leases {
			served[l.Owner.TenantID()]++
		}
	}
	assert.Equal(t, map[string]int{"flood": 3, "x": 3, "y": 3, "z": 3}, served)
}

// TestWindowedAdmissionMarkerFollowsTheOperationTable checks, through
// admission order alone, which operations keep a run in its scope's
// admitted cohort (spec §4 and §6.6): after the operation, the run is due
// again next to an older queued run of the same scope; a demand-1 claim
// takes the run only if it is still admitted.
func TestWindowedAdmissionMarkerFollowsTheOperationTable(t *testing.T) {
	t.Parallel()
	owner := ports.Tenant("cohort")
	admittedAt := t0.Add(-30 * time.Second)
	due := t0.Add(-20 * time.Second)
	tests := []struct {
		name string
		// apply runs the operation on the leased run; it leaves the run
		// ready (unclaimed, due by t0).
		apply func(f *fixture, r *run.Run, lease ports.Lease)
		kept  bool
	}{
		{"a released claim stays admitted", func(f *fixture, _ *run.Run, l ports.Lease) {
			require.NoError(f.t, f.store.ReleaseClaim(f.ctx, l.RunID, l.Token, due))
		}, true},
		{"a retained commit then a yield stays admitted", func(f *fixture, r *run.Run, l ports.Lease) {
			retained := f.commit(r, l, run.Disposition{Kind: run.DispositionContinue})
			f.commit(retained, l, run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget})
		}, true},
		{"a stolen claim stays admitted", func(f *fixture, _ *run.Run, _ ports.Lease) {
			r := request(admittedAt.Add(2*time.Second), 1)
			f.clock.Set(r.Now) // a steal needs the claim expired by the store clock too
			batch, err := f.store.ClaimDue(f.ctx, r)
			require.NoError(f.t, err)
			require.Len(f.t, batch.Leases, 1)
			require.Equal(f.t, claim.ClassExpired, batch.Leases[0].Class)
			require.NoError(f.t, f.store.ReleaseClaim(f.ctx, batch.Leases[0].RunID, batch.Leases[0].Token, due))
		}, true},
		{"a park at a time leaves the cohort", func(f *fixture, r *run.Run, l ports.Lease) {
			f.commit(r, l, run.Disposition{Kind: run.DispositionAt, At: due, Reason: run.ReasonRetryBackoff})
		}, false},
		{"a signal commit leaves the cohort, even with an immediate wake", func(f *fixture, r *run.Run, _ ports.Lease) {
			_, err := f.store.MutateRun(f.ctx, owner, r.ID, func(current *run.Run) (*run.Moment, error) {
				return next(current, run.StatusRunning, run.CheckpointInterruptResolved,
					run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonInterruptResolved}, t0.Add(-25*time.Second)), nil
			})
			require.NoError(f.t, err)
		}, false},
		{"an abandoned claim leaves the cohort", func(f *fixture, r *run.Run, l ports.Lease) {
			res, err := f.store.AbandonClaim(f.ctx, r.ID, l.Token, claim.AbandonParams{
				ExpectedSeq: r.CheckpointSeq, Now: admittedAt, RetryAt: due, MaxClaimAbandons: 5,
			})
			require.NoError(f.t, err)
			require.Equal(f.t, ports.AbandonRescheduled, res)
		}, false},
		{"a poisoned and recovered run leaves the cohort", func(f *fixture, r *run.Run, l ports.Lease) {
			require.NoError(f.t, f.store.ReleaseClaim(f.ctx, l.RunID, l.Token, admittedAt))
			poison := request(admittedAt, 1)
			poison.MaxClaimAttempts = 1
			batch, err := f.store.ClaimDue(f.ctx, poison)
			require.NoError(f.t, err)
			require.Len(f.t, batch.Poisoned, 1)
			_, err = f.store.RetryPoisonedRun(f.ctx, owner, r.ID, due)
			require.NoError(f.t, err)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newWindowedFixture(t, 5)
			f.clock.Set(admittedAt)
			r := f.insertDue(owner, "subject", admittedAt)
			lease := f.claimOne(admittedAt)
			require.Equal(t, r.ID, lease.RunID)
			tt.apply(f, r, lease)
			f.insertDue(owner, "older-queued", t0.Add(-time.Minute))
			f.clock.Set(t0)
			want := "older-queued"
			if tt.kept {
				want = "subject"
			}
			assert.Equal(t, []string{want}, f.claimIDs(claim.Request{
				Now: t0, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5, Preference: claim.PreferReady,
			}))
		})
	}
}

// commit commits r's next moment under lease with disposition d.
func (f *fixture) commit(r *run.Run, l ports.Lease, d run.Disposition) *run.Run {
	f.t.Helper()
	ctype := run.CheckpointStepCommitted
	if d.Kind == run.DispositionAt {
		ctype = run.CheckpointRetryScheduled
	}
	stored, err := f.store.Commit(f.ctx, l.Owner, ports.CommitParams{
		Moment: next(r, run.StatusRunning, ctype, d, f.clock.Now()), ClaimToken: l.Token,
	})
	require.NoError(f.t, err)
	return stored
}

func TestWindowedCapabilitiesReportTenantFairness(t *testing.T) {
	t.Parallel()
	assert.True(t, memory.New(memory.Options{Policy: claim.WindowedInterleave}).Capabilities().TenantFair)
	assert.False(t, memory.New(memory.Options{}).Capabilities().TenantFair)
}
