package engine_test

// Support for the differential tests (differential_test.go): the spec §12
// test nodes and graphs the inline runner's own tests use (shared through
// app/internal/scenario, named here with a diff prefix), a controllable
// clock, and two drivers that take one scenario through the inline runner
// and through the durable engine in the same way.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/internal/scenario"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/domain/value"
	"github.com/docketgo/docket/ports"
)

// The test nodes of spec §12 (package scenario), under diff-prefixed names.
const (
	diffRefCopyInput         = scenario.RefCopyInput
	diffRefEcho              = scenario.RefEcho
	diffRefWriteValue        = scenario.RefWriteValue
	diffRefIncrement         = scenario.RefIncrement
	diffRefInterruptOnce     = scenario.RefInterruptOnce
	diffRefInterruptWhileEmp = scenario.RefInterruptWhileEmpty
	diffRefFlaky             = scenario.RefFlaky
	diffRefAlwaysFails       = scenario.RefAlwaysFails
	diffRefPanics            = scenario.RefPanics
	diffRefExits             = scenario.RefExits
	diffRefAwaits            = scenario.RefAwaits
	diffRefBadReturn         = scenario.RefBadReturn
	diffRefBlocking          = scenario.RefBlocking
)

// diffClock is a clock that moves only when told to. The durable side
// shares one with its store; the inline side gets its own, started at the
// same instant, so both paths read the same times.
type diffClock struct {
	mu  sync.Mutex
	now time.Time
}

func newDiffClock(at time.Time) *diffClock { return &diffClock{now: at} }

func (c *diffClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *diffClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// advanceTo moves the clock forward to at (never backward).
func (c *diffClock) advanceTo(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.After(c.now) {
		c.now = at
	}
}

// diffAttempt is one node attempt as the node saw it.
type diffAttempt struct {
	IdempotencyKey string
	NodeID         string
	Attempt        int
	State          map[string]any
}

// diffKit is one process's node registry and attempt recorder.
type diffKit struct {
	registry *node.Registry
	mu       sync.Mutex
	attempts []diffAttempt
}

func newDiffKit() *diffKit {
	k := &diffKit{registry: node.NewRegistry()}
	scenario.RegisterNodes(k.registry, k.record)
	return k
}

func (k *diffKit) record(in node.Input) {
	state, _ := value.Clone(in.State).(map[string]any)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.attempts = append(k.attempts, diffAttempt{
		IdempotencyKey: in.Task.IdempotencyKey, NodeID: in.Task.NodeID, Attempt: in.Task.Attempt, State: state,
	})
}

func (k *diffKit) recorded() []diffAttempt {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.attempts)
}

// The graphs of spec §12 (package scenario), under diff-prefixed names.
var (
	diffMinimalLinear     = scenario.MinimalLinear
	diffSimpleEdge        = scenario.SimpleEdge
	diffFanOut            = scenario.FanOut
	diffMultiSource       = scenario.MultiSource
	diffCycleCounter      = scenario.CycleCounter
	diffInterruptReview   = scenario.InterruptReview
	diffParallelRetry     = scenario.ParallelRetry
	diffRetryThenContinue = scenario.RetryThenContinue
	diffSingleNode        = scenario.SingleNode
)

// --- scenarios ---------------------------------------------------------------

// diffStartMode says how far the first drive goes.
type diffStartMode int

const (
	// diffToRest drives until the run waits for a signal or is terminal,
	// serving every retry backoff by moving the clock to the wake.
	diffToRest diffStartMode = iota
	// diffToPark stops as well at the first committed park whose wake is in
	// the future, leaving the clock before it (so a signal can land
	// mid-park).
	diffToPark
	// diffInitOnly commits the initialization only.
	diffInitOnly
)

type diffActionKind int

