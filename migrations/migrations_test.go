package migrations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
)

var (
	wantTables = []string{
		"docket_claim_partitions", "docket_claim_policy", "docket_claim_schedule",
		"docket_events", "docket_graph_versions", "docket_runs",
	}
	wantRunChecks = []string{
		"docket_runs_claim_pair_check", "docket_runs_counters_check", "docket_runs_event_seq_check",
		"docket_runs_finished_at_check", "docket_runs_poison_pair_check", "docket_runs_poisoned_shape_check",
		"docket_runs_running_schedule_check", "docket_runs_status_check", "docket_runs_tenant_admission_shape_check",
		"docket_runs_tenant_id_check", "docket_runs_waiting_terminal_idle_check",
	}
	wantIndexes = []string{
		"docket_claim_partitions_pkey", "docket_claim_policy_pkey", "docket_claim_schedule_pkey",
		"docket_claim_schedule_ring_position_key",
		"docket_events_inserted_at_id_index", "docket_events_run_id_seq_index",
		"docket_graph_versions_pkey", "docket_graph_versions_scope_graph_index",
		"docket_graph_versions_scope_revision_order_index",
		"docket_runs_claimed_at_id_index", "docket_runs_graph_id_graph_hash_index", "docket_runs_list_order_index",
		"docket_runs_pkey", "docket_runs_poisoned_at_index", "docket_runs_run_id_index",
		"docket_runs_scope_admitted_expired_index", "docket_runs_scope_admitted_index",
		"docket_runs_scope_admitted_ready_index", "docket_runs_scope_queued_ready_index",
		"docket_runs_status_updated_at_index", "docket_runs_tenant_id_graph_id_status_index",
		"docket_runs_tenant_id_status_index", "docket_runs_tenant_list_order_index",
		"docket_runs_updated_at_id_index", "docket_runs_wake_at_id_index",
	}
	wantTriggers = []string{
		"docket_claim_schedule_delete_guard", "docket_claim_schedule_guard", "docket_claim_schedule_partition_insert",
		"docket_claim_schedule_run_activity", "docket_claim_schedule_run_delete",
		"docket_claim_schedule_run_insert", "docket_claim_schedule_run_owner", "docket_claim_schedule_run_truncate_guard",
		"docket_claim_schedule_truncate_guard",
	}
	wantFunctions = []string{
		"docket_claim_schedule_activity_v1", "docket_claim_schedule_guard_v1", "docket_claim_schedule_partition_v1",
	}
)

// inventory lists the Docket objects present in schema.
type inventory struct {
	Tables, RunChecks, Indexes, Triggers, Functions []string
}

func inventoryOf(t *testing.T, q db, schema string) inventory {
	t.Helper()
	return inventory{
		Tables: names(t, q, `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relkind = 'r'`, schema),
		RunChecks: names(t, q, `SELECT con.conname::text FROM pg_constraint con
			JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = $1 AND c.relname = 'docket_runs' AND con.contype = 'c'`, schema),
		Indexes: names(t, q, `SELECT indexname::text FROM pg_indexes WHERE schemaname = $1`, schema),
		Triggers: names(t, q, `SELECT tg.tgname::text FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT tg.tgisinternal`, schema),
		Functions: names(t, q, `SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
			WHERE n.nspname = $1`, schema),
	}
}

