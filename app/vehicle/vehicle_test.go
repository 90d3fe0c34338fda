package vehicle_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/graphcache"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

var epoch = time.Date(2026, 7, 10, 12, 0, 0, 0, time.UTC)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// fixture is one memory store with one started run of a graph.
type fixture struct {
	clock   *clock
	store   *memory.Store
	nodes   *node.Registry
	started chan struct{}
	runID   string
}

func newFixture(t *testing.T, g *graph.Builder) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{now: epoch}, nodes: node.NewRegistry(), started: make(chan struct{}, 8)}
	f.store = memory.New(memory.Options{Clock: f.clock})
	f.nodes.
		MustRegister("t.write", node.New(nil, func(context.Context, node.Input) (node.Output, error) {
			return node.Update(map[string]any{"out": "x"}), nil
		})).
		MustRegister("t.flaky", node.New(nil, func(_ context.Context, in node.Input) (node.Output, error) {
			if in.Task.Attempt == 1 {
				return node.Output{}, errors.New("first attempt fails")
			}
			return node.Update(map[string]any{"out": "x"}), nil
		})).
		MustRegister("t.blocks", node.New(nil, func(ctx context.Context, _ node.Input) (node.Output, error) {
			f.started <- struct{}{}
			<-ctx.Done()
			return node.Output{}, ctx.Err()
		}))
	doc, err := g.Build()
	require.NoError(t, err)
	compiled, err := graph.Compile(doc, f.nodes, graph.Options{Profile: graph.ProfilePublish})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = f.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: compiled.Effective, Hash: compiled.Hash})
	require.NoError(t, err)
	m, err := superstep.Start(compiled, superstep.StartParams{RunID: "run_1"}, superstep.Env{Now: epoch})
	require.NoError(t, err)
	_, err = f.store.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: epoch})
	require.NoError(t, err)
	f.runID = "run_1"
	return f
}

func single(ref string, opts ...graph.RecordOption) *graph.Builder {
	return graph.New("g").
		State("out", schema.String()).
		Node("n", ref, opts...).
		Edge("edge_start", graph.Start, "n").
		Edge("edge_finish", "n", graph.Finish)
}

// twoSteps is two nodes in a row: its first moment continues into a step
// that runs a node, so it is never fused with what follows.
func twoSteps(ref string) *graph.Builder {
	return graph.New("g").
		State("out", schema.String()).
		Node("n", ref).
		Node("m", ref).
		Edge("edge_start", graph.Start, "n").
		Edge("edge_next", "n", "m").
		Edge("edge_finish", "m", graph.Finish)
}

func (f *fixture) claim(t *testing.T) ports.Lease {
	t.Helper()
	b, err := f.store.ClaimDue(context.Background(), claim.Request{Now: f.clock.Now(), Limit: 1, OrphanTTL: time.Minute, MaxClaimAttempts: 5})
	require.NoError(t, err)
	require.Len(t, b.Leases, 1)
	return b.Leases[0]
}

func (f *fixture) vehicle(t *testing.T, runs ports.RunStore, edit ...func(*vehicle.Config)) *vehicle.Vehicle {
	t.Helper()
	cfg := vehicle.Config{
		Runs: runs, Graphs: f.store, Nodes: f.nodes, Clock: f.clock,
		AbandonBackoff:   claim.Backoff{Base: 10 * time.Second, Cap: time.Minute},
		MaxClaimAbandons: 3,
		Budget:           vehicle.Budget{MaxMoments: 100, MaxElapsed: time.Minute},
	}
	for _, e := range edit {
		e(&cfg)
	}
	v, err := vehicle.New(cfg)
	require.NoError(t, err)
	return v
}

func (f *fixture) info(t *testing.T) *ports.RunInfo {
	t.Helper()
	info, err := f.store.InspectRun(context.Background(), ports.System(), f.runID)
	require.NoError(t, err)
	return info
}