const (
	// diffContinue drives on (to rest, or to a future park with stopAtPark).
	diffContinue diffActionKind = iota + 1
	// diffStep commits exactly one transition: StepInline inline; one
	// DrainRuns admission of an engine whose drain budget is one moment.
	diffStep
	// diffResolve answers the run's first open interrupt (sorted by id)
	// with value, then drives on.
	diffResolve
	// diffCancel cancels the run (or fails to, identically on both paths),
	// then checks that cancelling again changes nothing.
	diffCancel
	// diffRestart replaces the durable engine by a new one with a fresh
	// registry (a crash or a deploy); the inline path has nothing to
	// restart.
	diffRestart
	// diffCorruptPending replaces every parked update with a write to an
	// unknown field and commits the saved init of the corrupted run, as a
	// damaged store would hand it back (spec §12 case 29).
	diffCorruptPending
)

type diffAction struct {
	kind       diffActionKind
	value      any
	stopAtPark bool
}

// diffLimits are the runtime limits both paths are given.
type diffLimits struct {
	maxSupersteps     int           // runtime default for graphs without a policy
	maxAttemptElapsed time.Duration // host maximum of one attempt (0: 2s)
	// drainMoments is the durable first engine's moment budget (0: the
	// default, never reached here). Each continue moment at the budget is
	// committed as a drain_budget yield.
	drainMoments int
}

// diffScenario is one graph run driven the same way on both paths.
type diffScenario struct {
	name    string
	graph   func() *graph.Builder
	input   map[string]any
	limits  diffLimits
	start   diffStartMode
	actions []diffAction
	// want and wantTypes pin what the scenario is about (the final status
	// and, where given, the checkpoint types), so a scenario cannot drift
	// into comparing two runs that both missed its point.
	want      run.Status
	wantTypes []run.CheckpointType
	wantWaits []time.Duration // the parks served, where the scenario is about them
}

// errDiffParked is returned by the inline sleeper to stop a drive at a
// committed park, where the durable driver stops when asked to.
var errDiffParked = errors.New("differential: stopped at a park")

// --- the inline side ---------------------------------------------------------

type diffInline struct {
	t     *testing.T
	sc    diffScenario
	g     *graph.Graph
	kit   *diffKit
	clock *diffClock
	runID string

	ids        int
	stopAtPark bool
	r          *run.Run
	cps        []run.Checkpoint
	waits      []time.Duration // the parks served, in order
}

func newDiffInline(t *testing.T, sc diffScenario, g *graph.Graph, start time.Time, runID string) *diffInline {
	return &diffInline{t: t, sc: sc, g: g, kit: newDiffKit(), clock: newDiffClock(start), runID: runID}
}

func (s *diffInline) options(extra ...inline.Option) []inline.Option {
	opts := []inline.Option{
		inline.WithRegistry(s.kit.registry),
		inline.WithClock(s.clock.Now),
		// The sleeper plays the durable dispatcher: a park is served by
		// moving the clock to its wake, exactly as the durable driver moves
		// the shared clock to the stored wake_at before draining again.
		inline.WithSleeper(func(_ context.Context, d time.Duration) error {
			if d > 0 && s.stopAtPark {
				return errDiffParked
			}
			if d > 0 {
				s.waits = append(s.waits, d)
			}
			s.clock.advance(d)
			return nil
		}),
		inline.WithIDGenerator(func(prefix string) string {
			s.ids++
			return fmt.Sprintf("%s%d", prefix, s.ids)
		}),
		inline.WithRunID(s.runID),
	}
	if s.sc.limits.maxSupersteps > 0 {
		opts = append(opts, inline.WithMaxSupersteps(s.sc.limits.maxSupersteps))
	}
	if s.sc.limits.maxAttemptElapsed > 0 {
		opts = append(opts, inline.WithMaxAttemptElapsed(s.sc.limits.maxAttemptElapsed))
	}
	return append(opts, extra...)
}

