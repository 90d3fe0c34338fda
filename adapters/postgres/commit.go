package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Commit writes a moment under the claim fence (see ports.RunStore and
// sqlCommitClaimed): fence, run update, schedule, event append with the
// idempotency tripwire and the wake announcement, in one statement that
// concurrent commits of other runs may share (batcher). A miss costs
// one more scoped read to say why.
func (s *Store) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (_ *run.Run, err error) {
	end := s.observe(ctx, "transition_commit")
	defer func() { end(resultOf(err)) }()
	c, err := prepareCommit(ctx, scope, p)
	if err != nil {
		return nil, err
	}
	lane := s.commits
	if c.args.moment.Run.Status.Terminal() {
		lane = s.closings
	}
	if err := lane.submit("commit", c); err != nil {
		return nil, err
	}
	if p.NoResult {
		return nil, nil
	}
	return c.args.moment.Run.Clone(), nil
}

// prepareCommit validates and encodes a claimed commit for a batch.
func prepareCommit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*pending[commitRow], error) {
	// Proposal validation precedes any lookup.
	var token tokenParam
	t, err := ports.CheckClaimedCommit(scope, p, func(c ports.ClaimToken) (ok bool) {
		token, ok = tokenArg(c)
		return ok
	})
	if err != nil {
		return nil, err
	}
	m, sched, events := t.Moment, t.Schedule, t.Events
	row, err := newCommitRow(scope, m, sched, token, events)
	if err != nil {
		return nil, err
	}
	row.fence = p.Moment
	return newPending(ctx, m.Run.ID, row), nil
}

// commitRow is one claimed commit, validated and encoded: one element of
// sqlCommitClaimed's arrays.
type commitRow struct {
	scope ports.Scope
	// moment is the transition written (a fused chain's last moment with
	// every moment's events); fence is the moment it is fenced on (the
	// chain's first).
	moment *run.Moment
	fence  *run.Moment
	token  tokenParam
	sched  string
	at     *time.Time
	doc    document
	events []run.Event
	// encoded are events with their payloads and metadata encoded.
	encoded encodedEvents
}

func newCommitRow(scope ports.Scope, m *run.Moment, sched ports.Schedule, token tokenParam, events []run.Event) (commitRow, error) {
	doc, err := encodeDocumentPooled(m.Run)
	if err != nil {
		return commitRow{}, err
	}
	encoded, err := encodeEventDocs(m.Run.ID, events)
	if err != nil {
		doc.release()
		return commitRow{}, err
	}
	return commitRow{scope: scope, moment: m, fence: m, token: token, sched: scheduleKind(sched), at: optTime(sched.At),
		doc: doc, events: events, encoded: encoded}, nil
}

// release returns the row's pooled document buffer (batcher.release).
func (c commitRow) release() { c.doc.release() }

// scheduleKind is a schedule's name in the commit statements.
func scheduleKind(sched ports.Schedule) string {
	if sched.Kind == ports.ScheduleRetainClaim {
		return "retain"
	}
	return string(sched.Kind)
}

// flushCommits commits one batch and delivers each commit's outcome. The
// fast path inserts events plainly. When the shared statement fails, a
// stored event at a proposed seq (a replay, or a conflict), a statement
// whose reply never came (a connection lost), or anything else in a
// batch, every commit is retried alone with the replayable statement
// (commitAlone), so an identical replay still succeeds, a lost reply is
// resolved per run, and an outcome, and an error, always belongs to its
// own run.
func (s *Store) flushCommits(ctx context.Context, batch []*pending[commitRow]) {
	written, err := s.commitClaimed(ctx, s.stmt.commitClaimed, batch)
	// Without the server's answer the statement may have committed; a
	// server error rolled it back.
	var unknown error
	if _, answered := pgError(err); err != nil && !answered {
		unknown = err
	}
	if err != nil && (len(batch) > 1 || unknown != nil || isViolation(err, codeUniqueViolation, constraintEventUnique)) {
		for _, c := range batch {
			c.result <- s.commitAlone(c, unknown)
		}
		return
	}
	for i, c := range batch {
		c.result <- s.commitOutcome(c, written[i], err)
	}
}

