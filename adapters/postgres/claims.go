package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// ClaimDue executes one admission under the store's policy as ONE
// statement (see ports.RunStore, sqlClaimDueLegacy and
// sqlClaimDueWindowed). Rows a concurrent writer holds are skipped, never
// waited on.
func (s *Store) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ports.ErrInvalidArgument, err)
	}
	r = r.Normalized()
	ctx, span := s.telemetry.StartSpan(ctx, "run_store.claim", ports.Label{Key: "preference", Value: preferenceLabel(r.Preference)})
	batch, err := s.claimDue(ctx, r)
	if err != nil {
		span.End(ports.ResultError, nil)
		return nil, err
	}
	if ports.Discards(s.telemetry) {
		span.End(ports.ResultOK, nil)
	} else {
		span.End(ports.ResultOK, claimMeasurements(r, batch))
	}
	return batch, nil
}

// claimMeasurements are a claim span's end measurements: what was asked
// and seen, and what was selected from each class (an expired lease is a
// steal).
func claimMeasurements(r claim.Request, batch *ports.ClaimBatch) ports.Measurements {
	var ready, expired, attempts int
	for _, l := range batch.Leases {
		attempts += l.Attempt
		if l.Class == claim.ClassExpired {
			expired++
		} else {
			ready++
		}
	}
	return ports.Measurements{
		"demand":             float64(r.Limit),
		"leases":             float64(len(batch.Leases)),
		"poisoned":           float64(len(batch.Poisoned)),
		"claim_attempts":     float64(attempts),
		"ready_candidates":   float64(batch.ReadyCandidates),
		"expired_candidates": float64(batch.ExpiredCandidates),
		"ready_selected":     float64(ready),
		"expired_selected":   float64(expired),
		"steals":             float64(expired),
	}
}

func preferenceLabel(p claim.Preference) string {
	if p == claim.PreferNone {
		return "none"
	}
	return string(p)
}

// claimRow is one row of a claim statement: an outcome, or the gate's
// sentinel (gate_code < 0, every other column NULL). Its nullable columns
// scan into pgtype values, which pgx fills in place, not into pointers it
// would allocate for each non-null column of every row; the leased
// document is decoded while its row is read (doc), so its bytes are read
// where the driver holds them instead of copied out first.
type claimRow struct {
	runID         pgtype.Text
	tenantID      pgtype.Text
	graphID       pgtype.Text
	graphHash     pgtype.Text
	checkpointSeq pgtype.Int8
	token         pgtype.Text
	claimedAt     pgtype.Timestamptz
	attempts      pgtype.Int4
	poisonedAt    pgtype.Timestamptz
	poisonReason  pgtype.Text
	class         pgtype.Text
	order         pgtype.Int8
	step          pgtype.Int4
	eventSeq      pgtype.Int8
	startedAt     pgtype.Timestamptz
	updatedAt     pgtype.Timestamptz
	readyCount    int64
	expiredCount  int64
	gateCode      int32
	doc           *run.Run
}

// claimArgs are the claim statements' parameters ($1 to $7) for r.
func (s *Store) claimArgs(r claim.Request) []any {
	cutoff := ports.CeilMicros(r.ExpiryCutoff())
	ttl := int64(r.OrphanTTL / time.Microsecond)
	return []any{r.Now, r.Limit, cutoff, r.MaxClaimAttempts, string(r.Preference), s.storeNow(), ttl}
}

