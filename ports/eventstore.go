package ports

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// EventStore reads retained events and prunes retention. Events are
// appended only inside RunStore writes (atomically with their run) and are
// idempotent by {run_id, seq}. Ownership is enforced through the owning
// run: a run outside the scope has no visible events (ErrNotFound).
type EventStore interface {
	// ListEvents returns up to p.Limit events with seq > p.AfterSeq in seq
	// order, with the header and page read from one snapshot. Gaps are
	// legal (pruning, sparse history).
	ListEvents(ctx context.Context, scope Scope, runID string, p ListEventsParams) (*EventPage, error)

	// FetchEvent returns the event at seq (> 0); ErrNotFound when the run
	// is not visible or the event is absent or pruned.
	FetchEvent(ctx context.Context, scope Scope, runID string, seq int64) (*run.Event, error)

	// FetchLatestEvent returns the retained event with the highest seq, or
	// (nil, nil) when the visible run has none retained. ErrNotFound when
	// the run is not visible.
	FetchLatestEvent(ctx context.Context, scope Scope, runID string) (*run.Event, error)

	// PruneEvents deletes up to p.BatchSize events inserted strictly
	// before p.Before, oldest first, and reports how many it deleted.
	PruneEvents(ctx context.Context, p PruneParams) (int, error)

	// PruneRuns deletes up to p.BatchSize terminal runs whose UpdatedAt is
	// strictly before p.Before, oldest first, with their events.
	PruneRuns(ctx context.Context, p PruneParams) (PruneRunsResult, error)
}

// ListEventsParams pages ListEvents. AfterSeq >= 0; Limit in
// 1..MaxPageLimit.
type ListEventsParams struct {
	AfterSeq int64
	Limit    int
}

// Validate reports the first out-of-range field as an
// *InvalidArgumentError.
func (p ListEventsParams) Validate() error {
	switch {
	case p.AfterSeq < 0:
		return &InvalidArgumentError{Field: "AfterSeq", Reason: "must not be negative"}
	case p.Limit < 1 || p.Limit > MaxPageLimit:
		return invalidLimit()
	}
	return nil
}

// EventPage is one page of ListEvents.
type EventPage struct {
	Events []run.Event
	// NextAfterSeq is the last returned seq, or the AfterSeq given when
	// the page is empty.
	NextAfterSeq int64
	// HasMore: a retained event exists after NextAfterSeq.
	HasMore bool
	// OldestAvailableSeq and LatestAvailableSeq bound the retained events;
	// nil when none are retained.
	OldestAvailableSeq *int64
	LatestAvailableSeq *int64
	// LatestSeq is the run's committed event counter (run.EventSeq); it
	// survives pruning, so LatestSeq > 0 with LatestAvailableSeq nil means
	// the history was fully pruned.
	LatestSeq int64
}

// PruneParams bounds one prune batch.
type PruneParams struct {
	Before    time.Time // strict cutoff: rows exactly at it survive
	BatchSize int       // >= 1
}

// Validate reports a missing cutoff or a batch outside 1..math.MaxInt32
// (stores bind it as a 32-bit integer) as an *InvalidArgumentError.
func (p PruneParams) Validate() error {
	switch {
	case p.Before.IsZero():
		return &InvalidArgumentError{Field: "Before", Reason: "is required"}
	case p.BatchSize < 1:
		return &InvalidArgumentError{Field: "BatchSize", Reason: "must be at least 1"}
	case p.BatchSize > math.MaxInt32:
		return tooLarge("BatchSize")
	}
	return nil
}

// tooLarge is the error of a count beyond the 32 bits stores bind it as.
func tooLarge(field string) error {
	return &InvalidArgumentError{Field: field, Reason: fmt.Sprintf("must be at most %d", math.MaxInt32)}
}

// invalidLimit is the error of a page limit outside 1..MaxPageLimit.
func invalidLimit() error {
	return &InvalidArgumentError{Field: "Limit", Reason: fmt.Sprintf("must be in 1..%d", MaxPageLimit)}
}

// PruneRunsResult counts what PruneRuns deleted.
type PruneRunsResult struct {
	Runs          int
	CascadeEvents int
}

// PassPruner is a store that runs a whole retention pass itself, as one
// exclusive unit: while one pass runs, another pruner's pass over the same
// data is skipped (Locked), not run beside it, so no two passes delete or
// count the same rows. The PostgreSQL store implements it with one
// transaction under its schema's pruner lock.
type PassPruner interface {
	PruneWholePass(ctx context.Context, p PrunePassParams) (PrunePassResult, error)
}

// PrunePassParams is one whole pass: events inserted strictly before
// EventsBefore, terminal runs updated strictly before RunsBefore (with
// their events), and graph versions beyond the newest KeepGraphVersions of
// each graph that no run references; at most BatchSize rows of each kind.
type PrunePassParams struct {
	EventsBefore      time.Time
	RunsBefore        time.Time
	KeepGraphVersions int
	BatchSize         int
	// Now is the pruner's clock the cutoffs were taken from (zero: not
	// given). A store whose own clock is behind it moves both cutoffs back
	// by the difference, so a pruner whose clock runs ahead never deletes
	// a row before its retention has passed by the store clock.
	Now time.Time
}

// PrunePassResult counts one whole pass. Locked: another pass held the
// store's pruner lock, and this one deleted nothing.
type PrunePassResult struct {
	Locked        bool
	Events        int
	Runs          int
	CascadeEvents int
	Graphs        int
}
