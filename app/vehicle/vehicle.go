// Package vehicle drives one claimed run (one lease) to its next park: it
// loads the run's pinned graph version (through the node-local graph
// cache), plans the next superstep, executes node attempts through the
// executor, settles them into a Moment and commits it under the claim
// fence, and keeps going while the run wants to continue and the drain
// budget lasts. At the budget it commits a yield (an immediate park), so a
// claim is never held longer than the budget plus one superstep.
//
// A vehicle never refreshes its claim: every continue commit re-stamps it.
// It never decides who owns a run: a lost fence means someone else (a
// signal, a steal) won, and the vehicle stops. It is not the dispatcher:
// claiming, concurrency and shutdown live in package dispatch.
package vehicle

import (
	"context"
	cryptorand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/graphcache"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// DefaultStoreTimeout bounds one store call when Config.StoreTimeout is
// zero.
const DefaultStoreTimeout = 15 * time.Second

// Budget bounds one drive. A limit <= 0 is unlimited; the engine requires
// a finite MaxElapsed below the orphan TTL.
type Budget struct {
	MaxMoments int
	MaxElapsed time.Duration
}

// Config is a vehicle's wiring. The engine builds and validates it; New
// only checks that the required collaborators are present.
type Config struct {
	Runs   ports.RunStore   // required
	Graphs ports.GraphStore // required
	Nodes  *node.Registry   // required
	Clock  ports.Clock      // nil: ports.SystemClock
	// StoreTimeout bounds each store call of a drive (read, commit, graph
	// fetch, hand-back, release; 0: DefaultStoreTimeout). A call that
	// times out ends the drive like any failed call: the claim is released
	// (best effort) and the work is dropped. A commit that times out may
	// or may not have been written; the fence keeps either outcome
	// correct.
	StoreTimeout time.Duration
	// Cache is the graph cache; nil compiles once per drive.
	Cache *graphcache.Cache
	// MaxAttemptElapsed is the host maximum of one node attempt (default
	// executor.DefaultMaxAttemptElapsed).
	MaxAttemptElapsed time.Duration
	// MaxSupersteps is the runtime superstep limit for graphs without one
	// (0: none).
	MaxSupersteps int
	Budget        Budget
	// AbandonBackoff is the base and cap of hand-backs (required, valid).
	AbandonBackoff claim.Backoff
	// MaxClaimAbandons poisons a run after this many stored-graph
	// hand-backs without progress (required, >= 1).
	MaxClaimAbandons int
	// Jitter returns a duration in (0, n] (default uniform).
	Jitter func(n time.Duration) time.Duration
	// AfterCommit runs after every successful commit (observers,
	// telemetry); it must not block.
	AfterCommit func(ctx context.Context, owner ports.OwnerScope, m *run.Moment)
	// Stopping, when closed, makes the drive yield at its next continue
	// commit, so a stopping host hands work back promptly.
	Stopping <-chan struct{}
	// NewInterruptID generates interrupt ids (default random).
	NewInterruptID func() string
	Telemetry      ports.Telemetry // nil: ports.NopTelemetry
	Logger         *slog.Logger    // nil: slog.Default()
}

// Vehicle drives leases. It is safe for concurrent use: each Drive is
// independent.
type Vehicle struct {
	cfg  Config
	exec *executor.Executor
}

// New returns a vehicle for cfg.
func New(cfg Config) (*Vehicle, error) {
	switch {
	case cfg.Runs == nil:
		return nil, errors.New("vehicle: Runs is required")
	case cfg.Graphs == nil:
		return nil, errors.New("vehicle: Graphs is required")
	case cfg.Nodes == nil:
		return nil, errors.New("vehicle: Nodes is required")
	case cfg.MaxClaimAbandons < 1:
		return nil, errors.New("vehicle: MaxClaimAbandons must be at least 1")
	case cfg.AbandonBackoff.Base <= 0 || cfg.AbandonBackoff.Cap < cfg.AbandonBackoff.Base:
		return nil, errors.New("vehicle: AbandonBackoff needs 0 < Base <= Cap")
	}
	if cfg.Clock == nil {
		cfg.Clock = ports.SystemClock{}
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.MaxAttemptElapsed <= 0 {
		cfg.MaxAttemptElapsed = executor.DefaultMaxAttemptElapsed
	}
	if cfg.Jitter == nil {
		cfg.Jitter = UniformJitter
	}
	if cfg.AfterCommit == nil {
		cfg.AfterCommit = func(context.Context, ports.OwnerScope, *run.Moment) {}
	}
	if cfg.NewInterruptID == nil {
		cfg.NewInterruptID = func() string { return RandomID("interrupt_") }
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = ports.NopTelemetry{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Vehicle{
		cfg:  cfg,
		exec: &executor.Executor{Nodes: traced(cfg.Nodes, cfg.Telemetry), MaxAttemptElapsed: cfg.MaxAttemptElapsed},
	}, nil
}

// drive is the state of one Drive call.
type drive struct {
	*Vehicle
	lease     ports.Lease
	started   time.Time // monotonic
	committed int
	// nodesDone, when set, is told once that the drive will run no more
	// node attempts (see DriveNotifying); nil after it was called.
	nodesDone func()
}

// Drive runs one lease to its outcome. It never returns an error: every
// ending is an Outcome, and every claim is released, handed back, or (for
// Interrupted and Crashed) left to expire.
func (v *Vehicle) Drive(ctx context.Context, lease ports.Lease) Outcome {
	return v.DriveNotifying(ctx, lease, nil)
}

// DriveNotifying is Drive that calls nodesDone (at most once, on the
// drive's goroutine) when the drive has run its last node attempt and
// only the commit of its final moment (a park or the run's end) remains.
// The dispatcher gives the drive's concurrency slot to the next claimed
// run there, so that run's nodes start while this commit is in flight;
// the commit's outcome is handled exactly as without the call.
func (v *Vehicle) DriveNotifying(ctx context.Context, lease ports.Lease, nodesDone func()) (out Outcome) {
	d := &drive{Vehicle: v, lease: lease, started: time.Now(), nodesDone: nodesDone}
	ctx, span := v.cfg.Telemetry.StartSpan(ctx, ports.FactVehicle,
		ports.Label{Key: ports.LabelRunID, Value: lease.RunID},
		ports.Label{Key: ports.LabelGraphID, Value: lease.GraphID},
		ports.Label{Key: ports.LabelGraphHash, Value: lease.GraphHash},
		ports.Label{Key: ports.LabelClaimAttempt, Value: strconv.Itoa(lease.Attempt)})
	defer func() {
		if p := recover(); p != nil {
			out = Outcome{Kind: Crashed, Committed: d.committed,
				Err: fmt.Errorf("vehicle panicked: %v\n%s", p, debug.Stack())}
		}
		d.finish(ctx, out)
		span.End(spanResult(out), nil)
	}()
	return d.run(ctx)
}

func (d *drive) run(ctx context.Context) Outcome {
	r, err := d.leasedRun(ctx)
	switch {
	case err != nil && ctx.Err() != nil:
		return d.interrupted(err)
	case errors.Is(err, ports.ErrNotFound):
		return d.crash(fmt.Errorf("claim invariant: claimed run %q was not found", d.lease.RunID))
	case err != nil:
		return d.discard(ctx, StagePreFetch, err)
	case r.CheckpointSeq != d.lease.CheckpointSeq:
		// A signal landed between the claim and this read.
		d.fenceLost(ctx, StagePreFetch)
		return d.release(ctx, Outcome{Kind: FenceLost, Reason: StagePreFetch})
	case r.Status != run.StatusRunning:
		return d.crash(fmt.Errorf("claim invariant: claimed run %q is %s, not running", d.lease.RunID, r.Status))
	}

	g, out, ok := d.graph(ctx)
	if !ok {
		return out
	}
	return d.loop(ctx, g, r)
}

// leasedRun is the claimed run: the document the claim returned, else
// one read (the pre-fetch fence check).
func (d *drive) leasedRun(ctx context.Context) (*run.Run, error) {
	if r := d.lease.Run; r != nil && r.ID == d.lease.RunID {
		return r, nil
	}
	sctx, cancel := d.storeCall(ctx)
	r, err := d.cfg.Runs.FetchRun(sctx, d.lease.Owner, d.lease.RunID)
	cancel()
	return r, d.timedOut(ctx, "read of the claimed run", err)
}

// loop is the moment loop: plan, execute, settle, commit, until a park.
func (d *drive) loop(ctx context.Context, g *graph.Compiled, r *run.Run) Outcome {
	// The first plan treats the claim time as reached: a host whose clock
	// is behind the claimer's cannot defer work the claimer found due.
	floor := d.lease.ClaimedAt
	var planned *superstep.Step
	for {
		if err := ctx.Err(); err != nil {
			return d.interrupted(err)
		}
		stored, next, out, done := d.moment(ctx, g, r, floor, planned)
		if done {
			return out
		}
		floor, r, planned = time.Time{}, stored, next
	}
}

// moment makes one moment of r: plan, execute, settle, commit. It returns
// the committed run to continue from, or the drive's outcome when done.
// Its span carries the step it executes and the checkpoint it proposes.
//
// planned, when set, is r's next step as the previous moment's fusion
// already planned it (a step that executes nodes: due then, due now), so
// it is not planned twice; next is the same for the moment after this one.
func (d *drive) moment(ctx context.Context, g *graph.Compiled, r *run.Run, floor time.Time, planned *superstep.Step) (stored *run.Run, next *superstep.Step, out Outcome, done bool) {
	ctx, span := d.cfg.Telemetry.StartSpan(ctx, ports.FactMoment,
		ports.Label{Key: ports.LabelRunID, Value: r.ID},
		ports.Label{Key: ports.LabelStep, Value: strconv.Itoa(r.Step)},
		ports.Label{Key: ports.LabelCheckpointSeq, Value: strconv.FormatInt(r.CheckpointSeq+1, 10)})
	defer func() { span.End(momentResult(stored, out), nil) }()

	var step superstep.Step
	if planned != nil {
		step = *planned
	} else {
		var err error
		if step, err = superstep.Advance(g, r, d.env(floor)); err != nil {
			return nil, nil, d.crash(fmt.Errorf("plan run %q: %w", r.ID, err)), true
		}
	}
	var m *run.Moment
	switch step.Kind {
	case superstep.Execute:
		results, err := d.exec.Execute(ctx, r.ID, step.Activations)
		if err != nil {
			return nil, nil, d.interrupted(err), true
		}
		// Settle reads the clock again: timestamps and retry deadlines
		// count from the end of execution.
		if m, err = superstep.Settle(g, r, step, results, d.env(floor)); err != nil {
			return nil, nil, d.crash(fmt.Errorf("settle run %q: %w", r.ID, err)), true
		}
	case superstep.Commit:
		m = step.Moment
	case superstep.Park:
		d.noMoreNodes()
		return nil, nil, d.deferUntil(ctx, r, step.ResumeAt), true
	case superstep.Wait:
		return nil, nil, d.crash(fmt.Errorf("claim invariant: claimed run %q is blocked on open interrupts", r.ID)), true
	case superstep.Terminal:
		return nil, nil, d.crash(fmt.Errorf("claim invariant: claimed run %q is already terminal", r.ID)), true
	default:
		return nil, nil, d.crash(fmt.Errorf("unknown step kind %d", step.Kind)), true
	}

	chain, ahead, err := d.fuse(g, m, floor)
	if err != nil {
		return nil, nil, d.crash(err), true
	}
	last := chain[len(chain)-1]
	fired := ""
	if last.Disposition.Kind == run.DispositionContinue {
		if fired = d.budgetFired(len(chain)); fired != "" {
			if last, err = run.Yield(last, run.ReasonDrainBudget); err != nil {
				return nil, nil, d.crash(fmt.Errorf("yield run %q: %w", r.ID, err)), true
			}
			chain[len(chain)-1] = last
		}
	}
	if last.Disposition.Kind != run.DispositionContinue {
		d.noMoreNodes()
	}
	stored, out, ok := d.commit(ctx, chain)
	if !ok {
		return nil, nil, out, true
	}
	if last.Disposition.Kind != run.DispositionContinue {
		return stored, nil, Outcome{Kind: Parked, Park: last.Disposition.Kind, Committed: d.committed, Budget: fired}, true
	}
	return stored, ahead, Outcome{}, false
}

// fuse extends a continue moment with the moments that follow it at once
// without running a node (the completion after a run's last step, say),
// so that one commit carries them all (ports.CommitParams.Then), within
// the drain budget. Planning on the proposed run is planning on what the
// commit will store; a step that executes nodes ends the chain and is
// returned as ahead, the next moment's plan.
func (d *drive) fuse(g *graph.Compiled, m *run.Moment, floor time.Time) (chain []*run.Moment, ahead *superstep.Step, err error) {
	chain = append(make([]*run.Moment, 0, 2), m) // room for the completion a last step fuses
	// A fired drain budget (moments, time, shutdown) stops the chain: its
	// last continue becomes the yield, as without fusion.
	for m.Disposition.Kind == run.DispositionContinue && d.budgetFired(len(chain)) == "" {
		next, err := superstep.Advance(g, m.Run, d.env(floor))
		if err != nil {
			return nil, nil, fmt.Errorf("plan run %q: %w", m.Run.ID, err)
		}
		if next.Kind != superstep.Commit {
			if next.Kind == superstep.Execute {
				ahead = &next // the next moment's plan, once this chain commits
			}
			break
		}
		m = next.Moment
		chain = append(chain, m)
	}
	return chain, ahead, nil
}

// noMoreNodes tells the DriveNotifying caller, once, that this drive's
// node work is over.
func (d *drive) noMoreNodes() {
	if f := d.nodesDone; f != nil {
		d.nodesDone = nil
		f()
	}
}

// momentResult is a moment span's result: ok once its commit succeeded,
// stale_fence when another writer won, skipped when nothing was due yet
// or the host stopped first, error otherwise.
func momentResult(stored *run.Run, out Outcome) string {
	switch {
	case stored != nil:
		return ports.ResultOK
	case out.Kind == FenceLost:
		return ports.ResultStaleFence
	case out.Kind == Deferred, out.Kind == Interrupted:
		return ports.ResultSkipped
	}
	return ports.ResultError
}

// commit writes a chain of moments (one, or a fused chain) under the
// lease's fence and runs the after-commit work of each.
func (d *drive) commit(ctx context.Context, chain []*run.Moment) (*run.Run, Outcome, bool) {
	cctx, span := d.cfg.Telemetry.StartSpan(ctx, ports.FactRunStoreCommit)
	sctx, cancel := d.storeCall(cctx)
	// The drive goes on from its own proposal, which is what a success
	// stores: the store need not copy it back.
	_, err := d.cfg.Runs.Commit(sctx, d.lease.Owner, ports.CommitParams{Moment: chain[0], Then: chain[1:], ClaimToken: d.lease.Token, NoResult: true})
	cancel()
	span.End(resultOf(err), nil)
	// A timed-out commit is ambiguous: it is discarded and the claim
	// released below, and the fence makes either fate safe: if it was
	// written, the release is a no-op or hands the committed state on; if
	// not, the next claim replays the moment.
	err = d.timedOut(ctx, "commit (it may or may not have been written)", err)
	switch {
	case err == nil:
	case errors.Is(err, ports.ErrStaleFence):
		d.fenceLost(ctx, StageCommit)
		return nil, d.release(ctx, Outcome{Kind: FenceLost, Reason: StageCommit, Committed: d.committed}), false
	case ctx.Err() != nil:
		// The commit's fate is unknown; the claim is left to its TTL and
		// the fence decides whoever comes next.
		return nil, d.interrupted(err), false
	case errors.Is(err, ports.ErrInvalidCommit), errors.Is(err, ports.ErrNotFound):
		return nil, d.crash(fmt.Errorf("claim invariant: commit of claimed run %q was rejected: %w", d.lease.RunID, err)), false
	default:
		return nil, d.discard(ctx, StageCommit, err), false
	}
	for _, m := range chain {
		d.committed++
		d.cfg.AfterCommit(ctx, d.lease.Owner, m)
	}
	return chain[len(chain)-1].Run, Outcome{}, true
}

// budgetFired reports which limit makes the next continue a yield, when
// the next commit carries moments moments.
func (d *drive) budgetFired(moments int) string {
	b := d.cfg.Budget
	count := b.MaxMoments > 0 && d.committed+moments >= b.MaxMoments
	elapsed := b.MaxElapsed > 0 && time.Since(d.started) >= b.MaxElapsed
	switch {
	case count && elapsed:
		return BudgetBoth
	case count:
		return BudgetMaxMoments
	case elapsed:
		return BudgetMaxElapsed
	}
	if d.cfg.Stopping != nil {
		select {
		case <-d.cfg.Stopping:
			return BudgetShutdown
		default:
		}
	}
	return ""
}

func (d *drive) env(floor time.Time) superstep.Env {
	return superstep.Env{Now: d.now(), ResumeFloor: floor, NewInterruptID: d.cfg.NewInterruptID}
}

func (d *drive) now() time.Time { return ports.Micros(d.cfg.Clock.Now()) }

// backoffFrom is the instant a hand-back's backoff runs from: this host's
// now, and no earlier than the claim. The lease was stamped no earlier
// than the store clock, which bounds every claim's now (see
// claim.Request.DueBy), so on a host whose clock lags the database's a
// backoff from the host's clock alone would be due again at once.
func (d *drive) backoffFrom() time.Time {
	if now := d.now(); now.After(d.lease.ClaimedAt) {
		return now
	}
	return ports.Micros(d.lease.ClaimedAt)
}

// graph returns the lease's compiled graph, or the outcome of handing the
// claim back when it cannot be used here.
func (d *drive) graph(ctx context.Context) (*graph.Compiled, Outcome, bool) {
	key := graphcache.Key{Owner: d.lease.Owner, GraphID: d.lease.GraphID, Hash: d.lease.GraphHash}
	var generation string // the registry this drive compiles against
	if c := d.cfg.Cache; c != nil {
		e, result := c.Lookup(ctx, d.cfg.Telemetry, key)
		switch result {
		case graphcache.Hit:
			return d.checkHost(ctx, e.Compiled)
		case graphcache.Incompatible:
			return nil, d.abandon(ctx, e.Reason), false
		}
		generation = c.Generation()
	}

	fctx, span := d.cfg.Telemetry.StartSpan(ctx, ports.FactGraphFetch, ports.Label{Key: ports.LabelGraphID, Value: d.lease.GraphID})
	sctx, cancel := d.storeCall(fctx)
	doc, err := d.cfg.Graphs.FetchGraph(sctx, d.lease.Owner, ports.GraphRef{GraphID: d.lease.GraphID, Hash: d.lease.GraphHash})
	cancel()
	span.End(resultOf(err), nil)
	err = d.timedOut(ctx, "graph fetch", err)
	switch {
	case errors.Is(err, ports.ErrCorruptGraph):
		d.putIncompatible(key, generation, ReasonCorruptGraph, true)
		// The hand-backs end in a max_claim_abandons poison that does not
		// say why: the corruption is told here, where it is known.
		d.cfg.Logger.Warn("docket stored graph is corrupt; handing the claim back",
			slog.String("run_id", d.lease.RunID), slog.String("graph_id", d.lease.GraphID),
			slog.String("graph_hash", d.lease.GraphHash), slog.String("error", err.Error()))
		out := d.abandon(ctx, ReasonCorruptGraph)
		if out.Err == nil {
			out.Err = err
		}
		return nil, out, false
	case err != nil && ctx.Err() != nil:
		return nil, d.interrupted(err), false
	case errors.Is(err, ports.ErrNotFound):
		return nil, d.crash(fmt.Errorf("claim invariant: graph %q@%s of claimed run %q is missing",
			d.lease.GraphID, d.lease.GraphHash, d.lease.RunID)), false
	case err != nil:
		return nil, d.discard(ctx, StageGraphFetch, err), false
	}

	compiled, err := CompileTraced(ctx, d.cfg.Telemetry, doc, d.cfg.Nodes, d.cfg.MaxSupersteps)
	switch {
	case err != nil:
		d.putIncompatible(key, generation, ReasonCompileFailed, false)
		d.cfg.Logger.Warn("docket stored graph does not compile on this host; handing the claim back",
			slog.String("run_id", d.lease.RunID), slog.String("graph_id", d.lease.GraphID), slog.String("graph_hash", d.lease.GraphHash),
			slog.String("error", err.Error()))
		return nil, d.abandon(ctx, ReasonCompileFailed), false
	case compiled.GraphID != d.lease.GraphID || compiled.Hash != d.lease.GraphHash:
		d.putIncompatible(key, generation, ReasonIdentityMismatch, false)
		return nil, d.abandon(ctx, ReasonIdentityMismatch), false
	}
	if d.cfg.Cache != nil {
		d.cfg.Cache.PutCompiled(key, generation, compiled)
	}
	return d.checkHost(ctx, compiled)
}

// Compile compiles a stored (effective) graph document the way every
// runtime path does: profile run, defaults not materialized again, the
// host's superstep limit for graphs without one.
func Compile(doc *graph.Graph, nodes graph.Implementations, maxSupersteps int) (*graph.Compiled, error) {
	return graph.Compile(doc, nodes, graph.Options{
		Profile:           graph.ProfileRun,
		EffectiveDocument: true,
		MaxSupersteps:     maxSupersteps,
	})
}

// CompileTraced is Compile inside a graph.compile span.
func CompileTraced(ctx context.Context, tel ports.Telemetry, doc *graph.Graph, nodes graph.Implementations, maxSupersteps int) (*graph.Compiled, error) {
	_, span := tel.StartSpan(ctx, ports.FactGraphCompile, ports.Label{Key: ports.LabelGraphID, Value: doc.ID})
	compiled, err := Compile(doc, nodes, maxSupersteps)
	span.End(resultOf(err), nil)
	return compiled, err
}

func (d *drive) putIncompatible(key graphcache.Key, generation, reason string, undecodable bool) {
	if d.cfg.Cache != nil {
		d.cfg.Cache.PutIncompatible(key, generation, reason, undecodable)
	}
}

// checkHost hands the claim back without poisoning when a node's
// timeout_ms exceeds this host's attempt maximum.
func (d *drive) checkHost(ctx context.Context, g *graph.Compiled) (*graph.Compiled, Outcome, bool) {
	err := superstep.CheckExecutionPolicy(g, int(d.cfg.MaxAttemptElapsed/time.Millisecond))
	if err == nil {
		return g, Outcome{}, true
	}
	now := d.backoffFrom()
	res, aerr := d.abandonClaim(ctx, claim.AbandonParams{
		ExpectedSeq:      d.lease.CheckpointSeq,
		Now:              now,
		RetryAt:          now.Add(d.cfg.AbandonBackoff.Base),
		MaxClaimAbandons: d.cfg.MaxClaimAbandons,
		NonPoisoning:     true,
		Backoff:          &d.cfg.AbandonBackoff,
	})
	switch {
	case aerr != nil && ctx.Err() != nil:
		return nil, d.interrupted(aerr), false
	case aerr != nil:
		return nil, d.discard(ctx, StageAbandon, aerr), false
	case res == ports.AbandonStale:
		return nil, Outcome{Kind: FenceLost, Reason: StageAbandon}, false
	case res == ports.AbandonPoisoned:
		d.poisoned(ctx)
		return nil, Outcome{Kind: Abandoned, Abandon: res, Reason: string(HostIncompatible), Err: err}, false
	}
	return nil, Outcome{Kind: HostIncompatible, Abandon: res, Err: err}, false
}

// abandon hands back a claim whose stored graph cannot be used here, with
// a jittered backoff in (base, 2·base], counting toward poison.
func (d *drive) abandon(ctx context.Context, reason string) Outcome {
	now := d.backoffFrom()
	base := d.cfg.AbandonBackoff.Base
	retryAt := now.Add(base + clampJitter(d.cfg.Jitter, base))
	res, failed := d.handBack(ctx, d.lease.CheckpointSeq, now, retryAt)
	if failed != nil {
		return *failed
	}
	return Outcome{Kind: Abandoned, Abandon: res, Reason: reason}
}

// deferUntil hands the claim back when nothing is due yet, waking at the
// earliest deadline (never in the past).
func (d *drive) deferUntil(ctx context.Context, r *run.Run, resumeAt time.Time) Outcome {
	now := d.now()
	retryAt := ports.Micros(resumeAt)
	if retryAt.Before(now) {
		retryAt = now
	}
	res, failed := d.handBack(ctx, r.CheckpointSeq, now, retryAt)
	if failed != nil {
		return *failed
	}
	return Outcome{Kind: Deferred, Abandon: res, Committed: d.committed}
}

// handBack hands the claim back fenced on expectedSeq, to wake at retryAt.
// A hand-back that poisons the run reports it; one that fails returns the
// drive's outcome instead of a result.
func (d *drive) handBack(ctx context.Context, expectedSeq int64, now, retryAt time.Time) (ports.AbandonResult, *Outcome) {
	res, err := d.abandonClaim(ctx, claim.AbandonParams{
		ExpectedSeq:      expectedSeq,
		Now:              now,
		RetryAt:          retryAt,
		MaxClaimAbandons: d.cfg.MaxClaimAbandons,
	})
	switch {
	case err != nil && ctx.Err() != nil:
		out := d.interrupted(err)
		return res, &out
	case err != nil:
		out := d.discard(ctx, StageAbandon, err)
		return res, &out
	case res == ports.AbandonPoisoned:
		d.poisoned(ctx)
	}
	return res, nil
}

// abandonClaim hands the lease's claim back under p, bounded like every
// store call.
func (d *drive) abandonClaim(ctx context.Context, p claim.AbandonParams) (ports.AbandonResult, error) {
	sctx, cancel := d.storeCall(ctx)
	defer cancel()
	res, err := d.cfg.Runs.AbandonClaim(sctx, d.lease.RunID, d.lease.Token, p)
	return res, d.timedOut(ctx, "hand-back", err)
}

// storeCall bounds one store call by StoreTimeout, so a store that does
// not answer (a half-open connection, a lock wait) cannot hold the drive,
// and its dispatcher slot, forever.
func (d *drive) storeCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d.cfg.StoreTimeout)
}

// timedOut names a store call that ran out of StoreTimeout while the drive
// itself went on; any other error is returned unchanged.
func (d *drive) timedOut(ctx context.Context, call string, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("the store did not answer the %s within %s: %w", call, d.cfg.StoreTimeout, err)
}

// release hands the claim back with an immediate wake (a no-op when the
// token is no longer current) and returns out.
func (d *drive) release(ctx context.Context, out Outcome) Outcome {
	// A release is worth trying even when the caller's context ended: it
	// only shortens recovery, and it is bounded like every store call.
	rctx, cancel := d.storeCall(context.WithoutCancel(ctx))
	defer cancel()
	if err := d.cfg.Runs.ReleaseClaim(rctx, d.lease.RunID, d.lease.Token, d.now()); err != nil {
		d.cfg.Logger.Warn("docket claim release failed; the claim will expire after the orphan TTL",
			slog.String("run_id", d.lease.RunID), slog.String("error", err.Error()))
	}
	return out
}

// poisoned reports that a hand-back poisoned the run: an abandon poisons
// only when max_claim_abandons is exhausted.
func (d *drive) poisoned(ctx context.Context) {
	// Admission poisoning is logged by the dispatcher; this one only here.
	d.cfg.Logger.Warn("docket run poisoned: handed back too often without progress; it waits for a retry (docket runs retry) once a host can drive it",
		slog.String("run_id", d.lease.RunID), slog.String("graph_id", d.lease.GraphID),
		slog.String("reason", claim.ReasonMaxClaimAbandons))
	d.cfg.Telemetry.Emit(ctx, ports.FactClaimPoisoned, ports.Measurements{"count": 1},
		ports.Label{Key: ports.LabelReason, Value: ports.PoisonReasonMaxClaimAbandons})
}

func (d *drive) discard(ctx context.Context, stage string, err error) Outcome {
	d.cfg.Telemetry.Emit(ctx, ports.FactVehicleDiscard, ports.Measurements{"count": 1},
		ports.Label{Key: ports.LabelStage, Value: stage}, ports.Label{Key: ports.LabelResult, Value: discardResult(err)})
	d.cfg.Logger.Warn("docket vehicle discarded its work and released the claim",
		slog.String("run_id", d.lease.RunID), slog.String("stage", stage), slog.String("error", err.Error()))
	return d.release(ctx, Outcome{Kind: Discarded, Reason: stage, Err: err, Committed: d.committed})
}

func (d *drive) fenceLost(ctx context.Context, stage string) {
	d.cfg.Telemetry.Emit(ctx, ports.FactFenceLost, ports.Measurements{"count": 1},
		ports.Label{Key: ports.LabelStage, Value: stage}, ports.Label{Key: ports.LabelResult, Value: ports.ResultStaleFence})
}

func (d *drive) interrupted(err error) Outcome {
	return Outcome{Kind: Interrupted, Err: err, Committed: d.committed}
}

func (d *drive) crash(err error) Outcome {
	return Outcome{Kind: Crashed, Err: err, Committed: d.committed}
}

// finish reports one drive: the drain fact, and for a crash the crash fact
// and an error log.
func (d *drive) finish(ctx context.Context, out Outcome) {
	// The claim was stamped no earlier than the store clock, which this
	// host's clock may lag: the drive's own (monotonic) time bounds the
	// claim's age from below.
	elapsed := time.Since(d.started)
	held := max(d.now().Sub(d.lease.ClaimedAt), elapsed)
	if out.Kind == Crashed {
		d.cfg.Telemetry.Emit(ctx, ports.FactVehicleCrash, ports.Measurements{
			"count": 1, "claim_held_ms": ms(held), "claim_attempt": float64(d.lease.Attempt),
		}, ports.Label{Key: ports.LabelResult, Value: string(Crashed)})
		d.cfg.Logger.Error("docket vehicle crashed; the claim will expire after the orphan TTL",
			slog.String("run_id", d.lease.RunID), slog.Int("claim_attempt", d.lease.Attempt),
			slog.String("error", errString(out.Err)))
	}
	if ports.Discards(d.cfg.Telemetry) {
		return
	}
	labels := []ports.Label{{Key: ports.LabelOutcome, Value: string(out.Kind)}}
	if out.Budget != "" {
		labels = append(labels, ports.Label{Key: ports.LabelBudget, Value: out.Budget})
	}
	d.cfg.Telemetry.Emit(ctx, ports.FactVehicleDrain, ports.Measurements{
		"committed_moments": float64(out.Committed),
		"elapsed_ms":        ms(elapsed),
		"claim_held_ms":     ms(held),
		"claim_attempt":     float64(d.lease.Attempt),
	}, labels...)
}

func spanResult(out Outcome) string {
	switch out.Kind {
	case Parked, Deferred, HostIncompatible, Abandoned:
		return ports.ResultOK
	case FenceLost:
		return ports.ResultStaleFence
	case Interrupted:
		return ports.ResultSkipped
	}
	return ports.ResultError
}

func resultOf(err error) string {
	switch {
	case err == nil:
		return ports.ResultOK
	case errors.Is(err, ports.ErrStaleFence):
		return ports.ResultStaleFence
	}
	return ports.ResultError
}

func discardResult(err error) string {
	switch {
	case errors.Is(err, ports.ErrEventConflict):
		return "event_conflict"
	case errors.Is(err, ports.ErrCorruptRun):
		return "corrupt_run"
	}
	return ports.ResultError
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// UniformJitter returns a duration uniform in (0, n] at microsecond
// granularity (n itself when n is below a microsecond).
func UniformJitter(n time.Duration) time.Duration {
	units := int64(n / time.Microsecond)
	if units <= 1 {
		return n
	}
	return time.Duration(rand.Int64N(units)+1) * time.Microsecond
}

// clampJitter keeps a jitter function's answer in (0, n].
func clampJitter(jitter func(time.Duration) time.Duration, n time.Duration) time.Duration {
	j := jitter(n)
	return min(max(j, time.Microsecond), n)
}

// RandomID is prefix + 16 random lowercase hex digits.
func RandomID(prefix string) string {
	var b [8]byte
	_, _ = cryptorand.Read(b[:])
	return run.IDFromRandom(prefix, b)
}
