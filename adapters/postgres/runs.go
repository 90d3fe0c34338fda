package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/uptrace/bun"
)

// InsertRun stores one initialized run with its first wake and events
// (see ports.RunStore): the run, its events and, when the wake is due, its
// announcement, in one statement that concurrent insertions of other runs
// may share. The first insertion of an owner this store has not seen runs
// in a transaction that first ensures the owner's claim partition.
func (s *Store) InsertRun(ctx context.Context, owner ports.OwnerScope, p ports.InsertRunParams) (*run.Run, error) {
	ins, err := prepareInsert(ctx, owner, p)
	if err != nil {
		return nil, err
	}
	if _, known := s.partitions.Load(owner.Key()); known {
		err = s.inserts.submit("insert run", ins)
	} else {
		err = s.insertAlone(ins)
	}
	if err != nil {
		return nil, err
	}
	return p.Moment.Run.Clone(), nil
}

// prepareInsert validates and encodes an insertion for a batch.
func prepareInsert(ctx context.Context, owner ports.OwnerScope, p ports.InsertRunParams) (*pending[insertRow], error) {
	if err := owner.ValidateOwner(); err != nil {
		return nil, err
	}
	events, err := ports.ValidateInsert(p)
	if err != nil {
		return nil, err
	}
	m := p.Moment
	doc, err := encodeDocument(m.Run)
	if err != nil {
		return nil, err
	}
	encoded, err := encodeEventDocs(m.Run.ID, events)
	if err != nil {
		return nil, err
	}
	return newPending(ctx, m.Run.ID, insertRow{owner: owner, moment: m, wakeAt: ports.Micros(p.WakeAt),
		doc: doc, events: events, encoded: encoded}), nil
}

// insertRow is one insertion, validated and encoded: one element of
// sqlInsertRuns's arrays.
type insertRow struct {
	owner  ports.OwnerScope
	moment *run.Moment
	wakeAt time.Time
	doc    document
	events []run.Event
	// encoded are events with their payloads and metadata encoded.
	encoded encodedEvents
}

// flushInserts inserts one batch and delivers each insertion's outcome.
// When the shared statement fails (a duplicate run id, a missing graph
// version, a partition removed behind the store's back, a connection
// lost), every insertion is retried alone in its own transaction, so an
// outcome, and an error, always belongs to its own run.
func (s *Store) flushInserts(ctx context.Context, batch []*pending[insertRow]) {
	written, err := s.insertRuns(ctx, s.pool, batch)
	// Without the server's answer (a connection lost, say) the statement
	// may have committed; a server error rolled it back.
	_, answered := pgError(err)
	for i, ins := range batch {
		switch {
		case err != nil:
			ins.result <- s.retryInsert(ins, !answered)
		case written[i] != int64(len(ins.args.events)):
			ins.result <- fmt.Errorf("docket postgres: insert of run %q wrote %d of %d events", ins.runID, written[i], len(ins.args.events))
		default:
			ins.result <- nil
		}
	}
}

// retryInsert inserts one run of a failed shared statement alone. When
// that statement's outcome is unknown, it may have committed before its
// reply was lost: a conflict with a run of the same owner, binding, start
// time and input is then this very insertion, landed, not another start.
func (s *Store) retryInsert(ins *pending[insertRow], unknown bool) error {
	err := s.insertAlone(ins)
	if !unknown || !errors.Is(err, ports.ErrConflict) {
		return err
	}
	want := ins.args.moment.Run
	stored, ferr := s.FetchRun(ins.ctx, ins.args.owner, want.ID)
	if ferr != nil || stored.GraphID != want.GraphID || stored.GraphHash != want.GraphHash ||
		!stored.StartedAt.Equal(ports.Micros(want.StartedAt)) || !value.Equal(stored.Input, want.Input) {
		return err
	}
	return nil
}