// accept records a call's outcome; a stop at a park is not an error.
func (s *diffInline) accept(r *run.Run, cps []run.Checkpoint, err error) {
	s.t.Helper()
	if !errors.Is(err, errDiffParked) {
		require.NoError(s.t, err, "inline")
	}
	s.r = r
	s.cps = append(s.cps, cps...)
}

func (s *diffInline) start(mode diffStartMode) {
	s.t.Helper()
	ctx := context.Background()
	var extra []inline.Option
	if mode == diffInitOnly {
		extra = append(extra, inline.WithMaxSteps(0))
	}
	s.stopAtPark = mode == diffToPark
	r, cps, err := inline.RunInline(ctx, s.g, s.sc.input, s.options(extra...)...)
	s.accept(r, cps, err)
}

// drive steps the run until it rests (or parks, when asked to stop there):
// StepInline rather than ResumeInline, because continuing a committed run
// durably is a claim, not a saved init (see TestDifferential's doc).
func (s *diffInline) drive(stopAtPark bool) {
	s.t.Helper()
	s.stopAtPark = stopAtPark
	for range 1000 {
		if s.r.Status != run.StatusRunning {
			return
		}
		next, cps, err := inline.StepInline(context.Background(), s.g, s.r, s.options()...)
		s.accept(next, cps, err)
		if errors.Is(err, errDiffParked) {
			return
		}
	}
	s.t.Fatal("inline: the run never came to rest")
}

func (s *diffInline) do(a diffAction) (cancelErr error) {
	s.t.Helper()
	ctx := context.Background()
	switch a.kind {
	case diffContinue:
		s.drive(a.stopAtPark)
	case diffStep:
		s.stopAtPark = false
		next, cps, err := inline.StepInline(ctx, s.g, s.r, s.options()...)
		s.accept(next, cps, err)
	case diffResolve:
		s.stopAtPark = a.stopAtPark
		id := diffFirstOpen(s.t, s.r)
		next, cps, err := inline.ResolveInterruptInline(ctx, s.g, s.r, id, a.value, s.options()...)
		s.accept(next, cps, err)
	case diffCancel:
		// The inline runner has no cancel call: cancellation is the pure
		// transition both paths share, committed by accepting its moment.
		m, err := superstep.Cancel(s.r, superstep.Env{Now: ports.Micros(s.clock.Now())})
		if err != nil {
			return err
		}
		s.r = m.Run
		s.cps = append(s.cps, m.Checkpoint())
		again, err := superstep.Cancel(s.r, superstep.Env{Now: ports.Micros(s.clock.Now())})
		require.NoError(s.t, err)
		require.Nil(s.t, again, "inline: cancelling a cancelled run changes nothing")
	case diffRestart:
	case diffCorruptPending:
		next, cps, err := inline.ResumeInline(ctx, s.g, diffCorrupt(s.t, s.r), s.options(inline.WithMaxSteps(0))...)
		s.accept(next, cps, err)
	}
	return nil
}

// diffCorrupt returns a copy of r whose parked updates write an unknown
// field (still a durable run: only validation at the barrier catches it).
func diffCorrupt(t *testing.T, r *run.Run) *run.Run {
	t.Helper()
	corrupted := r.Clone()
	n := 0
	for i := range corrupted.PendingWrites {
		if corrupted.PendingWrites[i].Kind == run.WriteUpdate {
			corrupted.PendingWrites[i].Value = map[string]any{"ghost": "x"}
			n++
		}
	}
	require.Positive(t, n, "the run has a parked update to corrupt")
	require.NoError(t, corrupted.Validate())
	return corrupted
}

func diffFirstOpen(t *testing.T, r *run.Run) string {
	t.Helper()
	var open []string
	for id, in := range r.Interrupts {
		if in.Status == run.InterruptOpen {
			open = append(open, id)
		}
	}
	slices.Sort(open)
	require.NotEmpty(t, open, "the run has an open interrupt")
	return open[0]
}

// --- the durable side --------------------------------------------------------

