//go:build wireinject

package cli

// Regenerate wire_gen.go with `make generate` after editing this file.

import (
	"context"

	"github.com/google/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/cmd/wiring"
)

// openPostgres assembles the CLI's engine on PostgreSQL: LISTEN/NOTIFY
// wake-ups (--poll-only disables them through the engine config), the
// settings' telemetry (none unless the worker serves --metrics-addr), and
// the built-in example nodes.
func openPostgres(ctx context.Context, s wiring.Settings) (*wiring.Runtime, func(), error) {
	wire.Build(
		wiring.AdmittingPostgresSet,
		wiring.ListenSet,
		wiring.SettingsTelemetrySet,
		wiring.EngineSet,
		demo.Registry,
		wire.FieldsOf(new(wiring.Settings), "DatabaseURL", "Schema", "Engine", "Logger", "Admission"),
	)
	return nil, nil, nil
}

// openMemory assembles the CLI's engine on the in-memory store (the
// demo's fallback).
func openMemory(s wiring.Settings) (*wiring.Runtime, error) {
	wire.Build(
		wiring.AdmittingMemorySet,
		wiring.NoTelemetrySet,
		wiring.EngineSet,
		demo.Registry,
		wire.FieldsOf(new(wiring.Settings), "Engine", "Logger", "Admission"),
	)
	return nil, nil
}

// openDatabase connects to PostgreSQL without opening a store, for the
// commands that create or check the schema.
func openDatabase(ctx context.Context, s wiring.Settings) (*pgxpool.Pool, func(), error) {
	wire.Build(
		wiring.DatabaseSet,
		wire.FieldsOf(new(wiring.Settings), "DatabaseURL"),
	)
	return nil, nil, nil
}