// insertAlone inserts one run in a transaction that first ensures its
// owner's claim partition, and remembers the partition.
func (s *Store) insertAlone(ins *pending[insertRow]) error {
	ctx, key := ins.ctx, ins.args.owner.Key()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, s.stmt.ensurePartition, key); err != nil {
			return err
		}
		written, err := s.insertRuns(ctx, tx, []*pending[insertRow]{ins})
		if err == nil && written[0] != int64(len(ins.args.events)) {
			err = keep(fmt.Errorf("docket postgres: insert of run %q wrote %d of %d events", ins.runID, written[0], len(ins.args.events)))
		}
		return err
	})
	r := ins.args.moment.Run
	switch {
	case err == nil:
		s.partitions.Store(key, struct{}{})
		return nil
	case isViolation(err, codeUniqueViolation, constraintRunID):
		// The run id's index reports before the graph's foreign key, which
		// is checked at the statement's end; the contract looks the graph
		// up first.
		var published bool
		if err := s.pool.QueryRow(ctx, s.stmt.graphPublished, key, r.GraphID, r.GraphHash).Scan(&published); err != nil {
			return dbError("insert run", err)
		}
		if !published {
			return &notFoundError{what: "graph version", id: r.GraphID + "@" + r.GraphHash}
		}
		return fmt.Errorf("%w: %q", ports.ErrConflict, r.ID)
	case isViolation(err, codeForeignKeyViolation, constraintGraphFK):
		return &notFoundError{what: "graph version", id: r.GraphID + "@" + r.GraphHash}
	default:
		return unkept("insert run", err)
	}
}

// rowQuerier is what a batched write needs: the pool or a transaction.
type rowQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// insertRuns runs sqlInsertRuns over a batch and returns how many events
// each insertion wrote.
func (s *Store) insertRuns(ctx context.Context, q rowQuerier, batch []*pending[insertRow]) ([]int64, error) {
	n := len(batch)
	ords, steps := make([]int32, n), make([]int32, n)
	runIDs, graphIDs, hashes, statuses, types := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tenants := make(pgtype.FlatArray[*string], n)
	states := make(pgtype.FlatArray[[]byte], n)
	seqs, eventSeqs := make([]int64, n), make([]int64, n)
	wakes, started, updated := make([]time.Time, n), make([]time.Time, n), make([]time.Time, n)
	finished := make(pgtype.FlatArray[*time.Time], n)
	events, eventOrds := batchEvents(batch, func(ins insertRow) encodedEvents { return ins.encoded })
	for i, ins := range batch {
		a, r := ins.args, ins.args.moment.Run
		ords[i], runIDs[i], tenants[i] = int32(i), r.ID, tenantArg(a.owner)
		graphIDs[i], hashes[i], statuses[i] = r.GraphID, r.GraphHash, string(r.Status)
		steps[i], states[i], seqs[i], eventSeqs[i] = a.doc.step, a.doc.state, r.CheckpointSeq, r.EventSeq
		types[i], wakes[i] = string(a.moment.CheckpointType), a.wakeAt
		started[i], updated[i], finished[i] = ports.Micros(r.StartedAt), ports.Micros(r.UpdatedAt), optTime(r.FinishedAt)
	}
	args := append([]any{ords, runIDs, tenants, graphIDs, hashes, statuses, steps, states, seqs, eventSeqs,
		types, wakes, started, updated, finished, s.storeNow(), s.schema, eventOrds}, events.args()...)
	return s.batchedWrite(ctx, q, s.stmt.insertRuns, args, n)
}

// document is a run's stored form: the encoded state and its column copies.
type document struct {
	state []byte
	step  int32
	// buf holds state when it was written into a pooled buffer
	// (encodeDocumentPooled); release returns it.
	buf *value.Scratch
}

// release returns a pooled document's buffer; its state must not be read
// after.
func (d document) release() {
	if d.buf != nil {
		d.buf.Release()
	}
}

// encodeDocument encodes a run whose moment has passed ports.ValidateMoment
// (every caller checks the proposal first), so the run is not validated a
// second time. Its bytes are its own (see encodeDocumentPooled).
func encodeDocument(r *run.Run) (document, error) {
	d, err := encodeDocumentPooled(r)
	if err != nil {
		return document{}, err
	}
	defer d.release()
	return document{state: bytes.Clone(d.state), step: d.step}, nil
}

// encodeDocumentPooled is encodeDocument into a pooled buffer, for a
// claimed commit: its batch releases the buffer once the statement has
// been sent (the driver has copied the bytes by then), which saves a copy
// and an allocation of the whole document, history and all, per commit.
func encodeDocumentPooled(r *run.Run) (document, error) {
	if r.Step > math.MaxInt32 {
		return document{}, &ports.InvalidCommitError{RunID: r.ID, Reason: fmt.Sprintf("step %d is out of range", r.Step)}
	}
	scratch := value.GetScratch()
	state, err := run.AppendValidated(scratch.B, r)
	scratch.B = state
	if err != nil {
		scratch.Release()
		return document{}, &ports.InvalidCommitError{RunID: r.ID, Reason: err.Error()}
	}
	return document{state: state, step: int32(r.Step), buf: scratch}, nil
}