// failingCommits makes every Commit fail with err.
type failingCommits struct {
	ports.RunStore
	err error
}

func (s failingCommits) Commit(context.Context, ports.Scope, ports.CommitParams) (*run.Run, error) {
	return nil, s.err
}

// vanishingRuns makes the claimed run unreadable.
type vanishingRuns struct{ ports.RunStore }

func (vanishingRuns) FetchRun(context.Context, ports.Scope, string) (*run.Run, error) {
	return nil, ports.ErrNotFound
}

func TestADriveCommitsUpToThePark(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	var committed []run.CheckpointType
	v := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.AfterCommit = func(_ context.Context, owner ports.OwnerScope, m *run.Moment) {
			assert.Equal(t, ports.Tenantless(), owner)
			committed = append(committed, m.CheckpointType)
		}
	})
	out := v.Drive(context.Background(), f.claim(t))
	assert.Equal(t, vehicle.Parked, out.Kind)
	assert.Equal(t, run.DispositionTerminal, out.Park)
	assert.Equal(t, 2, out.Committed)
	assert.Equal(t, []run.CheckpointType{run.CheckpointStepCommitted, run.CheckpointRunCompleted}, committed)
	assert.False(t, f.info(t).Claimed())
}

func TestTheMomentBudgetYieldsTheClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoSteps("t.write"))
	info := f.driveOneMoment(t, "the continue became an immediate park")
	assert.Equal(t, epoch, info.WakeAt, "the yield is due at once")
}

// driveOneMoment drives the fixture's run with a budget of one moment and
// checks that the vehicle yields after it: an immediate park for the
// budget's reason, with the claim handed back.
func (f *fixture) driveOneMoment(t *testing.T, why string) *ports.RunInfo {
	t.Helper()
	v := f.vehicle(t, f.store, func(c *vehicle.Config) { c.Budget.MaxMoments = 1 })
	out := v.Drive(context.Background(), f.claim(t))
	assert.Equal(t, vehicle.Parked, out.Kind)
	assert.Equal(t, run.DispositionImmediate, out.Park, why)
	assert.Equal(t, vehicle.BudgetMaxMoments, out.Budget)
	assert.Equal(t, 1, out.Committed)
	info := f.info(t)
	assert.False(t, info.Claimed())
	return info
}

// A fused chain is no way around the moment budget: a step that uses the
// last moment yields instead of taking the run's completion along.
func TestTheMomentBudgetStopsAFusedChain(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	info := f.driveOneMoment(t, "the step yields; its completion waits for the next claim")
	assert.Equal(t, run.StatusRunning, info.Run.Status)
}

func TestAStoppingHostYieldsAtTheNextContinue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoSteps("t.write"))
	stopping := make(chan struct{})
	close(stopping)
	v := f.vehicle(t, f.store, func(c *vehicle.Config) { c.Stopping = stopping })
	out := v.Drive(context.Background(), f.claim(t))
	assert.Equal(t, vehicle.Parked, out.Kind)
	assert.Equal(t, vehicle.BudgetShutdown, out.Budget)
}

func TestASignalBetweenClaimAndFetchLosesThePreFetchFence(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	lease := f.claim(t)
	lease.Run = nil // a store whose claim returns no document: the holder reads it
	_, err := f.store.MutateRun(context.Background(), ports.Tenantless(), f.runID, func(r *run.Run) (*run.Moment, error) {
		return superstep.Cancel(r, superstep.Env{Now: epoch})
	})
	require.NoError(t, err)
	out := f.vehicle(t, f.store).Drive(context.Background(), lease)
	assert.Equal(t, vehicle.FenceLost, out.Kind)
	assert.Equal(t, vehicle.StagePreFetch, out.Reason)
	assert.Zero(t, out.Committed)
}