func (s *Store) claimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	rows, err := s.pool.Query(ctx, s.claimSQL, s.claimArgs(r)...)
	if err != nil {
		return nil, claimError(err)
	}
	var (
		outcomes                            []claimRow
		state                               pgtype.DriverBytes
		tenantID, graphID, graphHash, class sharedText
	)
	for rows.Next() {
		var c claimRow
		err := rows.Scan(&c.runID, &tenantID, &graphID, &graphHash, &c.checkpointSeq, &c.token,
			&c.claimedAt, &c.attempts, &c.poisonedAt, &c.poisonReason, &class, &c.order, &state,
			&c.step, &c.eventSeq, &c.startedAt, &c.updatedAt, &c.readyCount, &c.expiredCount, &c.gateCode)
		if err != nil {
			rows.Close()
			return nil, claimError(err)
		}
		c.tenantID, c.graphID, c.graphHash, c.class = tenantID.text(), graphID.text(), graphHash.text(), class.text()
		// state is the driver's until the next row: decode it now.
		c.doc = leasedRun(&c, state)
		outcomes = append(outcomes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, claimError(err)
	}
	batch := &ports.ClaimBatch{Leases: []ports.Lease{}, Poisoned: []ports.PoisonOutcome{}}
	if len(outcomes) == 1 && outcomes[0].gateCode < 0 {
		return nil, gateError(outcomes[0].gateCode)
	}
	if len(outcomes) == 1 && outcomes[0].gateCode == claimCountsOnly {
		// No row changed: none was due, or every row the claim chose was
		// changed by another writer after its snapshot. The row carries
		// the candidates it saw.
		batch.ReadyCandidates, batch.ExpiredCandidates = int(outcomes[0].readyCount), int(outcomes[0].expiredCount)
		return batch, nil
	}
	for _, c := range outcomes {
		if !c.runID.Valid || !c.class.Valid || !c.attempts.Valid || !c.order.Valid {
			return nil, fmt.Errorf("docket postgres: claim: malformed outcome row")
		}
	}
	// RETURNING has no order: restore the admission order.
	slices.SortFunc(outcomes, func(a, b claimRow) int { return int(a.order.Int64 - b.order.Int64) })
	for _, c := range outcomes {
		batch.ReadyCandidates, batch.ExpiredCandidates = int(c.readyCount), int(c.expiredCount)
		class := claim.Class(c.class.String)
		if c.poisonedAt.Valid {
			batch.Poisoned = append(batch.Poisoned, ports.PoisonOutcome{
				RunID:        c.runID.String,
				Owner:        ownerOfText(c.tenantID),
				PoisonedAt:   ports.Micros(c.poisonedAt.Time),
				PoisonReason: c.poisonReason.String,
				Class:        class,
			})
			continue
		}
		if !c.token.Valid || !c.claimedAt.Valid || !c.checkpointSeq.Valid || !c.graphID.Valid || !c.graphHash.Valid {
			return nil, fmt.Errorf("docket postgres: claim: malformed lease row for run %q", c.runID.String)
		}
		batch.Leases = append(batch.Leases, ports.Lease{
			RunID:         c.runID.String,
			Owner:         ownerOfText(c.tenantID),
			GraphID:       c.graphID.String,
			GraphHash:     c.graphHash.String,
			CheckpointSeq: c.checkpointSeq.Int64,
			Token:         ports.NewClaimToken(c.token.String),
			ClaimedAt:     ports.Micros(c.claimedAt.Time),
			Attempt:       int(c.attempts.Int32),
			OrphanTTL:     r.OrphanTTL,
			Class:         class,
			Run:           c.doc,
		})
	}
	return batch, nil
}

// leasedRun decodes the document a lease row returned; a document that
// does not decode or disagrees with the row's columns (a leased row is
// running, so unfinished) is left to the holder's own read, which reports
// it before any node runs. Rows that are not leases decode nothing.
func leasedRun(c *claimRow, state []byte) *run.Run {
	if state == nil || c.poisonedAt.Valid || !c.runID.Valid || !c.checkpointSeq.Valid || !c.graphID.Valid || !c.graphHash.Valid ||
		!c.step.Valid || !c.eventSeq.Valid || !c.startedAt.Valid || !c.updatedAt.Valid {
		return nil
	}
	row := runRow{runID: c.runID.String, state: state, checkpointSeq: c.checkpointSeq.Int64, columns: docColumns{
		graphID: c.graphID.String, graphHash: c.graphHash.String, status: string(run.StatusRunning),
		step: c.step.Int32, eventSeq: c.eventSeq.Int64, startedAt: c.startedAt.Time, updatedAt: c.updatedAt.Time,
	}}
	doc, err := row.decode()
	if err != nil {
		return nil
	}
	return doc
}

