package migrations_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// SQLSTATEs the schema raises.
const (
	checkViolation     = "23514"
	foreignKeyViolated = "23503"
	integrityViolation = "23000"
)

// Invariant 56: direct SQL cannot leave a run row in an invalid queue
// shape; the named CHECK constraint says which rule it broke.
func TestQueueShapeChecksRejectInvalidRows(t *testing.T) {
	t.Parallel()
	conn, schema := migratedSchema(t, 0)
	f := fixture{t: t, db: conn, schema: schema}

	cases := []struct {
		name       string
		from       shape
		set        string
		constraint string
	}{
		{"healthy running row with both wake and claim", ready,
			"claim_token = gen_random_uuid(), claimed_at = now()", "docket_runs_running_schedule_check"},
		{"healthy running row with neither wake nor claim", ready,
			"wake_at = NULL", "docket_runs_running_schedule_check"},
		{"claimed row losing its claim without a wake", claimed,
			"claim_token = NULL, claimed_at = NULL", "docket_runs_running_schedule_check"},
		{"waiting row with a wake", waiting,
			"wake_at = now()", "docket_runs_waiting_terminal_idle_check"},
		{"waiting row with a claim", waiting,
			"claim_token = gen_random_uuid(), claimed_at = now()", "docket_runs_waiting_terminal_idle_check"},
		{"terminal row with a wake", done,
			"wake_at = now()", "docket_runs_waiting_terminal_idle_check"},
		{"poisoned row with a claim", poisoned,
			"claim_token = gen_random_uuid(), claimed_at = now()", "docket_runs_poisoned_shape_check"},
		{"poisoned row with a wake", poisoned,
			"wake_at = now()", "docket_runs_poisoned_shape_check"},
		{"claim token without claimed_at", ready,
			"wake_at = NULL, claim_token = gen_random_uuid()", "docket_runs_claim_pair_check"},
		{"poison without a reason", ready,
			"wake_at = NULL, poisoned_at = now()", "docket_runs_poison_pair_check"},
		{"terminal row without finished_at", done,
			"finished_at = NULL", "docket_runs_finished_at_check"},
		{"running row with finished_at", ready,
			"finished_at = now()", "docket_runs_finished_at_check"},
		{"unknown status", waiting,
			"status = 'created'", "docket_runs_status_check"},
		{"empty tenant id", ready,
			"tenant_id = ''", "docket_runs_tenant_id_check"},
		{"negative claim attempts", ready,
			"claim_attempts = -1", "docket_runs_counters_check"},
		{"negative checkpoint sequence", ready,
			"checkpoint_seq = -1", "docket_runs_counters_check"},
		{"negative event sequence", ready,
			"event_seq = -1", "docket_runs_event_seq_check"},
		{"admitted waiting row", waiting,
			"tenant_admitted_at = now()", "docket_runs_tenant_admission_shape_check"},
		{"admitted poisoned row", poisoned,
			"tenant_admitted_at = now()", "docket_runs_tenant_admission_shape_check"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := f
			f.t = t
			runID := fmt.Sprintf("run-%d", i)
			f.insertRun(runID, "tenant-a", tc.from)

			pgErr := f.tryExec(`UPDATE `+f.table("docket_runs")+` SET `+tc.set+` WHERE run_id = $1`, runID)
			require.NotNil(t, pgErr, "the database accepted %s", tc.set)
			assert.Equal(t, checkViolation, pgErr.Code)
			assert.Equal(t, tc.constraint, pgErr.ConstraintName)
		})
	}
}

// The same rules, stated from the spec's derived views and checked over
// every combination of status, wake, claim, poison and finished_at: the
// database accepts a row exactly when the rules say it is valid.
func TestQueueShapeChecksAcceptExactlyTheValidShapes(t *testing.T) {
	t.Parallel()
	conn, schema := migratedSchema(t, 0)
	f := fixture{t: t, db: conn, schema: schema}
	f.insertRun("probe", "", ready)
	ctx := testContext(t)

	for _, status := range []string{"running", "waiting", "done", "failed", "cancelled"} {
		for combo := range 16 {
			wake, claim, poison, finished := combo&1 != 0, combo&2 != 0, combo&4 != 0, combo&8 != 0
			terminal := status == "done" || status == "failed" || status == "cancelled"
			var valid bool
			switch {
			case finished != terminal:
				valid = false
			case status != "running": // waiting and terminal rows are idle
				valid = !wake && !claim && !poison
			case poison: // poisoned: running, idle until recovered
				valid = !wake && !claim
			default: // healthy running: exactly one of wake and claim
				valid = wake != claim
			}

			name := fmt.Sprintf("%s wake=%v claim=%v poisoned=%v finished=%v", status, wake, claim, poison, finished)
			tx, err := conn.Begin(ctx)
			require.NoError(t, err)
			_, err = tx.Exec(ctx, `UPDATE `+f.table("docket_runs")+` SET status = $1,
				wake_at = CASE WHEN $2 THEN now() END,
				claim_token = CASE WHEN $3 THEN gen_random_uuid() END,
				claimed_at = CASE WHEN $3 THEN now() END,
				poisoned_at = CASE WHEN $4 THEN now() END,
				poison_reason = CASE WHEN $4 THEN 'max_claim_attempts_exceeded' END,
				finished_at = CASE WHEN $5 THEN now() END
				WHERE run_id = 'probe'`, status, wake, claim, poison, finished)
			require.NoError(t, tx.Rollback(ctx))
			if valid {
				assert.NoError(t, err, name)
				continue
			}
			var pgErr *pgconn.PgError
			if assert.ErrorAs(t, err, &pgErr, name) {
				assert.Equal(t, checkViolation, pgErr.Code, name)
			}
		}
	}
}

