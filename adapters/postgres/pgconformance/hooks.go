// Package pgconformance gives the conformance suite direct access to a
// PostgreSQL store's schema: an admission gate that closes the real gate
// and a probe that writes past the store. It lives apart from the adapter
// so that production binaries do not link the suite (and package testing).
package pgconformance

import (
	"context"
	"fmt"

	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Gate closes the admission gate of the store on pool and schema in each
// of the ways a deployment can: the gate row in another engine's mode
// (mode is the store's own admission mode), sessions under REPEATABLE READ
// or read-only (setSession switches the pool's sessions to "repeatable
// read", "read only" or back with ""), or the gate row locked by a
// transaction on a connection of its own.
func Gate(pool *pgxpool.Pool, schema, mode string, setSession func(mode string)) conformance.AdmissionGate {
	return gate{pool: pool, schema: schema, mode: mode, setSession: setSession}
}

// Probe writes to schema directly through pool, bypassing the store, to
// prove that the schema's own constraints and triggers refuse corrupt
// queue states.
func Probe(pool *pgxpool.Pool, schema string) conformance.SchemaProbe {
	return probe{pool: pool, schema: schema}
}

func table(schema, name string) string { return pgx.Identifier{schema, name}.Sanitize() }

type gate struct {
	pool       *pgxpool.Pool
	schema     string
	mode       string
	setSession func(mode string)
}

func (g gate) Close(ctx context.Context, reason string) (func(), error) {
	switch reason {
	case ports.UnavailableInactiveEngine:
		other := claim.AdmissionModeWindowed
		if g.mode == claim.AdmissionModeWindowed {
			other = claim.AdmissionModeLegacy
		}
		if err := g.setMode(ctx, other); err != nil {
			return nil, err
		}
		return func() { _ = g.setMode(context.Background(), g.mode) }, nil
	case ports.UnavailableUnsupportedIsolation:
		g.setSession("repeatable read")
		return func() { g.setSession("") }, nil
	case ports.UnavailableReadOnly:
		g.setSession("read only")
		return func() { g.setSession("") }, nil
	case ports.UnavailableLockContention:
		// A connection of its own: the lock holder must not take one of
		// the store's pooled sessions.
		conn, err := pgx.ConnectConfig(ctx, g.pool.Config().ConnConfig)
		if err != nil {
			return nil, err
		}
		tx, err := conn.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, "SELECT 1 FROM "+table(g.schema, "docket_claim_policy")+" WHERE id = 1 FOR UPDATE")
		}
		if err != nil {
			_ = conn.Close(ctx)
			return nil, err
		}
		return func() {
			_ = tx.Rollback(context.Background())
			_ = conn.Close(context.Background())
		}, nil
	}
	return nil, ports.ErrUnsupported
}

func (g gate) setMode(ctx context.Context, mode string) error {
	_, err := g.pool.Exec(ctx, "UPDATE "+table(g.schema, "docket_claim_policy")+" SET admission_mode = $1 WHERE id = 1", mode)
	return err
}

type probe struct {
	pool   *pgxpool.Pool
	schema string
}

func (p probe) BreakQueueShape(ctx context.Context, runID string, shape conformance.QueueShape) error {
	runs := table(p.schema, "docket_runs")
	var sql string
	switch shape {
	case conformance.ShapeRunningWithWakeAndClaim, conformance.ShapeWaitingWithWake:
		sql = "UPDATE " + runs + " SET wake_at = now() WHERE run_id = $1"
	case conformance.ShapeRunningWithoutWakeOrClaim:
		sql = "UPDATE " + runs + " SET wake_at = NULL WHERE run_id = $1"
	case conformance.ShapePoisonedWithClaim:
		sql = "UPDATE " + runs + " SET claim_token = gen_random_uuid(), claimed_at = now() WHERE run_id = $1"
	default:
		return fmt.Errorf("unknown shape %q", shape)
	}
	tag, err := p.pool.Exec(ctx, sql, runID)
	if err == nil && tag.RowsAffected() != 1 {
		return fmt.Errorf("the write matched %d rows", tag.RowsAffected())
	}
	return err
}

func (p probe) UnfinishedCount(ctx context.Context, owner ports.OwnerScope) (int64, error) {
	var n int64
	err := p.pool.QueryRow(ctx, "SELECT unfinished_count FROM "+table(p.schema, "docket_claim_schedule")+
		" WHERE scope_key = $1", owner.Key()).Scan(&n)
	return n, err
}

func (p probe) TamperAccounting(ctx context.Context, owner ports.OwnerScope, how conformance.Tampering) error {
	schedule := table(p.schema, "docket_claim_schedule")
	var sql string
	var args []any
	switch how {
	case conformance.TamperUpdateCount:
		sql, args = "UPDATE "+schedule+" SET unfinished_count = unfinished_count + 1 WHERE scope_key = $1", []any{owner.Key()}
	case conformance.TamperDeleteMembership:
		sql, args = "DELETE FROM "+schedule+" WHERE scope_key = $1", []any{owner.Key()}
	case conformance.TamperTruncateRuns:
		// Events too, so only the accounting guard (not the events'
		// foreign key) can refuse it.
		sql = "TRUNCATE " + table(p.schema, "docket_runs") + ", " + table(p.schema, "docket_events")
	default:
		return fmt.Errorf("unknown tampering %q", how)
	}
	tag, err := p.pool.Exec(ctx, sql, args...)
	if err == nil && how != conformance.TamperTruncateRuns && tag.RowsAffected() != 1 {
		return fmt.Errorf("the write matched %d rows", tag.RowsAffected())
	}
	return err
}