// sharedText scans a text column whose value repeats from row to row (a
// scope, a graph's id and hash, a claim class): a value equal to the
// previous row's keeps that row's string instead of allocating its own.
type sharedText struct {
	last  string
	valid bool
}

// ScanBytes reads the driver's bytes of the column (pgtype.BytesScanner).
func (t *sharedText) ScanBytes(v []byte) error {
	t.valid = v != nil
	if t.valid && string(v) != t.last {
		t.last = string(v)
	}
	return nil
}

// text is the value scanned last.
func (t *sharedText) text() pgtype.Text {
	if !t.valid {
		return pgtype.Text{}
	}
	return pgtype.Text{String: t.last, Valid: true}
}

// ownerOfText is the owner scope of a scanned tenant_id.
func ownerOfText(tenantID pgtype.Text) ports.OwnerScope {
	if !tenantID.Valid {
		return ports.Tenantless()
	}
	return ports.OwnerOf(tenantID.String)
}

// gateError maps the sentinel row of a closed admission gate.
func gateError(code int32) error {
	reason := ports.UnavailableLockContention
	switch code {
	case gateReadOnly:
		reason = ports.UnavailableReadOnly
	case gateIsolation:
		reason = ports.UnavailableUnsupportedIsolation
	case gateInactiveEngine:
		reason = ports.UnavailableInactiveEngine
	case gateLocked:
		reason = ports.UnavailableLockContention
	}
	return &ports.ClaimPolicyUnavailableError{Reason: reason}
}

// claimError maps admission failures: a read-only transaction or a lock
// that could not be taken means the policy is unavailable right now.
func claimError(err error) error {
	if pgErr, ok := pgError(err); ok {
		switch pgErr.Code {
		case codeReadOnlyTransaction:
			return &ports.ClaimPolicyUnavailableError{Reason: ports.UnavailableReadOnly}
		case codeLockNotAvailable:
			return &ports.ClaimPolicyUnavailableError{Reason: ports.UnavailableLockContention}
		}
	}
	return dbError("claim", err)
}

// RefreshClaim stamps a current claim as alive (see ports.RunStore and
// sqlRefreshClaim).
func (s *Store) RefreshClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) (err error) {
	end := s.observeOperation(ctx, "refresh")
	defer func() {
		switch {
		case errors.Is(err, ports.ErrClaimLost):
			end("claim_lost", false)
		default:
			end(resultOf(err), err == nil)
		}
	}()
	if now.IsZero() {
		return invalidArg("now", "is required")
	}
	// A run id no text can hold names no row (and would reach PostgreSQL
	// as an encoding error).
	tok, ok := tokenArg(token)
	if !ok || !ports.TextID(runID) {
		return claimLost(runID)
	}
	tag, err := s.pool.Exec(ctx, s.stmt.refreshClaim, runID, tok, s.storeNow())
	if err != nil {
		return dbError("refresh claim", err)
	}
	if tag.RowsAffected() != 1 {
		return claimLost(runID)
	}
	return nil
}

func claimLost(runID string) error {
	return fmt.Errorf("%w: run %q", ports.ErrClaimLost, runID)
}

