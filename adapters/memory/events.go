package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// ListEvents pages a visible run's retained events (see ports.EventStore).
func (s *Store) ListEvents(ctx context.Context, scope ports.Scope, runID string, p ports.ListEventsParams) (*ports.EventPage, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// readRow's one read lock is one snapshot for the header and the page.
	return readRow(ctx, s, scope, runID, func(row *runRow) (*ports.EventPage, error) {
		return listEvents(row, p), nil
	})
}

// listEvents builds one page of row's retained events. Callers hold mu.
func listEvents(row *runRow, p ports.ListEventsParams) *ports.EventPage {
	seqs := row.seqs
	page := &ports.EventPage{Events: []run.Event{}, NextAfterSeq: p.AfterSeq, LatestSeq: row.doc.EventSeq}
	if len(seqs) > 0 {
		oldest, latest := seqs[0], seqs[len(seqs)-1]
		page.OldestAvailableSeq, page.LatestAvailableSeq = &oldest, &latest
	}
	// The first seq above AfterSeq (AfterSeq+1 would wrap at MaxInt64).
	start, found := slices.BinarySearch(seqs, p.AfterSeq)
	if found {
		start++
	}
	for _, seq := range seqs[start:] {
		if len(page.Events) == p.Limit {
			break
		}
		page.Events = append(page.Events, cloneEvent(row.events[seq].event))
		page.NextAfterSeq = seq
	}
	page.HasMore = page.LatestAvailableSeq != nil && *page.LatestAvailableSeq > page.NextAfterSeq
	return page
}

// FetchEvent returns one retained event (see ports.EventStore).
func (s *Store) FetchEvent(ctx context.Context, scope ports.Scope, runID string, seq int64) (*run.Event, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if seq < 1 {
		return nil, invalidArg("seq", "must be positive")
	}
	return readRow(ctx, s, scope, runID, func(row *runRow) (*run.Event, error) {
		ev, ok := row.events[seq]
		if !ok {
			return nil, &notFoundError{what: "event", id: fmt.Sprintf("%s#%d", runID, seq)}
		}
		e := cloneEvent(ev.event)
		return &e, nil
	})
}

// FetchLatestEvent returns the highest retained event, or nil when none is
// retained (see ports.EventStore).
func (s *Store) FetchLatestEvent(ctx context.Context, scope ports.Scope, runID string) (*run.Event, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	return readRow(ctx, s, scope, runID, func(row *runRow) (*run.Event, error) {
		if len(row.seqs) == 0 {
			return nil, nil
		}
		e := cloneEvent(row.events[row.seqs[len(row.seqs)-1]].event)
		return &e, nil
	})
}

// PruneEvents deletes up to a batch of events inserted before the cutoff,
// oldest first (see ports.EventStore).
func (s *Store) PruneEvents(ctx context.Context, p ports.PruneParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	cutoff := ports.CeilMicros(p.Before)
	type victim struct {
		row *runRow
		ev  *eventRow
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var victims []victim
	for _, row := range s.runs {
		for _, ev := range row.events {
			if ev.insertedAt.Before(cutoff) {
				victims = append(victims, victim{row, ev})
			}
		}
	}
	slices.SortFunc(victims, func(a, b victim) int {
		return cmp.Or(a.ev.insertedAt.Compare(b.ev.insertedAt), cmp.Compare(a.ev.id, b.ev.id))
	})
	victims = victims[:min(len(victims), p.BatchSize)]
	pruned := map[*runRow]bool{}
	for _, v := range victims {
		delete(v.row.events, v.ev.event.Seq)
		pruned[v.row] = true
	}
	for row := range pruned {
		row.seqs = slices.DeleteFunc(row.seqs, func(seq int64) bool { return row.events[seq] == nil })
	}
	return len(victims), nil
}

// PruneRuns deletes up to a batch of terminal runs last updated before the
// cutoff, with their events (see ports.EventStore). Rows held by a
// concurrent writer are skipped.
func (s *Store) PruneRuns(ctx context.Context, p ports.PruneParams) (ports.PruneRunsResult, error) {
	if err := p.Validate(); err != nil {
		return ports.PruneRunsResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ports.PruneRunsResult{}, err
	}
	cutoff := ports.CeilMicros(p.Before)
	s.mu.Lock()
	defer s.mu.Unlock()
	var victims []*runRow
	for _, row := range s.runs {
		if row.doc.Status.Terminal() && !row.locked() && ports.Micros(row.doc.UpdatedAt).Before(cutoff) {
			victims = append(victims, row)
		}
	}
	slices.SortFunc(victims, func(a, b *runRow) int {
		return cmp.Or(a.doc.UpdatedAt.Compare(b.doc.UpdatedAt), cmp.Compare(a.id, b.id))
	})
	victims = victims[:min(len(victims), p.BatchSize)]
	var res ports.PruneRunsResult
	for _, row := range victims {
		res.Runs++
		res.CascadeEvents += len(row.events)
		delete(s.runs, row.doc.ID)
	}
	return res, nil
}
