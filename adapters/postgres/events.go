package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
)

// ListEvents pages a visible run's retained events (see ports.EventStore).
//
// The header (committed event counter, retained bounds) and the page come
// from one statement, hence one snapshot. This read model stays on pgx
// rather than bun: the single-snapshot contract needs a header row and the
// page rows in one UNION ALL, which bun's builder expresses no more clearly
// than the SQL itself (see sqlListEvents).
func (s *Store) ListEvents(ctx context.Context, scope ports.Scope, runID string, p ports.ListEventsParams) (*ports.EventPage, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if !ports.TextID(runID) {
		return nil, runNotFound(runID)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	system, key := scopeArgs(scope)
	rows, err := s.pool.Query(ctx, s.stmt.listEvents, runID, system, key, p.AfterSeq, p.Limit)
	if err != nil {
		return nil, dbError("list events", err)
	}
	defer rows.Close()
	var page *ports.EventPage
	for rows.Next() {
		var (
			header         bool
			latestSeq      *int64
			oldest, latest *int64
			ev             eventRow
		)
		dest := append([]any{&header, &latestSeq, &oldest, &latest}, ev.dest()...)
		if err := rows.Scan(dest...); err != nil {
			return nil, dbError("list events", err)
		}
		if header {
			page = &ports.EventPage{Events: []run.Event{}, NextAfterSeq: p.AfterSeq,
				OldestAvailableSeq: oldest, LatestAvailableSeq: latest}
			if latestSeq != nil {
				page.LatestSeq = *latestSeq
			}
			continue
		}
		if page == nil {
			return nil, fmt.Errorf("docket postgres: list events: page rows before the header")
		}
		e, err := ev.decode(runID)
		if err != nil {
			return nil, err
		}
		page.Events = append(page.Events, e)
		page.NextAfterSeq = e.Seq
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("list events", err)
	}
	if page == nil {
		return nil, runNotFound(runID)
	}
	page.HasMore = page.LatestAvailableSeq != nil && *page.LatestAvailableSeq > page.NextAfterSeq
	return page, nil
}

// FetchEvent returns one retained event (see ports.EventStore).
func (s *Store) FetchEvent(ctx context.Context, scope ports.Scope, runID string, seq int64) (*run.Event, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if !ports.TextID(runID) {
		return nil, runNotFound(runID)
	}
	if seq < 1 {
		return nil, invalidArg("seq", "must be positive")
	}
	e, err := s.readEvent(ctx, s.stmt.fetchEvent, scope, runID, seq)
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, &notFoundError{what: "event", id: fmt.Sprintf("%s#%d", runID, seq)}
	}
	return e, nil
}

// FetchLatestEvent returns the highest retained event, or nil when the
// visible run retains none (see ports.EventStore).
func (s *Store) FetchLatestEvent(ctx context.Context, scope ports.Scope, runID string) (*run.Event, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if !ports.TextID(runID) {
		return nil, runNotFound(runID)
	}
	return s.readEvent(ctx, s.stmt.fetchLatestEvent, scope, runID)
}

// readEvent runs a run-LEFT-JOIN-event read: no row is an invisible run
// (not found), a NULL event is (nil, nil).
func (s *Store) readEvent(ctx context.Context, sql string, scope ports.Scope, runID string, extra ...any) (*run.Event, error) {
	system, key := scopeArgs(scope)
	var row eventRow
	err := s.pool.QueryRow(ctx, sql, append([]any{runID, system, key}, extra...)...).Scan(row.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, runNotFound(runID)
	}
	if err != nil {
		return nil, dbError("fetch event", err)
	}
	if row.seq == nil {
		return nil, nil
	}
	e, err := row.decode(runID)
	if err != nil {
		return nil, err
	}
	return &e, nil
}

// PruneEvents deletes up to a batch of events inserted strictly before
// p.Before, oldest first (see ports.EventStore and sqlPruneEvents).
func (s *Store) PruneEvents(ctx context.Context, p ports.PruneParams) (int, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	return s.pruneEvents(ctx, s.pool, ports.CeilMicros(p.Before), p.BatchSize)
}

func (s *Store) pruneEvents(ctx context.Context, q querier, cutoff time.Time, batch int) (int, error) {
	var n int64
	if err := q.QueryRow(ctx, s.stmt.pruneEvents, cutoff, batch).Scan(&n); err != nil {
		return 0, dbError("prune events", err)
	}
	return int(n), nil
}

// PruneRuns deletes up to a batch of terminal runs updated strictly before
// p.Before, oldest first, with their events (see ports.EventStore and
// sqlPruneRuns).
func (s *Store) PruneRuns(ctx context.Context, p ports.PruneParams) (ports.PruneRunsResult, error) {
	if err := p.Validate(); err != nil {
		return ports.PruneRunsResult{}, err
	}
	return s.pruneRuns(ctx, s.pool, ports.CeilMicros(p.Before), p.BatchSize)
}

func (s *Store) pruneRuns(ctx context.Context, q querier, cutoff time.Time, batch int) (ports.PruneRunsResult, error) {
	var runs, events int64
	if err := q.QueryRow(ctx, s.stmt.pruneRuns, cutoff, batch).Scan(&runs, &events); err != nil {
		return ports.PruneRunsResult{}, dbError("prune runs", err)
	}
	return ports.PruneRunsResult{Runs: int(runs), CascadeEvents: int(events)}, nil
}
