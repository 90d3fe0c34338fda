package observe_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

var t0 = time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)

func retryMoment() *run.Moment {
	committed := &run.Run{ID: "r", GraphID: "g", GraphHash: "h", Status: run.StatusRunning, StartedAt: t0, UpdatedAt: t0,
		CheckpointSeq: 1, EventSeq: 2, Metadata: map[string]any{"k": "v"}}
	next := committed.Clone()
	next.UpdatedAt = t0
	return run.Propose(committed, next, nil, run.CheckpointRetryScheduled,
		run.Disposition{Kind: run.DispositionAt, At: t0.Add(250 * time.Millisecond), Reason: run.ReasonRetryBackoff}, t0)
}

// facts records telemetry.
type facts struct {
	ports.NopTelemetry
	mu        sync.Mutex
	committed []ports.CommittedFact
	emitted   []string
}

func (f *facts) Committed(_ context.Context, c ports.CommittedFact) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed = append(f.committed, c)
}

func (f *facts) Emit(_ context.Context, name string, _ ports.Measurements, labels ...ports.Label) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range labels {
		if l.Key == "result" {
			name += ":" + l.Value
		}
	}
	f.emitted = append(f.emitted, name)
}

func TestEveryObserverGetsItsOwnCopyAfterCommit(t *testing.T) {
	t.Parallel()
	m := retryMoment()
	var mu sync.Mutex
	var seen []observe.Commit
	vandal := observe.Func(func(_ context.Context, c observe.Commit) error {
		c.Checkpoint.Run.Metadata["k"] = "changed"
		c.Checkpoint.Metadata.Type = "changed"
		c.Checkpoint.Events[len(c.Checkpoint.Events)-1].Metadata.WakeDisposition = "changed"
		return nil
	})
	watcher := observe.Func(func(_ context.Context, c observe.Commit) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, c)
		return nil
	})
	tel := &facts{}
	d := &observe.Deliverer{Observers: []observe.Observer{vandal, watcher}, Telemetry: tel}
	d.Committed(context.Background(), ports.Tenant("acme"), m)
	require.NoError(t, d.Wait(context.Background()))

	require.Len(t, seen, 1)
	c := seen[0]
	assert.Equal(t, ports.Tenant("acme"), c.Owner)
	assert.Equal(t, run.CheckpointRetryScheduled, c.Checkpoint.Type)
	assert.EqualValues(t, 2, c.Checkpoint.Seq)
	assert.Equal(t, "v", c.Checkpoint.Run.Metadata["k"], "one observer cannot change what another sees")
	assert.Equal(t, "v", m.Run.Metadata["k"], "nor the committed moment")
	assert.Equal(t, run.CheckpointRetryScheduled, c.Checkpoint.Metadata.Type)
	assert.Equal(t, run.DispositionAt, c.Checkpoint.Events[len(c.Checkpoint.Events)-1].Metadata.WakeDisposition)
	assert.Equal(t, run.CheckpointRetryScheduled, m.Metadata.Type)
	assert.Equal(t, run.DispositionAt, m.Events[len(m.Events)-1].Metadata.WakeDisposition)
	assert.Equal(t, run.DispositionAt, c.Disposition.Kind)

	require.Len(t, tel.committed, 1)
	assert.Equal(t, ports.CommittedFact{CheckpointType: run.CheckpointRetryScheduled, Disposition: run.DispositionAt,
		CheckpointSeq: 2, RetryDelay: 250 * time.Millisecond}, tel.committed[0])
}

func TestObserverFailuresAreReportedNotRaised(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	tel := &facts{}
	d := &observe.Deliverer{
		Observers: []observe.Observer{
			observe.Func(func(context.Context, observe.Commit) error { return errors.New("sink unavailable") }),
			observe.Func(func(context.Context, observe.Commit) error { panic("observer bug") }),
		},
		Telemetry: tel,
		Logger:    slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil)),
	}
	d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	require.NoError(t, d.Wait(context.Background()))
	tel.mu.Lock()
	assert.ElementsMatch(t, []string{
		ports.FactObserverFailure + ":" + observe.ResultCallbackError,
		ports.FactObserverFailure + ":" + observe.ResultPanic,
	}, tel.emitted)
	tel.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "sink unavailable")
	assert.Contains(t, logs.String(), "observer bug")
}

func TestWaitIsBoundedByItsContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	d := &observe.Deliverer{Observers: []observe.Observer{
		observe.Func(func(context.Context, observe.Commit) error { <-release; return nil }),
	}}
	d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, d.Wait(ctx), context.DeadlineExceeded)
	close(release)
	require.NoError(t, d.Wait(context.Background()))

	var zero *observe.Deliverer
	zero.Committed(context.Background(), ports.Tenantless(), retryMoment()) // a nil deliverer is a no-op
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestAHangingObserverIsCutOffAtTheTimeout(t *testing.T) {
	t.Parallel()
	tel := &facts{}
	returned := make(chan error, 1)
	d := &observe.Deliverer{Telemetry: tel, Timeout: 30 * time.Millisecond, Observers: []observe.Observer{
		observe.Func(func(ctx context.Context, _ observe.Commit) error {
			<-ctx.Done() // a sink that never answers
			returned <- ctx.Err()
			return ctx.Err()
		}),
	}}
	d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, d.Wait(ctx), "the delivery ended at its timeout")
	assert.ErrorIs(t, <-returned, context.DeadlineExceeded)
	tel.mu.Lock()
	defer tel.mu.Unlock()
	assert.Equal(t, []string{ports.FactObserverFailure + ":" + observe.ResultCallbackError}, tel.emitted)
}