// With the document the claim returned there is no read: the signal is
// caught by the commit fence, and nothing is written.
func TestASignalAfterAClaimWithItsDocumentLosesTheCommitFence(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	lease := f.claim(t)
	require.NotNil(t, lease.Run, "the memory store returns the leased document")
	_, err := f.store.MutateRun(context.Background(), ports.Tenantless(), f.runID, func(r *run.Run) (*run.Moment, error) {
		return superstep.Cancel(r, superstep.Env{Now: epoch})
	})
	require.NoError(t, err)
	out := f.vehicle(t, f.store).Drive(context.Background(), lease)
	assert.Equal(t, vehicle.FenceLost, out.Kind)
	assert.Equal(t, vehicle.StageCommit, out.Reason)
	assert.Zero(t, out.Committed)
	stored, err := f.store.FetchRun(context.Background(), ports.Tenantless(), f.runID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusCancelled, stored.Status, "the signal's commit stands")
}

// A moment that runs no node (the completion after the last step) rides
// in the same commit as the step before it.
func TestTheCompletionIsFusedWithTheLastStep(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	var committed []run.CheckpointType
	out := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.AfterCommit = func(_ context.Context, _ ports.OwnerScope, m *run.Moment) {
			committed = append(committed, m.CheckpointType)
		}
	}).Drive(context.Background(), f.claim(t))
	assert.Equal(t, vehicle.Parked, out.Kind)
	assert.Equal(t, run.DispositionTerminal, out.Park)
	assert.Equal(t, 2, out.Committed, "two checkpoints")
	assert.Len(t, committed, 2, "after-commit work runs for each checkpoint of the chain")
	info := f.info(t)
	assert.Equal(t, run.StatusDone, info.Run.Status)
	assert.Equal(t, int64(3), info.Run.CheckpointSeq)
}

func TestNothingDueIsDeferredToTheEarliestDeadline(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.flaky", graph.Retry(3, 60_000)))
	out := f.vehicle(t, f.store).Drive(context.Background(), f.claim(t))
	require.Equal(t, vehicle.Parked, out.Kind)
	require.Equal(t, run.DispositionAt, out.Park)

	// A claim made by a host whose clock ran ahead, driven by one whose
	// clock (and the lease's claim time) is still before the retry.
	f.clock.Set(epoch.Add(time.Minute))
	lease := f.claim(t)
	lease.ClaimedAt = epoch
	f.clock.Set(epoch)
	out = f.vehicle(t, f.store).Drive(context.Background(), lease)
	assert.Equal(t, vehicle.Deferred, out.Kind)
	assert.Equal(t, ports.AbandonRescheduled, out.Abandon)
	info := f.info(t)
	assert.False(t, info.Claimed())
	assert.Equal(t, epoch.Add(time.Minute), info.WakeAt)
}

// steppingClock reads first, then after from its second reading on.
type steppingClock struct {
	mu           sync.Mutex
	read         bool
	first, after time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read {
		return c.after
	}
	c.read = true
	return c.first
}

// A deadline that passes between the plan and the hand-back is deferred to
// now, not turned into a hand-back the store refuses (a discard).
func TestADeadlineThatPassesWhileDeferringWakesAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.flaky", graph.Retry(3, 60_000)))
	out := f.vehicle(t, f.store).Drive(context.Background(), f.claim(t))
	require.Equal(t, vehicle.Parked, out.Kind)
	require.Equal(t, run.DispositionAt, out.Park)

	f.clock.Set(epoch.Add(time.Minute))
	lease := f.claim(t)
	lease.ClaimedAt = epoch // claimed by a host whose clock ran ahead
	out = f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.Clock = &steppingClock{first: epoch.Add(30 * time.Second), after: epoch.Add(90 * time.Second)}
	}).Drive(context.Background(), lease)
	assert.Equal(t, vehicle.Deferred, out.Kind, "%v", out.Err)
	assert.Equal(t, ports.AbandonRescheduled, out.Abandon)
	info := f.info(t)
	assert.False(t, info.Claimed())
	assert.Equal(t, epoch.Add(90*time.Second), info.WakeAt)
}

