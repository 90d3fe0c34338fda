package conformance

import (
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

func checkSignalCASOnce(h *harness) {
	r := h.insert(ports.Tenantless())
	m := immediateMoment(h, r, "signal")
	got, err := h.mutate(ports.Tenantless(), r.ID, m)
	h.must(err, "first MutateRun")
	h.sameRun(got, m.Run, "MutateRun returns the committed run")
	before := h.inspect(r.ID)
	_, err = h.mutate(ports.Tenantless(), r.ID, m)
	h.errIs(err, ports.ErrStaleFence, "the same mutation moment again")
	h.unchanged(before, "run after the stale mutation")
	eq(h, before.Run.CheckpointSeq, int64(2), "seq after one mutation")
	h.eventsStored(m, "events of the mutation")
}

func checkSignalRevokesClaim(h *harness) {
	r, lease := h.insertClaimed()
	h.clock.Set(at(3 * time.Second))
	h.must(errOf(h.mutate(ports.Tenantless(), r.ID, immediateMoment(h, r, "signal"))), "MutateRun on a claimed run")
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after the signal")
	h.eqTime(info.WakeAt, at(3*time.Second), "wake after an immediate signal (store clock)")
	eq(h, info.ClaimAttempts, 0, "attempts after the signal")

	h.errIs(h.refresh(r.ID, lease.Token, at(3*time.Second)), ports.ErrClaimLost, "refresh after the signal")
	_, err := h.commit(ports.Tenantless(), continueMoment(h, r, "late"), lease.Token)
	h.errIs(err, ports.ErrStaleFence, "the holder's commit at its old fence")
	_, err = h.commit(ports.Tenantless(), continueMoment(h, info.Run, "late-current-seq"), lease.Token)
	h.errIs(err, ports.ErrStaleFence, "the holder's commit at the new seq with the revoked token")
	h.unchanged(info, "run after the revoked holder's attempts")
}

func errOf(_ *run.Run, err error) error { return err }

func checkConcurrentSignals(h *harness) {
	for round := range h.features.Rounds {
		r := h.insert(ports.Tenantless())
		moments := make([]*run.Moment, h.features.Writers)
		for i := range moments {
			moments[i] = immediateMoment(h, r, fmt.Sprintf("round-%d-signal-%d", round, i))
		}
		h.oneWinner(round, "signal", "one seq", r.ID, ports.ErrStaleFence, moments, func(m *run.Moment) error {
			_, err := h.mutate(ports.Tenantless(), r.ID, m)
			return err
		})
	}
}

func cancelMutation(h *harness) ports.Mutation {
	return func(current *run.Run) (*run.Moment, error) {
		return superstep.Cancel(current, superstep.Env{Now: h.clock.Now()})
	}
}

func checkSignalClearsPoison(h *harness) {
	r := h.insert(ports.Tenantless())
	h.poison(r.ID, t0)
	h.expect(h.inspect(r.ID).Poisoned(), "fixture: the run is poisoned")
	got, err := h.b.MutateRun(h.ctx, ports.Tenantless(), r.ID, cancelMutation(h))
	h.must(err, "cancelling a poisoned run")
	eq(h, got.Status, run.StatusCancelled, "status returned by the cancel")
	info := h.inspect(r.ID)
	eq(h, info.Run.Status, run.StatusCancelled, "status after the cancel")
	h.eqTime(info.PoisonedAt, time.Time{}, "poisoned_at after the cancel")
	eq(h, info.PoisonReason, "", "poison reason after the cancel")
	eq(h, info.ClaimAttempts, 0, "attempts after the cancel")
	eq(h, info.ClaimAbandons, 0, "abandons after the cancel")
	h.eqTime(info.WakeAt, time.Time{}, "wake after the cancel")

	// A running (immediate) signal on a poisoned run makes it claimable.
	r2 := h.insert(ports.Tenantless())
	h.poison(r2.ID, t0)
	h.clock.Set(at(time.Second))
	h.must(errOf(h.mutate(ports.Tenantless(), r2.ID, immediateMoment(h, r2, "unpoison"))), "immediate signal on a poisoned run")
	info = h.inspect(r2.ID)
	h.expect(!info.Poisoned(), "the signal clears poison")
	h.eqTime(info.WakeAt, at(time.Second), "wake after the immediate signal")
	h.claimOne(at(time.Second), r2.ID)

	// A run poisoned by its abandons: the signal resets the abandon count
	// too, so the run's next hand-back starts a fresh count.
	r3 := h.insert(ports.Tenantless())
	p := abandonParams(r3.CheckpointSeq, at(time.Second))
	p.MaxClaimAbandons = 1
	lease := h.claimOneWith(readyOnly(p.Now), r3.ID)
	eq(h, h.abandon(r3.ID, lease.Token, p), ports.AbandonRescheduled, "first abandon")
	lease = h.claimOneWith(readyOnly(p.RetryAt), r3.ID)
	p.Now, p.RetryAt = p.RetryAt, p.RetryAt.Add(30*time.Second)
	eq(h, h.abandon(r3.ID, lease.Token, p), ports.AbandonPoisoned, "abandon at the maximum")
	h.clock.Set(p.Now)
	h.must(errOf(h.mutate(ports.Tenantless(), r3.ID, immediateMoment(h, r3, "unpoison-abandons"))), "immediate signal on a run poisoned by abandons")
	info = h.inspect(r3.ID)
	h.expect(!info.Poisoned(), "the signal clears abandon poisoning")
	eq(h, info.ClaimAbandons, 0, "abandons after the signal")
	eq(h, info.ClaimAttempts, 0, "attempts after the signal")
}

var errMutationRefused = errors.New("conformance: mutation refused")

func checkSignalValidation(h *harness) {
	r, lease := h.insertClaimed()
	before := h.inspect(r.ID)
	rejected := func(name string, scope ports.Scope, mutation ports.Mutation, target error) {
		h.Helper()
		_, err := h.b.MutateRun(h.ctx, scope, r.ID, mutation)
		h.errIs(err, target, "MutateRun with %s", name)
		h.unchanged(before, "run after MutateRun with %s", name)
	}
	constant := func(m *run.Moment) ports.Mutation {
		return func(*run.Run) (*run.Moment, error) { return m, nil }
	}
	rebound := cloneMoment(immediateMoment(h, r, "rebound"))
	rebound.Run.GraphHash = h.graphs().alt.Hash
	rejected("a rebound graph hash", ports.Tenantless(), constant(rebound), ports.ErrInvalidCommit)
	rejected("another tenant's scope", ports.Tenant(h.id("tenant")), constant(immediateMoment(h, r, "tenant")), ports.ErrNotFound)
	conflict := immediateMoment(h, r, "conflict")
	changed := h.storedEvent(r.ID, 1)
	changed.Payload = map[string]any{"rewritten": true}
	conflict.Events = append([]run.Event{changed}, conflict.Events...)
	rejected("a conflicting event at a stored seq", ports.Tenantless(), constant(conflict), ports.ErrEventConflict)
	rejected("an external park of a running run", ports.Tenantless(),
		constant(withDisposition(immediateMoment(h, r, "mismatch"), run.Disposition{Kind: run.DispositionExternal, Reason: run.ReasonAwaitingInterrupts})),
		ports.ErrInvalidCommit)
	rejected("a failing mutation", ports.Tenantless(), func(*run.Run) (*run.Moment, error) { return nil, errMutationRefused }, errMutationRefused)
	// A mutation of r may only propose r's next moment, even one another
	// run of the same graph, start and seq would fence.
	other := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Hour)})
	otherBefore := h.inspect(other.ID)
	rejected("a moment of another run", ports.Tenantless(), constant(immediateMoment(h, other, "other")), ports.ErrInvalidCommit)
	h.unchanged(otherBefore, "the other run after a mutation of %s proposed its moment", r.ID)

	got, err := h.b.MutateRun(h.ctx, ports.Tenantless(), r.ID, func(*run.Run) (*run.Moment, error) { return nil, nil })
	h.must(err, "MutateRun returning no moment")
	h.sameRun(got, r, "MutateRun returning no moment returns the current run")
	h.unchanged(before, "run after a no-change mutation")
	h.must(h.refresh(r.ID, lease.Token, t0), "a no-change mutation keeps the claim")

	// Continue is committed as an immediate release on the unclaimed path.
	h.clock.Set(at(4 * time.Second))
	h.must(errOf(h.mutate(ports.Tenantless(), r.ID, continueMoment(h, r, "continue"))), "MutateRun with a continue moment")
	info := h.inspect(r.ID)
	h.eqTime(info.ClaimedAt, time.Time{}, "claim after a continue signal")
	h.eqTime(info.WakeAt, at(4*time.Second), "wake after a continue signal (store clock)")
}