func TestUpDownUp(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{"", "docket_private"} {
		name := schema
		if name == "" {
			name = "default public schema"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			conn := pgtest.New(t).Connect(t)
			physical := schema
			if physical == "" {
				physical = migrations.DefaultSchema
			}

			version, err := migrations.Status(ctx, conn, schema)
			require.NoError(t, err)
			assert.Zero(t, version, "a fresh database has no Docket schema")

			result, err := migrations.Up(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assert.Equal(t, migrations.Result{Schema: physical, From: 0, To: migrations.CurrentVersion}, result)
			assert.True(t, result.Changed())
			assertCurrent(t, conn, physical)

			var mode string
			var policies int
			require.NoError(t, conn.QueryRow(ctx, `SELECT min(admission_mode), count(*) FROM `+
				pgx.Identifier{physical, "docket_claim_policy"}.Sanitize()).Scan(&mode, &policies))
			assert.Equal(t, "legacy", mode)
			assert.Equal(t, 1, policies)

			again, err := migrations.Up(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assert.False(t, again.Changed(), "Up on the current version does nothing")

			result, err = migrations.Down(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assert.Equal(t, migrations.Result{Schema: physical, From: migrations.CurrentVersion, To: 0}, result)
			version, err = migrations.Status(ctx, conn, schema)
			require.NoError(t, err)
			assert.Zero(t, version)
			assert.Equal(t, inventory{}, inventoryOf(t, conn, physical), "Down leaves no Docket object behind")
			var schemaExists bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, physical).Scan(&schemaExists))
			assert.True(t, schemaExists, "Down never drops the schema itself")

			result, err = migrations.Up(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assert.Equal(t, 0, result.From)
			assertCurrent(t, conn, physical)
		})
	}
}

// assertCurrent checks version, startup check and the full object inventory.
func assertCurrent(t *testing.T, conn *pgx.Conn, schema string) {
	t.Helper()
	ctx := testContext(t)
	version, err := migrations.Status(ctx, conn, schema)
	require.NoError(t, err)
	assert.Equal(t, migrations.CurrentVersion, version)
	assert.NoError(t, migrations.Check(ctx, conn, schema))

	var comment string
	require.NoError(t, conn.QueryRow(ctx, `SELECT obj_description(($1 || '.docket_runs')::regclass, 'pg_class')`,
		pgx.Identifier{schema}.Sanitize()).Scan(&comment))
	assert.Equal(t, "2", comment, "the version is the docket_runs table comment")

	assert.Equal(t, inventory{
		Tables: wantTables, RunChecks: wantRunChecks, Indexes: wantIndexes,
		Triggers: wantTriggers, Functions: wantFunctions,
	}, inventoryOf(t, conn, schema))
}

func TestUpgradeFromVersion1BackfillsAndDownReturnsToIt(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"public", "custom schema"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			var conn *pgx.Conn
			schema := name
			if schema == "public" {
				conn = migratedConn(t, schema, 1)
			} else {
				conn, schema = migratedSchema(t, 1)
			}
			version, err := migrations.Status(ctx, conn, schema)
			require.NoError(t, err)
			require.Equal(t, 1, version)

			f := fixture{t: t, db: conn, schema: schema}
			f.publish("tenant-a")
			f.publish("")
			f.insertRunOnly("held", "tenant-a", ready)
			f.exec(`UPDATE ` + f.table("docket_runs") + ` SET wake_at = NULL, claim_token = gen_random_uuid(),
				claimed_at = now() - interval '1 second' WHERE run_id = 'held'`)
			f.insertRunOnly("queued", "tenant-a", ready)
			f.insertRunOnly("parked", "", ready)
			f.exec(`UPDATE ` + f.table("docket_runs") + ` SET status = 'waiting', wake_at = NULL WHERE run_id = 'parked'`)
			f.insertRunOnly("finished", "", ready)
			f.exec(`UPDATE ` + f.table("docket_runs") + ` SET status = 'done', wake_at = NULL, finished_at = now() WHERE run_id = 'finished'`)

			result, err := migrations.Up(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assert.Equal(t, migrations.Result{Schema: schema, From: 1, To: 2}, result)
			assertCurrent(t, conn, schema)

			assert.Equal(t, []string{"", "tenant-a"},
				names(t, conn, `SELECT scope_key FROM `+f.table("docket_claim_partitions")))
			assert.Equal(t, int64(2), f.unfinished("tenant-a"))
			assert.Equal(t, int64(1), f.unfinished(""), "the terminal run is not unfinished")
			assert.Equal(t, []string{"held"},
				names(t, conn, `SELECT run_id FROM `+f.table("docket_runs")+` WHERE tenant_admitted_at = claimed_at`),
				"only healthy claimed runs count as admitted")
			assert.Equal(t, []string{"held"},
				names(t, conn, `SELECT run_id FROM `+f.table("docket_runs")+` WHERE tenant_admitted_at IS NOT NULL`))

			result, err = migrations.Down(ctx, conn, migrations.Options{Schema: schema, Target: 1})
			require.NoError(t, err)
			assert.Equal(t, migrations.Result{Schema: schema, From: 2, To: 1}, result)
			version, err = migrations.Status(ctx, conn, schema)
			require.NoError(t, err)
			assert.Equal(t, 1, version)
			assert.Equal(t, inventory{
				Tables:    []string{"docket_events", "docket_graph_versions", "docket_runs"},
				RunChecks: without(wantRunChecks, "docket_runs_tenant_admission_shape_check"),
				Indexes:   version1Indexes(),
			}, inventoryOf(t, conn, schema))
			assert.Equal(t, []string{"finished", "held", "parked", "queued"},
				names(t, conn, `SELECT run_id FROM `+f.table("docket_runs")), "downgrading keeps the runs")
			assert.ErrorIs(t, migrations.Check(ctx, conn, schema), migrations.ErrSchemaVersion)
		})
	}
}