// diffObserver keeps every checkpoint committed through the engines of one
// scenario, by checkpoint seq (observers may see one twice).
type diffObserver struct {
	mu      sync.Mutex
	commits map[int64]run.Checkpoint
}

func (o *diffObserver) ObserveCheckpoint(_ context.Context, c observe.Commit) error {
	o.put(c.Checkpoint)
	return nil
}

func (o *diffObserver) put(cp run.Checkpoint) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.commits == nil {
		o.commits = map[int64]run.Checkpoint{}
	}
	o.commits[cp.Seq] = cp
}

func (o *diffObserver) get(seq int64) (run.Checkpoint, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cp, ok := o.commits[seq]
	return cp, ok
}

type diffDurable struct {
	t     *testing.T
	sc    diffScenario
	g     *graph.Graph
	store ports.Backend
	clock *diffClock
	runID string

	mu       sync.Mutex
	ids      int
	observer *diffObserver
	kits     []*diffKit
	e        *engine.Engine
	ref      engine.GraphRef
	waits    []time.Duration // the parks served, in order
}

func newDiffDurable(t *testing.T, sc diffScenario, g *graph.Graph, store ports.Backend, clock *diffClock, runID string) *diffDurable {
	d := &diffDurable{t: t, sc: sc, g: g, store: store, clock: clock, runID: runID, observer: &diffObserver{}}
	d.e = d.newEngine(sc.limits.drainMoments)
	return d
}

// newEngine builds a manual engine with a fresh registry (a new process).
// The elapsed drain budget is far away so only a configured moment budget
// ever yields.
func (d *diffDurable) newEngine(drainMoments int) *engine.Engine {
	d.t.Helper()
	k := newDiffKit()
	d.kits = append(d.kits, k)
	cfg := engine.Config{
		Backend:           d.store,
		Nodes:             k.registry,
		Clock:             d.clock,
		Mode:              engine.ModeManual,
		MaxSupersteps:     d.sc.limits.maxSupersteps,
		MaxAttemptElapsed: d.sc.limits.maxAttemptElapsed,
		Observers:         []observe.Observer{d.observer},
		Vehicle:           engine.VehicleConfig{DrainBudget: engine.DrainBudget{MaxMoments: drainMoments, MaxElapsed: 20 * time.Second}},
		// One counter per scenario, shared by every engine of it, as the
		// inline runner has one generator: ids are then equal by
		// construction and compared byte for byte, never normalised.
		NewID: func(prefix string) string {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.ids++
			return fmt.Sprintf("%s%d", prefix, d.ids)
		},
	}
	e, err := engine.New(cfg)
	require.NoError(d.t, err)
	return e
}

func (d *diffDurable) start(mode diffStartMode) {
	d.t.Helper()
	ctx := context.Background()
	ref, err := d.e.SaveGraph(ctx, d.g)
	require.NoError(d.t, err)
	d.ref = ref
	_, err = d.e.StartRun(ctx, ref, d.sc.input, engine.WithRunID(d.runID))
	require.NoError(d.t, err)
	switch mode {
	case diffToRest:
		d.drain(false)
	case diffToPark:
		d.drain(true)
	case diffInitOnly:
	}
}

// drain drives the run until it waits for a signal or is terminal. A park
// at a future time is served the way production serves it: nothing is due
// until the clock reaches the stored wake, then a claim resumes the
// superstep (the first plan's resume floor is the claim time). With
// stopAtPark it stops at the first such park instead.
func (d *diffDurable) drain(stopAtPark bool) {
	d.t.Helper()
	ctx := context.Background()
	for range 1000 {
		_, err := d.e.DrainRuns(ctx, 0)
		var stopped *engine.DrainStoppedError
		if errors.As(err, &stopped) && stopped.Outcome.Kind == vehicle.Deferred {
			// The durable form of the inline runner's uncommitted park:
			// nothing was due, so the claim went back with a wake at the
			// earliest deadline and nothing was committed.
			err = nil
		}
		require.NoError(d.t, err, "durable drain")
		info, err := d.e.InspectRun(ctx, d.runID)
		require.NoError(d.t, err)
		if info.Run.Status != run.StatusRunning {
			return
		}
		require.False(d.t, info.Claimed(), "a drained run holds no claim")
		require.False(d.t, info.Poisoned(), "the run was poisoned")
		if !info.WakeAt.After(d.clock.Now()) {
			continue
		}
		if stopAtPark {
			return
		}
		d.waits = append(d.waits, info.WakeAt.Sub(d.clock.Now()))
		d.clock.advanceTo(info.WakeAt)
	}
	d.t.Fatal("durable: the run never came to rest")
}

