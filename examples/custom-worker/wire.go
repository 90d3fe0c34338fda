//go:build wireinject

package main

// Regenerate wire_gen.go with `make generate` (from the repository root)
// after editing this file.

import (
	"context"

	"github.com/google/wire"

	"github.com/docketgo/docket/cmd/wiring"
)

// Each injector is one deployment profile. They differ only in the
// provider sets for the notifier and the telemetry; wire writes the
// constructor of each (wire_gen.go).

// listenOTel: LISTEN/NOTIFY wake-ups and OpenTelemetry.
func listenOTel(ctx context.Context, s wiring.Settings, out TelemetryOutput) (*wiring.Runtime, func(), error) {
	wire.Build(wiring.PostgresSet, wiring.ListenSet, OTelSet, wiring.EngineSet, Registry, settingsFields)
	return nil, nil, nil
}

// listenPlain: LISTEN/NOTIFY wake-ups, no telemetry.
func listenPlain(ctx context.Context, s wiring.Settings) (*wiring.Runtime, func(), error) {
	wire.Build(wiring.PostgresSet, wiring.ListenSet, wiring.NoTelemetrySet, wiring.EngineSet, Registry, settingsFields)
	return nil, nil, nil
}

// pollOTel: polling only (e.g. behind PgBouncer in transaction pooling
// mode) and OpenTelemetry.
func pollOTel(ctx context.Context, s wiring.Settings, out TelemetryOutput) (*wiring.Runtime, func(), error) {
	wire.Build(wiring.PostgresSet, wiring.PollOnlySet, OTelSet, wiring.EngineSet, Registry, settingsFields)
	return nil, nil, nil
}

// pollPlain: polling only, no telemetry.
func pollPlain(ctx context.Context, s wiring.Settings) (*wiring.Runtime, func(), error) {
	wire.Build(wiring.PostgresSet, wiring.PollOnlySet, wiring.NoTelemetrySet, wiring.EngineSet, Registry, settingsFields)
	return nil, nil, nil
}

var settingsFields = wire.FieldsOf(new(wiring.Settings), "DatabaseURL", "Schema", "Engine", "Logger")
