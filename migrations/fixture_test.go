package migrations_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
)

// db is what fixtures need from a connection or a transaction.
type db interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// migratedConn returns a connection to a fresh database whose schema is
// migrated to target.
func migratedConn(t *testing.T, schema string, target int) *pgx.Conn {
	t.Helper()
	conn := pgtest.New(t).Connect(t)
	_, err := migrations.Up(testContext(t), conn, migrations.Options{Schema: schema, Target: target})
	require.NoError(t, err)
	return conn
}

// tb is what fixtures need from a *testing.T or a *rapid.T.
type tb interface {
	require.TestingT
	Helper()
}

// migratedSchema returns a connection to the test process's shared
// database and a fresh schema in it, migrated to target.
func migratedSchema(t *testing.T, target int) (*pgx.Conn, string) {
	t.Helper()
	database := pgtest.SharedDatabase(t)
	schema := database.NewSchema(t)
	conn := database.Connect(t)
	_, err := migrations.Up(testContext(t), conn, migrations.Options{Schema: schema, Target: target})
	require.NoError(t, err)
	return conn, schema
}

// fixture writes rows into one migrated schema with direct SQL.
type fixture struct {
	t      tb
	db     db
	schema string
}

func (f fixture) table(name string) string { return pgx.Identifier{f.schema, name}.Sanitize() }

func (f fixture) exec(sql string, args ...any) {
	f.t.Helper()
	_, err := f.db.Exec(context.Background(), sql, args...)
	require.NoError(f.t, err, sql)
}

// tryExec runs sql and returns its PostgreSQL error, if any.
func (f fixture) tryExec(sql string, args ...any) *pgconn.PgError {
	f.t.Helper()
	_, err := f.db.Exec(context.Background(), sql, args...)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	require.True(f.t, errors.As(err, &pgErr), "want a PostgreSQL error, got %v", err)
	return pgErr
}

// publish stores graph version "g"/"h1" in scope tenant ("" = tenantless).
func (f fixture) publish(tenant string) {
	f.t.Helper()
	f.exec(`INSERT INTO `+f.table("docket_graph_versions")+` (tenant_id, graph_id, graph_hash, graph)
		VALUES (NULLIF($1, ''), 'g', 'h1', '\x00') ON CONFLICT DO NOTHING`, tenant)
}

// shape is a valid operational shape of a run row.
type shape string

const (
	ready    shape = "ready"
	claimed  shape = "claimed"
	waiting  shape = "waiting"
	poisoned shape = "poisoned"
	done     shape = "done"
)

// insertRun inserts a run of the given shape in scope tenant, creating the
// scope's partition first as the backend does (schema version 2).
func (f fixture) insertRun(runID, tenant string, s shape) {
	f.t.Helper()
	f.publish(tenant)
	f.exec(`INSERT INTO `+f.table("docket_claim_partitions")+` (scope_key) VALUES ($1) ON CONFLICT DO NOTHING`, tenant)
	f.insertRunOnly(runID, tenant, s)
}

// insertRunOnly inserts the run row alone (schema version 1 has no partitions).
func (f fixture) insertRunOnly(runID, tenant string, s shape) {
	f.t.Helper()
	f.exec(`INSERT INTO `+f.table("docket_runs")+`
		(run_id, tenant_id, graph_id, graph_hash, status, state, wake_at, inserted_at, started_at, updated_at)
		VALUES ($1, NULLIF($2, ''), 'g', 'h1', 'running', '\x00', now(), now(), now(), now())`, runID, tenant)
	if s != ready {
		f.setShape(runID, s)
	}
}

// setShape moves a run to a valid shape in one statement.
func (f fixture) setShape(runID string, s shape) {
	f.t.Helper()
	f.exec(`UPDATE `+f.table("docket_runs")+` SET `+shapeSet[s]+` WHERE run_id = $1`, runID)
}

var shapeSet = map[shape]string{
	ready: `status = 'running', wake_at = now(), claim_token = NULL, claimed_at = NULL,
		poisoned_at = NULL, poison_reason = NULL, finished_at = NULL`,
	claimed: `status = 'running', wake_at = NULL, claim_token = gen_random_uuid(), claimed_at = now(),
		poisoned_at = NULL, poison_reason = NULL, finished_at = NULL`,
	waiting: `status = 'waiting', wake_at = NULL, claim_token = NULL, claimed_at = NULL,
		poisoned_at = NULL, poison_reason = NULL, finished_at = NULL`,
	poisoned: `status = 'running', wake_at = NULL, claim_token = NULL, claimed_at = NULL,
		poisoned_at = now(), poison_reason = 'max_claim_attempts_exceeded', finished_at = NULL`,
	done: `status = 'done', wake_at = NULL, claim_token = NULL, claimed_at = NULL,
		poisoned_at = NULL, poison_reason = NULL, finished_at = now()`,
}

// unfinished reads the schedule's count for a scope (-1 when absent).
func (f fixture) unfinished(scope string) int64 {
	f.t.Helper()
	var n int64
	err := f.db.QueryRow(context.Background(),
		`SELECT unfinished_count FROM `+f.table("docket_claim_schedule")+` WHERE scope_key = $1`, scope).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return -1
	}
	require.NoError(f.t, err)
	return n
}

// names runs a query returning one text column, sorted by the query.
func names(t testing.TB, q db, sql string, args ...any) []string {
	t.Helper()
	var out []string
	require.NoError(t, q.QueryRow(context.Background(), `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM (`+sql+`) AS q(name)`, args...).Scan(&out))
	if len(out) == 0 {
		return nil // so an empty inventory compares equal to inventory{}
	}
	return out
}
