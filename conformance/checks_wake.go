package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// wakeListener observes the adapter's wake announcements.
type wakeListener struct {
	h  *harness
	ch <-chan ports.Wake
}

func (h *harness) listen() *wakeListener {
	h.Helper()
	n := h.b.Notifier()
	if n == nil {
		h.Fatalf("Features.WakeNotifications is set but the backend's Notifier() is nil")
	}
	ctx, cancel := context.WithCancel(h.ctx)
	h.Cleanup(cancel)
	ch, err := n.Listen(ctx)
	h.must(err, "Notifier.Listen")
	return &wakeListener{h: h, ch: ch}
}

// expectWake requires an announcement within the wake timeout, then
// swallows any coalesced remainder so the next expectation starts clean.
func (l *wakeListener) expectWake(format string, args ...any) bool {
	l.h.Helper()
	return l.expectWakeThen(func() {}, format, args...)
}

// expectWakeThen is expectWake running atArrival as the announcement
// arrives, before the remainder is swallowed: what it reads is what the
// announcement exposed, not what a write finishing meanwhile left.
func (l *wakeListener) expectWakeThen(atArrival func(), format string, args ...any) bool {
	l.h.Helper()
	timer := time.NewTimer(l.h.features.WakeTimeout)
	defer timer.Stop()
	select {
	case _, ok := <-l.ch:
		if !ok {
			l.h.Errorf("%s: the listener closed", fmt.Sprintf(format, args...))
			return false
		}
	case <-timer.C:
		l.h.Errorf("%s: no wake announced within %s", fmt.Sprintf(format, args...), l.h.features.WakeTimeout)
		return false
	}
	atArrival()
	l.settle()
	return true
}

// expectQuiet requires silence for the quiet window.
func (l *wakeListener) expectQuiet(format string, args ...any) bool {
	l.h.Helper()
	timer := time.NewTimer(l.h.features.QuietWindow)
	defer timer.Stop()
	select {
	case _, ok := <-l.ch:
		if ok {
			l.h.Errorf("%s: announced a wake, want none", fmt.Sprintf(format, args...))
			l.settle()
			return false
		}
		l.h.Errorf("%s: the listener closed", fmt.Sprintf(format, args...))
		return false
	case <-timer.C:
		return true
	}
}

// settle drains announcements until the quiet window passes silently.
func (l *wakeListener) settle() {
	for {
		select {
		case _, ok := <-l.ch:
			if !ok {
				return
			}
		case <-time.After(l.h.features.QuietWindow):
			return
		}
	}
}

func checkWakeInsert(h *harness) {
	l := h.listen()
	l.expectQuiet("a new listener")
	h.insert(ports.Tenantless(), runOpts{wakeAt: t0})
	l.expectWake("inserting a run due exactly at the store clock")
	h.insert(ports.Tenant(h.id("tenant")), runOpts{wakeAt: at(-time.Minute)})
	l.expectWake("inserting a tenant's overdue run")
	h.insert(ports.Tenantless(), runOpts{wakeAt: t0.Add(time.Microsecond)})
	l.expectQuiet("inserting a run due one µs after the store clock")
}

func checkWakeImmediate(h *harness) {
	r, lease := h.insertClaimed()
	l := h.listen()
	l.settle()
	h.mustCommit(ports.Tenantless(), immediateMoment(h, r, "claimed"), lease.Token)
	l.expectWake("a claimed immediate commit")

	current := h.fetch(ports.System(), r.ID)
	h.must(errOf(h.mutate(ports.Tenantless(), r.ID, immediateMoment(h, current, "signal"))), "immediate signal")
	l.expectWake("an unclaimed immediate commit")

	current = h.fetch(ports.System(), r.ID)
	h.must(errOf(h.mutate(ports.Tenantless(), r.ID, continueMoment(h, current, "continue"))), "continue signal")
	l.expectWake("an unclaimed continue commit (an immediate release)")
}