func version1Indexes() []string {
	var out []string
	for _, name := range wantIndexes {
		if !strings.HasPrefix(name, "docket_claim_") && !strings.HasPrefix(name, "docket_runs_scope_") {
			out = append(out, name)
		}
	}
	return out
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

func TestUpNeverDowngradesAndDownNeverUpgrades(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := migratedConn(t, "", 0)
	result, err := migrations.Up(ctx, conn, migrations.Options{Target: 1})
	require.NoError(t, err)
	assert.Equal(t, migrations.Result{Schema: "public", From: 2, To: 2}, result)

	_, err = migrations.Down(ctx, conn, migrations.Options{Target: 1})
	require.NoError(t, err)
	result, err = migrations.Down(ctx, conn, migrations.Options{Target: 2})
	require.NoError(t, err)
	assert.Equal(t, migrations.Result{Schema: "public", From: 1, To: 1}, result)
}

func TestFailedMigrationLeavesThePreviousVersion(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn := pgtest.New(t).Connect(t)
	// A foreign table in the way makes version 1 fail halfway through.
	_, err := conn.Exec(ctx, `CREATE TABLE public.docket_events (id int)`)
	require.NoError(t, err)

	_, err = migrations.Up(ctx, conn, migrations.Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "docket_events")

	version, err := migrations.Status(ctx, conn, "")
	require.NoError(t, err)
	assert.Zero(t, version)
	assert.Equal(t, []string{"docket_events"}, inventoryOf(t, conn, "public").Tables,
		"the tables created before the failure were rolled back")
}

func TestCheckRefusesAnythingButTheCurrentShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		target    int    // version to migrate to first; -1 for none
		alter     string // then run this, %s being the quoted schema
		wantFound int
		wantText  []string
	}{
		{"empty schema", -1, "", 0, []string{`has no Docket tables`, `run "docket migrate up --schema `}},
		{"older version", 1, "", 1, []string{"at version 1", "requires version 2", `run "docket migrate up --schema `}},
		{"newer version", 2, `COMMENT ON TABLE %s.docket_runs IS '3'`, 3,
			[]string{"at version 3", "newer than this build"}},
		{"version 2 without the admission column", 2, `ALTER TABLE %s.docket_runs DROP COLUMN tenant_admitted_at`, 2,
			[]string{"lacks column docket_runs.tenant_admitted_at"}},
		{"version 2 without the schedule", 2, `DROP TABLE %s.docket_claim_schedule`, 2,
			[]string{"lacks table docket_claim_schedule"}},
		{"version 2 without event_seq", 2, `ALTER TABLE %s.docket_runs DROP COLUMN event_seq`, 2,
			[]string{"lacks column docket_runs.event_seq"}},
		// Without it, inserted runs would go uncounted and their scope
		// unclaimed: the store must refuse to start, not corrupt counts.
		{"version 2 without the insertion count", 2, `DROP TRIGGER docket_claim_schedule_run_insert ON %s.docket_runs`, 2,
			[]string{"lacks trigger docket_claim_schedule_run_insert"}},
		// A disabled trigger exists but counts nothing: the same harm.
		{"version 2 with the insertion count disabled", 2,
			`ALTER TABLE %s.docket_runs DISABLE TRIGGER docket_claim_schedule_run_insert`, 2,
			[]string{"lacks enabled trigger docket_claim_schedule_run_insert"}},
		{"version 2 with the schedule guard firing only on replicas", 2,
			`ALTER TABLE %s.docket_claim_schedule ENABLE REPLICA TRIGGER docket_claim_schedule_guard`, 2,
			[]string{"lacks enabled trigger docket_claim_schedule_guard"}},
		{"version 2 without the count function", 2, `DROP FUNCTION %s.docket_claim_schedule_activity_v1 CASCADE`, 2,
			[]string{"function docket_claim_schedule_activity_v1", "trigger docket_claim_schedule_run_activity"}},
		{"version 2 without the events", 2, `DROP TABLE %s.docket_events`, 2,
			[]string{"lacks table docket_events"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, schema := schemaAt(t, tc.target, tc.alter)

			err := migrations.Check(testContext(t), conn, schema)
			require.Error(t, err)
			assert.ErrorIs(t, err, migrations.ErrSchemaVersion)
			var versionErr *migrations.VersionError
			require.ErrorAs(t, err, &versionErr)
			assert.Equal(t, tc.wantFound, versionErr.Found)
			assert.Equal(t, migrations.CurrentVersion, versionErr.Want)
			assert.Equal(t, schema, versionErr.Schema)
			for _, text := range tc.wantText {
				assert.Contains(t, err.Error(), text)
			}
		})
	}

	t.Run("passes after Up", func(t *testing.T) {
		t.Parallel()
		conn, schema := schemaAt(t, -1, "")
		require.ErrorIs(t, migrations.Check(testContext(t), conn, schema), migrations.ErrSchemaVersion)
		_, err := migrations.Up(testContext(t), conn, migrations.Options{Schema: schema})
		require.NoError(t, err)
		assert.NoError(t, migrations.Check(testContext(t), conn, schema))
	})
}