func (d *diffDurable) fetch() *run.Run {
	d.t.Helper()
	r, err := d.e.FetchRun(context.Background(), d.runID)
	require.NoError(d.t, err)
	return r
}

func (d *diffDurable) do(a diffAction) (cancelErr error) {
	d.t.Helper()
	ctx := context.Background()
	switch a.kind {
	case diffContinue:
		d.drain(a.stopAtPark)
	case diffStep:
		before := d.fetch()
		sum, err := d.e.DrainRuns(ctx, 1)
		require.NoError(d.t, err)
		if before.Status != run.StatusRunning {
			require.Zero(d.t, sum.Drained, "durable: a resting run is not driven")
			break
		}
		require.Equal(d.t, 1, sum.Drained)
		require.Equal(d.t, 1, sum.Outcomes[0].Committed, "one admission of a one-moment budget commits one moment")
		require.NotEqual(d.t, run.DispositionAt, sum.Outcomes[0].Park, "step scenarios do not park at a time")
	case diffResolve:
		id := diffFirstOpen(d.t, d.fetch())
		_, err := d.e.ResolveInterrupt(ctx, d.runID, id, a.value)
		require.NoError(d.t, err)
		d.drain(a.stopAtPark)
	case diffCancel:
		cancelled, err := d.e.CancelRun(ctx, d.runID)
		if err != nil {
			return err
		}
		again, err := d.e.CancelRun(ctx, d.runID)
		require.NoError(d.t, err, "durable: cancelling twice is idempotent")
		assert.Equal(d.t, cancelled.CheckpointSeq, again.CheckpointSeq, "durable: cancelling again commits nothing")
		sum, err := d.e.DrainRuns(ctx, 0)
		require.NoError(d.t, err)
		assert.Zero(d.t, sum.Drained, "durable: a cancelled run is never claimed")
	case diffRestart:
		d.e = d.newEngine(0)
	case diffCorruptPending:
		doc, err := d.e.FetchGraph(ctx, d.ref)
		require.NoError(d.t, err)
		g, err := vehicle.Compile(doc, d.kits[len(d.kits)-1].registry, d.sc.limits.maxSupersteps)
		require.NoError(d.t, err)
		var proposed *run.Moment
		_, err = d.store.MutateRun(ctx, ports.Tenantless(), d.runID, func(current *run.Run) (*run.Moment, error) {
			m, err := superstep.Resume(g, diffCorrupt(d.t, current), superstep.Env{Now: ports.Micros(d.clock.Now())})
			proposed = m
			return m, err
		})
		require.NoError(d.t, err)
		// Written through the store, not an engine: no observer saw it.
		d.observer.put(proposed.Checkpoint())
	}
	return nil
}

func (d *diffDurable) attempts() []diffAttempt {
	var out []diffAttempt
	for _, k := range d.kits {
		out = append(out, k.recorded()...)
	}
	return out
}

// --- comparison --------------------------------------------------------------