func checkWakeAt(h *harness) {
	h.clock.Set(at(10 * time.Second))
	r := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Hour)})
	l := h.listen()
	l.expectQuiet("a future insert")
	cases := []struct {
		wake     time.Time
		announce bool
		what     string
	}{
		{at(5 * time.Second), true, "an at-wake before the store clock"},
		{at(10 * time.Second), true, "an at-wake exactly at the store clock"},
		{at(10*time.Second + time.Microsecond), false, "an at-wake one µs after the store clock"},
	}
	for _, c := range cases {
		lease := h.claimOneWith(readyOnly(at(time.Hour)), r.ID)
		h.mustCommit(ports.Tenantless(), atMoment(h, h.fetch(ports.System(), r.ID), "claimed", c.wake), lease.Token)
		if c.announce {
			l.expectWake("claimed commit with %s", c.what)
		} else {
			l.expectQuiet("claimed commit with %s", c.what)
		}
		current := h.fetch(ports.System(), r.ID)
		h.must(errOf(h.mutate(ports.Tenantless(), r.ID, atMoment(h, current, "signal", c.wake))), "at signal")
		if c.announce {
			l.expectWake("unclaimed commit with %s", c.what)
		} else {
			l.expectQuiet("unclaimed commit with %s", c.what)
		}
		// Park it far away again so the next case can claim it.
		current = h.fetch(ports.System(), r.ID)
		h.must(errOf(h.mutate(ports.Tenantless(), r.ID, atMoment(h, current, "park", at(time.Hour)))), "parking")
		l.expectQuiet("parking in the future")
	}
}

func checkWakeRecovery(h *harness) {
	r := h.insert(ports.Tenantless(), runOpts{wakeAt: at(time.Minute)})
	h.poison(r.ID, at(time.Minute))
	l := h.listen()
	l.expectQuiet("claim-time poisoning")
	_, err := h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), r.ID, at(time.Minute))
	h.must(err, "RetryPoisonedRun")
	l.expectWake("recovering a poisoned run")
	_, err = h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), r.ID, at(time.Minute))
	h.must(err, "RetryPoisonedRun of a healthy run")
	l.expectQuiet("retrying a healthy run")
}

func checkWakeSilent(h *harness) {
	l := h.listen()
	future := at(time.Minute)
	r := h.insert(ports.Tenantless(), runOpts{wakeAt: future})
	l.expectQuiet("a future insert")

	lease := h.claimOneWith(readyOnly(future), r.ID)
	l.expectQuiet("a claim")
	h.must(h.refresh(r.ID, lease.Token, future), "refresh")
	l.expectQuiet("a refresh")
	h.release(r.ID, lease.Token, future)
	l.expectQuiet("a release (its wake is immediate but not announced)")
	h.release(r.ID, lease.Token, future)
	l.expectQuiet("a stale release")
	lease = h.claimOneWith(readyOnly(future), r.ID)
	eq(h, h.abandon(r.ID, lease.Token, abandonParams(1, future)), ports.AbandonRescheduled, "abandon")
	l.expectQuiet("a rescheduling abandon")
	lease = h.claimOneWith(readyOnly(future.Add(30*time.Second)), r.ID)
	p := abandonParams(1, future.Add(30*time.Second))
	p.MaxClaimAbandons = 1
	eq(h, h.abandon(r.ID, lease.Token, p), ports.AbandonPoisoned, "poisoning abandon")
	l.expectQuiet("a poisoning abandon")

	r2 := h.insert(ports.Tenantless(), runOpts{wakeAt: future})
	h.poison(r2.ID, future)
	l.expectQuiet("claim-time poisoning")

	// Commits that keep or park the claim without a due wake.
	r3 := h.insert(ports.Tenantless(), runOpts{wakeAt: future})
	lease = h.claimOneWith(readyOnly(future), r3.ID)
	h.mustCommit(ports.Tenantless(), continueMoment(h, r3, "retain"), lease.Token)
	l.expectQuiet("a retained-claim commit")
	current := h.fetch(ports.System(), r3.ID)
	h.mustCommit(ports.Tenantless(), h.waitingMoment(current), lease.Token)
	l.expectQuiet("an external park")
	h.must(errOf(h.b.MutateRun(h.ctx, ports.Tenantless(), r3.ID, cancelMutation(h))), "cancel signal")
	l.expectQuiet("a terminal signal")

	r4 := h.insert(ports.Tenantless(), runOpts{wakeAt: future})
	lease = h.claimOneWith(readyOnly(future), r4.ID)
	h.mustCommit(ports.Tenantless(), h.cancelMoment(r4), lease.Token)
	l.expectQuiet("a claimed terminal commit")

	r5 := h.insert(ports.Tenantless(), runOpts{wakeAt: future})
	h.must(errOf(h.mutate(ports.Tenantless(), r5.ID, h.waitingMoment(r5))), "external signal")
	l.expectQuiet("an unclaimed external park")

	h.save(ports.Tenant(h.id("tenant")), h.graphs().alt)
	l.expectQuiet("a graph save")
	_, err := h.b.PruneEvents(h.ctx, ports.PruneParams{Before: at(time.Hour), BatchSize: 5})
	h.must(err, "PruneEvents")
	l.expectQuiet("event pruning")
	_, err = h.b.PruneRuns(h.ctx, ports.PruneParams{Before: at(time.Hour), BatchSize: 5})
	h.must(err, "PruneRuns")
	l.expectQuiet("run pruning")
}