func checkSignalVersusClaim(h *harness) {
	r := h.insert(ports.Tenantless())
	type claimResult struct {
		batch *ports.ClaimBatch
		err   error
	}
	done := make(chan claimResult, 1)
	var blocked bool
	var during claimResult
	_, err := h.b.MutateRun(h.ctx, ports.Tenantless(), r.ID, func(*run.Run) (*run.Moment, error) {
		go func() {
			b, err := h.b.ClaimDue(h.ctx, readyOnly(t0))
			done <- claimResult{b, err}
		}()
		select {
		case during = <-done:
		case <-time.After(h.features.LockWait):
			blocked = true
		}
		return nil, nil
	})
	h.must(err, "MutateRun")
	if blocked {
		during = <-done
		h.Errorf("ClaimDue waited for a run held by MutateRun instead of skipping it (waited %s)", h.features.LockWait)
	}
	if h.expect(during.err == nil, "ClaimDue during the mutation: %v", during.err) && !blocked {
		h.expect(len(during.batch.Leases)+len(during.batch.Poisoned) == 0,
			"ClaimDue during the mutation must skip the held run, got %s", describeBatch(during.batch))
	}
	if !blocked {
		h.claimOneWith(readyOnly(t0), r.ID)
	}
}

func checkCancelFencesHolder(h *harness) {
	r, lease := h.insertClaimed()
	cancelled, err := h.mutate(ports.Tenantless(), r.ID, h.cancelMoment(r))
	h.must(err, "cancel")
	after := h.inspect(r.ID)
	h.expect(after.Run.Status.Terminal(), "status after cancel: %s", after.Run.Status)
	h.expect(after.WakeAt.IsZero() && after.ClaimedAt.IsZero(), "cancelled run has wake %v claim %v", after.WakeAt, after.ClaimedAt)
	h.errIs(h.refresh(r.ID, lease.Token, at(time.Second)), ports.ErrClaimLost, "holder refresh after cancel")
	res := h.abandon(r.ID, lease.Token, abandonParams(r.CheckpointSeq, at(time.Second)))
	eq(h, res, ports.AbandonStale, "holder abandon after cancel")
	h.release(r.ID, lease.Token, at(time.Second))
	_, err = h.commit(ports.Tenantless(), continueMoment(h, r, "late"), lease.Token)
	h.errIs(err, ports.ErrStaleFence, "holder commit after cancel")
	h.unchanged(after, "cancelled run after the holder's late operations")
	_ = cancelled
	claimNone(h, at(time.Hour), "after cancel")
}
