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

// Commit writes a moment under the claim fence as ONE statement (see
// ports.RunStore and sqlCommitClaimed): fence, run update, schedule, event
// append with the idempotency tripwire and the wake announcement. A miss
// costs one more scoped read to say why.
func (s *Store) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (_ *run.Run, err error) {
	end := s.observe(ctx, "transition_commit")
	defer func() { end(resultOf(err)) }()
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	// Proposal validation precedes any lookup.
	if err := ports.ValidateMoment(p.Moment); err != nil {
		return nil, err
	}
	m := p.Moment
	sched, err := ports.ScheduleOf(m, true)
	if err != nil {
		return nil, err
	}
	token, ok := tokenArg(p.ClaimToken)
	if !ok {
		return nil, &ports.InvalidCommitError{RunID: m.Run.ID, Reason: "claim token is missing or malformed"}
	}
	events, err := ports.NormalizeEvents(m.Run.ID, m.Events)
	if err != nil {
		return nil, err
	}
	r := m.Run
	system, key := scopeArgs(scope)
	args, err := s.commitArgs(m, sched, events,
		r.ID, system, key, r.GraphID, r.GraphHash, ports.Micros(r.StartedAt), m.ExpectedSeq(), token)
	if err != nil {
		return nil, err
	}

	var moved, written, sideEffects int64
	err = s.pool.QueryRow(ctx, s.stmt.commitClaimed, args...).Scan(&moved, &written, &sideEffects)
	switch {
	case isViolation(err, codeUniqueViolation, constraintEventUnique):
		return nil, s.eventConflict(ctx, r.ID, events)
	case err != nil:
		return nil, dbError("commit", err)
	case moved == 1 && written == int64(len(events)):
		return r.Clone(), nil
	case moved == 0:
		return nil, s.classifyMiss(ctx, scope, m)
	default:
		return nil, fmt.Errorf("docket postgres: commit of run %q wrote %d rows and %d of %d events", r.ID, moved, written, len(events))
	}
}

// commitArgs encodes a validated moment into the parameters of
// sqlCommitClaimed and sqlCommitUnclaimed, which share their order after
// the fence parameters: the document columns (status through finished_at),
// the schedule's @sched, @at, @now and @payload, then the event arrays.
func (s *Store) commitArgs(m *run.Moment, sched ports.Schedule, events []run.Event, fence ...any) ([]any, error) {
	doc, err := encodeDocument(m.Run)
	if err != nil {
		return nil, err
	}
	arrays, err := encodeEvents(m.Run.ID, events)
	if err != nil {
		return nil, err
	}
	r := m.Run
	kind := string(sched.Kind)
	if sched.Kind == ports.ScheduleRetainClaim {
		kind = "retain"
	}
	args := append(fence,
		string(r.Status), doc.step, doc.state, r.CheckpointSeq, r.EventSeq, string(m.CheckpointType),
		ports.Micros(r.UpdatedAt), optTime(r.FinishedAt),
		kind, optTime(sched.At), s.storeNow(), s.schema)
	return append(args, arrays.args()...), nil
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
	seqs := make([]int64, len(events))
	proposed := make(map[int64]run.Event, len(events))
	for i, e := range events {
		seqs[i] = e.Seq
		proposed[e.Seq] = e
	}
	rows, err := s.pool.Query(ctx, s.stmt.storedEvents, runID, seqs)
	if err != nil {
		return conflict
	}
	defer rows.Close()
	for rows.Next() {
		var row eventRow
		if err := rows.Scan(row.dest()...); err != nil {
			return conflict
		}
		stored, err := row.decode(runID)
		if err != nil || !stored.Equal(proposed[stored.Seq]) {
			conflict.Seq = *row.seq
			return conflict
		}
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
	if mutation == nil {
		return nil, invalidArg("mutation", "is nil")
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
		var moved, written, sideEffects int64
		err = tx.QueryRow(ctx, s.stmt.commitUnclaimed, args...).Scan(&moved, &written, &sideEffects)
		switch {
		case isViolation(err, codeUniqueViolation, constraintEventUnique):
			conflict = events
			return err
		case err != nil:
			return err
		case moved != 1 || written != int64(len(events)):
			return keep(fmt.Errorf("docket postgres: mutation of run %q wrote %d rows and %d of %d events", runID, moved, written, len(events)))
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
	args, err := s.commitArgs(m, sched, events, row.id, m.ExpectedSeq())
	if err != nil {
		return nil, nil, err
	}
	return events, args, nil
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