func TestObserverCallsHaveADeadlineByDefault(t *testing.T) {
	t.Parallel()
	type deadline struct {
		set  bool
		left time.Duration
	}
	deadlines := make(chan deadline, 1)
	d := &observe.Deliverer{Observers: []observe.Observer{
		observe.Func(func(ctx context.Context, _ observe.Commit) error {
			at, ok := ctx.Deadline()
			deadlines <- deadline{set: ok, left: time.Until(at)}
			return nil
		}),
	}}
	d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	got := <-deadlines
	require.True(t, got.set, "the call has a deadline")
	assert.Greater(t, got.left, observe.DefaultTimeout-time.Second, "the deadline is the default timeout")
	assert.LessOrEqual(t, got.left, observe.DefaultTimeout)
	require.NoError(t, d.Wait(context.Background()))
}

// TestDeliveriesRacingShutdownNeverPanic commits from several goroutines
// while another waits for and then closes the deliverer (run it with
// -race): no panic, no race, and no observer call starts after Close.
func TestDeliveriesRacingShutdownNeverPanic(t *testing.T) {
	t.Parallel()
	m := retryMoment()
	for range 200 {
		var calls atomic.Int64
		d := &observe.Deliverer{Observers: []observe.Observer{
			observe.Func(func(context.Context, observe.Commit) error { calls.Add(1); return nil }),
			observe.Func(func(context.Context, observe.Commit) error { calls.Add(1); return nil }),
		}}
		var producers sync.WaitGroup
		for range 4 {
			producers.Go(func() {
				for range 10 {
					d.Committed(context.Background(), ports.Tenantless(), m)
				}
			})
		}
		for range 3 {
			require.NoError(t, d.Wait(context.Background()))
		}
		require.NoError(t, d.Close(context.Background()))
		atClose := calls.Load()
		producers.Wait()
		require.NoError(t, d.Wait(context.Background()))
		require.Equal(t, atClose, calls.Load(), "no observer call starts after Close")
	}
}

// spans records the results its spans end with.
type spans struct {
	facts
	ended []string
}

type recordingSpan struct{ s *spans }

func (sp recordingSpan) End(result string, _ ports.Measurements) {
	sp.s.mu.Lock()
	defer sp.s.mu.Unlock()
	sp.s.ended = append(sp.s.ended, result)
}

func (s *spans) StartSpan(ctx context.Context, _ string, _ ...ports.Label) (context.Context, ports.Span) {
	return ctx, recordingSpan{s}
}

// An observer that ends its goroutine with runtime.Goexit (t.FailNow in a
// test's observer) has failed as surely as one that panics: the failure is
// counted and logged, and its span ends.
func TestAnObserverThatCallsGoexitIsAFailure(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	var mu sync.Mutex
	tel := &spans{}
	d := &observe.Deliverer{
		Observers: []observe.Observer{observe.Func(func(context.Context, observe.Commit) error {
			runtime.Goexit()
			return nil
		})},
		Telemetry: tel,
		Logger:    slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &logs}, nil)),
	}
	d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	require.NoError(t, d.Wait(context.Background()))
	tel.mu.Lock()
	assert.Equal(t, []string{ports.FactObserverFailure + ":" + observe.ResultPanic}, tel.emitted)
	assert.Equal(t, []string{observe.ResultPanic}, tel.ended)
	tel.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	assert.Contains(t, logs.String(), "runtime.Goexit")
}

func TestABlockedObserverHoldsAtMostMaxInFlightCallsAndDropsTheRest(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var blockedCalls atomic.Int32
	blocked := observe.Func(func(ctx context.Context, _ observe.Commit) error {
		blockedCalls.Add(1)
		<-release
		return nil
	})
	tel := &facts{}
	var logs bytes.Buffer
	d := &observe.Deliverer{
		Observers:   []observe.Observer{blocked},
		Telemetry:   tel,
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
		MaxInFlight: 3,
	}
	const commits = 20
	for range commits {
		d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	}
	require.Eventually(t, func() bool { return blockedCalls.Load() == 3 }, 10*time.Second, time.Millisecond,
		"the blocked observer gets its first three commits")
	close(release)
	require.NoError(t, d.Wait(context.Background()))
	assert.Equal(t, int32(3), blockedCalls.Load(), "commits arriving while the observer was full were dropped, not queued")

	tel.mu.Lock()
	dropped := 0
	for _, name := range tel.emitted {
		if name == ports.FactObserverFailure+":"+observe.ResultDropped {
			dropped++
		}
	}
	tel.mu.Unlock()
	assert.Equal(t, commits-3, dropped, "every dropped delivery is counted")
	assert.Equal(t, 1, strings.Count(logs.String(), "dropping"), "one warning per overload, not one per dropped commit")

	// Once its calls have returned, the observer gets commits again.
	d.Committed(context.Background(), ports.Tenantless(), retryMoment())
	require.NoError(t, d.Wait(context.Background()))
	assert.Equal(t, int32(4), blockedCalls.Load())
}