func TestAFailedCommitIsDiscardedAndReleased(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	boom := errors.New("connection reset")
	out := f.vehicle(t, failingCommits{RunStore: f.store, err: boom}).Drive(context.Background(), f.claim(t))
	assert.Equal(t, vehicle.Discarded, out.Kind)
	assert.Equal(t, vehicle.StageCommit, out.Reason)
	assert.ErrorIs(t, out.Err, boom)
	info := f.info(t)
	assert.False(t, info.Claimed(), "the claim was released for a quick retry")
	assert.EqualValues(t, 1, info.Run.CheckpointSeq)
}

func TestInvariantViolationsCrashAndLeaveTheClaimToExpire(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	lease := f.claim(t)
	lease.Run = nil // the claimed run vanishes before the holder reads it
	out := f.vehicle(t, vanishingRuns{f.store}).Drive(context.Background(), lease)
	assert.Equal(t, vehicle.Crashed, out.Kind)
	assert.True(t, f.info(t).Claimed())

	g := newFixture(t, single("t.write"))
	out = g.vehicle(t, failingCommits{RunStore: g.store, err: &ports.InvalidCommitError{Reason: "bug"}}).
		Drive(context.Background(), g.claim(t))
	assert.Equal(t, vehicle.Crashed, out.Kind, "a rejected proposal is a runtime bug, not a retry")
	assert.True(t, g.info(t).Claimed())

	// A run whose pinned graph is gone is not released into a hot loop of
	// claims: it crashes, and max_claim_attempts poisons it.
	m := newFixture(t, single("t.write"))
	out = m.vehicle(t, m.store, func(c *vehicle.Config) { c.Graphs = missingGraphs{m.store} }).
		Drive(context.Background(), m.claim(t))
	assert.Equal(t, vehicle.Crashed, out.Kind)
	assert.True(t, m.info(t).Claimed())
}

// missingGraphs has lost every graph.
type missingGraphs struct{ ports.GraphStore }

func (missingGraphs) FetchGraph(context.Context, ports.OwnerScope, ports.GraphRef) (*graph.Graph, error) {
	return nil, ports.ErrNotFound
}

func TestACancelledDriveLeavesItsClaim(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.blocks"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan vehicle.Outcome)
	lease := f.claim(t)
	go func() { done <- f.vehicle(t, f.store).Drive(ctx, lease) }()
	<-f.started
	cancel()
	out := <-done
	assert.Equal(t, vehicle.Interrupted, out.Kind)
	assert.ErrorIs(t, out.Err, context.Canceled)
	assert.True(t, f.info(t).Claimed(), "recovery is the orphan TTL's job")
}

func TestGraphsThisHostCannotUseAreHandedBack(t *testing.T) {
	t.Parallel()
	t.Run("a timeout above the host maximum backs off without poison", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, single("t.write", graph.Timeout(5000)))
		out := f.vehicle(t, f.store, func(c *vehicle.Config) { c.MaxAttemptElapsed = time.Second }).
			Drive(context.Background(), f.claim(t))
		assert.Equal(t, vehicle.HostIncompatible, out.Kind)
		assert.ErrorIs(t, out.Err, superstep.ErrIncompatibleExecutionPolicy)
		info := f.info(t)
		assert.Equal(t, epoch.Add(10*time.Second), info.WakeAt)
		assert.Zero(t, info.ClaimAttempts, "the attempt is refunded")
	})
	t.Run("an unknown node is cached as unusable and abandoned with jitter", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, single("t.write"))
		cache := graphcache.New(graphcache.Options{})
		bare := node.NewRegistry()
		v := f.vehicle(t, f.store, func(c *vehicle.Config) {
			c.Nodes = bare
			c.Cache = cache
			c.Jitter = func(n time.Duration) time.Duration { return n / 2 }
		})
		out := v.Drive(context.Background(), f.claim(t))
		assert.Equal(t, vehicle.Abandoned, out.Kind)
		assert.Equal(t, vehicle.ReasonCompileFailed, out.Reason)
		assert.Equal(t, ports.AbandonRescheduled, out.Abandon)
		assert.Equal(t, epoch.Add(15*time.Second), f.info(t).WakeAt, "base plus jitter")
		_, result := cache.Get(graphcache.Key{Owner: ports.Tenantless(), GraphID: "g", Hash: f.info(t).Run.GraphHash})
		assert.Equal(t, graphcache.Incompatible, result)
	})
}