// commitAlone retries one commit of a failed statement alone, with the
// replayable statement. When that statement's outcome is unknown (unknown
// is its error), it may have committed before its reply was lost, and
// then the retry misses the fence the commit itself moved: a miss is this
// very commit, landed, when the run's stored events at the commit's seqs
// are its own (events are written with their moment, atomically, and
// never rewritten), and stays a lost fence when they are not. A commit
// without events leaves nothing to tell its own move from another
// writer's, so its outcome stays unknown: the statement's error.
func (s *Store) commitAlone(c *pending[commitRow], unknown error) error {
	written, err := s.commitClaimed(c.ctx, s.stmt.commitReplayable, []*pending[commitRow]{c})
	if unknown == nil || err != nil || written[0] != missed {
		return s.commitOutcome(c, written[0], err)
	}
	miss := s.classifyMiss(c.ctx, c.args.scope, c.args.fence)
	if !errors.Is(miss, ports.ErrStaleFence) {
		return miss
	}
	if len(c.args.events) == 0 {
		return dbError("commit", unknown)
	}
	landed, err := s.eventsStored(c.ctx, c.args.moment.Run.ID, c.args.events)
	switch {
	case err != nil:
		return dbError("commit", unknown)
	case landed:
		return nil
	}
	return miss
}

// eventsStored reports whether every one of events is stored, identical,
// at its seq.
func (s *Store) eventsStored(ctx context.Context, runID string, events []run.Event) (bool, error) {
	differs, same, err := s.compareStoredEvents(ctx, runID, events)
	return err == nil && differs == 0 && same == len(events), err
}

// compareStoredEvents reads the run's stored events at the seqs of events
// and returns the seq of the first that differs from its proposal (or
// does not decode), else 0, and how many matched before it.
func (s *Store) compareStoredEvents(ctx context.Context, runID string, events []run.Event) (differs int64, same int, err error) {
	seqs := make([]int64, len(events))
	proposed := make(map[int64]run.Event, len(events))
	for i, e := range events {
		seqs[i] = e.Seq
		proposed[e.Seq] = e
	}
	rows, err := s.pool.Query(ctx, s.stmt.storedEvents, runID, seqs)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var row eventRow
		if err := rows.Scan(row.dest()...); err != nil {
			return 0, same, err
		}
		stored, err := row.decode(runID)
		if err != nil || !stored.Equal(proposed[stored.Seq]) {
			return *row.seq, same, nil
		}
		same++
	}
	return 0, same, rows.Err()
}

// missed marks a commit whose fence matched nothing.
const missed = -1

// commitClaimed runs sqlCommitClaimed over a batch and returns how many
// events each commit wrote (missed for a lost fence).
func (s *Store) commitClaimed(ctx context.Context, sql string, batch []*pending[commitRow]) ([]int64, error) {
	return s.batchedWrite(ctx, s.pool, sql, s.claimedArgs(batch), len(batch))
}

// batchedWrite runs a batched write statement whose rows are (ord,
// written, side_effects) and returns how many events each element wrote
// (missed for an element the statement did not write). On the store's
// pool it binds the parameters itself (queryWire); in a transaction, or
// where that path does not apply, through pgx.
func (s *Store) batchedWrite(ctx context.Context, q rowQuerier, sql string, args []any, n int) ([]int64, error) {
	if pool, ok := q.(*pgxpool.Pool); ok && pool == s.pool {
		written := allMissed(n)
		err := s.queryWire(ctx, sql, args, func(values [][]byte) error {
			if len(values) != 3 {
				return errUnexpectedWriteRow
			}
			ord, err := wireInt(values[0])
			if err != nil {
				return errUnexpectedWriteRow
			}
			count, err := wireInt(values[1])
			if err != nil {
				return errUnexpectedWriteRow
			}
			return recordWritten(written, ord, count)
		})
		if !errors.Is(err, errWireUnsupported) {
			return written, err
		}
	}
	return writtenPerOrd(q.Query(ctx, sql, args...))(n)
}

// allMissed is the written counts of n elements before any result row.
func allMissed(n int) []int64 {
	written := make([]int64, n)
	for i := range written {
		written[i] = missed
	}
	return written
}

// writtenPerOrd reads the (ord, written, side_effects) rows of a batched
// write: how many events each element wrote, missed for an element the
// statement did not write.
func writtenPerOrd(rows pgx.Rows, err error) func(n int) ([]int64, error) {
	return func(n int) ([]int64, error) {
		written := allMissed(n)
		if err != nil {
			return written, err
		}
		defer rows.Close()
		for rows.Next() {
			var ord int32
			var count, sideEffects int64
			if err := rows.Scan(&ord, &count, &sideEffects); err != nil {
				return written, err
			}
			if err := recordWritten(written, int64(ord), count); err != nil {
				return written, err
			}
		}
		return written, rows.Err()
	}
}

// errUnexpectedWriteRow is a batched write's result row that is not
// (ord, written, side_effects) for an element of the batch.
var errUnexpectedWriteRow = errors.New("docket postgres: batched write: unexpected result row")

