package memory

import (
	"context"
	"sync"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// Options configure a Store. The zero value means the documented defaults.
type Options struct {
	// Clock is the store clock (default ports.SystemClock).
	Clock ports.Clock
	// Policy is the claim policy ClaimDue executes (default claim.Legacy).
	Policy claim.Policy
}

// Store is the in-memory backend. It is safe for concurrent use.
//
// Locking: mu guards every map and row. A run row also has a row lock,
// held by writers of that row around their decision (MutateRun holds it
// while its mutation runs). Writers take the row lock before mu; ClaimDue
// and PruneRuns never wait for a row lock, they skip rows whose lock is
// held, as PostgreSQL's SKIP LOCKED does. Reads take only mu.
type Store struct {
	clock    ports.Clock
	policy   claim.Policy
	notifier *Notifier

	mu        sync.RWMutex
	runs      map[string]*runRow
	graphs    map[graphKey]*graphRow
	nextRowID int64 // insertion order of run, event and graph rows
}

var _ ports.Backend = (*Store)(nil)

// New returns an empty store.
func New(opts Options) *Store {
	if opts.Clock == nil {
		opts.Clock = ports.SystemClock{}
	}
	if opts.Policy == nil {
		opts.Policy = claim.Legacy
	}
	return &Store{
		clock:    opts.Clock,
		policy:   opts.Policy,
		notifier: newNotifier(),
		runs:     map[string]*runRow{},
		graphs:   map[graphKey]*graphRow{},
	}
}

// Capabilities reports a working listener; TenantFair follows the claim
// policy (a policy that marks admission is tenant-fair).
func (s *Store) Capabilities() ports.Capabilities {
	return ports.Capabilities{Listen: true, TenantFair: s.policy.MarksAdmission()}
}

// Notifier returns the in-process wake listener.
func (s *Store) Notifier() ports.Notifier { return s.notifier }

// now reads the store clock (UTC µs).
func (s *Store) now() time.Time { return ports.Micros(s.clock.Now()) }

// immediateWake is ports.ImmediateWake at the store clock.
func (s *Store) immediateWake(now time.Time) time.Time { return ports.ImmediateWake(now, s.now()) }

// runRow is one docket_runs row: the committed document plus its
// operational columns. The token is kept raw here and never formatted.
type runRow struct {
	id         int64
	owner      ports.OwnerScope
	doc        *run.Run // private copy of the committed document
	latestType run.CheckpointType

	token      string
	claimedAt  time.Time
	wakeAt     time.Time
	attempts   int
	abandons   int
	poisonedAt time.Time
	reason     string
	admittedAt time.Time
	insertedAt time.Time

	events map[int64]*eventRow // retained events by seq
	seqs   []int64             // the keys of events, ascending

	lock chan struct{} // row lock: a one-slot semaphore
}

type eventRow struct {
	id         int64
	event      run.Event // private copy
	insertedAt time.Time
}

func (r *runRow) locked() bool { return len(r.lock) > 0 }

func (r *runRow) healthyRunning() bool {
	return r.doc.Status == run.StatusRunning && r.poisonedAt.IsZero()
}

func (r *runRow) claimedBy(token ports.ClaimToken) bool {
	return r.token != "" && !token.IsZero() && r.token == token.Reveal()
}

func (r *runRow) clearClaim() {
	r.token, r.claimedAt = "", time.Time{}
}

func (r *runRow) clearPoison() {
	r.poisonedAt, r.reason = time.Time{}, ""
}

// lockRow takes the row lock of runID, waiting for a concurrent writer,
// and returns the row with the lock held, or nil (and no lock) when the run
// does not exist or is not visible in scope. The caller must unlock.
func (s *Store) lockRow(ctx context.Context, scope ports.Scope, runID string) (*runRow, error) {
	for {
		s.mu.RLock()
		row := s.runs[runID]
		s.mu.RUnlock()
		if row == nil || !scope.Sees(row.owner) {
			return nil, nil
		}
		select {
		case row.lock <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.RLock()
		current := s.runs[runID]
		s.mu.RUnlock()
		if current == row {
			return row, nil
		}
		// Pruned (or pruned and re-inserted) while we waited: look again.
		<-row.lock
	}
}

func unlockRow(row *runRow) { <-row.lock }

// visibleRow returns the row of runID when scope sees it. Callers hold mu.
func (s *Store) visibleRow(scope ports.Scope, runID string) *runRow {
	row := s.runs[runID]
	if row == nil || !scope.Sees(row.owner) {
		return nil
	}
	return row
}

// readRow calls read with the row of runID under one read lock, so
// everything read sees one snapshot, or reports the run not found when
// scope does not see it. Callers have validated scope and their arguments.
func readRow[T any](ctx context.Context, s *Store, scope ports.Scope, runID string, read func(*runRow) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	row := s.visibleRow(scope, runID)
	if row == nil {
		return zero, notFoundRun(runID)
	}
	return read(row)
}

func notFoundRun(runID string) error {
	return &notFoundError{what: "run", id: runID}
}

// notFoundError wraps ports.ErrNotFound with the looked-up id.
type notFoundError struct {
	what string
	id   string
}

func (e *notFoundError) Error() string { return e.what + " " + quote(e.id) + ": not found" }
func (e *notFoundError) Unwrap() error { return ports.ErrNotFound }

func quote(s string) string { return "\"" + s + "\"" }

func invalidArg(field, reason string) error {
	return &ports.InvalidArgumentError{Field: field, Reason: reason}
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

func cloneEvent(e run.Event) run.Event {
	e.Payload = cloneMap(e.Payload)
	e.Metadata = e.Metadata.Clone()
	return e
}