// Check's advice for a version 2 schema altered by hand is to reinstall it
// with Down and Up; that must work whatever was removed.
func TestAnAlteredSchemaCanBeReinstalledAsCheckAdvises(t *testing.T) {
	t.Parallel()
	for _, alter := range []string{
		`ALTER TABLE %s.docket_runs DROP COLUMN tenant_admitted_at`,
		`ALTER TABLE %s.docket_runs DROP COLUMN event_seq`,
		`DROP TABLE %s.docket_claim_schedule`,
		`DROP TABLE %s.docket_claim_policy`,
		`DROP TRIGGER docket_claim_schedule_run_insert ON %s.docket_runs`,
		`DROP FUNCTION %s.docket_claim_schedule_activity_v1 CASCADE`,
		`DROP FUNCTION %s.docket_claim_schedule_guard_v1 CASCADE`,
		`DROP INDEX %s.docket_runs_scope_admitted_index`,
		`DROP TABLE %s.docket_events`,
	} {
		t.Run(alter, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			conn, schema := schemaAt(t, 2, alter)
			err := migrations.Check(ctx, conn, schema)
			if err != nil {
				assert.Contains(t, err.Error(), fmt.Sprintf(`"docket migrate down --schema %s" and "docket migrate up --schema %s"`, schema, schema))
			}

			_, err = migrations.Down(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assert.Equal(t, inventory{}, inventoryOf(t, conn, schema))
			_, err = migrations.Up(ctx, conn, migrations.Options{Schema: schema})
			require.NoError(t, err)
			assertCurrent(t, conn, schema)
		})
	}
}

// schemaAt returns a fresh schema in the shared database, migrated to
// target (-1: left empty) and then altered by alter (%s: quoted schema).
func schemaAt(t *testing.T, target int, alter string) (*pgx.Conn, string) {
	t.Helper()
	database := pgtest.SharedDatabase(t)
	schema := database.NewSchema(t)
	conn := database.Connect(t)
	if target >= 0 {
		_, err := migrations.Up(testContext(t), conn, migrations.Options{Schema: schema, Target: target})
		require.NoError(t, err)
	}
	if alter != "" {
		_, err := conn.Exec(testContext(t), fmt.Sprintf(alter, pgx.Identifier{schema}.Sanitize()))
		require.NoError(t, err)
	}
	return conn, schema
}

func TestStatusRejectsAForeignComment(t *testing.T) {
	t.Parallel()
	conn, schema := schemaAt(t, 2, `COMMENT ON TABLE %s.docket_runs IS 'hand edited'`)
	_, err := migrations.Status(testContext(t), conn, schema)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not a Docket schema version")
	_, err = migrations.Up(testContext(t), conn, migrations.Options{Schema: schema})
	assert.Error(t, err, "Up refuses to guess what a foreign comment means")
}

