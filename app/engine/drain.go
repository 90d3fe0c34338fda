package engine

import (
	"context"
	"fmt"

	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// DrainSummary reports one DrainRuns call.
type DrainSummary struct {
	// Drained counts claimed runs driven to an outcome.
	Drained int
	// Poisoned lists runs admission poisoned instead of leasing.
	Poisoned []ports.PoisonOutcome
	// Outcomes are the vehicles' outcomes, in order.
	Outcomes []vehicle.Outcome
	// LimitReached: maxRuns admissions happened; more may be due.
	LimitReached bool
}

// DrainRuns is the manual testing mode's driver: it claims one due run at
// a time through the engine's admission phase, drives it synchronously to
// its next park (without the graph cache), and repeats until nothing is
// due or maxRuns admissions (poison-only ones included) have happened.
// maxRuns 0 means 100. A vehicle outcome other than a park stops the
// drain with a *DrainStoppedError carrying the summary so far.
// It requires ModeManual (else ErrTestingModeRequired).
func (e *Engine) DrainRuns(ctx context.Context, maxRuns int) (DrainSummary, error) {
	var sum DrainSummary
	switch {
	case e.cfg.Mode != ModeManual:
		return sum, ErrTestingModeRequired
	case maxRuns < 0:
		return sum, fmt.Errorf("%w: maxRuns must not be negative", ErrInvalidOptions)
	case maxRuns == 0:
		maxRuns = DefaultDrainMaxRuns
	}
	dc := e.cfg.Dispatcher
	for range maxRuns {
		batch, err := claim.Admit(&e.phase, 1, func(pref claim.Preference) (*ports.ClaimBatch, error) {
			// Bounded like the dispatcher's claims: the phase is held
			// meanwhile.
			ctx, cancel := e.storeCall(ctx)
			defer cancel()
			return e.backend.ClaimDue(ctx, claim.Request{
				Now:              e.now(),
				Limit:            1,
				OrphanTTL:        dc.OrphanTTL,
				MaxClaimAttempts: dc.MaxClaimAttempts,
				Preference:       pref,
			})
		})
		if err != nil {
			return sum, err
		}
		dispatch.ReportClaims(ctx, e.cfg.Telemetry, batch)
		sum.Poisoned = append(sum.Poisoned, batch.Poisoned...)
		if len(batch.Leases) == 0 {
			if len(batch.Poisoned) == 0 {
				return sum, nil
			}
			continue
		}
		out := e.manualDriver.Drive(ctx, batch.Leases[0])
		sum.Drained++
		sum.Outcomes = append(sum.Outcomes, out)
		if out.Kind != vehicle.Parked {
			return sum, &DrainStoppedError{Outcome: out, Summary: sum}
		}
	}
	sum.LimitReached = true
	return sum, nil
}