func checkWakeFailed(h *harness) {
	l := h.listen()
	future := at(time.Minute)
	r := h.insert(ports.Tenantless(), runOpts{wakeAt: future})
	l.expectQuiet("a future insert")

	// Inserts that would announce.
	_, err := h.b.InsertRun(h.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: h.initMoment(r.ID, t0), WakeAt: t0})
	h.errIs(err, ports.ErrConflict, "duplicate due insert")
	l.expectQuiet("a duplicate due insert")
	_, err = h.b.InsertRun(h.ctx, ports.Tenant(h.id("nograph")), ports.InsertRunParams{Moment: h.initMoment(h.id("run"), t0), WakeAt: t0})
	h.errIs(err, ports.ErrNotFound, "due insert without a graph")
	l.expectQuiet("a due insert without a graph")
	bad := h.initMoment(h.id("run"), t0)
	bad.Events[0].RunID = "someone-else"
	_, err = h.b.InsertRun(h.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: bad, WakeAt: t0})
	h.errIs(err, ports.ErrInvalidCommit, "due insert with a foreign event")
	l.expectQuiet("a due insert with a foreign event")

	// Immediate commits that fail.
	lease := h.claimOneWith(readyOnly(future), r.ID)
	_, err = h.commit(ports.Tenantless(), immediateMoment(h, r, "foreign"), foreignToken())
	h.errIs(err, ports.ErrStaleFence, "immediate commit with a foreign token")
	l.expectQuiet("a stale immediate commit")
	conflict := immediateMoment(h, r, "conflict")
	changed := h.storedEvent(r.ID, 1)
	changed.Payload = map[string]any{"rewritten": true}
	conflict.Events = append([]run.Event{changed}, conflict.Events...)
	_, err = h.commit(ports.Tenantless(), conflict, lease.Token)
	h.errIs(err, ports.ErrEventConflict, "immediate commit with a conflicting event")
	l.expectQuiet("a rolled-back immediate commit (event conflict)")
	skip := cloneMoment(immediateMoment(h, r, "skip"))
	skip.Run.CheckpointSeq += 1
	_, err = h.commit(ports.Tenantless(), skip, lease.Token)
	h.errIs(err, ports.ErrInvalidCommit, "immediate commit two ahead")
	l.expectQuiet("an invalid immediate commit")
	_, err = h.commit(ports.Tenant(h.id("other")), immediateMoment(h, r, "scope"), lease.Token)
	h.errIs(err, ports.ErrNotFound, "immediate commit out of scope")
	l.expectQuiet("an out-of-scope immediate commit")

	// Immediate signals that fail.
	_, err = h.b.MutateRun(h.ctx, ports.Tenantless(), r.ID, func(*run.Run) (*run.Moment, error) { return nil, errMutationRefused })
	h.errIs(err, errMutationRefused, "failing mutation")
	l.expectQuiet("a failing mutation")
	_, err = h.mutate(ports.Tenantless(), r.ID, conflict)
	h.errIs(err, ports.ErrEventConflict, "immediate signal with a conflicting event")
	l.expectQuiet("a rolled-back immediate signal")
	stale := immediateMoment(h, r, "stale-signal")
	h.mustCommit(ports.Tenantless(), continueMoment(h, r, "advance"), lease.Token)
	l.expectQuiet("a retained commit")
	_, err = h.mutate(ports.Tenantless(), r.ID, stale)
	h.errIs(err, ports.ErrStaleFence, "stale immediate signal")
	l.expectQuiet("a stale immediate signal")

	// Recoveries that fail.
	_, err = h.b.RetryPoisonedRun(h.ctx, ports.Tenantless(), h.id("unknown"), future)
	h.errIs(err, ports.ErrNotFound, "recovery of an unknown run")
	l.expectQuiet("a failed recovery")
}