// A host whose clock lags the database's hands a run back with its whole
// backoff still ahead by the store clock: the lease was stamped at the
// store clock, which bounds the claims' now, so a backoff from the host's
// clock alone would leave the run due again at once (and a poisoning
// hand-back would spend its abandons in as many claim polls).
// A host whose clock lags the claimer's runs what the claimer found due:
// it does not defer (and so hand back, again and again) a retry that is
// due by the claim's clock but not yet by its own.
func TestAHostWhoseClockLagsRunsWhatTheClaimFoundDue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.flaky", graph.Retry(3, 60_000)))
	out := f.vehicle(t, f.store).Drive(context.Background(), f.claim(t))
	require.Equal(t, vehicle.Parked, out.Kind)
	require.Equal(t, run.DispositionAt, out.Park)

	f.clock.Set(epoch.Add(time.Minute)) // the retry is due: claimed
	out = f.vehicle(t, f.store, func(c *vehicle.Config) { c.Clock = &clock{now: epoch} }).
		Drive(context.Background(), f.claim(t))
	assert.Equal(t, vehicle.Parked, out.Kind)
	assert.Equal(t, run.DispositionTerminal, out.Park)
	assert.Equal(t, run.StatusDone, f.info(t).Run.Status)
}

func TestAHostWhoseClockLagsBacksOffFromTheClaim(t *testing.T) {
	t.Parallel()
	lagging := func(c *vehicle.Config) { c.Clock = &clock{now: epoch.Add(-time.Hour)} }
	t.Run("a timeout above the host maximum", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, single("t.write", graph.Timeout(5000)))
		out := f.vehicle(t, f.store, lagging, func(c *vehicle.Config) { c.MaxAttemptElapsed = time.Second }).
			Drive(context.Background(), f.claim(t))
		require.Equal(t, vehicle.HostIncompatible, out.Kind)
		assert.Equal(t, epoch.Add(10*time.Second), f.info(t).WakeAt, "the backoff runs from the claim")
	})
	t.Run("a graph that does not compile", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, single("t.write"))
		out := f.vehicle(t, f.store, lagging, func(c *vehicle.Config) {
			c.Nodes = node.NewRegistry()
			c.Jitter = func(n time.Duration) time.Duration { return n / 2 }
		}).Drive(context.Background(), f.claim(t))
		require.Equal(t, ports.AbandonRescheduled, out.Abandon)
		assert.Equal(t, epoch.Add(15*time.Second), f.info(t).WakeAt, "base plus jitter from the claim")
	})
}

// commitWatch records, for every commit, whether the drive had already
// said that its node work was over.
type commitWatch struct {
	ports.RunStore
	nodesDone    *int
	doneAtCommit []int
}

func (s *commitWatch) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	s.doneAtCommit = append(s.doneAtCommit, *s.nodesDone)
	return s.RunStore.Commit(ctx, scope, p)
}

func TestNodesDoneIsToldOnceWhenOnlyTheFinalCommitRemains(t *testing.T) {
	t.Parallel()
	f := newFixture(t, twoSteps("t.write"))
	calls := 0
	store := &commitWatch{RunStore: f.store, nodesDone: &calls}
	v := f.vehicle(t, store)
	out := v.DriveNotifying(context.Background(), f.claim(t), func() { calls++ })
	assert.Equal(t, vehicle.Parked, out.Kind)
	assert.Equal(t, run.DispositionTerminal, out.Park)
	assert.Equal(t, []int{0, 1}, store.doneAtCommit,
		"the continue commit precedes the word; the final commit (second node, fused completion) follows it")
	assert.Equal(t, 1, calls)
}