// diffRun is a run with every timestamp in UTC (a store may hand times back
// in another location; the instants are what must agree).
func diffRun(r *run.Run) *run.Run {
	if r == nil {
		return nil
	}
	c := r.Clone()
	c.StartedAt, c.UpdatedAt, c.FinishedAt = c.StartedAt.UTC(), c.UpdatedAt.UTC(), c.FinishedAt.UTC()
	for id, task := range c.ActiveTasks {
		task.StartedAt, task.DeadlineAt = task.StartedAt.UTC(), task.DeadlineAt.UTC()
		c.ActiveTasks[id] = task
	}
	for id, in := range c.Interrupts {
		in.CreatedAt, in.ResolvedAt = in.CreatedAt.UTC(), in.ResolvedAt.UTC()
		c.Interrupts[id] = in
	}
	for id, timer := range c.Timers {
		timer.FiresAt = timer.FiresAt.UTC()
		c.Timers[id] = timer
	}
	return c
}

// diffEvents returns events with UTC timestamps and, as run.Event.Equal
// defines, a nil payload equal to an empty one.
func diffEvents(events []run.Event) []run.Event {
	out := make([]run.Event, len(events))
	for i, e := range events {
		e.Timestamp = e.Timestamp.UTC()
		if e.Payload == nil {
			e.Payload = map[string]any{}
		}
		out[i] = e
	}
	return out
}

// diffSplit groups a run's retained events into checkpoints: each ends
// with its checkpoint_committed event.
func diffSplit(t *testing.T, events []run.Event) [][]run.Event {
	t.Helper()
	var out [][]run.Event
	var cur []run.Event
	for _, e := range events {
		cur = append(cur, e)
		if e.Type == run.EventCheckpointCommitted {
			out = append(out, cur)
			cur = nil
		}
	}
	require.Empty(t, cur, "durable: events after the last checkpoint_committed")
	return out
}

// diffUnyield undoes the one legitimate difference a durable checkpoint may
// carry: a vehicle at its drain budget commits a continue moment as
// park(immediate, drain_budget) (run.Yield). Yield changes nothing but
// the two disposition fields of the metadata (on the checkpoint and on its
// checkpoint_committed event); the inline runner has no budget and
// commits the same moment as continue. Only that exact rewrite is undone,
// and only where the inline checkpoint is a continue.
func diffUnyield(t *testing.T, label string, durable, inline *run.CheckpointMetadata) (*run.CheckpointMetadata, bool) {
	t.Helper()
	if durable == nil || durable.WakeDisposition == run.DispositionContinue || durable.ParkReason != run.ReasonDrainBudget {
		return durable, false
	}
	require.Equal(t, run.DispositionImmediate, durable.WakeDisposition, "%s: a yield wakes immediately", label)
	require.NotNil(t, inline, label)
	require.Equal(t, run.DispositionContinue, inline.WakeDisposition, "%s: only a continue moment may be yielded", label)
	out := durable.Clone()
	out.WakeDisposition, out.ParkReason = run.DispositionContinue, ""
	return out, true
}

// diffRequireContiguous checks one flattened history: event seqs 1..n with no
// gap, checkpoint seqs 1..m, each checkpoint closed by exactly one
// checkpoint_committed event.
func diffRequireContiguous(t *testing.T, label string, events []run.Event) {
	t.Helper()
	cp := int64(0)
	for i, e := range events {
		require.Equal(t, int64(i+1), e.Seq, "%s: event seqs are contiguous", label)
		if e.Type == run.EventCheckpointCommitted {
			cp++
			require.EqualValues(t, cp, e.Metadata.Map()["checkpoint_seq"], "%s: checkpoint seqs are contiguous", label)
		}
	}
}

func diffFlatten(cps []run.Checkpoint) []run.Event {
	var out []run.Event
	for _, cp := range cps {
		out = append(out, cp.Events...)
	}
	return out
}

func diffSortedAttempts(as []diffAttempt) []diffAttempt {
	out := slices.Clone(as)
	slices.SortStableFunc(out, func(a, b diffAttempt) int { return strings.Compare(a.IdempotencyKey, b.IdempotencyKey) })
	return out
}