func TestConcurrentUpMigratesExactlyOnce(t *testing.T) {
	t.Parallel()
	for _, schema := range []string{"public", "docket_race"} {
		t.Run(schema, func(t *testing.T) {
			t.Parallel()
			const migrators = 8
			database := pgtest.New(t)
			conns := make([]*pgx.Conn, migrators)
			for i := range conns {
				conns[i] = database.Connect(t)
			}
			ctx := testContext(t)
			results := make([]migrations.Result, migrators)
			errs := make([]error, migrators)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range conns {
				wg.Go(func() {
					<-start
					results[i], errs[i] = migrations.Up(ctx, conns[i], migrations.Options{Schema: schema})
				})
			}
			close(start)
			wg.Wait()

			applied := 0
			for i := range results {
				require.NoError(t, errs[i])
				assert.Equal(t, migrations.CurrentVersion, results[i].To)
				if results[i].Changed() {
					applied++
					assert.Equal(t, 0, results[i].From)
				}
			}
			assert.Equal(t, 1, applied, "exactly one migrator applies the migrations")
			assertCurrent(t, conns[0], schema)
		})
	}
}

// An administrator creates the schema for an application role that may not
// create schemas itself; that role migrates it.
func TestUpOnAnExistingSchemaNeedsNoCreateOnTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	database := pgtest.New(t)
	admin := database.Connect(t)
	config, err := pgx.ParseConfig(database.URL)
	require.NoError(t, err)
	role := database.Name + "_app" // roles are the server's: unique like the database
	quotedRole := pgx.Identifier{role}.Sanitize()
	for _, sql := range []string{
		// The superuser's password, if the server asks for one.
		`CREATE ROLE ` + quotedRole + ` LOGIN PASSWORD '` + strings.ReplaceAll(config.Password, "'", "''") + `'`,
		`REVOKE CREATE ON DATABASE ` + pgx.Identifier{database.Name}.Sanitize() + ` FROM PUBLIC`,
		`CREATE SCHEMA docket_app AUTHORIZATION ` + quotedRole,
	} {
		_, err := admin.Exec(ctx, sql)
		require.NoError(t, err, sql)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), `DROP OWNED BY `+quotedRole)
		_, _ = admin.Exec(context.Background(), `DROP ROLE `+quotedRole)
	})
	config.User = role
	app, err := pgx.ConnectConfig(ctx, config)
	require.NoError(t, err)
	t.Cleanup(func() { _ = app.Close(context.Background()) })

	_, err = migrations.Up(ctx, app, migrations.Options{Schema: "docket_app"})
	require.NoError(t, err)
	assertCurrent(t, admin, "docket_app")
	_, err = migrations.Up(ctx, app, migrations.Options{Schema: "docket_elsewhere"})
	assert.ErrorContains(t, err, "permission denied", "a missing schema is still created, with the privileges that takes")
}

// A role that may not read Docket's tables still sees the schema's shape:
// a missing grant is not a schema "altered outside docket migrate" whose
// cure would be a reinstall (which deletes every run).
func TestCheckDoesNotMistakeMissingGrantsForAnAlteredSchema(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	database := pgtest.New(t)
	admin := database.Connect(t)
	_, err := migrations.Up(ctx, admin, migrations.Options{Schema: "docket_app"})
	require.NoError(t, err)
	config, err := pgx.ParseConfig(database.URL)
	require.NoError(t, err)
	role := database.Name + "_reader" // roles are the server's: unique like the database
	quotedRole := pgx.Identifier{role}.Sanitize()
	_, err = admin.Exec(ctx, `CREATE ROLE `+quotedRole+` LOGIN PASSWORD '`+strings.ReplaceAll(config.Password, "'", "''")+`'`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), `DROP OWNED BY `+quotedRole)
		_, _ = admin.Exec(context.Background(), `DROP ROLE `+quotedRole)
	})
	config.User = role
	reader, err := pgx.ConnectConfig(ctx, config)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Close(context.Background()) })

	for _, grant := range []string{"", `GRANT USAGE ON SCHEMA docket_app TO ` + quotedRole} {
		if grant != "" {
			_, err := admin.Exec(ctx, grant)
			require.NoError(t, err)
		}
		assert.NoError(t, migrations.Check(ctx, reader, "docket_app"), "after %q", grant)
	}
}