func TestNodesDoneIsToldBeforeAFailedFinalCommit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	calls := 0
	v := f.vehicle(t, failingCommits{RunStore: f.store, err: errors.New("connection reset")})
	out := v.DriveNotifying(context.Background(), f.claim(t), func() { calls++ })
	assert.Equal(t, vehicle.Discarded, out.Kind, "the commit's failure is handled as without the word")
	assert.Equal(t, 1, calls)
	assert.False(t, f.info(t).Claimed(), "the claim is still released")
}

// handBackWatch records, for every hand-back, whether the drive had
// already said that its node work was over.
type handBackWatch struct {
	ports.RunStore
	nodesDone      *int
	doneAtHandBack []int
}

func (s *handBackWatch) AbandonClaim(ctx context.Context, runID string, token ports.ClaimToken, p claim.AbandonParams) (ports.AbandonResult, error) {
	s.doneAtHandBack = append(s.doneAtHandBack, *s.nodesDone)
	return s.RunStore.AbandonClaim(ctx, runID, token, p)
}

// A drive that finds nothing due runs no node: its slot goes to the next
// claim before it hands its own back.
func TestNodesDoneIsToldBeforeADeferringHandBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.flaky", graph.Retry(3, 60_000)))
	out := f.vehicle(t, f.store).Drive(context.Background(), f.claim(t))
	require.Equal(t, run.DispositionAt, out.Park)

	f.clock.Set(epoch.Add(time.Minute))
	lease := f.claim(t)
	lease.ClaimedAt = epoch // claimed by a host whose clock ran ahead
	f.clock.Set(epoch)
	calls := 0
	store := &handBackWatch{RunStore: f.store, nodesDone: &calls}
	out = f.vehicle(t, store).DriveNotifying(context.Background(), lease, func() { calls++ })
	assert.Equal(t, vehicle.Deferred, out.Kind)
	assert.Equal(t, []int{1}, store.doneAtHandBack)
	assert.Equal(t, 1, calls)
}

// fetchWatch notes when a drive has read its graph.
type fetchWatch struct {
	ports.GraphStore
	fetched bool
}

func (s *fetchWatch) FetchGraph(ctx context.Context, owner ports.OwnerScope, ref ports.GraphRef) (*graph.Graph, error) {
	g, err := s.GraphStore.FetchGraph(ctx, owner, ref)
	s.fetched = true
	return g, err
}

// A node registered while a drive compiles without it heals the graph:
// the drive's "does not compile" entry belongs to the registry it
// compiled against, not to the one current when it stored the entry.
func TestANodeRegisteredDuringACompileHealsTheGraph(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	bare := node.NewRegistry()
	write, _ := f.nodes.Lookup("t.write")
	graphs := &fetchWatch{GraphStore: f.store}
	cache := graphcache.New(graphcache.Options{Generation: func() string {
		if graphs.fetched && len(bare.Refs()) == 0 { // registered once the drive has read its graph
			bare.MustRegister("t.write", write)
		}
		return strings.Join(bare.Refs(), ",")
	}})
	v := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.Graphs = graphs
		c.Nodes = bare
		c.Cache = cache
	})
	out := v.Drive(context.Background(), f.claim(t))
	require.Equal(t, vehicle.Abandoned, out.Kind)
	require.Equal(t, vehicle.ReasonCompileFailed, out.Reason)

	_, result := cache.Get(graphcache.Key{Owner: ports.Tenantless(), GraphID: "g", Hash: f.info(t).Run.GraphHash})
	assert.NotEqual(t, graphcache.Incompatible, result, "t.write is registered now: the graph compiles")
}

