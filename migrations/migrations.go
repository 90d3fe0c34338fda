package migrations

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"text/template"

	"github.com/jackc/pgx/v5"
)

const (
	// CurrentVersion is the schema version this build reads and writes.
	CurrentVersion = 2
	// DefaultSchema is the schema used when Options.Schema is empty.
	DefaultSchema = "public"
	// maxSchemaBytes is PostgreSQL's identifier limit (NAMEDATALEN - 1).
	maxSchemaBytes = 63
)

var (
	// ErrInvalidSchema reports a schema name outside ^[a-z_][a-z0-9_]*$ or
	// longer than 63 bytes. It is returned before any SQL is sent.
	ErrInvalidSchema = errors.New("invalid docket schema name")
	// ErrInvalidTarget reports a migration target outside 0..CurrentVersion.
	ErrInvalidTarget = errors.New("invalid docket migration target")
	// ErrSchemaVersion reports a database whose Docket schema is not exactly
	// CurrentVersion, or whose shape does not match it. Errors carrying it
	// are *VersionError values.
	ErrSchemaVersion = errors.New("docket schema version mismatch")
)

// Querier is what Status, Check and ResolveSchema need: *pgx.Conn,
// *pgxpool.Pool, *pgxpool.Conn and pgx.Tx all satisfy it.
type Querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Conn is what Up and Down need to open their own READ COMMITTED
// transaction: *pgx.Conn, *pgxpool.Pool and *pgxpool.Conn satisfy it.
type Conn interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Options selects the schema and the version to migrate to.
type Options struct {
	// Schema is the schema holding Docket's tables; "" means "public".
	Schema string
	// Target is the version to end at. For Up, 0 means CurrentVersion, and
	// a target at or below the recorded version changes nothing (Up never
	// downgrades). For Down, 0 removes every Docket object, and a target at
	// or above the recorded version changes nothing.
	Target int
}

// Result reports what a migration did.
type Result struct {
	// Schema is the schema that was migrated.
	Schema string
	// From is the version recorded before the migration, To the one after.
	From, To int
}

// Changed reports whether the migration applied any step.
func (r Result) Changed() bool { return r.From != r.To }

// VersionError is returned by Check (and ResolveSchema) when the schema
// cannot be used by this build. errors.Is(err, ErrSchemaVersion) holds.
type VersionError struct {
	// Schema is the schema that was checked ("" when none was found on the
	// search path).
	Schema string
	// Found is the recorded version; 0 when no Docket tables exist.
	Found int
	// Want is the version this build requires (CurrentVersion).
	Want int
	// Missing names the shape elements absent although Found == Want.
	Missing []string
}

func (e *VersionError) Error() string {
	up, down := migrateCommand("up", e.Schema), migrateCommand("down", e.Schema)
	switch {
	case e.Schema == "":
		return fmt.Sprintf(`docket: no docket_runs table on the database's search_path; `+
			`run "docket migrate up" to install schema version %d in schema public, `+
			`or name the schema that holds it (docket --schema or DOCKET_SCHEMA)`, e.Want)
	case e.Found == 0:
		return fmt.Sprintf(`docket: schema %q has no Docket tables (version 0) but this build requires version %d; `+
			`run %q against this database`, e.Schema, e.Want, up)
	case e.Found < e.Want:
		return fmt.Sprintf(`docket: schema %q is at version %d but this build requires version %d; `+
			`stop the workers and run %q against this database`, e.Schema, e.Found, e.Want, up)
	case e.Found > e.Want:
		return fmt.Sprintf(`docket: schema %q is at version %d, newer than this build supports (%d); `+
			`run a newer Docket, or %q with the build that installed it`, e.Schema, e.Found, e.Want, down)
	default:
		return fmt.Sprintf(`docket: schema %q is recorded as version %d but lacks %s; `+
			`it was altered outside "docket migrate": restore it, or reinstall it with %q and %q`,
			e.Schema, e.Found, strings.Join(e.Missing, ", "), down, up)
	}
}