// Invariant 57: unfinished_count is exactly the scope's non-terminal runs,
// and nothing but the run triggers can change it.
func TestUnfinishedCountTracksNonTerminalRuns(t *testing.T) {
	t.Parallel()
	conn, schema := migratedSchema(t, 0)
	f := fixture{t: t, db: conn, schema: schema}

	const k, j = 5, 2
	shapes := []shape{ready, claimed, waiting, poisoned, ready}
	for i := range k {
		f.insertRun(fmt.Sprintf("a-%d", i), "tenant-a", shapes[i])
	}
	f.insertRun("b-0", "tenant-b", ready)
	f.insertRun("t-0", "", waiting)
	require.Equal(t, int64(k), f.unfinished("tenant-a"))

	for i := range j {
		f.setShape(fmt.Sprintf("a-%d", i), done)
	}
	assert.Equal(t, int64(k-j), f.unfinished("tenant-a"), "k non-terminal runs, j terminated")
	assert.Equal(t, int64(1), f.unfinished("tenant-b"), "other scopes are untouched")
	assert.Equal(t, int64(1), f.unfinished(""), "the tenantless scope is counted under ''")

	f.exec(`UPDATE ` + f.table("docket_runs") + ` SET step = step + 1, wake_at = now() WHERE run_id = 'a-4'`)
	assert.Equal(t, int64(k-j), f.unfinished("tenant-a"), "non-status updates do not count")
	f.exec(`DELETE FROM ` + f.table("docket_runs") + ` WHERE run_id = 'a-0'`)
	assert.Equal(t, int64(k-j), f.unfinished("tenant-a"), "deleting a terminal run (pruning) does not count")
	f.exec(`DELETE FROM ` + f.table("docket_runs") + ` WHERE run_id = 'a-4'`)
	assert.Equal(t, int64(k-j-1), f.unfinished("tenant-a"), "deleting an unfinished run does")
	f.setShape("a-1", ready)
	assert.Equal(t, int64(k-j), f.unfinished("tenant-a"), "reopening a terminal run counts again")

	f.publish("tenant-z")
	f.exec(`INSERT INTO ` + f.table("docket_claim_partitions") + ` (scope_key) VALUES ('tenant-empty')`)
	require.Equal(t, int64(0), f.unfinished("tenant-empty"), "a new partition gets its schedule row")

	rejected := []struct {
		name    string
		sql     string
		code    string
		message string
	}{
		{"setting the count directly", `UPDATE ` + f.table("docket_claim_schedule") + ` SET unfinished_count = 0 WHERE scope_key = 'tenant-a'`,
			integrityViolation, "maintained by triggers"},
		{"raising the count directly", `UPDATE ` + f.table("docket_claim_schedule") + ` SET unfinished_count = unfinished_count + 1`,
			integrityViolation, "maintained by triggers"},
		{"moving a membership", `UPDATE ` + f.table("docket_claim_schedule") + ` SET scope_key = 'moved' WHERE scope_key = 'tenant-empty'`,
			integrityViolation, "immutable"},
		{"deleting a non-empty membership", `DELETE FROM ` + f.table("docket_claim_schedule") + ` WHERE scope_key = 'tenant-a'`,
			foreignKeyViolated, "unfinished run"},
		{"deleting the partition of a scope with unfinished runs", `DELETE FROM ` + f.table("docket_claim_partitions") + ` WHERE scope_key = 'tenant-a'`,
			foreignKeyViolated, "unfinished run"},
		{"deleting an empty membership behind its partition's back", `DELETE FROM ` + f.table("docket_claim_schedule") + ` WHERE scope_key = 'tenant-empty'`,
			integrityViolation, "docket_claim_partitions"},
		{"truncating runs with their events", `TRUNCATE ` + f.table("docket_events") + `, ` + f.table("docket_runs"), integrityViolation, "use DELETE"},
		{"truncating runs with cascade", `TRUNCATE ` + f.table("docket_runs") + ` CASCADE`, integrityViolation, "use DELETE"},
		{"truncating the schedule", `TRUNCATE ` + f.table("docket_claim_schedule"), integrityViolation, "authoritative"},
		{"changing a run's owner", `UPDATE ` + f.table("docket_runs") + ` SET tenant_id = 'tenant-b' WHERE run_id = 'a-2'`,
			integrityViolation, "immutable"},
		{"inserting a run whose scope has no partition", `INSERT INTO ` + f.table("docket_runs") + `
			(run_id, tenant_id, graph_id, graph_hash, status, state, wake_at, inserted_at, started_at, updated_at)
			VALUES ('z-0', 'tenant-z', 'g', 'h1', 'running', '\x00', now(), now(), now(), now())`,
			foreignKeyViolated, "no docket_claim_schedule membership"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			f := f
			f.t = t
			pgErr := f.tryExec(tc.sql)
			require.NotNil(t, pgErr, "the database accepted: %s", tc.sql)
			assert.Equal(t, tc.code, pgErr.Code)
			assert.Contains(t, pgErr.Message, tc.message)
		})
	}

	assert.Equal(t, int64(k-j), f.unfinished("tenant-a"), "rejected statements changed nothing")
	f.exec(`DELETE FROM ` + f.table("docket_claim_partitions") + ` WHERE scope_key = 'tenant-empty'`)
	assert.Equal(t, int64(-1), f.unfinished("tenant-empty"), "an empty partition leaves with its membership")
}

