package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"pgregory.net/rapid"
)

// TestRandomOperationsKeepTheQueueShape drives random claim-side and commit
// operations and checks after each step the queue-shape rules PostgreSQL
// enforces with CHECK constraints: a healthy running run has exactly one
// of wake and claim; waiting and terminal runs have neither, nor poison; a
// poisoned run has no wake and no claim.
func TestRandomOperationsKeepTheQueueShape(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(rt *rapid.T) {
		ctx := context.Background()
		clock := conformance.NewManualClock(t0)
		store := memory.New(memory.Options{Clock: clock})
		f := &fixture{t: t, ctx: ctx, clock: clock, store: store}
		hash, err := graph.Hash(testGraph("g", ""))
		if err != nil {
			rt.Fatalf("hash: %v", err)
		}
		if _, err := store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: testGraph("g", ""), Hash: hash}); err != nil {
			rt.Fatalf("save graph: %v", err)
		}
		const runs = 3
		for i := range runs {
			if _, err := store.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{
				Moment: initMoment(fmt.Sprint("run-", i), "g", hash, t0), WakeAt: t0,
			}); err != nil {
				rt.Fatalf("insert: %v", err)
			}
		}
		leases := map[string]ports.Lease{}
		now := t0
		steps := rapid.IntRange(1, 40).Draw(rt, "steps")
		for range steps {
			id := fmt.Sprint("run-", rapid.IntRange(0, runs-1).Draw(rt, "run"))
			lease, held := leases[id]
			switch rapid.IntRange(0, 7).Draw(rt, "op") {
			case 0:
				now = now.Add(time.Duration(rapid.IntRange(0, 3000).Draw(rt, "ms")) * time.Millisecond)
				clock.Set(now)
			case 1:
				limit := rapid.IntRange(1, 3).Draw(rt, "limit")
				batch, err := store.ClaimDue(ctx, claim.Request{Now: now, Limit: limit, OrphanTTL: time.Second, MaxClaimAttempts: 2,
					Preference: rapid.SampledFrom([]claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired}).Draw(rt, "pref")})
				if err != nil {
					rt.Fatalf("claim: %v", err)
				}
				if n := len(batch.Leases) + len(batch.Poisoned); n > limit {
					rt.Fatalf("%d outcomes for demand %d", n, limit)
				}
				for _, l := range batch.Leases {
					leases[l.RunID] = l
				}
			case 2:
				if held {
					_ = store.RefreshClaim(ctx, id, lease.Token, now)
				}
			case 3:
				if held {
					if err := store.ReleaseClaim(ctx, id, lease.Token, now); err != nil {
						rt.Fatalf("release: %v", err)
					}
				}
			case 4:
				if held {
					if _, err := store.AbandonClaim(ctx, id, lease.Token, claim.AbandonParams{
						ExpectedSeq: lease.CheckpointSeq, Now: now, RetryAt: now.Add(time.Second), MaxClaimAbandons: 1,
						NonPoisoning: rapid.Bool().Draw(rt, "nonPoisoning"),
					}); err != nil {
						rt.Fatalf("abandon: %v", err)
					}
				}
			case 5:
				if held {
					current, err := store.FetchRun(ctx, ports.Tenantless(), id)
					if err != nil {
						rt.Fatalf("fetch: %v", err)
					}
					if current.Status != run.StatusRunning {
						continue
					}
					kinds := []run.DispositionKind{run.DispositionContinue, run.DispositionImmediate, run.DispositionAt, run.DispositionExternal, run.DispositionTerminal}
					m := dispositionMoment(current, rapid.SampledFrom(kinds).Draw(rt, "disposition"), now)
					_, _ = store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token})
				}
			case 6:
				_, _ = store.MutateRun(ctx, ports.Tenantless(), id, func(current *run.Run) (*run.Moment, error) {
					if current.Status.Terminal() {
						return nil, nil
					}
					return dispositionMoment(current, run.DispositionImmediate, now), nil
				})
			case 7:
				_, _ = store.RetryPoisonedRun(ctx, ports.Tenantless(), id, now)
			}
			for i := range runs {
				checkShape(rt, f, fmt.Sprint("run-", i))
			}
		}
	})
}

// dispositionMoment proposes the next moment of a running run parked as kind.
func dispositionMoment(current *run.Run, kind run.DispositionKind, now time.Time) *run.Moment {
	switch kind {
	case run.DispositionExternal:
		return next(current, run.StatusWaiting, run.CheckpointInterruptRequested, run.Disposition{Kind: kind, Reason: run.ReasonAwaitingInterrupts}, now)
	case run.DispositionTerminal:
		return next(current, run.StatusDone, run.CheckpointRunCompleted, run.Disposition{Kind: kind, Reason: run.ReasonRunCompleted}, now)
	case run.DispositionAt:
		return next(current, run.StatusRunning, run.CheckpointRetryScheduled, run.Disposition{Kind: kind, At: now.Add(time.Second), Reason: run.ReasonRetryBackoff}, now)
	default:
		return next(current, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: kind}, now)
	}
}

func checkShape(rt *rapid.T, f *fixture, id string) {
	info, err := f.store.InspectRun(f.ctx, ports.System(), id)
	if err != nil {
		rt.Fatalf("inspect %s: %v", id, err)
	}
	woken, claimed, poisoned := !info.WakeAt.IsZero(), info.Claimed(), info.Poisoned()
	switch {
	case poisoned != (info.PoisonReason != ""):
		rt.Fatalf("%s: poison facts are not paired", id)
	case info.Run.Status != run.StatusRunning && (woken || claimed || poisoned):
		rt.Fatalf("%s: %s run has wake=%v claim=%v poison=%v", id, info.Run.Status, woken, claimed, poisoned)
	case poisoned && (woken || claimed):
		rt.Fatalf("%s: poisoned run has wake=%v claim=%v", id, woken, claimed)
	case info.Run.Status == run.StatusRunning && !poisoned && woken == claimed:
		rt.Fatalf("%s: healthy running run has wake=%v claim=%v", id, woken, claimed)
	case info.ClaimAttempts < 0 || info.ClaimAbandons < 0:
		rt.Fatalf("%s: negative counters", id)
	}
}
