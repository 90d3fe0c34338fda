package main

import (
	"context"
	"io"
	"time"

	"github.com/google/wire"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/docketgo/docket/adapters/otel"
	"github.com/docketgo/docket/ports"
)

// TelemetryOutput is where the OpenTelemetry exporters write (JSON lines
// of spans and metrics). A real deployment would use OTLP exporters
// instead; the provider set is the only thing that changes.
type TelemetryOutput io.Writer

// OTelSet provides ports.Telemetry on OpenTelemetry: an SDK tracer and
// meter provider exporting to TelemetryOutput, wrapped by adapters/otel.
// Swap it for wiring.NoTelemetrySet to record nothing.
var OTelSet = wire.NewSet(newTracerProvider, newMeterProvider, newOTelTelemetry)

// shutdownTimeout bounds the final flush of the exporters.
const shutdownTimeout = 5 * time.Second

func newTracerProvider(out TelemetryOutput) (*sdktrace.TracerProvider, func(), error) {
	exporter, err := stdouttrace.New(stdouttrace.WithWriter(out))
	if err != nil {
		return nil, nil, err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = tp.Shutdown(ctx) // flushes the batch
	}, nil
}

func newMeterProvider(out TelemetryOutput) (*sdkmetric.MeterProvider, func(), error) {
	exporter, err := stdoutmetric.New(stdoutmetric.WithWriter(out))
	if err != nil {
		return nil, nil, err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exporter)))
	return mp, func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		_ = mp.Shutdown(ctx) // exports the final collection
	}, nil
}

func newOTelTelemetry(tp *sdktrace.TracerProvider, mp *sdkmetric.MeterProvider) (ports.Telemetry, error) {
	return otel.New(otel.Config{TracerProvider: tp, MeterProvider: mp})
}