// migrateCommand is the docket command that migrates schema: without
// --schema, "docket migrate" works on public.
func migrateCommand(verb, schema string) string {
	if schema == "" || schema == "public" {
		return "docket migrate " + verb
	}
	return "docket migrate " + verb + " --schema " + schema
}

// Is makes errors.Is(err, ErrSchemaVersion) hold.
func (e *VersionError) Is(target error) bool { return target == ErrSchemaVersion }

var schemaPattern = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// ValidateSchema reports, wrapping ErrInvalidSchema, why name cannot be a
// Docket schema name. The empty string is not valid here; Options treat it
// as DefaultSchema before validating.
func ValidateSchema(name string) error {
	if len(name) > maxSchemaBytes || !schemaPattern.MatchString(name) {
		return fmt.Errorf("%w %q: it must match ^[a-z_][a-z0-9_]*$ and be 1 to %d bytes",
			ErrInvalidSchema, name, maxSchemaBytes)
	}
	return nil
}

// schemaOrDefault validates a configured schema, "" meaning DefaultSchema.
func schemaOrDefault(name string) (string, error) {
	if name == "" {
		return DefaultSchema, nil
	}
	return name, ValidateSchema(name)
}

// Up migrates the schema forward to opts.Target (default CurrentVersion) in
// one transaction under the schema's migration lock, creating a
// non-public schema first when it does not exist.
func Up(ctx context.Context, conn Conn, opts Options) (Result, error) {
	schema, err := schemaOrDefault(opts.Schema)
	if err != nil {
		return Result{}, err
	}
	target := opts.Target
	if target == 0 {
		target = CurrentVersion
	}
	if target < 1 || target > CurrentVersion {
		return Result{}, fmt.Errorf("%w %d: Up accepts 1 to %d (0 means %d)", ErrInvalidTarget, opts.Target, CurrentVersion, CurrentVersion)
	}
	return migrate(ctx, conn, schema, true, func(from int) ([]*template.Template, int) {
		if from >= target {
			return nil, from
		}
		var scripts []*template.Template
		for _, s := range steps[from:target] {
			scripts = append(scripts, s.up)
		}
		return scripts, target
	})
}

// Down migrates the schema back to opts.Target (default 0: remove every
// Docket object) in one transaction under the schema's migration lock. The
// schema itself is never dropped.
func Down(ctx context.Context, conn Conn, opts Options) (Result, error) {
	schema, err := schemaOrDefault(opts.Schema)
	if err != nil {
		return Result{}, err
	}
	target := opts.Target
	if target < 0 || target > CurrentVersion {
		return Result{}, fmt.Errorf("%w %d: Down accepts 0 to %d", ErrInvalidTarget, opts.Target, CurrentVersion)
	}
	return migrate(ctx, conn, schema, false, func(from int) ([]*template.Template, int) {
		if from <= target {
			return nil, from
		}
		var scripts []*template.Template
		for v := from; v > target; v-- {
			scripts = append(scripts, steps[v-1].down)
		}
		return scripts, target
	})
}

