package prune_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/prune"
	"github.com/docketgo/docket/ports"
)

var now = time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)

type fakeStore struct {
	mu         sync.Mutex
	events     []ports.PruneParams
	runs       []ports.PruneParams
	graphs     []ports.PruneGraphsParams
	failEvents error
	failRuns   error
	failGraphs error
	passCalls  chan struct{}
}

func (s *fakeStore) PruneEvents(_ context.Context, p ports.PruneParams) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, p)
	if s.failEvents != nil {
		return 0, s.failEvents
	}
	return 3, nil
}

func (s *fakeStore) PruneRuns(_ context.Context, p ports.PruneParams) (ports.PruneRunsResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, p)
	if s.failRuns != nil {
		return ports.PruneRunsResult{}, s.failRuns
	}
	return ports.PruneRunsResult{Runs: 2, CascadeEvents: 7}, nil
}

func (s *fakeStore) PruneGraphVersions(_ context.Context, p ports.PruneGraphsParams) (int, error) {
	s.mu.Lock()
	s.graphs = append(s.graphs, p)
	fail := s.failGraphs
	s.mu.Unlock()
	if fail != nil {
		return 0, fail
	}
	if s.passCalls != nil {
		select {
		case s.passCalls <- struct{}{}:
		default:
		}
	}
	return 1, nil
}

func valid() prune.Config {
	return prune.Config{Interval: time.Minute, EventRetention: time.Hour, RunRetention: 24 * time.Hour, BatchSize: 50}
}

func TestConfigHasNoDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*prune.Config)
		field string
	}{
		{"zero interval", func(c *prune.Config) { c.Interval = 0 }, "Interval"},
		{"negative event retention", func(c *prune.Config) { c.EventRetention = -time.Second }, "EventRetention"},
		{"negative run retention", func(c *prune.Config) { c.RunRetention = -time.Second }, "RunRetention"},
		{"events kept longer than runs", func(c *prune.Config) { c.EventRetention = 48 * time.Hour }, "EventRetention"},
		{"zero batch", func(c *prune.Config) { c.BatchSize = 0 }, "BatchSize"},
		{"batch beyond 32 bits", func(c *prune.Config) { c.BatchSize = math.MaxInt32 + 1 }, "BatchSize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := valid()
			tt.edit(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, prune.ErrInvalidConfig)
			var ce *prune.ConfigError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, tt.field, ce.Field)
			_, err = prune.New(&fakeStore{}, cfg, prune.Options{})
			assert.ErrorIs(t, err, prune.ErrInvalidConfig)
		})
	}
	assert.NoError(t, valid().Validate())
	assert.Error(t, prune.Config{}.Validate(), "the zero config is not a policy")
}

// The bounds of each field are valid values: events kept as long as
// runs, no retention at all, the largest batch a store can bind.
func TestConfigAcceptsItsBounds(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]prune.Config{
		"events kept as long as runs": {Interval: time.Minute, EventRetention: 24 * time.Hour, RunRetention: 24 * time.Hour, BatchSize: 1},
		"nothing kept":                {Interval: time.Nanosecond, BatchSize: 1},
		"largest batch":               {Interval: time.Minute, EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: math.MaxInt32},
	} {
		assert.NoError(t, cfg.Validate(), name)
	}
}

func TestConfigNamesEveryInvalidField(t *testing.T) {
	t.Parallel()
	err := prune.Config{EventRetention: -time.Second, RunRetention: -time.Second, BatchSize: math.MaxInt32 + 1}.Validate()
	require.ErrorIs(t, err, prune.ErrInvalidConfig)
	for _, field := range []string{"Interval", "EventRetention", "RunRetention", "BatchSize"} {
		assert.Contains(t, err.Error(), "pruner: "+field+" ")
	}
}