// ReleaseClaim idempotently hands back a current claim with an immediate
// wake (see ports.RunStore and sqlReleaseClaim). It announces nothing.
func (s *Store) ReleaseClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) (err error) {
	matched := false
	end := s.observeOperation(ctx, "release")
	defer func() { end(resultOf(err), matched) }()
	if now.IsZero() {
		return invalidArg("now", "is required")
	}
	tok, ok := tokenArg(token)
	if !ok || !ports.TextID(runID) {
		return nil
	}
	// The pool pings only connections idle for over a second, so after
	// the server closed its sessions (terminated, or a pooler restarted)
	// a statement may meet a dead one, once per pooled connection. A
	// release matches only the current token, so it is tried again on
	// another connection rather than leaving the run to the orphan TTL.
	tag, err := s.pool.Exec(ctx, s.stmt.releaseClaim, runID, tok, ports.Micros(now), s.storeNow())
	for retries := s.pool.Stat().MaxConns(); err != nil && retries > 0 && sessionLost(err) && ctx.Err() == nil; retries-- {
		tag, err = s.pool.Exec(ctx, s.stmt.releaseClaim, runID, tok, ports.Micros(now), s.storeNow())
	}
	if err != nil {
		return dbError("release claim", err)
	}
	matched = tag.RowsAffected() == 1
	return nil
}

// AbandonClaim hands back a claim before execution (see ports.RunStore and
// sqlAbandonClaim).
func (s *Store) AbandonClaim(ctx context.Context, runID string, token ports.ClaimToken, p claim.AbandonParams) (res ports.AbandonResult, err error) {
	end := s.observeOperation(ctx, "abandon")
	defer func() {
		if err != nil {
			end(resultOf(err), false)
			return
		}
		end(string(res), res != ports.AbandonStale)
	}()
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("%w: %w", ports.ErrInvalidArgument, err)
	}
	tok, ok := tokenArg(token)
	if !ok || !ports.TextID(runID) {
		return ports.AbandonStale, nil
	}
	var base, capNanos *int64
	if p.NonPoisoning && p.Backoff != nil {
		b, c := int64(p.Backoff.Base), int64(p.Backoff.Cap)
		base, capNanos = &b, &c
	}
	var poisoned bool
	err = s.pool.QueryRow(ctx, s.stmt.abandonClaim, runID, tok, p.ExpectedSeq, ports.Micros(p.Now),
		ports.Micros(p.RetryAt), p.MaxClaimAbandons, p.NonPoisoning, base, capNanos).Scan(&poisoned)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ports.AbandonStale, nil
	case err != nil:
		return "", dbError("abandon claim", err)
	case poisoned:
		return ports.AbandonPoisoned, nil
	default:
		return ports.AbandonRescheduled, nil
	}
}

// RetryPoisonedRun clears poison with an immediate wake and announces it, in
// one transaction under the run's row lock (see ports.RunStore).
func (s *Store) RetryPoisonedRun(ctx context.Context, scope ports.Scope, runID string, now time.Time) (_ *run.Run, err error) {
	end := s.observeOperation(ctx, "poison_recovery")
	defer func() {
		if errors.Is(err, ports.ErrInactiveRun) {
			end("inactive", false)
			return
		}
		end(resultOf(err), err == nil)
	}()
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if now.IsZero() {
		return nil, invalidArg("now", "is required")
	}
	if !ports.TextID(runID) {
		return nil, runNotFound(runID)
	}
	var result *run.Run
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		row, err := s.readRun(ctx, tx, s.stmt.lockRun, scope, runID)
		if err != nil {
			return keep(err)
		}
		doc, err := row.decode()
		if err != nil {
			return keep(err)
		}
		if doc.Status.Terminal() {
			return keep(fmt.Errorf("%w: run %q is %s", ports.ErrInactiveRun, runID, doc.Status))
		}
		result = doc
		if row.poisonedAt == nil {
			return nil // healthy: unchanged, no announcement
		}
		var recovered, announced int64
		if err := tx.QueryRow(ctx, s.stmt.recoverPoisoned, row.id, ports.Micros(now), s.schema, s.storeNow()).
			Scan(&recovered, &announced); err != nil {
			return err
		}
		if recovered != 1 {
			return keep(fmt.Errorf("docket postgres: poison recovery of run %q changed %d rows", runID, recovered))
		}
		return nil
	})
	if err != nil {
		return nil, unkept("retry poisoned run", err)
	}
	return result, nil
}
