package inline_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/internal/scenario"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/value"
)

// The test nodes of spec §12 (package scenario), under short local names.
const (
	refCopyInput         = scenario.RefCopyInput
	refEcho              = scenario.RefEcho
	refWriteValue        = scenario.RefWriteValue
	refIncrement         = scenario.RefIncrement
	refInterruptOnce     = scenario.RefInterruptOnce
	refInterruptWhileEmp = scenario.RefInterruptWhileEmpty
	refFlaky             = scenario.RefFlaky
	refAlwaysFails       = scenario.RefAlwaysFails
	refPanics            = scenario.RefPanics
	refExits             = scenario.RefExits
	refAwaits            = scenario.RefAwaits
	refBadReturn         = scenario.RefBadReturn
	refBlocking          = scenario.RefBlocking
)

var frozenNow = time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)

// attemptRecord is one node attempt as the node saw it.
type attemptRecord struct {
	NodeID         string
	Attempt        int
	IdempotencyKey string
	State          map[string]any
}

// kit is one test's registry, recorders and deterministic options.
type kit struct {
	t        *testing.T
	registry *node.Registry

	// mode is the options of the goroutine mode under test.
	mode []inline.Option

	mu       sync.Mutex
	attempts []attemptRecord
	sleeps   []time.Duration
	ids      int
}

func newKit(t *testing.T) *kit {
	t.Helper()
	k := &kit{t: t, registry: node.NewRegistry()}
	scenario.RegisterNodes(k.registry, k.record)
	return k
}

func (k *kit) record(in node.Input) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.attempts = append(k.attempts, attemptRecord{
		NodeID: in.Task.NodeID, Attempt: in.Task.Attempt, IdempotencyKey: in.Task.IdempotencyKey,
		State: value.Clone(in.State).(map[string]any),
	})
}

// attemptsOf returns the recorded attempts of one node, in call order.
func (k *kit) attemptsOf(nodeID string) []attemptRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []attemptRecord
	for _, a := range k.attempts {
		if a.NodeID == nodeID {
			out = append(out, a)
		}
	}
	return out
}

func (k *kit) allAttempts() []attemptRecord {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.attempts)
}

func (k *kit) recordedSleeps() []time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.sleeps)
}

// options are the deterministic defaults: the kit's registry, a frozen
// clock, a recording sleeper that never sleeps, and counting IDs.
func (k *kit) options(extra ...inline.Option) []inline.Option {
	base := []inline.Option{
		inline.WithRegistry(k.registry),
		inline.WithClock(func() time.Time { return frozenNow }),
		inline.WithSleeper(func(_ context.Context, d time.Duration) error {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.sleeps = append(k.sleeps, d)
			return nil
		}),
		inline.WithIDGenerator(func(prefix string) string {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.ids++
			return fmt.Sprintf("%s%d", prefix, k.ids)
		}),
	}
	return append(append(base, k.mode...), extra...)
}

// onCallingGoroutine says the kit runs OnCallingGoroutine.
func (k *kit) onCallingGoroutine() bool { return len(k.mode) > 0 }

// requireEndsItsGoroutine calls f on a goroutine of its own and requires
// that f ends it (runtime.Goexit) instead of returning.
func requireEndsItsGoroutine(t *testing.T, f func()) {
	t.Helper()
	returned, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		f()
		close(returned)
	}()
	<-exited
	select {
	case <-returned:
		t.Fatal("the call returned instead of ending its goroutine")
	default:
	}
}

// inBothModes runs a scenario suite twice, against kits in each goroutine
// mode: the default (a drive goroutine under the watchdog) and
// OnCallingGoroutine. The outcomes must not differ.
func inBothModes(t *testing.T, suite func(t *testing.T, newKit func(*testing.T) *kit)) {
	t.Parallel()
	modes := []struct {
		name string
		opts []inline.Option
	}{
		{"drive goroutine", nil},
		{"calling goroutine", []inline.Option{inline.OnCallingGoroutine()}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			suite(t, func(t *testing.T) *kit {
				k := newKit(t)
				k.mode = mode.opts
				return k
			})
		})
	}
}

// build finishes a builder, failing the test on builder errors.
func build(t *testing.T, b *graph.Builder) *graph.Graph {
	t.Helper()
	g, err := b.Build()
	require.NoError(t, err)
	return g
}