// corruptGraphs reports every stored graph as corrupt.
type corruptGraphs struct{ ports.GraphStore }

func (corruptGraphs) FetchGraph(_ context.Context, _ ports.OwnerScope, ref ports.GraphRef) (*graph.Graph, error) {
	return nil, &ports.CorruptError{Kind: ports.CorruptGraph, ID: ref.GraphID, Hash: ref.Hash,
		Err: errors.New("stored bytes are not the document's canonical encoding")}
}

// A corrupt stored graph is handed back like one that does not compile,
// and the operator is told why: the hand-backs end in a poison whose
// reason (max_claim_abandons_exceeded) does not name the corruption.
func TestACorruptStoredGraphIsHandedBackAndReported(t *testing.T) {
	t.Parallel()
	f := newFixture(t, single("t.write"))
	var logs bytes.Buffer
	v := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.Graphs = corruptGraphs{f.store}
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	lease := f.claim(t)
	out := v.Drive(context.Background(), lease)
	assert.Equal(t, vehicle.Abandoned, out.Kind)
	assert.Equal(t, vehicle.ReasonCorruptGraph, out.Reason)
	assert.ErrorIs(t, out.Err, ports.ErrCorruptGraph)
	assert.Contains(t, logs.String(), lease.RunID)
	assert.Contains(t, logs.String(), lease.GraphHash)
	assert.Contains(t, logs.String(), "canonical encoding")
}

// A graph this host cannot compile (a node it does not register) is
// handed back with a warning that names the run, so that an operator can
// find the run before its hand-backs poison it.
func TestAGraphThatDoesNotCompileIsReportedWithItsRun(t *testing.T) {
	t.Parallel()
	f, v, logs := uncompilable(t, 0)
	lease := f.claim(t)
	out := v.Drive(context.Background(), lease)
	require.Equal(t, vehicle.Abandoned, out.Kind)
	require.Equal(t, vehicle.ReasonCompileFailed, out.Reason)
	assert.Contains(t, logs.String(), "run_id="+lease.RunID)
	assert.Contains(t, logs.String(), lease.GraphHash)
	assert.Contains(t, logs.String(), "t.write")
}

// A hand-back that poisons the run is logged with the run and its reason:
// nothing else tells an operator of a worker that the run now waits for a
// retry.
func TestAPoisoningHandBackIsLogged(t *testing.T) {
	t.Parallel()
	f, v, logs := uncompilable(t, 1)
	lease := f.claim(t)
	out := v.Drive(context.Background(), lease)
	require.Equal(t, ports.AbandonRescheduled, out.Abandon)
	assert.NotContains(t, logs.String(), "poisoned", "a rescheduled hand-back poisons nothing")

	f.clock.Set(epoch.Add(time.Hour))
	out = v.Drive(context.Background(), f.claim(t))
	require.Equal(t, ports.AbandonPoisoned, out.Abandon, "the abandons are exhausted")
	assert.Contains(t, logs.String(), "poisoned")
	assert.Contains(t, logs.String(), "run_id="+lease.RunID)
	assert.Contains(t, logs.String(), ports.PoisonReasonMaxClaimAbandons)
}

// uncompilable is a fixture of one stored run and a vehicle whose host
// registers none of its nodes, so its graph does not compile there, with
// maxAbandons (0: the fixture's) and its log.
func uncompilable(t *testing.T, maxAbandons int) (*fixture, *vehicle.Vehicle, *bytes.Buffer) {
	t.Helper()
	f := newFixture(t, single("t.write"))
	logs := &bytes.Buffer{}
	v := f.vehicle(t, f.store, func(c *vehicle.Config) {
		c.Nodes = node.NewRegistry()
		if maxAbandons > 0 {
			c.MaxClaimAbandons = maxAbandons
		}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	return f, v, logs
}
