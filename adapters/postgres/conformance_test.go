package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
)

// factory gives every invariant a fresh schema, its own pool and a manual
// store clock (the suite drives the columns PostgreSQL would stamp with
// CURRENT_TIMESTAMP or clock_timestamp()); caller-clock columns follow the
// times the suite passes.
func factory(simple bool) conformance.Factory { return policyFactory(simple, nil) }

// policyFactory is factory for a store running policy (nil: claim.Legacy).
func policyFactory(simple bool, policy claim.Policy) conformance.Factory {
	return func(t conformance.T) conformance.Adapter {
		tb, ok := t.(testing.TB)
		if !ok {
			t.Fatalf("the PostgreSQL factory needs a testing.TB, got %T", t)
		}
		clock := conformance.NewManualClock(conformance.ReferenceTime)
		env := newEnv(tb, envOptions{simple: simple, clock: clock, listen: !simple, policy: policy})
		return conformance.Adapter{
			Backend:       env.store,
			Clock:         clock,
			AdmissionGate: gate{env},
			SchemaProbe:   probe{env},
		}
	}
}

func TestConformanceExtendedProtocolWithListener(t *testing.T) {
	t.Parallel()
	report := conformance.Run(t, conformance.Features{
		WakeNotifications: true,
		AdmissionGate:     true,
		SchemaGuards:      true,
	}, factory(false))
	t.Logf("conformance on PostgreSQL (extended protocol, LISTEN):\n%s", report)
	if !report.Passed() {
		t.Errorf("failed invariants: %v", report.Failed())
	}
}

func TestConformanceSimpleProtocolPollOnly(t *testing.T) {
	t.Parallel()
	report := conformance.Run(t, conformance.Features{
		AdmissionGate: true,
		SchemaGuards:  true,
	}, factory(true))
	t.Logf("conformance on PostgreSQL (simple protocol, poll-only):\n%s", report)
	if !report.Passed() {
		t.Errorf("failed invariants: %v", report.Failed())
	}
}

func TestConformanceWindowedInterleave(t *testing.T) {
	t.Parallel()
	report := conformance.Run(t, conformance.Features{
		WakeNotifications: true,
		AdmissionGate:     true,
		SchemaGuards:      true,
		TenantFairPolicy:  true,
	}, policyFactory(false, claim.WindowedInterleave))
	t.Logf("conformance on PostgreSQL (windowed interleave):\n%s", report)
	if !report.Passed() {
		t.Errorf("failed invariants: %v", report.Failed())
	}
}

// gate closes the real admission gate: the gate row in another engine's
// mode, sessions under REPEATABLE READ or read-only, or the gate row
// locked by another transaction.
type gate struct{ env *testEnv }

func (g gate) Close(ctx context.Context, reason string) (func(), error) {
	switch reason {
	case ports.UnavailableInactiveEngine:
		other := claim.AdmissionModeWindowed
		if g.env.mode == claim.AdmissionModeWindowed {
			other = claim.AdmissionModeLegacy
		}
		if err := g.setMode(ctx, other); err != nil {
			return nil, err
		}
		return func() { _ = g.setMode(context.Background(), g.env.mode) }, nil
	case ports.UnavailableUnsupportedIsolation:
		g.env.session.set("repeatable read")
		return func() { g.env.session.set("") }, nil
	case ports.UnavailableReadOnly:
		g.env.session.set("read only")
		return func() { g.env.session.set("") }, nil
	case ports.UnavailableLockContention:
		conn, err := pgx.Connect(ctx, g.env.db.URL)
		if err != nil {
			return nil, err
		}
		tx, err := conn.Begin(ctx)
		if err == nil {
			_, err = tx.Exec(ctx, "SELECT 1 FROM "+g.env.table("docket_claim_policy")+" WHERE id = 1 FOR UPDATE")
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
	_, err := g.env.pool.Exec(ctx, "UPDATE "+g.env.table("docket_claim_policy")+" SET admission_mode = $1 WHERE id = 1", mode)
	return err
}

// probe writes to the schema directly, bypassing the store.
type probe struct{ env *testEnv }

func (p probe) BreakQueueShape(ctx context.Context, runID string, shape conformance.QueueShape) error {
	runs := p.env.table("docket_runs")
	var sql string
	switch shape {
	case conformance.ShapeRunningWithWakeAndClaim:
		sql = "UPDATE " + runs + " SET wake_at = now() WHERE run_id = $1"
	case conformance.ShapeRunningWithoutWakeOrClaim:
		sql = "UPDATE " + runs + " SET wake_at = NULL WHERE run_id = $1"
	case conformance.ShapeWaitingWithWake:
		sql = "UPDATE " + runs + " SET wake_at = now() WHERE run_id = $1"
	case conformance.ShapePoisonedWithClaim:
		sql = "UPDATE " + runs + " SET claim_token = gen_random_uuid(), claimed_at = now() WHERE run_id = $1"
	default:
		return fmt.Errorf("unknown shape %q", shape)
	}
	tag, err := p.env.pool.Exec(ctx, sql, runID)
	if err == nil && tag.RowsAffected() != 1 {
		return fmt.Errorf("the write matched %d rows", tag.RowsAffected())
	}
	return err
}

func (p probe) UnfinishedCount(ctx context.Context, owner ports.OwnerScope) (int64, error) {
	var n int64
	err := p.env.pool.QueryRow(ctx, "SELECT unfinished_count FROM "+p.env.table("docket_claim_schedule")+
		" WHERE scope_key = $1", owner.Key()).Scan(&n)
	return n, err
}

func (p probe) TamperAccounting(ctx context.Context, owner ports.OwnerScope, how conformance.Tampering) error {
	schedule := p.env.table("docket_claim_schedule")
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
		sql = "TRUNCATE " + p.env.table("docket_runs") + ", " + p.env.table("docket_events")
	default:
		return fmt.Errorf("unknown tampering %q", how)
	}
	tag, err := p.env.pool.Exec(ctx, sql, args...)
	if err == nil && how != conformance.TamperTruncateRuns && tag.RowsAffected() != 1 {
		return fmt.Errorf("the write matched %d rows", tag.RowsAffected())
	}
	return err
}