// recordWritten records that element ord of a batch wrote count events.
func recordWritten(written []int64, ord, count int64) error {
	if ord < 0 || ord >= int64(len(written)) {
		return errUnexpectedWriteRow
	}
	written[ord] = count
	return nil
}

// claimedArgs lays a batch out as sqlCommitClaimed's parallel arrays.
func (s *Store) claimedArgs(batch []*pending[commitRow]) []any {
	n := len(batch)
	ords, steps := make([]int32, n), make([]int32, n)
	runIDs, keys, graphIDs, hashes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	statuses, types, scheds := make([]string, n), make([]string, n), make([]string, n)
	systems := make([]bool, n)
	started, updated := make([]time.Time, n), make([]time.Time, n)
	finished, ats := make(pgtype.FlatArray[*time.Time], n), make(pgtype.FlatArray[*time.Time], n)
	expected, seqs, eventSeqs := make([]int64, n), make([]int64, n), make([]int64, n)
	tokens := make(tokenArray, n)
	states := make(pgtype.FlatArray[[]byte], n)
	events, eventOrds := batchEvents(batch, func(c commitRow) encodedEvents { return c.encoded })
	for i, c := range batch {
		a, r := c.args, c.args.moment.Run
		ords[i] = int32(i)
		runIDs[i] = r.ID
		systems[i], keys[i] = scopeArgs(a.scope)
		graphIDs[i], hashes[i], started[i] = r.GraphID, r.GraphHash, ports.Micros(r.StartedAt)
		expected[i], tokens[i] = a.fence.ExpectedSeq(), a.token
		statuses[i], steps[i], states[i] = string(r.Status), a.doc.step, a.doc.state
		seqs[i], eventSeqs[i], types[i] = r.CheckpointSeq, r.EventSeq, string(a.moment.CheckpointType)
		updated[i], finished[i] = ports.Micros(r.UpdatedAt), optTime(r.FinishedAt)
		scheds[i], ats[i] = a.sched, a.at
	}
	args := []any{ords, runIDs, systems, keys, graphIDs, hashes, started, expected, tokens,
		statuses, steps, seqs, eventSeqs, types, updated, finished, scheds, ats,
		s.storeNow(), s.schema, eventOrds}
	args = append(args, events.args()...)
	return append(args, states) // last: see sqlCommitClaimed
}

// commitOutcome is what Commit returns for one commit of a batch.
func (s *Store) commitOutcome(c *pending[commitRow], written int64, err error) error {
	m := c.args.moment
	switch {
	case isViolation(err, codeUniqueViolation, constraintEventUnique):
		return s.eventConflict(c.ctx, m.Run.ID, c.args.events)
	case err != nil:
		return dbError("commit", err)
	case written == missed:
		return s.classifyMiss(c.ctx, c.args.scope, c.args.fence)
	case written != int64(len(c.args.events)):
		return fmt.Errorf("docket postgres: commit of run %q wrote %d of %d events", m.Run.ID, written, len(c.args.events))
	}
	return nil
}

// classifyMiss explains a claimed commit that matched nothing, in the
// ports' order: not visible; changed binding or a sequence ahead of
// stored+1 (invalid); otherwise the token or sequence moved (stale).
func (s *Store) classifyMiss(ctx context.Context, scope ports.Scope, m *run.Moment) error {
	system, key := scopeArgs(scope)
	var stored struct {
		graphID, graphHash string
		startedAt          time.Time
		seq                int64
	}
	err := s.pool.QueryRow(ctx, s.stmt.classifyMiss, m.Run.ID, system, key).
		Scan(&stored.graphID, &stored.graphHash, &stored.startedAt, &stored.seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return runNotFound(m.Run.ID)
	}
	if err != nil {
		return dbError("commit", err)
	}
	// The statement matched the binding and sequence only if the token
	// was also right, so anything but an invalid proposal is stale.
	err = ports.CheckFence(&run.Run{ID: m.Run.ID, GraphID: stored.graphID, GraphHash: stored.graphHash,
		StartedAt: stored.startedAt, CheckpointSeq: stored.seq}, m)
	if errors.Is(err, ports.ErrInvalidCommit) {
		return err
	}
	return fmt.Errorf("%w: run %q: the claim token or checkpoint_seq %d moved on (stored %d)",
		ports.ErrStaleFence, m.Run.ID, m.ExpectedSeq(), stored.seq)
}

