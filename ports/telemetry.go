package ports

import (
	"context"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// Label is one bounded metric label. Values come from small fixed sets
// (operation names, result kinds, classes); identities such as run, tenant
// or graph ids and claim tokens are never labels.
type Label struct {
	Key   string
	Value string
}

// Measurements are the numbers of one telemetry fact.
type Measurements map[string]float64

// Result kinds of operation spans.
const (
	ResultOK         = "ok"
	ResultStaleFence = "stale_fence"
	ResultError      = "error"
	ResultSkipped    = "skipped"
	ResultOther      = "other"
)

// Telemetry receives best-effort operational signals. It can never veto
// or delay a durable write, and it is not a business event log: facts may
// describe rolled-back work, except Committed, which is emitted only after
// a successful commit. Implementations must be safe for concurrent use
// and must not block.
type Telemetry interface {
	// StartSpan begins an operation span (for example "run_store.claim").
	StartSpan(ctx context.Context, operation string, labels ...Label) (context.Context, Span)
	// Emit records one instantaneous fact.
	Emit(ctx context.Context, name string, m Measurements, labels ...Label)
	// Committed records a durable transition after its commit.
	Committed(ctx context.Context, f CommittedFact)
}

// Span is an open operation span.
type Span interface {
	// End closes the span with a bounded result label and measurements.
	End(result string, m Measurements)
}

// CommittedFact describes one committed transition (no identities).
type CommittedFact struct {
	CheckpointType run.CheckpointType
	Disposition    run.DispositionKind
	CheckpointSeq  int64
	Step           int
	RetryDelay     time.Duration // retry_scheduled only
}

// NopTelemetry discards everything.
type NopTelemetry struct{}

// StartSpan returns ctx and a span that does nothing.
func (NopTelemetry) StartSpan(ctx context.Context, _ string, _ ...Label) (context.Context, Span) {
	return ctx, nopSpan{}
}

// Emit does nothing.
func (NopTelemetry) Emit(context.Context, string, Measurements, ...Label) {}

// Committed does nothing.
func (NopTelemetry) Committed(context.Context, CommittedFact) {}

type nopSpan struct{}

func (nopSpan) End(string, Measurements) {}