func checkWakeAfterCommit(h *harness) {
	l := h.listen()
	for i := range h.features.Rounds {
		id := h.id("visible")
		h.publish(ports.Tenantless())
		m := h.initMoment(id, t0)
		errs := make(chan error, 1)
		go func() {
			_, err := h.b.InsertRun(h.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: t0})
			errs <- err
		}()
		l.expectWakeThen(func() {
			_, err := h.b.FetchRun(h.ctx, ports.System(), id)
			h.expect(err == nil, "round %d: the announced run is not visible yet: %v", i, err)
		}, "round %d: due insert", i)
		h.must(<-errs, "round %d: InsertRun", i)

		lease := h.claimOne(t0, id)
		next := immediateMoment(h, m.Run, "visible")
		go func() {
			_, err := h.commit(ports.Tenantless(), next, lease.Token)
			errs <- err
		}()
		l.expectWakeThen(func() {
			info := h.inspect(id)
			eq(h, info.Run.CheckpointSeq, next.Run.CheckpointSeq, "round %d: seq visible at the announcement", i)
			h.eventsStored(next, "round %d: events visible at the announcement", i)
		}, "round %d: immediate commit", i)
		h.must(<-errs, "round %d: Commit", i)
		lease = h.claimOne(t0, id)
		// A release wakes no later than the store clock: park the run an
		// hour away by releasing it at the store clock's hour.
		h.clock.Set(at(time.Hour))
		h.release(id, lease.Token, at(time.Hour))
		h.clock.Set(t0)
		l.expectQuiet("round %d: a release", i)
	}
}

func checkWakeListeners(h *harness) {
	n := h.b.Notifier()
	if n == nil {
		h.Fatalf("Features.WakeNotifications is set but the backend's Notifier() is nil")
	}
	var listeners []*wakeListener
	var cancels []context.CancelFunc
	for range 2 {
		ctx, cancel := context.WithCancel(h.ctx)
		h.Cleanup(cancel)
		ch, err := n.Listen(ctx)
		h.must(err, "Notifier.Listen")
		listeners, cancels = append(listeners, &wakeListener{h: h, ch: ch}), append(cancels, cancel)
	}
	h.insert(ports.Tenantless(), runOpts{wakeAt: t0})
	listeners[0].expectWake("the first of two listeners")
	listeners[1].expectWake("the second of two listeners")
	for i, l := range listeners {
		cancels[i]()
		if !l.closesWithin(h.features.WakeTimeout) {
			h.Errorf("listener %d: its channel is still open %s after its context ended", i+1, h.features.WakeTimeout)
		}
	}
}

// closesWithin reports whether the channel closes within d, reading past
// any announcement still buffered.
func (l *wakeListener) closesWithin(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case _, ok := <-l.ch:
			if !ok {
				return true
			}
		case <-timer.C:
			return false
		}
	}
}