// diffCompareHistories asserts that the durable history is the inline one:
// per checkpoint its type, seq, time, metadata and events (as retained by
// the store and as committed, seen by an observer), and the run it
// committed. It returns the number of drain-budget yields it undid.
func diffCompareHistories(t *testing.T, in *diffInline, du *diffDurable) int {
	t.Helper()
	ctx := context.Background()
	stored := allEvents(t, du.e.Client, du.runID)
	diffRequireContiguous(t, "inline", diffFlatten(in.cps))
	diffRequireContiguous(t, "durable", stored)
	groups := diffSplit(t, stored)
	require.Len(t, groups, len(in.cps), "the same number of checkpoints")

	eventually(t, "every durable checkpoint observed", func() bool {
		for _, cp := range in.cps {
			if _, ok := du.observer.get(cp.Seq); !ok {
				return false
			}
		}
		return true
	})

	yields := 0
	for i, want := range in.cps {
		label := fmt.Sprintf("checkpoint %d (%s)", want.Seq, want.Type)
		group := diffEvents(groups[i])
		final := group[len(group)-1]
		meta, yielded := diffUnyield(t, label, final.Metadata, want.Metadata)
		if yielded {
			yields++
			final.Metadata = meta
			group[len(group)-1] = final
		}
		require.NotNil(t, meta, label)
		assert.Equal(t, want.Type, meta.Type, label)
		assert.Equal(t, want.Seq, meta.Seq, label)
		assert.Equal(t, want.CreatedAt.UTC(), final.Timestamp, "%s: created at", label)
		assert.Equal(t, want.Metadata, meta, "%s: metadata", label)
		assert.Equal(t, diffEvents(want.Events), group, "%s: retained events", label)

		seen, _ := du.observer.get(want.Seq)
		seenMeta, _ := diffUnyield(t, label, seen.Metadata, want.Metadata)
		seenEvents := diffEvents(seen.Events)
		if n := len(seenEvents); n > 0 {
			seenEvents[n-1].Metadata, _ = diffUnyield(t, label, seenEvents[n-1].Metadata, want.Metadata)
		}
		assert.Equal(t, want.Type, seen.Type, "%s: committed type", label)
		assert.Equal(t, want.CreatedAt.UTC(), seen.CreatedAt.UTC(), "%s: committed at", label)
		assert.Equal(t, want.Metadata, seenMeta, "%s: committed metadata", label)
		assert.Equal(t, diffEvents(want.Events), seenEvents, "%s: committed events", label)
		assert.Equal(t, diffRun(want.Run), diffRun(seen.Run), "%s: committed run", label)
	}

	final, err := du.e.FetchRun(ctx, du.runID)
	require.NoError(t, err)
	assert.Equal(t, diffRun(in.r), diffRun(final), "the stored final run")
	assert.Equal(t, diffSortedAttempts(in.kit.recorded()), diffSortedAttempts(du.attempts()), "the node attempts (key, attempt, snapshot)")
	assert.Equal(t, in.waits, du.waits, "the parks served (inline sleeps, durable clock moves to the wake)")
	return yields
}

func diffTypesOf(cps []run.Checkpoint) []run.CheckpointType {
	out := make([]run.CheckpointType, len(cps))
	for i, cp := range cps {
		out[i] = cp.Type
	}
	return out
}

// diffSameSignalError asserts that two signal errors are the same domain
// outcome: both nil, or the same superstep error code.
func diffSameSignalError(t *testing.T, inlineErr, durableErr error) {
	t.Helper()
	if inlineErr == nil || durableErr == nil {
		require.Equal(t, inlineErr == nil, durableErr == nil, "inline: %v; durable: %v", inlineErr, durableErr)
		return
	}
	var a, b *superstep.Error
	require.ErrorAs(t, inlineErr, &a)
	require.ErrorAs(t, durableErr, &b)
	assert.Equal(t, a.Code, b.Code, "the same domain error")
}
