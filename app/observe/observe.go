// Package observe delivers committed checkpoints to checkpoint observers,
// after the commit and best effort: each observer runs in its own
// goroutine under a deadline, a failure, panic or runtime.Goexit is
// logged and counted, and nothing an observer does can delay, veto or
// roll back the commit it observes.
//
// It is not an event log. Observers may miss checkpoints (a crash right
// after commit) or see one twice; the retained events in the EventStore
// are the durable record.
package observe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

// Commit is one committed checkpoint as an observer sees it. Each observer
// receives its own deep copy, so it may keep or change it freely.
type Commit struct {
	// Owner is the scope that owns the run (Tenantless or Tenant).
	Owner      ports.OwnerScope
	Checkpoint run.Checkpoint
	// Disposition says when the run advances next.
	Disposition run.Disposition
}

// Observer receives committed checkpoints. Each call runs in its own
// goroutine, so calls may overlap and arrive out of commit order (order by
// Checkpoint.Seq when it matters); an error is reported (logged and
// counted), never retried. A call must return once its context ends (at
// the deliverer's Timeout): one that ignores it keeps its goroutine. Use
// observers for hints, caches and projections only.
type Observer interface {
	ObserveCheckpoint(ctx context.Context, c Commit) error
}

// Func adapts a function to Observer.
type Func func(ctx context.Context, c Commit) error

// ObserveCheckpoint calls f.
func (f Func) ObserveCheckpoint(ctx context.Context, c Commit) error { return f(ctx, c) }

// Results of the checkpoint.observer span and failure fact.
const (
	ResultCallbackError = "callback_error"
	ResultPanic         = "exception"
	// ResultDropped is a commit not delivered to an observer that already
	// had MaxInFlight calls running (a failure fact only: no call, no span).
	ResultDropped = "dropped"
)

// DefaultTimeout bounds one observer call when Deliverer.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultMaxInFlight bounds one observer's running calls when
// Deliverer.MaxInFlight is zero.
const DefaultMaxInFlight = 1024

// Deliverer runs the after-commit work of one engine: the committed
// telemetry fact and the observers. The zero value delivers to nobody and
// reports to nobody; it is safe for concurrent use.
type Deliverer struct {
	Observers []Observer
	Telemetry ports.Telemetry // nil: ports.NopTelemetry
	Logger    *slog.Logger    // nil: slog.Default()
	// Timeout bounds one observer call: its context's deadline (zero or
	// less: DefaultTimeout).
	Timeout time.Duration
	// MaxInFlight bounds the calls of one observer running at once (zero
	// or less: DefaultMaxInFlight). A commit arriving while an observer is
	// at the bound is dropped for that observer: counted, and logged once
	// an overload. Without a bound, an observer slower than the commit
	// rate would pile up goroutines, each holding a copy of a checkpoint.
	MaxInFlight int

	// A counter rather than a sync.WaitGroup: deliveries may start while
	// Wait is waiting, which a WaitGroup forbids.
	mu      sync.Mutex
	closed  bool
	running int
	idle    chan struct{} // closed when running drops to zero; nil at zero
	// Per observer (by index): calls running, and whether commits are
	// being dropped since the last call that started.
	inFlight   []int
	overloaded []bool
}

// Committed reports a committed moment: it emits the committed telemetry
// fact and starts every observer. It returns immediately. ctx only bounds
// the observers' lifetime: observers keep running after the caller's
// request ends but stop when ctx's values say so (ctx is detached from
// cancellation). After Close, the fact is still emitted but no observer
// is called.
func (d *Deliverer) Committed(ctx context.Context, owner ports.OwnerScope, m *run.Moment) {
	if d == nil || m == nil || m.Run == nil {
		return
	}
	d.telemetry().Committed(ctx, Fact(m))
	if len(d.Observers) == 0 {
		return
	}
	detached := context.WithoutCancel(ctx)
	for i, o := range d.Observers {
		started, dropped, firstDrop := d.begin(i)
		if dropped {
			d.dropped(ctx, m, firstDrop)
		}
		if !started {
			continue
		}
		c := Commit{Owner: owner, Checkpoint: cloneCheckpoint(m.Checkpoint()), Disposition: m.Disposition}
		go func() {
			defer d.end(i)
			d.deliver(detached, o, c)
		}()
	}
}

// Wait blocks until no observer call is running or ctx ends. Calls that
// start while it waits are waited for too.
func (d *Deliverer) Wait(ctx context.Context) error {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops accepting deliveries (later commits call no observer) and
// then waits like Wait. Calling it again only waits.
func (d *Deliverer) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return d.Wait(ctx)
}

// begin counts a call of observer i about to start. It does not start
// once closed, or when the observer is at MaxInFlight: then the commit is
// dropped for it, and firstDrop says whether this drop begins an overload.
func (d *Deliverer) begin(i int) (started, dropped, firstDrop bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false, false, false
	}
	if d.inFlight == nil {
		d.inFlight = make([]int, len(d.Observers))
		d.overloaded = make([]bool, len(d.Observers))
	}
	if d.inFlight[i] >= d.maxInFlight() {
		firstDrop = !d.overloaded[i]
		d.overloaded[i] = true
		return false, true, firstDrop
	}
	d.overloaded[i] = false
	d.inFlight[i]++
	if d.running == 0 {
		d.idle = make(chan struct{})
	}
	d.running++
	return true, false, false
}

