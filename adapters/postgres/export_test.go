package postgres

import (
	"context"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// ScrubForTest exposes the adapter's error boundary to the tests.
var ScrubForTest = dbError

// CommitBatchForTest commits ps as ONE batch, as the commit batcher does
// when they queue together, and returns each commit's outcome.
func (s *Store) CommitBatchForTest(ctx context.Context, scope ports.Scope, ps []ports.CommitParams) []error {
	errs := make([]error, len(ps))
	var batch []*pending[commitRow]
	var at []int
	for i, p := range ps {
		c, err := prepareCommit(ctx, scope, p)
		if err != nil {
			errs[i] = err
			continue
		}
		batch, at = append(batch, c), append(at, i)
	}
	s.flushCommits(ctx, batch)
	for j, c := range batch {
		errs[at[j]] = <-c.result
	}
	return errs
}

// InsertBatchForTest inserts ps (all under owner) as ONE batch, as the
// insertion batcher does when they queue together, and returns each
// insertion's outcome.
func (s *Store) InsertBatchForTest(ctx context.Context, owner ports.OwnerScope, ps []ports.InsertRunParams) []error {
	batch := make([]*pending[insertRow], len(ps))
	for i, p := range ps {
		ins, err := prepareInsert(ctx, owner, p)
		if err != nil {
			panic(err)
		}
		batch[i] = ins
	}
	s.flushInserts(ctx, batch)
	errs := make([]error, len(ps))
	for i, ins := range batch {
		errs[i] = <-ins.result
	}
	return errs
}

// BatchedWriteForTest runs sql as a batched write of n elements, on the
// store's pool (its own parameter binding) or through pgx in a
// transaction, and returns how many events each element wrote.
func (s *Store) BatchedWriteForTest(ctx context.Context, sql string, n int, inTx bool) ([]int64, error) {
	if !inTx {
		return s.batchedWrite(ctx, s.pool, sql, nil, n)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return s.batchedWrite(ctx, tx, sql, nil, n)
}

// ExplainAnalyzeClaimForTest runs the store's claim statement for r under
// EXPLAIN (ANALYZE, FORMAT JSON) in a transaction it rolls back, and
// returns the plan with the rows each node read.
func (s *Store) ExplainAnalyzeClaimForTest(ctx context.Context, r claim.Request) ([]byte, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var plan []byte
	err = tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+s.claimSQL, s.claimArgs(r.Normalized())...).Scan(&plan)
	return plan, err
}

// ExplainClaimForTest returns EXPLAIN (FORMAT JSON) of the store's claim
// statement for r, bound as ClaimDue binds it (nothing is executed).
func (s *Store) ExplainClaimForTest(ctx context.Context, r claim.Request) ([]byte, error) {
	var plan []byte
	err := s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+s.claimSQL, s.claimArgs(r.Normalized())...).Scan(&plan)
	return plan, err
}