// FetchRun returns the last committed run (see ports.RunStore).
func (s *Store) FetchRun(ctx context.Context, scope ports.Scope, runID string) (*run.Run, error) {
	row, err := s.fetchRow(ctx, scope, runID)
	if err != nil {
		return nil, err
	}
	return row.decode()
}

// fetchRow reads the committed row of runID within scope; an id that is
// not text names no run.
func (s *Store) fetchRow(ctx context.Context, scope ports.Scope, runID string) (*runRow, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if !ports.TextID(runID) {
		return nil, runNotFound(runID)
	}
	return s.readRun(ctx, s.pool, s.stmt.fetchRun, scope, runID)
}

// querier is what a read needs: the pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// readRun scans one scoped run row with statement sql (fetchRun or
// lockRun).
func (s *Store) readRun(ctx context.Context, q querier, sql string, scope ports.Scope, runID string) (*runRow, error) {
	system, key := scopeArgs(scope)
	var row runRow
	err := q.QueryRow(ctx, sql, runID, system, key).Scan(row.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, runNotFound(runID)
	}
	if err != nil {
		return nil, dbError("read run", err)
	}
	return &row, nil
}

// InspectRun returns the committed run with its token-free operational
// state (see ports.RunStore): the same prepared read as FetchRun, since
// AwaitRun polls it (claim_token is never selected).
func (s *Store) InspectRun(ctx context.Context, scope ports.Scope, runID string) (*ports.RunInfo, error) {
	row, err := s.fetchRow(ctx, scope, runID)
	if err != nil {
		return nil, err
	}
	return row.info()
}

// olderThan keeps the rows of a newest-first page, ordered by (timeCol
// DESC, keyCol COLLATE "C" DESC), that come after the cursor (at, key). A
// cursor inside a microsecond is after every row stamped in it, whatever
// their keys (the column holds whole microseconds). The column names are
// the store's own, never input.
func olderThan(q *bun.SelectQuery, timeCol, keyCol string, at time.Time, key string) *bun.SelectQuery {
	if whole := ports.Micros(at); !whole.Equal(at) {
		return q.Where(timeCol+" < ?", ports.CeilMicros(at))
	}
	return q.Where("("+timeCol+" < ? OR ("+timeCol+" = ? AND "+keyCol+` COLLATE "C" < ?))`, at, at, key)
}

// whereScope adds the scope predicate on alias r: none for system.
func whereScope(q *bun.SelectQuery, scope ports.Scope) *bun.SelectQuery {
	if scope.IsSystem() {
		return q
	}
	return q.Where("r.scope_key = ?", scope.Key())
}

// summaryRow is the bun model of ListRuns: summary columns only, never
// the token, and the state only where an open interrupt is to be
// confirmed.
type summaryRow struct {
	RunID         string     `bun:"run_id"`
	TenantID      *string    `bun:"tenant_id"`
	GraphID       string     `bun:"graph_id"`
	GraphHash     string     `bun:"graph_hash"`
	Status        string     `bun:"status"`
	Step          int        `bun:"step"`
	CheckpointSeq int64      `bun:"checkpoint_seq"`
	StartedAt     time.Time  `bun:"started_at"`
	UpdatedAt     time.Time  `bun:"updated_at"`
	FinishedAt    *time.Time `bun:"finished_at"`
	// State is read only to confirm an open interrupt.
	State []byte `bun:"state"`
}

