package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/docketgo/docket/migrations"
)

func (a *app) migrateCommand() *cobra.Command {
	var upTarget, downTarget int
	var yes bool
	up := &cobra.Command{
		Use:   "up",
		Short: "Install or upgrade the Docket schema to this build's version",
		Long: "up migrates the schema forward, one version per transaction, to --target (default: the\n" +
			"version this build needs). Concurrent migrators of one schema serialize; a version already\n" +
			"installed is left alone, and up never downgrades: a --target below the schema's version\n" +
			"is refused.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.migrate(cmd.Context(), true, upTarget)
		},
	}
	up.Flags().IntVar(&upTarget, "target", migrations.CurrentVersion, "version to end at")
	down := &cobra.Command{
		Use:   "down",
		Short: "Downgrade the Docket schema (deletes data; needs --yes)",
		Long: "down migrates the schema back to --target, one version per transaction. Target 0 (the\n" +
			"default) removes every Docket table with its runs, events and graphs; the schema itself stays.\n" +
			"Without --schema it acts on public only; a schema the search_path finds must be named.\n" +
			"A --target above the schema's version is refused: down never upgrades.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !yes {
				return usagef("migrate down deletes Docket tables and their data: pass --yes to confirm")
			}
			return a.migrate(cmd.Context(), false, downTarget)
		},
	}
	down.Flags().IntVar(&downTarget, "target", 0, "version to end at (0 removes every Docket object)")
	down.Flags().BoolVar(&yes, "yes", false, "confirm that data may be deleted")
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the schema's version and whether it matches this build",
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return a.migrateStatus(cmd.Context()) },
	}
	return groupCommand("migrate", "Manage the Docket schema (up, down, status)", up, down, status)
}

type migrateJSON struct {
	Schema  string `json:"schema"`
	From    int    `json:"from"`
	To      int    `json:"to"`
	Changed bool   `json:"changed"`
}

// migrate steps one version per transaction so the bar shows progress
// and an interruption keeps every finished version.
func (a *app) migrate(ctx context.Context, upward bool, target int) error {
	lowest := 0
	if upward {
		lowest = 1
	}
	if target < lowest || target > migrations.CurrentVersion {
		direction := "down"
		if upward {
			direction = "up"
		}
		return usagef("--target %d: %s needs a version from %d to %d", target, direction, lowest, migrations.CurrentVersion)
	}
	pool, cleanup, err := a.openPool(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	schema, err := a.migrationSchema(ctx, pool)
	if err != nil {
		return err
	}
	if !upward && a.schema == "" && schema != migrations.DefaultSchema {
		// Before the search_path decided, down acted on public: a
		// schema found on it loses its data only when named.
		return usagef("migrate down: the search_path finds Docket's tables in schema %q; pass --schema %s to confirm that its data may be deleted", schema, schema)
	}
	from, err := migrations.Status(ctx, pool, schema)
	if err != nil {
		return err
	}
	if from > migrations.CurrentVersion {
		return &migrations.VersionError{Schema: schema, Found: from, Want: migrations.CurrentVersion}
	}
	// A target on the other side of the installed version asks for the
	// opposite direction: saying "nothing to do" would claim it is there.
	switch {
	case upward && target < from:
		return usagef("--target %d: schema %q is at version %d, above the target, and up never downgrades (migrate down --target %d --yes does, deleting data)", target, schema, from, target)
	case !upward && target > from:
		return usagef("--target %d: schema %q is at version %d, below the target, and down never upgrades (migrate up --target %d does)", target, schema, from, target)
	}
	var versions []int
	switch {
	case upward:
		for v := from + 1; v <= target; v++ {
			versions = append(versions, v)
		}
	default:
		for v := from - 1; v >= target; v-- {
			versions = append(versions, v)
		}
	}
	b := a.progress(len(versions), "migrating "+schema)
	// The plan was read before the lock: a concurrent migrator may have
	// done some or all of it since, so report what the steps did (each
	// reads the version under the lock), not what was planned.
	to, changedFrom := from, -1
	for _, v := range versions {
		step, err := migrateTo(ctx, pool, schema, upward, v)
		if err != nil {
			b.finish()
			return err
		}
		if step.Changed() && changedFrom < 0 {
			changedFrom = step.From
		}
		to = step.To
		b.add(1)
	}
	b.finish()
	if changedFrom >= 0 {
		from = changedFrom
	} else {
		from = to
	}
	res := migrateJSON{Schema: schema, From: from, To: to, Changed: from != to}
	if a.json {
		return printJSON(a.io.Out, res)
	}
	if !res.Changed {
		fmt.Fprintf(a.io.Out, "schema %q is at version %d: nothing to do\n", schema, from)
		return nil
	}
	fmt.Fprintf(a.io.Out, "schema %q migrated from version %d to %d\n", schema, from, to)
	return nil
}

func migrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, upward bool, v int) (migrations.Result, error) {
	opts := migrations.Options{Schema: schema, Target: v}
	if upward {
		return migrations.Up(ctx, pool, opts)
	}
	return migrations.Down(ctx, pool, opts)
}

// migrationSchema is the schema the other commands use: --schema, else
// the one in which the search_path finds docket_runs, else the
// migrations' default (public) for a first install.
func (a *app) migrationSchema(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	schema, err := migrations.ResolveSchema(ctx, pool, a.schema)
	var missing *migrations.VersionError
	if errors.As(err, &missing) {
		return migrations.DefaultSchema, nil
	}
	return schema, err
}

type migrateStatusJSON struct {
	Schema         string   `json:"schema"`
	Version        int      `json:"version"`
	CurrentVersion int      `json:"current_version"`
	UpToDate       bool     `json:"up_to_date"`
	Problem        string   `json:"problem,omitempty"`
	Missing        []string `json:"missing,omitempty"`
}

func (a *app) migrateStatus(ctx context.Context) error {
	pool, cleanup, err := a.openPool(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	schema, err := a.migrationSchema(ctx, pool)
	if err != nil {
		return err
	}
	version, err := migrations.Status(ctx, pool, schema)
	if err != nil {
		return err
	}
	res := migrateStatusJSON{Schema: schema, Version: version, CurrentVersion: migrations.CurrentVersion}
	if err := migrations.Check(ctx, pool, schema); err != nil {
		var ve *migrations.VersionError
		if !errors.As(err, &ve) {
			return err
		}
		res.Problem, res.Missing = strings.TrimPrefix(ve.Error(), "docket: "), ve.Missing
	} else {
		res.UpToDate = true
	}
	if a.json {
		return printJSON(a.io.Out, res)
	}
	if res.UpToDate {
		fmt.Fprintf(a.io.Out, "schema %q: version %d, up to date\n", schema, version)
		return nil
	}
	fmt.Fprintf(a.io.Out, "schema %q: version %d, this build needs %d\n%s\n", schema, version, migrations.CurrentVersion, res.Problem)
	return nil
}