// migrate runs the scripts plan chooses for the recorded version, then
// records the new version, all in one transaction holding the schema's
// migration lock. The version is read after the lock is held, so a
// migrator that waited sees its predecessor's work.
func migrate(ctx context.Context, conn Conn, schema string, createSchema bool,
	plan func(from int) ([]*template.Template, int)) (Result, error) {
	// READ COMMITTED, so statements after the lock see what the previous
	// holder committed.
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return Result{}, fmt.Errorf("docket migrations: begin: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()

	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, migrationLockKey(schema)); err != nil {
		return Result{}, fmt.Errorf("docket migrations: take the migration lock of schema %q: %w", schema, err)
	}
	quoted := pgx.Identifier{schema}.Sanitize()
	if createSchema && schema != DefaultSchema {
		// CREATE SCHEMA IF NOT EXISTS demands CREATE on the database even
		// when the schema exists, which a role migrating a schema made
		// for it by an administrator need not have: create only a missing
		// one.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regnamespace($1) IS NOT NULL`, quoted).Scan(&exists); err != nil {
			return Result{}, fmt.Errorf("docket migrations: look up schema %q: %w", schema, err)
		}
		if !exists {
			if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+quoted); err != nil {
				return Result{}, fmt.Errorf("docket migrations: create schema %q: %w", schema, err)
			}
		}
	}
	from, err := Status(ctx, tx, schema)
	if err != nil {
		return Result{}, err
	}
	if from > CurrentVersion {
		return Result{}, &VersionError{Schema: schema, Found: from, Want: CurrentVersion}
	}
	scripts, to := plan(from)
	if len(scripts) == 0 {
		return Result{Schema: schema, From: from, To: from}, nil
	}
	for _, script := range scripts {
		sql, err := render(script, quoted)
		if err != nil {
			return Result{}, err
		}
		// No arguments: pgx sends the file with the simple protocol, which
		// runs its several statements inside this transaction.
		if _, err := tx.Exec(ctx, sql); err != nil {
			return Result{}, fmt.Errorf("docket migrations: %s on schema %q: %w", script.Name(), schema, err)
		}
	}
	if to > 0 {
		record := fmt.Sprintf("COMMENT ON TABLE %s.docket_runs IS '%d'", quoted, to)
		if _, err := tx.Exec(ctx, record); err != nil {
			return Result{}, fmt.Errorf("docket migrations: record version %d on schema %q: %w", to, schema, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return Result{}, fmt.Errorf("docket migrations: commit schema %q at version %d: %w", schema, to, err)
	}
	return Result{Schema: schema, From: from, To: to}, nil
}

// migrationLockKey names the advisory lock of one schema's migrations; the
// pruner uses "docket:pruner:" + schema the same way.
func migrationLockKey(schema string) string { return "docket:migrate:" + schema }

// Status returns the version recorded on schema's docket_runs table: 0 when
// the table does not exist or carries no comment. schema "" means "public".
func Status(ctx context.Context, q Querier, schema string) (int, error) {
	schema, err := schemaOrDefault(schema)
	if err != nil {
		return 0, err
	}
	var comment *string
	err = q.QueryRow(ctx, `
		SELECT obj_description(c.oid, 'pg_class')
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relname = 'docket_runs' AND c.relkind IN ('r', 'p')`,
		schema).Scan(&comment)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && comment == nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("docket migrations: read the version of schema %q: %w", schema, err)
	}
	version, err := strconv.Atoi(strings.TrimSpace(*comment))
	if err != nil || version < 0 {
		return 0, fmt.Errorf("docket migrations: %q.docket_runs has comment %q, which is not a Docket schema version", schema, *comment)
	}
	return version, nil
}

// The objects of the current version whose absence a store would not
// notice until it had done harm: the tables, and the triggers and their
// functions that keep the claim schedule's counts exact.
var (
	currentTables = []string{
		"docket_claim_partitions", "docket_claim_policy", "docket_claim_schedule",
		"docket_events", "docket_graph_versions", "docket_runs",
	}
	currentTriggers = []string{
		"docket_claim_schedule_delete_guard", "docket_claim_schedule_guard", "docket_claim_schedule_partition_insert",
		"docket_claim_schedule_run_activity", "docket_claim_schedule_run_delete",
		"docket_claim_schedule_run_insert", "docket_claim_schedule_run_owner", "docket_claim_schedule_run_truncate_guard",
		"docket_claim_schedule_truncate_guard",
	}
	currentFunctions = []string{
		"docket_claim_schedule_activity_v1", "docket_claim_schedule_guard_v1", "docket_claim_schedule_partition_v1",
	}
)