// ListRuns pages run summaries newest first by (started_at, run_id) (see
// ports.RunStore). Every filter is SQL (open interrupts are confirmed in
// Go, see listRows); the page reads one row beyond the
// limit to learn whether more exist. Run ids compare in byte order
// (COLLATE "C"), the order of the determinism contract, whatever the
// database's collation.
func (s *Store) ListRuns(ctx context.Context, scope ports.Scope, p ports.ListRunsParams) (*ports.RunPage, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	page := &ports.RunPage{Runs: []ports.RunSummary{}}
	if p.Before != nil {
		echo := *p.Before
		page.NextBefore = &echo
	}
	if !ports.TextID(p.GraphID) || !ports.TextID(p.GraphHash) {
		// No run has a graph id or hash no text can hold; bun would inline
		// one as a broken literal or with its invalid bytes replaced.
		return page, nil
	}
	rows, err := s.listRows(ctx, scope, p)
	if err != nil {
		return nil, err
	}
	if len(rows) > p.Limit {
		rows, page.HasMore = rows[:p.Limit], true
	}
	for _, row := range rows {
		page.Runs = append(page.Runs, ports.RunSummary{
			RunID:         row.RunID,
			Owner:         ownerOf(row.TenantID),
			GraphID:       row.GraphID,
			GraphHash:     row.GraphHash,
			Status:        run.Status(row.Status),
			Step:          row.Step,
			CheckpointSeq: row.CheckpointSeq,
			StartedAt:     ports.Micros(row.StartedAt),
			UpdatedAt:     ports.Micros(row.UpdatedAt),
			FinishedAt:    timeOf(row.FinishedAt),
		})
	}
	if n := len(page.Runs); n > 0 {
		last := page.Runs[n-1]
		page.NextBefore = &ports.RunCursor{StartedAt: last.StartedAt, RunID: last.RunID}
	}
	return page, nil
}

// listRows reads up to p.Limit+1 rows of ListRuns (one beyond the page
// tells whether more exist). With p.OpenInterrupts, SQL keeps the rows
// whose document bytes hold an open interrupt's status and each kept
// document is decoded to confirm it (a state value may hold the same
// bytes), batch after batch until enough are confirmed. The documents are
// not read as SQL json: a state value may hold a \u0000 that PostgreSQL's
// json refuses, and a database need not be UTF-8.
func (s *Store) listRows(ctx context.Context, scope ports.Scope, p ports.ListRunsParams) ([]summaryRow, error) {
	want := p.Limit + 1
	before := p.Before
	var out []summaryRow
	for {
		q := s.bun.NewSelect().
			TableExpr(s.stmt.runsTable + " AS r").
			ColumnExpr("r.run_id, r.tenant_id, r.graph_id, r.graph_hash, r.status, r.step, r.checkpoint_seq").
			ColumnExpr("r.started_at, r.updated_at, r.finished_at")
		q = whereScope(q, scope)
		if p.GraphID != "" {
			q = q.Where("r.graph_id = ?", p.GraphID)
		}
		if p.GraphHash != "" {
			q = q.Where("r.graph_hash = ?", p.GraphHash)
		}
		if len(p.Statuses) > 0 {
			statuses := make([]string, len(p.Statuses))
			for i, st := range p.Statuses {
				statuses[i] = string(st)
			}
			q = q.Where("r.status IN (?)", bun.List(statuses))
		}
		if p.OpenInterrupts {
			q = q.ColumnExpr("r.state").Where(mayHaveOpenInterrupt)
		}
		if before != nil {
			q = olderThan(q, "r.started_at", "r.run_id", before.StartedAt, before.RunID)
		}
		batch := want - len(out)
		q = q.OrderExpr(`r.started_at DESC, r.run_id COLLATE "C" DESC`).Limit(int64(batch))

		var rows []summaryRow
		if err := q.Scan(ctx, &rows); err != nil {
			return nil, dbError("list runs", err)
		}
		if !p.OpenInterrupts {
			return rows, nil
		}
		for _, row := range rows {
			doc, err := run.Decode(row.State)
			if err != nil {
				return nil, &ports.CorruptError{Kind: ports.CorruptRun, ID: row.RunID, Err: err}
			}
			if hasOpenInterrupt(doc) {
				row.State = nil
				out = append(out, row)
			}
		}
		if len(out) >= want || len(rows) < batch {
			return out, nil
		}
		last := rows[len(rows)-1]
		before = &ports.RunCursor{StartedAt: ports.Micros(last.StartedAt), RunID: last.RunID}
	}
}

// mayHaveOpenInterrupt keeps the rows whose document (the state column)
// holds the bytes run.Encode writes for an open interrupt's status: every
// run with an open interrupt, and the rare one whose state values hold the
// same bytes (listRows decodes to tell them apart). It compares bytes, so
// no document is parsed in SQL.
var mayHaveOpenInterrupt = fmt.Sprintf("position(decode('%x', 'hex') IN r.state) > 0", `"status":"open"`)

// hasOpenInterrupt reports whether r holds an open interrupt.
func hasOpenInterrupt(r *run.Run) bool {
	for _, in := range r.Interrupts {
		if in.Status == run.InterruptOpen {
			return true
		}
	}
	return false
}