func TestAPassUsesTheRetentionCutoffs(t *testing.T) {
	t.Parallel()
	store := &fakeStore{}
	p, err := prune.New(store, valid(), prune.Options{Clock: ports.ClockFunc(func() time.Time { return now })})
	require.NoError(t, err)
	got, err := p.Pass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, prune.Pass{Events: 3, Runs: 2, CascadeEvents: 7, Graphs: 1}, got)
	assert.Equal(t, []ports.PruneParams{{Before: now.Add(-time.Hour), BatchSize: 50}}, store.events)
	assert.Equal(t, []ports.PruneParams{{Before: now.Add(-24 * time.Hour), BatchSize: 50}}, store.runs)
	assert.Equal(t, []ports.PruneGraphsParams{{Keep: ports.DefaultKeptGraphVersions, BatchSize: 50}}, store.graphs)
}

// wholeStore runs whole passes itself, as the PostgreSQL store does.
type wholeStore struct {
	fakeStore
	passes []ports.PrunePassParams
	locked bool
}

func (s *wholeStore) PruneWholePass(_ context.Context, p ports.PrunePassParams) (ports.PrunePassResult, error) {
	s.passes = append(s.passes, p)
	if s.locked {
		return ports.PrunePassResult{Locked: true}, nil
	}
	return ports.PrunePassResult{Events: 4, Runs: 1, CascadeEvents: 2, Graphs: 3}, nil
}

// passLog keeps the pruner.pass facts.
type passLog struct {
	ports.NopTelemetry
	results []string
	counts  []ports.Measurements // without duration_ms
}

func (l *passLog) Emit(_ context.Context, name string, m ports.Measurements, labels ...ports.Label) {
	if name != ports.FactPrunerPass {
		return
	}
	counts := ports.Measurements{}
	for k, v := range m {
		if k != "duration_ms" {
			counts[k] = v
		}
	}
	l.counts = append(l.counts, counts)
	for _, lb := range labels {
		if lb.Key == ports.LabelResult {
			l.results = append(l.results, lb.Value)
		}
	}
}

func TestAStoreThatPrunesWholePassesRunsEachPassItself(t *testing.T) {
	t.Parallel()
	store := &wholeStore{}
	log := &passLog{}
	p, err := prune.New(store, valid(), prune.Options{Clock: ports.ClockFunc(func() time.Time { return now }), Telemetry: log})
	require.NoError(t, err)
	got, err := p.Pass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, prune.Pass{Events: 4, Runs: 1, CascadeEvents: 2, Graphs: 3}, got)
	assert.Equal(t, []ports.PrunePassParams{{EventsBefore: now.Add(-time.Hour), RunsBefore: now.Add(-24 * time.Hour),
		KeepGraphVersions: ports.DefaultKeptGraphVersions, BatchSize: 50, Now: now}}, store.passes,
		"the cutoffs and the now they come from, which the store bounds by its own clock")
	assert.Empty(t, store.events, "no deletion outside the whole pass")

	store.locked = true
	got, err = p.Pass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, prune.Pass{Locked: true}, got)
	assert.Equal(t, []string{ports.ResultOK, ports.ResultLocked}, log.results)
}

func TestAFailedPassReportsWhatItDeleted(t *testing.T) {
	t.Parallel()
	boom := errors.New("database down")
	store := &fakeStore{failRuns: boom}
	p, err := prune.New(store, valid(), prune.Options{})
	require.NoError(t, err)
	got, err := p.Pass(context.Background())
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 3, got.Events)
	assert.Empty(t, store.graphs, "the pass stops at the failure")
}

// Whichever deletion fails, the pass stops there and returns the error,
// naming the deletion, with the counts of the deletions before it: a
// failure is never reported as a clean pass.
func TestAPassStopsAtTheFirstFailedDeletion(t *testing.T) {
	t.Parallel()
	boom := errors.New("database down")
	tests := []struct {
		name  string
		store *fakeStore
		want  prune.Pass
		calls [3]int // events, runs, graphs
	}{
		{"events", &fakeStore{failEvents: boom}, prune.Pass{}, [3]int{1, 0, 0}},
		{"runs", &fakeStore{failRuns: boom}, prune.Pass{Events: 3}, [3]int{1, 1, 0}},
		{"graph versions", &fakeStore{failGraphs: boom}, prune.Pass{Events: 3, Runs: 2, CascadeEvents: 7}, [3]int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &passLog{}
			p, err := prune.New(tt.store, valid(), prune.Options{Telemetry: log})
			require.NoError(t, err)
			got, err := p.Pass(context.Background())
			require.ErrorIs(t, err, boom)
			assert.ErrorContains(t, err, "prune "+tt.name+": ")
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.calls, [3]int{len(tt.store.events), len(tt.store.runs), len(tt.store.graphs)})
			assert.Equal(t, []string{ports.ResultError}, log.results)
		})
	}
}