func TestDownOfOneSchemaLeavesTheOthers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn, kept := migratedSchema(t, 0)
	_, dropped := migratedSchema(t, 0)
	_, err := migrations.Down(ctx, conn, migrations.Options{Schema: dropped})
	require.NoError(t, err)
	assertCurrent(t, conn, kept)
	assert.Equal(t, inventory{}, inventoryOf(t, conn, dropped))
}

// countingTracer counts every statement a connection sends.
type countingTracer struct {
	mu    sync.Mutex
	count int
}

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count++
	return ctx
}

func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *countingTracer) statements() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

func TestHostileSchemaNamesAreRejectedBeforeAnySQL(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	database := pgtest.New(t)
	config, err := pgx.ParseConfig(database.URL)
	require.NoError(t, err)
	tracer := &countingTracer{}
	config.Tracer = tracer
	conn, err := pgx.ConnectConfig(ctx, config)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `CREATE TABLE public.y (id int)`)
	require.NoError(t, err)
	before := tracer.statements()

	hostile := []string{
		`x"; drop table y; --`,
		`public"; drop table y; --`,
		"Docket", "1docket", "docket-runs", "docket runs", "docket.runs", "dócket", "docket\x00",
		strings.Repeat("a", 64),
	}
	operations := map[string]func(schema string) error{
		"Up": func(schema string) error {
			_, err := migrations.Up(ctx, conn, migrations.Options{Schema: schema})
			return err
		},
		"Down": func(schema string) error {
			_, err := migrations.Down(ctx, conn, migrations.Options{Schema: schema})
			return err
		},
		"Status": func(schema string) error {
			_, err := migrations.Status(ctx, conn, schema)
			return err
		},
		"Check": func(schema string) error { return migrations.Check(ctx, conn, schema) },
		"ResolveSchema": func(schema string) error {
			_, err := migrations.ResolveSchema(ctx, conn, schema)
			return err
		},
	}
	for _, schema := range hostile {
		for op, run := range operations {
			err := run(schema)
			assert.ErrorIs(t, err, migrations.ErrInvalidSchema, "%s(%q)", op, schema)
			assert.ErrorIs(t, migrations.ValidateSchema(schema), migrations.ErrInvalidSchema)
		}
	}
	assert.Equal(t, before, tracer.statements(), "no statement may reach the server for an invalid name")

	var stillThere bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass('public.y') IS NOT NULL`).Scan(&stillThere))
	assert.True(t, stillThere, "table y survives")

	longest := strings.Repeat("a", 63)
	_, err = migrations.Up(ctx, conn, migrations.Options{Schema: longest})
	require.NoError(t, err, "63 bytes is the limit, not beyond it")
	assertCurrent(t, conn, longest)
}

func TestTargetsOutsideTheKnownVersionsAreRejected(t *testing.T) {
	t.Parallel()
	for _, target := range []int{-1, migrations.CurrentVersion + 1} {
		_, err := migrations.Up(context.Background(), nil, migrations.Options{Target: target})
		assert.ErrorIs(t, err, migrations.ErrInvalidTarget, "Up target %d", target)
		_, err = migrations.Down(context.Background(), nil, migrations.Options{Target: target})
		assert.ErrorIs(t, err, migrations.ErrInvalidTarget, "Down target %d", target)
	}
}

func TestResolveSchemaFollowsTheSearchPath(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	database := pgtest.New(t)
	conn := database.Connect(t)

	_, err := migrations.ResolveSchema(ctx, conn, "")
	require.ErrorIs(t, err, migrations.ErrSchemaVersion, "nothing to resolve in a fresh database")
	assert.Contains(t, err.Error(), `run "docket migrate up"`)

	_, err = migrations.Up(ctx, conn, migrations.Options{})
	require.NoError(t, err)
	schema, err := migrations.ResolveSchema(ctx, conn, "")
	require.NoError(t, err)
	assert.Equal(t, "public", schema)

	_, err = migrations.Up(ctx, conn, migrations.Options{Schema: "docket_private"})
	require.NoError(t, err)
	config, err := pgx.ParseConfig(database.URL)
	require.NoError(t, err)
	config.RuntimeParams["search_path"] = "docket_private"
	private, err := pgx.ConnectConfig(ctx, config)
	require.NoError(t, err)
	t.Cleanup(func() { _ = private.Close(context.Background()) })
	schema, err = migrations.ResolveSchema(ctx, private, "")
	require.NoError(t, err)
	assert.Equal(t, "docket_private", schema)

	schema, err = migrations.ResolveSchema(ctx, private, "configured_wins")
	require.NoError(t, err)
	assert.Equal(t, "configured_wins", schema)
}

func TestErrorsMatchTheirSentinels(t *testing.T) {
	t.Parallel()
	err := error(&migrations.VersionError{Schema: "public", Found: 1, Want: 2})
	assert.True(t, errors.Is(err, migrations.ErrSchemaVersion))
	assert.False(t, errors.Is(err, migrations.ErrInvalidSchema))
}

func TestMigrationsWorkOverTheSimpleProtocol(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	database := pgtest.SharedDatabase(t)
	schema := database.NewSchema(t)
	config, err := pgx.ParseConfig(database.URL)
	require.NoError(t, err)
	config.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol // PgBouncer transaction pooling
	conn, err := pgx.ConnectConfig(ctx, config)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })

	_, err = migrations.Up(ctx, conn, migrations.Options{Schema: schema})
	require.NoError(t, err)
	require.NoError(t, migrations.Check(ctx, conn, schema))
	result, err := migrations.Down(ctx, conn, migrations.Options{Schema: schema})
	require.NoError(t, err)
	assert.Equal(t, 0, result.To)
}

func TestMigrationsRefuseASchemaNewerThanThisBuild(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	conn, schema := schemaAt(t, 2, `COMMENT ON TABLE %s.docket_runs IS '3'`)
	_, err := migrations.Up(ctx, conn, migrations.Options{Schema: schema})
	assert.ErrorIs(t, err, migrations.ErrSchemaVersion)
	_, err = migrations.Down(ctx, conn, migrations.Options{Schema: schema})
	assert.ErrorIs(t, err, migrations.ErrSchemaVersion)
	version, err := migrations.Status(ctx, conn, schema)
	require.NoError(t, err)
	assert.Equal(t, 3, version, "nothing was touched")
	assert.Len(t, inventoryOf(t, conn, schema).Tables, len(wantTables))
}

// The documents a commit rewrites are stored with lz4 where the server was
// built with it, and with the server's default otherwise; the migration
// succeeds either way.
func TestDocumentsAreCompressedWithLz4WhereTheServerHasIt(t *testing.T) {
	t.Parallel()
	conn, schema := migratedSchema(t, migrations.CurrentVersion)
	ctx := testContext(t)

	want := "l"
	_, err := conn.Exec(ctx, `CREATE TEMP TABLE lz4_probe (b bytea COMPRESSION lz4)`)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "0A000" { // feature_not_supported: built without lz4
		want = ""
	} else {
		require.NoError(t, err)
	}

	rows, err := conn.Query(ctx, `SELECT c.relname || '.' || a.attname, a.attcompression::text
		FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'bytea'::regtype
		ORDER BY 1`, schema)
	require.NoError(t, err)
	got := map[string]string{}
	for rows.Next() {
		var column, method string
		require.NoError(t, rows.Scan(&column, &method))
		got[column] = method
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, map[string]string{
		"docket_events.metadata":      want,
		"docket_events.payload":       want,
		"docket_graph_versions.graph": want,
		"docket_runs.state":           want,
	}, got)
}

// The command a version error suggests installs or upgrades the schema
// that was checked: "docket migrate up" alone migrates public, so for any
// other schema the suggestion carries --schema.
func TestVersionErrorsSuggestACommandForTheirSchema(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		err  migrations.VersionError
		want string
	}{
		{"empty public", migrations.VersionError{Schema: "public", Found: 0, Want: 2}, `run "docket migrate up"`},
		{"empty other", migrations.VersionError{Schema: "docket", Found: 0, Want: 2}, `run "docket migrate up --schema docket"`},
		{"older other", migrations.VersionError{Schema: "docket", Found: 1, Want: 2}, `run "docket migrate up --schema docket"`},
		{"none on the search path", migrations.VersionError{Want: 2}, "--schema"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Contains(t, tc.err.Error(), tc.want)
		})
	}
}
