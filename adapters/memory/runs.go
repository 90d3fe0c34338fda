package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// InsertRun stores one initialized run (see ports.RunStore).
func (s *Store) InsertRun(ctx context.Context, owner ports.OwnerScope, p ports.InsertRunParams) (*run.Run, error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	events, err := ports.ValidateInsert(p)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := p.Moment
	wakeAt := ports.Micros(p.WakeAt)

	s.mu.Lock()
	if s.graphs[graphKey{owner: owner, id: m.Run.GraphID, hash: m.Run.GraphHash}] == nil {
		s.mu.Unlock()
		return nil, &notFoundError{what: "graph version", id: m.Run.GraphID + "@" + m.Run.GraphHash}
	}
	if s.runs[m.Run.ID] != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ports.ErrConflict, m.Run.ID)
	}
	now := s.now()
	if !wakeAt.After(ports.Micros(m.Run.UpdatedAt)) {
		// Due at the starter's own now: an immediate start, at the store
		// clock the announcement below reads too.
		wakeAt = ports.ImmediateWake(wakeAt, now)
	}
	s.nextRowID++
	row := &runRow{
		id:         s.nextRowID,
		owner:      owner,
		doc:        m.Run.Clone(),
		latestType: m.CheckpointType,
		wakeAt:     wakeAt,
		insertedAt: now,
		events:     map[int64]*eventRow{},
		lock:       make(chan struct{}, 1),
	}
	s.appendEvents(row, events, now)
	s.runs[m.Run.ID] = row
	stored := row.doc.Clone()
	s.mu.Unlock()

	if !wakeAt.After(now) {
		s.notifier.announce()
	}
	return stored, nil
}

// FetchRun returns the last committed run (see ports.RunStore).
func (s *Store) FetchRun(ctx context.Context, scope ports.Scope, runID string) (*run.Run, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	return readRow(ctx, s, scope, runID, func(row *runRow) (*run.Run, error) {
		return row.doc.Clone(), nil
	})
}

// InspectRun returns the run with its token-free operational state.
func (s *Store) InspectRun(ctx context.Context, scope ports.Scope, runID string) (*ports.RunInfo, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	return readRow(ctx, s, scope, runID, func(row *runRow) (*ports.RunInfo, error) {
		return &ports.RunInfo{
			Run:                  row.doc.Clone(),
			Owner:                row.owner,
			LatestCheckpointType: row.latestType,
			WakeAt:               row.wakeAt,
			ClaimedAt:            row.claimedAt,
			ClaimAttempts:        row.attempts,
			ClaimAbandons:        row.abandons,
			PoisonedAt:           row.poisonedAt,
			PoisonReason:         row.reason,
		}, nil
	})
}

// ListRuns pages run summaries newest first (see ports.RunStore).
func (s *Store) ListRuns(ctx context.Context, scope ports.Scope, p ports.ListRunsParams) (*ports.RunPage, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	matches := make([]ports.RunSummary, 0)
	for _, row := range s.runs {
		d := row.doc
		switch {
		case !scope.Sees(row.owner),
			p.GraphID != "" && d.GraphID != p.GraphID,
			p.GraphHash != "" && d.GraphHash != p.GraphHash,
			len(p.Statuses) > 0 && !slices.Contains(p.Statuses, d.Status),
			p.OpenInterrupts && !hasOpenInterrupt(d):
			continue
		}
		sum := summarize(row)
		// The cursor's exact time: a cursor inside a microsecond is after
		// every row stamped in that microsecond, whatever their ids.
		if p.Before != nil && compareKey(sum.StartedAt, sum.RunID, p.Before.StartedAt, p.Before.RunID) >= 0 {
			continue
		}
		matches = append(matches, sum)
	}
	s.mu.RUnlock()

	// Newest first by the immutable (started_at, run_id) key.
	slices.SortFunc(matches, func(a, b ports.RunSummary) int {
		return compareKey(b.StartedAt, b.RunID, a.StartedAt, a.RunID)
	})
	page := &ports.RunPage{NextBefore: p.Before}
	if len(matches) > p.Limit {
		matches, page.HasMore = matches[:p.Limit], true
	}
	page.Runs = matches
	if n := len(matches); n > 0 {
		last := matches[n-1]
		page.NextBefore = &ports.RunCursor{StartedAt: last.StartedAt, RunID: last.RunID}
	}
	return page, nil
}

// hasOpenInterrupt reports whether r holds an open interrupt.
func hasOpenInterrupt(r *run.Run) bool {
	for _, in := range r.Interrupts {
		if in.Status == run.InterruptOpen {
			return true
		}
	}
	return false
}

func summarize(row *runRow) ports.RunSummary {
	d := row.doc
	return ports.RunSummary{
		RunID:         d.ID,
		Owner:         row.owner,
		GraphID:       d.GraphID,
		GraphHash:     d.GraphHash,
		Status:        d.Status,
		Step:          d.Step,
		CheckpointSeq: d.CheckpointSeq,
		StartedAt:     ports.Micros(d.StartedAt),
		UpdatedAt:     ports.Micros(d.UpdatedAt),
		FinishedAt:    ports.Micros(d.FinishedAt),
	}
}

// compareKey orders (started_at, run_id) keys ascending, run ids by bytes.
func compareKey(at1 time.Time, id1 string, at2 time.Time, id2 string) int {
	if c := at1.Compare(at2); c != 0 {
		return c
	}
	return strings.Compare(id1, id2)
}