func TestRunPassesAtStartThenEveryInterval(t *testing.T) {
	t.Parallel()
	store := &fakeStore{passCalls: make(chan struct{}, 10)}
	cfg := valid()
	cfg.Interval = time.Millisecond
	p, err := prune.New(store, cfg, prune.Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(done)
	}()
	for range 3 {
		select {
		case <-store.passCalls:
		case <-time.After(10 * time.Second):
			t.Fatal("the pruner stopped passing")
		}
	}
	cancel()
	<-done
}

// A pass cut short because its context ended (the engine stopping) is not
// a failed pass: Run does not log it, and telemetry does not count it as
// an error either.
func TestAPassCutShortByItsContextIsSkippedNotFailed(t *testing.T) {
	t.Parallel()
	store := &fakeStore{failRuns: context.Canceled}
	log := &passLog{}
	p, err := prune.New(store, valid(), prune.Options{Telemetry: log})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = p.Pass(ctx)
	require.ErrorIs(t, err, context.Canceled)

	store.failRuns = errors.New("database down")
	_, err = p.Pass(context.Background())
	require.Error(t, err)
	assert.Equal(t, []string{ports.ResultSkipped, ports.ResultError}, log.results)
}

// A pass that deletes rows says so at info level, with what it deleted:
// retention is a deliberate loss an operator should be able to see.
func TestRunLogsWhatEachPassDeleted(t *testing.T) {
	t.Parallel()
	store := &fakeStore{passCalls: make(chan struct{}, 1)}
	var logs bytes.Buffer
	p, err := prune.New(store, valid(), prune.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(done)
	}()
	select {
	case <-store.passCalls:
	case <-time.After(10 * time.Second):
		t.Fatal("the pruner never passed")
	}
	cancel()
	<-done
	assert.Contains(t, logs.String(), "level=INFO")
	assert.Contains(t, logs.String(), "events=3 runs=2 cascade_events=7 graph_versions=1")
}

// Each pass's fact carries what it deleted, whichever way the store runs
// the pass: these are the counts a retention dashboard shows.
func TestAPassReportsWhatItDeletedToTelemetry(t *testing.T) {
	t.Parallel()
	log := &passLog{}
	p, err := prune.New(&fakeStore{}, valid(), prune.Options{Telemetry: log})
	require.NoError(t, err)
	_, err = p.Pass(context.Background())
	require.NoError(t, err)
	whole, err := prune.New(&wholeStore{}, valid(), prune.Options{Telemetry: log})
	require.NoError(t, err)
	_, err = whole.Pass(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []ports.Measurements{
		{"events_deleted": 3, "runs_deleted": 2, "cascade_events_deleted": 7, "graphs_deleted": 1},
		{"events_deleted": 4, "runs_deleted": 1, "cascade_events_deleted": 2, "graphs_deleted": 3},
	}, log.counts)
}

// hungStore's calls answer only when their context ends, as a store
// behind a hung connection does.
type hungStore struct{ fakeStore }

func hang(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(10 * time.Second):
		return errors.New("the store call was not bounded by StoreTimeout")
	}
}

func (s *hungStore) PruneEvents(ctx context.Context, _ ports.PruneParams) (int, error) {
	return 0, hang(ctx)
}

// hungWholeStore runs whole passes, which hang the same way.
type hungWholeStore struct{ wholeStore }

func (s *hungWholeStore) PruneWholePass(ctx context.Context, _ ports.PrunePassParams) (ports.PrunePassResult, error) {
	return ports.PrunePassResult{}, hang(ctx)
}

// StoreTimeout ends a hung store call, so the pass fails (and the next one
// runs after the interval) instead of holding the pruner forever.
func TestStoreTimeoutEndsAHungPass(t *testing.T) {
	t.Parallel()
	for name, store := range map[string]prune.Store{"call by call": &hungStore{}, "whole pass": &hungWholeStore{}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := &passLog{}
			p, err := prune.New(store, valid(), prune.Options{Telemetry: log, StoreTimeout: time.Millisecond})
			require.NoError(t, err)
			_, err = p.Pass(context.Background())
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Equal(t, []string{ports.ResultError}, log.results, "a timed-out pass failed; the pruner was not stopping")
		})
	}
}