// Check verifies that schema is at exactly CurrentVersion and has its
// shape: docket_runs.tenant_admitted_at and docket_runs.event_seq, every
// table, and the triggers (enabled) and functions that keep the claim
// schedule's counts exact. Any mismatch is a *VersionError, matched by
// errors.Is(err, ErrSchemaVersion), whose message tells the operator what
// to run. schema "" means "public".
func Check(ctx context.Context, q Querier, schema string) error {
	schema, err := schemaOrDefault(schema)
	if err != nil {
		return err
	}
	found, err := Status(ctx, q, schema)
	if err != nil {
		return err
	}
	if found != CurrentVersion {
		return &VersionError{Schema: schema, Found: found, Want: CurrentVersion}
	}
	var hasAdmission, hasEventSeq bool
	var tables, triggers, disabled, functions []string
	// The catalogs, not information_schema: its views list only what the
	// current role has privileges on, and a role without grants on
	// docket_runs would be told that its columns are missing.
	err = q.QueryRow(ctx, `
		SELECT
			EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
			        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			        WHERE n.nspname = $1 AND c.relname = 'docket_runs' AND c.relkind IN ('r', 'p')
			          AND a.attname = 'tenant_admitted_at' AND a.attnum > 0 AND NOT a.attisdropped),
			EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
			        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
			        WHERE n.nspname = $1 AND c.relname = 'docket_runs' AND c.relkind IN ('r', 'p')
			          AND a.attname = 'event_seq' AND a.attnum > 0 AND NOT a.attisdropped),
			ARRAY(SELECT name FROM unnest($2::text[]) AS name WHERE NOT EXISTS (
				SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = $1 AND c.relname = name AND c.relkind IN ('r', 'p'))),
			ARRAY(SELECT name FROM unnest($3::text[]) AS name WHERE NOT EXISTS (
				SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
				JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = $1 AND t.tgname = name AND NOT t.tgisinternal)),
			-- A disabled trigger (or one that fires only in replica
			-- sessions) counts nothing on a normal session: runs would go
			-- uncounted and their closing commits underflow.
			ARRAY(SELECT name FROM unnest($3::text[]) AS name WHERE EXISTS (
				SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
				JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
				WHERE n.nspname = $1 AND t.tgname = name AND NOT t.tgisinternal AND t.tgenabled NOT IN ('O', 'A'))),
			ARRAY(SELECT name FROM unnest($4::text[]) AS name WHERE NOT EXISTS (
				SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
				WHERE n.nspname = $1 AND p.proname = name))`,
		schema, currentTables, currentTriggers, currentFunctions).Scan(&hasAdmission, &hasEventSeq, &tables, &triggers, &disabled, &functions)
	if err != nil {
		return fmt.Errorf("docket migrations: check the shape of schema %q: %w", schema, err)
	}
	var missing []string
	if !hasAdmission {
		missing = append(missing, "column docket_runs.tenant_admitted_at")
	}
	if !hasEventSeq {
		missing = append(missing, "column docket_runs.event_seq")
	}
	for _, kind := range []struct {
		what  string
		names []string
	}{{"table", tables}, {"trigger", triggers}, {"enabled trigger", disabled}, {"function", functions}} {
		for _, name := range kind.names {
			missing = append(missing, kind.what+" "+name)
		}
	}
	if len(missing) > 0 {
		return &VersionError{Schema: schema, Found: found, Want: CurrentVersion, Missing: missing}
	}
	return nil
}

// ResolveSchema returns the schema the backend should use: configured when
// set (after validation), else the schema of the docket_runs table that the
// connection's search_path resolves, as the reference does at startup. When
// no docket_runs table is visible it returns a *VersionError.
func ResolveSchema(ctx context.Context, q Querier, configured string) (string, error) {
	if configured != "" {
		if err := ValidateSchema(configured); err != nil {
			return "", err
		}
		return configured, nil
	}
	var schema string
	err := q.QueryRow(ctx, `
		SELECT n.nspname
		FROM pg_catalog.pg_class c
		JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass('docket_runs')`).Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", &VersionError{Want: CurrentVersion}
	}
	if err != nil {
		return "", fmt.Errorf("docket migrations: resolve the schema of docket_runs: %w", err)
	}
	if err := ValidateSchema(schema); err != nil {
		return "", fmt.Errorf("docket migrations: the search_path resolves docket_runs in a schema Docket cannot address: %w", err)
	}
	return schema, nil
}