// end counts a call of observer i as returned.
func (d *Deliverer) end(i int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.inFlight[i]--
	d.running--
	if d.running == 0 {
		close(d.idle)
		d.idle = nil
	}
}

// dropped reports a commit an overloaded observer does not get: counted
// every time, logged when an overload begins.
func (d *Deliverer) dropped(ctx context.Context, m *run.Moment, firstDrop bool) {
	d.telemetry().Emit(ctx, ports.FactObserverFailure, ports.Measurements{"count": 1},
		ports.Label{Key: ports.LabelCheckpointType, Value: string(m.CheckpointType)},
		ports.Label{Key: ports.LabelResult, Value: ResultDropped})
	if firstDrop {
		d.logger().Warn("docket checkpoint observer overloaded: dropping commits until one of its calls returns",
			slog.Int("max_in_flight", d.maxInFlight()),
			slog.String("run_id", m.Run.ID),
			slog.Int64("checkpoint_seq", m.Run.CheckpointSeq))
	}
}

func (d *Deliverer) deliver(ctx context.Context, o Observer, c Commit) {
	timeout := d.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, span := d.telemetry().StartSpan(ctx, ports.FactObserver,
		ports.Label{Key: ports.LabelCheckpointType, Value: string(c.Checkpoint.Type)})
	// What a call that never returns leaves: it ended its goroutine with
	// runtime.Goexit (t.FailNow in a test's observer), and the deferred
	// report still counts, logs and ends its span.
	result, err := ResultPanic, errObserverExited
	defer func() { d.report(ctx, span, c, result, err) }()
	result, err = call(ctx, o, c)
}

// errObserverExited is the failure of an observer that called
// runtime.Goexit.
var errObserverExited = errors.New("observer called runtime.Goexit")

// report ends an observer call's span and reports its failure, if any.
func (d *Deliverer) report(ctx context.Context, span ports.Span, c Commit, result string, err error) {
	if err == nil {
		span.End(ports.ResultOK, nil)
		return
	}
	// Reported before the span ends, so the failure lands on it.
	d.telemetry().Emit(ctx, ports.FactObserverFailure, ports.Measurements{"count": 1},
		ports.Label{Key: ports.LabelCheckpointType, Value: string(c.Checkpoint.Type)},
		ports.Label{Key: ports.LabelResult, Value: result})
	span.End(result, nil)
	// Identities are fine in a log line at warn level; payloads and state
	// are not, so only the error text is logged.
	d.logger().Warn("docket checkpoint observer failed after commit",
		slog.String("run_id", c.Checkpoint.Run.ID),
		slog.String("checkpoint_type", string(c.Checkpoint.Type)),
		slog.Int64("checkpoint_seq", c.Checkpoint.Seq),
		slog.String("result", result),
		slog.String("error", err.Error()))
}

// call runs one observer, turning a panic into an error.
func call(ctx context.Context, o Observer, c Commit) (result string, err error) {
	defer func() {
		if p := recover(); p != nil {
			result, err = ResultPanic, fmt.Errorf("observer panicked: %v", p)
		}
	}()
	if err := o.ObserveCheckpoint(ctx, c); err != nil {
		return ResultCallbackError, err
	}
	return "", nil
}

func (d *Deliverer) maxInFlight() int {
	if d.MaxInFlight <= 0 {
		return DefaultMaxInFlight
	}
	return d.MaxInFlight
}

func (d *Deliverer) telemetry() ports.Telemetry {
	if d.Telemetry == nil {
		return ports.NopTelemetry{}
	}
	return d.Telemetry
}

func (d *Deliverer) logger() *slog.Logger {
	if d.Logger == nil {
		return slog.Default()
	}
	return d.Logger
}

// Fact is the committed telemetry fact of a moment (no identities).
func Fact(m *run.Moment) ports.CommittedFact {
	f := ports.CommittedFact{
		CheckpointType: m.CheckpointType,
		Disposition:    m.Disposition.Kind,
		CheckpointSeq:  m.Run.CheckpointSeq,
		Step:           m.Run.Step,
	}
	if m.CheckpointType == run.CheckpointRetryScheduled && m.Disposition.Kind == run.DispositionAt {
		f.RetryDelay = max(m.Disposition.At.Sub(m.ProposedAt), 0)
	}
	return f
}

func cloneCheckpoint(c run.Checkpoint) run.Checkpoint {
	out := c
	out.Run = c.Run.Clone()
	out.Metadata = c.Metadata.Clone()
	out.Events = make([]run.Event, len(c.Events))
	for i, e := range c.Events {
		e.Payload = cloneMap(e.Payload)
		e.Metadata = e.Metadata.Clone()
		out.Events[i] = e
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return value.Clone(m).(map[string]any)
}