// runPruner runs p until the returned stop is called; stop waits for Run
// to return.
func runPruner(p *prune.Pruner) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		p.Run(ctx)
		close(done)
	}()
	return func() {
		cancel()
		<-done
	}
}

func expectPass(t *testing.T, passes <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-passes:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no pass completed", what)
	}
}

// flakyStore fails the runs deletion of its first failures passes.
type flakyStore struct {
	fakeStore
	failures int
}

func (s *flakyStore) PruneRuns(ctx context.Context, p ports.PruneParams) (ports.PruneRunsResult, error) {
	s.mu.Lock()
	failing := s.failures > 0
	s.failures--
	s.mu.Unlock()
	if failing {
		return ports.PruneRunsResult{}, errors.New("database down")
	}
	return s.fakeStore.PruneRuns(ctx, p)
}

// A failed pass is logged as a warning and the schedule goes on: the next
// pass, after the interval, deletes what the failed one could not.
func TestRunLogsAFailedPassAndRetriesAfterTheInterval(t *testing.T) {
	t.Parallel()
	store := &flakyStore{fakeStore: fakeStore{passCalls: make(chan struct{}, 1)}, failures: 2}
	var logs syncBuffer
	cfg := valid()
	cfg.Interval = time.Millisecond
	p, err := prune.New(store, cfg, prune.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	stop := runPruner(p)
	expectPass(t, store.passCalls, "the pass after two failed ones")
	stop()
	assert.Contains(t, logs.String(), `level=WARN msg="docket pruner pass failed; retrying after the interval" error="prune runs: database down"`)
}

// syncBuffer is a bytes.Buffer a running pruner may log to while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// blockedStore's events deletion answers only when its context ends, and
// says when it was entered.
type blockedStore struct {
	fakeStore
	entered chan struct{}
}

func (s *blockedStore) PruneEvents(ctx context.Context, _ ports.PruneParams) (int, error) {
	close(s.entered)
	<-ctx.Done()
	return 0, ctx.Err()
}

// Stopping the engine cuts the running pass short; that is no failure, so
// Run logs no warning for it.
func TestRunDoesNotWarnAboutAPassCutShortByStopping(t *testing.T) {
	t.Parallel()
	store := &blockedStore{entered: make(chan struct{})}
	var logs syncBuffer
	p, err := prune.New(store, valid(), prune.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	stop := runPruner(p)
	<-store.entered
	stop()
	assert.Empty(t, logs.String())
}

// graphsStore has nothing past its retention but graph versions.
type graphsStore struct {
	graphs    int
	passCalls chan struct{}
}

func (graphsStore) PruneEvents(context.Context, ports.PruneParams) (int, error) { return 0, nil }

func (graphsStore) PruneRuns(context.Context, ports.PruneParams) (ports.PruneRunsResult, error) {
	return ports.PruneRunsResult{}, nil
}

func (s graphsStore) PruneGraphVersions(context.Context, ports.PruneGraphsParams) (int, error) {
	s.passCalls <- struct{}{}
	return s.graphs, nil
}

// Run logs a pass exactly when it deleted something, graph versions alone
// included: an idle pruner does not fill the log every interval.
func TestRunLogsAPassExactlyWhenItDeletedSomething(t *testing.T) {
	t.Parallel()
	for graphs, want := range map[int]string{0: "", 2: "events=0 runs=0 cascade_events=0 graph_versions=2"} {
		store := graphsStore{graphs: graphs, passCalls: make(chan struct{}, 1)}
		var logs syncBuffer
		p, err := prune.New(store, valid(), prune.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		require.NoError(t, err)
		stop := runPruner(p)
		expectPass(t, store.passCalls, "the pass at start")
		stop()
		if want == "" {
			assert.Empty(t, logs.String(), "a pass that deleted nothing")
		} else {
			assert.Contains(t, logs.String(), want)
		}
	}
}