func (k *kit) compile(g *graph.Graph) *graph.Compiled {
	k.t.Helper()
	c, err := graph.Compile(g, k.registry, graph.Options{Profile: graph.ProfileRun})
	require.NoError(k.t, err)
	return c
}

// The graphs of spec §12 (package scenario), under short local names.
var (
	cfg               = scenario.Config
	minimalLinear     = scenario.MinimalLinear
	simpleEdge        = scenario.SimpleEdge
	fanOut            = scenario.FanOut
	multiSource       = scenario.MultiSource
	cycleCounter      = scenario.CycleCounter
	interruptReview   = scenario.InterruptReview
	parallelRetry     = scenario.ParallelRetry
	retryThenContinue = scenario.RetryThenContinue
	singleNode        = scenario.SingleNode
)

// --- assertions ------------------------------------------------------------

func types(cps []run.Checkpoint) []run.CheckpointType {
	out := make([]run.CheckpointType, len(cps))
	for i, cp := range cps {
		out[i] = cp.Type
	}
	return out
}

// requireWellFormed checks what every accepted checkpoint sequence
// guarantees: contiguous checkpoint and event seqs, and a final
// checkpoint_committed event carrying the checkpoint's metadata.
func requireWellFormed(t *testing.T, cps []run.Checkpoint) {
	t.Helper()
	if len(cps) == 0 {
		return
	}
	nextEvent := cps[0].Events[0].Seq
	for i, cp := range cps {
		require.Equal(t, cps[0].Seq+int64(i), cp.Seq, "checkpoint seqs are contiguous")
		require.Equal(t, cp.Seq, cp.Run.CheckpointSeq)
		require.NotEmpty(t, cp.Events)
		committed := 0
		for _, e := range cp.Events {
			require.Equal(t, nextEvent, e.Seq, "event seqs are contiguous across checkpoints")
			require.Equal(t, cp.Run.ID, e.RunID)
			nextEvent++
			if e.Type == run.EventCheckpointCommitted {
				committed++
			}
		}
		last := cp.Events[len(cp.Events)-1]
		require.Equal(t, 1, committed, "one checkpoint_committed event per checkpoint")
		require.Equal(t, run.EventCheckpointCommitted, last.Type, "the checkpoint fact is last")
		require.Equal(t, cp.Metadata, last.Metadata)
		require.Equal(t, cp.Run.EventSeq, last.Seq)
		require.Equal(t, string(cp.Type), cp.Metadata.Map()["checkpoint_type"])
	}
}

func fieldValue(r *run.Run, field string) (any, bool) {
	c, ok := r.Channels.Get(graph.StatePrefix + field)
	return c.Value, ok
}

func eventsOf(cps []run.Checkpoint, typ run.EventType) []run.Event {
	var out []run.Event
	for _, cp := range cps {
		for _, e := range cp.Events {
			if e.Type == typ {
				out = append(out, e)
			}
		}
	}
	return out
}

func one(cp run.Checkpoint) []run.Checkpoint { return []run.Checkpoint{cp} }

func completedNodes(cps []run.Checkpoint) []string {
	var out []string
	for _, e := range eventsOf(cps, run.EventNodeCompleted) {
		out = append(out, e.NodeID)
	}
	return out
}

func findCheckpoints(cps []run.Checkpoint, typ run.CheckpointType) []run.Checkpoint {
	var out []run.Checkpoint
	for _, cp := range cps {
		if cp.Type == typ {
			out = append(out, cp)
		}
	}
	return out
}

// portable normalizes an expected Go value so it compares equal to runtime
// values (int -> int64, []string -> []any).
func portable(t *testing.T, v any) any {
	t.Helper()
	n, err := value.Normalize(v)
	require.NoError(t, err)
	return n
}

func onlyKey[V any](t *testing.T, m map[string]V) (string, V) {
	t.Helper()
	require.Len(t, m, 1)
	for k, v := range m {
		return k, v
	}
	panic("unreachable")
}

func assertFailedWith(t *testing.T, r *run.Run, code string) {
	t.Helper()
	require.NotNil(t, r)
	require.Equal(t, run.StatusFailed, r.Status)
	require.NotNil(t, r.Failure)
	assert.Equal(t, code, r.Failure.Code)
}