// After any sequence of inserts, status changes (of one run, or of several
// runs across scopes in one statement) and deletes, every scope's
// unfinished_count equals its count of non-terminal runs.
func TestUnfinishedCountMatchesTheRunsUnderAnyHistory(t *testing.T) {
	t.Parallel()
	conn, schema := migratedSchema(t, 0)
	ctx := testContext(t)
	scopes := []string{"", "tenant-a", "tenant-b"}
	allShapes := []shape{ready, claimed, waiting, poisoned, done}

	rapid.Check(t, func(rt *rapid.T) {
		tx, err := conn.Begin(ctx)
		require.NoError(rt, err)
		defer func() { _ = tx.Rollback(ctx) }()
		f := fixture{t: rt, db: tx, schema: schema}
		var runs []string

		steps := rapid.IntRange(1, 25).Draw(rt, "steps")
		for step := range steps {
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op == 0 || len(runs) == 0:
				runID := fmt.Sprintf("run-%d", step)
				f.insertRun(runID, rapid.SampledFrom(scopes).Draw(rt, "scope"), rapid.SampledFrom(allShapes).Draw(rt, "shape"))
				runs = append(runs, runID)
			case op == 1:
				f.setShape(rapid.SampledFrom(runs).Draw(rt, "run"), rapid.SampledFrom(allShapes).Draw(rt, "shape"))
			case op == 2:
				// One statement moves several runs, of any scopes, to one shape.
				some := rapid.SliceOfNDistinct(rapid.SampledFrom(runs), 1, len(runs), rapid.ID[string]).Draw(rt, "runs")
				f.exec(`UPDATE `+f.table("docket_runs")+` SET `+shapeSet[rapid.SampledFrom(allShapes).Draw(rt, "shape")]+
					` WHERE run_id = ANY($1)`, some)
			default:
				i := rapid.IntRange(0, len(runs)-1).Draw(rt, "delete")
				f.exec(`DELETE FROM `+f.table("docket_runs")+` WHERE run_id = $1`, runs[i])
				runs = append(runs[:i], runs[i+1:]...)
			}
		}

		rows, err := tx.Query(ctx, `
			SELECT s.scope_key, s.unfinished_count,
			       (SELECT count(*) FROM `+f.table("docket_runs")+` r
			        WHERE r.scope_key = s.scope_key AND r.status NOT IN ('done', 'failed', 'cancelled'))
			FROM `+f.table("docket_claim_schedule")+` s`)
		require.NoError(rt, err)
		type tally struct {
			Scope          string
			Counted, Truth int64
		}
		tallies, err := pgx.CollectRows(rows, pgx.RowToStructByPos[tally])
		require.NoError(rt, err)
		for _, row := range tallies {
			if row.Counted != row.Truth {
				rt.Fatalf("scope %q: unfinished_count %d, non-terminal runs %d", row.Scope, row.Counted, row.Truth)
			}
		}
	})
}
