package ports

import (
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// ScheduleKind is what a committed transition does to the run's claim and
// wake (its claim disposition).
type ScheduleKind string

// Schedule kinds.
const (
	// ScheduleRetainClaim keeps the claim (claimed_at := store clock, no
	// wake). Claimed commits of continue moments only.
	ScheduleRetainClaim ScheduleKind = "retain_claim"
	// ScheduleImmediate releases the claim with a wake at the store clock.
	ScheduleImmediate ScheduleKind = "immediate"
	// ScheduleAt releases the claim with a wake at Schedule.At.
	ScheduleAt ScheduleKind = "at"
	// ScheduleExternal releases the claim with no wake (status waiting).
	ScheduleExternal ScheduleKind = "external"
	// ScheduleTerminal releases the claim with no wake (terminal status).
	ScheduleTerminal ScheduleKind = "terminal"
)

// Schedule is the claim disposition of one commit.
type Schedule struct {
	Kind ScheduleKind
	At   time.Time // ScheduleAt only, UTC µs
}

// ScheduleOf derives the schedule of a moment from its disposition and
// checks it fits the proposed status: continue retains the claim on a
// claimed commit and is an immediate release on an unclaimed one;
// immediate and at need status running, external needs waiting, terminal a
// terminal status. A mismatch is an *InvalidCommitError.
func ScheduleOf(m *run.Moment, claimed bool) (Schedule, error) {
	if m == nil || m.Run == nil {
		return Schedule{}, &InvalidCommitError{Reason: "moment has no run"}
	}
	status := m.Run.Status
	d := m.Disposition
	fail := func(reason string) (Schedule, error) {
		return Schedule{}, &InvalidCommitError{RunID: m.Run.ID, Reason: reason}
	}
	switch d.Kind {
	case run.DispositionContinue, run.DispositionImmediate:
		if status != run.StatusRunning {
			return fail(fmt.Sprintf("disposition %s needs status running, not %s", d.Kind, status))
		}
		if d.Kind == run.DispositionContinue && claimed {
			return Schedule{Kind: ScheduleRetainClaim}, nil
		}
		return Schedule{Kind: ScheduleImmediate}, nil
	case run.DispositionAt:
		if status != run.StatusRunning {
			return fail(fmt.Sprintf("disposition at needs status running, not %s", status))
		}
		if d.At.IsZero() {
			return fail("disposition at has no time")
		}
		return Schedule{Kind: ScheduleAt, At: Micros(d.At)}, nil
	case run.DispositionExternal:
		if status != run.StatusWaiting {
			return fail(fmt.Sprintf("disposition external needs status waiting, not %s", status))
		}
		return Schedule{Kind: ScheduleExternal}, nil
	case run.DispositionTerminal:
		if !status.Terminal() {
			return fail(fmt.Sprintf("disposition terminal needs a terminal status, not %s", status))
		}
		return Schedule{Kind: ScheduleTerminal}, nil
	default:
		return fail(fmt.Sprintf("unknown disposition %q", d.Kind))
	}
}

// WakeAt is the wake the schedule records, given the store clock: the
// clock for immediate, At for at, none otherwise.
func (s Schedule) WakeAt(storeNow time.Time) time.Time {
	switch s.Kind {
	case ScheduleImmediate:
		return Micros(storeNow)
	case ScheduleAt:
		return s.At
	default:
		return time.Time{}
	}
}

// Announces reports whether committing s announces a wake: immediate
// always, at when At is at or before the store clock, otherwise never.
func (s Schedule) Announces(storeNow time.Time) bool {
	switch s.Kind {
	case ScheduleImmediate:
		return true
	case ScheduleAt:
		return !s.At.After(Micros(storeNow))
	default:
		return false
	}
}