// eventConflict names the seq of a rejected commit's conflicting event:
// the first proposed event whose stored row differs. The failed statement
// wrote nothing; this read only makes the error precise.
func (s *Store) eventConflict(ctx context.Context, runID string, events []run.Event) error {
	conflict := &ports.EventConflictError{RunID: runID}
	if len(events) > 0 {
		conflict.Seq = events[0].Seq
	}
	if differs, _, err := s.compareStoredEvents(ctx, runID, events); err == nil && differs != 0 {
		conflict.Seq = differs
	}
	return conflict
}

// MutateRun serializes one unclaimed commit (see ports.RunStore): it
// locks the run row in a transaction (admission skips it meanwhile),
// evaluates the mutation on the locked document and commits its moment
// with sqlCommitUnclaimed in the same transaction.
func (s *Store) MutateRun(ctx context.Context, scope ports.Scope, runID string, mutation ports.Mutation) (_ *run.Run, err error) {
	end := s.observe(ctx, "transition_commit_unclaimed")
	defer func() { end(resultOf(err)) }()
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	// A missing mutation is a programming error, reported before the run
	// id is looked at.
	if mutation == nil {
		return nil, invalidArg("mutation", "is nil")
	}
	if !ports.TextID(runID) {
		return nil, runNotFound(runID)
	}
	var (
		result   *run.Run
		conflict []run.Event // set when the statement hit the tripwire
	)
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.readRun(ctx, tx, s.stmt.lockRun, scope, runID)
		if err != nil {
			return keep(err)
		}
		current, err := row.decode()
		if err != nil {
			return keep(err)
		}
		m, err := mutation(current.Clone())
		if err != nil {
			return keep(err)
		}
		if m == nil {
			result = current
			return nil
		}
		events, args, err := s.unclaimedArgs(row, current, m)
		if err != nil {
			return keep(err)
		}
		var ord int32
		var written, sideEffects int64
		err = tx.QueryRow(ctx, s.stmt.commitUnclaimed, args...).Scan(&ord, &written, &sideEffects)
		switch {
		case isViolation(err, codeUniqueViolation, constraintEventUnique):
			conflict = events
			return err
		case errors.Is(err, pgx.ErrNoRows):
			return keep(fmt.Errorf("docket postgres: mutation of run %q matched no row under its lock", runID))
		case err != nil:
			return err
		case written != int64(len(events)):
			return keep(fmt.Errorf("docket postgres: mutation of run %q wrote %d of %d events", runID, written, len(events)))
		}
		result = m.Run.Clone()
		return nil
	})
	if conflict != nil {
		return nil, s.eventConflict(ctx, runID, conflict)
	}
	if err != nil {
		return nil, unkept("mutate run", err)
	}
	return result, nil
}

// unclaimedArgs validates a mutation's moment against the locked row and
// returns its normalized events and the statement arguments.
func (s *Store) unclaimedArgs(row *runRow, current *run.Run, m *run.Moment) ([]run.Event, []any, error) {
	if err := ports.ValidateMoment(m); err != nil {
		return nil, nil, err
	}
	if m.Run.ID != current.ID {
		return nil, nil, &ports.InvalidCommitError{RunID: current.ID, Reason: fmt.Sprintf("mutation proposed run %q", m.Run.ID)}
	}
	sched, err := ports.ScheduleOf(m, false)
	if err != nil {
		return nil, nil, err
	}
	events, err := ports.NormalizeEvents(m.Run.ID, m.Events)
	if err != nil {
		return nil, nil, err
	}
	if err := ports.CheckFence(current, m); err != nil {
		return nil, nil, err
	}
	doc, err := encodeDocument(m.Run)
	if err != nil {
		return nil, nil, err
	}
	arrays, err := encodeEvents(m.Run.ID, events)
	if err != nil {
		return nil, nil, err
	}
	r := m.Run
	args := []any{row.id, m.ExpectedSeq(),
		string(r.Status), doc.step, doc.state, r.CheckpointSeq, r.EventSeq, string(m.CheckpointType),
		ports.Micros(r.UpdatedAt), optTime(r.FinishedAt), scheduleKind(sched), optTime(sched.At),
		s.storeNow(), s.schema, make([]int32, len(events))}
	return events, append(args, arrays.args()...), nil
}

// kept marks an error produced inside a transaction callback that must
// reach the caller unchanged (a port outcome, or a mutation's own error),
// as opposed to a database error that unkept scrubs.
type kept struct{ err error }

func (k kept) Error() string { return k.err.Error() }
func (k kept) Unwrap() error { return k.err }

func keep(err error) error { return kept{err} }

// unkept returns a kept error unchanged and scrubs anything else (a
// failed statement, BEGIN or COMMIT) as a database error of op.
func unkept(op string, err error) error {
	var k kept
	if errors.As(err, &k) {
		return k.err
	}
	return dbError(op, err)
}
