// Package engine is Docket's durable facade: publish graph versions, start
// runs, read them, signal them (resolve interrupts, cancel, retry
// poisoned runs), wait for them, and, once started, drive them through a
// dispatcher and its vehicles until they finish, across any number of
// engine instances sharing one store.
//
// Every durable transition is one fenced store commit; everything after a
// commit (observers, telemetry, in-process wake-ups) is best effort. See
// docs/guarantees.md for what is promised and docs/operations.md for the
// configuration.
//
// The engine never imports a storage adapter: the caller chooses one and
// passes it as Config.Backend.
package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/app/graphcache"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/app/prune"
	"github.com/docketgo/docket/app/vehicle"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// GraphRef identifies one published graph version.
type GraphRef = ports.GraphRef

// Engine is one Docket instance. Build it with New; it is safe for
// concurrent use. Its embedded Client is the tenantless client (in
// TenantRequired mode every call through it fails with ErrInvalidTenant;
// use Tenant).
type Engine struct {
	*Client

	cfg     Config
	backend ports.Backend
	// phase serializes this instance's admissions (dispatcher and
	// DrainRuns) and alternates the demand-1 preference.
	phase   claim.Phase
	cache   *graphcache.Cache // nil when disabled
	deliver *observe.Deliverer
	commits broadcast
	// rested holds the runs this engine last committed waiting or
	// terminal while a local AwaitRun waits for them, so that AwaitRun,
	// woken by the commit, needs no read;
	// started, the runs it inserted, so an AwaitRun right after StartRun
	// needs no first read.
	rested  restedRuns
	started startedRuns

	driver       *vehicle.Vehicle // the dispatcher's vehicles (cached graphs)
	manualDriver *vehicle.Vehicle // DrainRuns' vehicles (no graph cache)

	mu         sync.Mutex
	state      lifecycle
	stopping   chan struct{}
	dispatcher *dispatch.Dispatcher
	stopPruner context.CancelFunc
	prunerDone chan struct{}
	// stopped closes when the first Stop has finished; stopErr is what it
	// returned, for every later Stop.
	stopDone chan struct{}
	stopErr  error
	// health is what Health reads of state and dispatcher, set with them:
	// Health must not wait for mu, which Start holds while the wake
	// listener subscribes (up to StoreTimeout).
	health atomic.Pointer[healthView]
}

// healthView is a lifecycle state and the dispatcher running in it.
type healthView struct {
	state      lifecycle
	dispatcher *dispatch.Dispatcher
}

// setState moves to state; e.mu must be held.
func (e *Engine) setState(state lifecycle) {
	e.state = state
	e.health.Store(&healthView{state: state, dispatcher: e.dispatcher})
}

type lifecycle int

const (
	created lifecycle = iota
	running
	stopped
)

// New validates cfg and returns an engine that is not running yet: reads,
// starts and signals work immediately; Start begins driving runs.
func New(cfg Config) (*Engine, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:      cfg,
		backend:  cfg.Backend,
		stopping: make(chan struct{}),
		stopDone: make(chan struct{}),
		deliver: &observe.Deliverer{
			Observers: cfg.Observers,
			Telemetry: cfg.Telemetry,
			Logger:    cfg.Logger,
			Timeout:   cfg.ObserverTimeout,
			// The validated config is never zero here.
			MaxInFlight: cfg.ObserverMaxInFlight,
		},
	}
	if !cfg.GraphCacheDisabled {
		e.cache = graphcache.New(graphcache.Options{
			UndecodableTTL: cfg.UndecodableGraphTTL,
			Generation:     registryGeneration(cfg),
		})
	}
	if e.driver, err = e.newVehicle(e.cache, e.stopping); err != nil {
		return nil, err
	}
	if e.manualDriver, err = e.newVehicle(nil, nil); err != nil {
		return nil, err
	}
	e.Client = &Client{e: e, scope: ports.Tenantless()}
	if cfg.TenantMode == TenantRequired {
		e.Client = &Client{e: e, err: errors.New("a tenant is required: use Engine.Tenant")}
	}
	return e, nil
}

func (e *Engine) newVehicle(cache *graphcache.Cache, stopping <-chan struct{}) (*vehicle.Vehicle, error) {
	cfg := e.cfg
	return vehicle.New(vehicle.Config{
		Runs:              e.backend,
		Graphs:            e.backend,
		Nodes:             cfg.Nodes,
		Clock:             cfg.Clock,
		StoreTimeout:      cfg.StoreTimeout,
		Cache:             cache,
		MaxAttemptElapsed: cfg.MaxAttemptElapsed,
		MaxSupersteps:     cfg.MaxSupersteps,
		Budget:            vehicle.Budget{MaxMoments: cfg.Vehicle.DrainBudget.MaxMoments, MaxElapsed: cfg.Vehicle.DrainBudget.MaxElapsed},
		AbandonBackoff:    claim.Backoff{Base: cfg.Vehicle.AbandonBackoff, Cap: cfg.Vehicle.AbandonBackoffCap},
		MaxClaimAbandons:  cfg.Vehicle.MaxClaimAbandons,
		Jitter:            cfg.Vehicle.Jitter,
		AfterCommit:       e.afterCommit,
		Stopping:          stopping,
		NewInterruptID:    func() string { return e.newID("interrupt_") },
		Telemetry:         cfg.Telemetry,
		Logger:            cfg.Logger,
	})
}

// registryGeneration fingerprints the registered node references, so a
// graph cached as "does not compile" is retried once a node is added.
//
// A graph cache asks at every lookup; the fingerprint is rebuilt only when
// the number of references changed (they are only ever added).
func registryGeneration(cfg Config) func() string {
	var (
		mu    sync.Mutex
		count = -1
		gen   string
	)
	return func() string {
		n := cfg.Nodes.Len()
		mu.Lock()
		defer mu.Unlock()
		if n != count {
			refs := cfg.Nodes.Refs()
			count, gen = len(refs), fingerprint(refs)
		}
		return gen
	}
}

// fingerprint joins refs, each ended by a NUL.
func fingerprint(refs []string) string {
	n := 0
	for _, r := range refs {
		n += len(r) + 1
	}
	b := make([]byte, 0, n)
	for _, r := range refs {
		b = append(b, r...)
		b = append(b, 0)
	}
	return string(b)
}

// Tenant returns the client of one tenant. In TenantNone mode, or with an
// id that is empty or not UTF-8 text without NUL of at most
// ports.MaxIDBytes bytes, every call through it fails with
// ErrInvalidTenant.
func (e *Engine) Tenant(id string) *Client {
	switch {
	case e.cfg.TenantMode != TenantRequired:
		return &Client{e: e, err: errors.New("tenants are not enabled (TenantMode is none)")}
	case id == "":
		return &Client{e: e, err: errors.New("the tenant id is empty")}
	case !ports.TextID(id):
		return &Client{e: e, err: fmt.Errorf("the tenant id is not UTF-8 text without NUL of at most %d bytes", ports.MaxIDBytes)}
	}
	return &Client{e: e, scope: ports.Tenant(id)}
}

// Start launches the dispatcher, the wake listener (unless PollOnly or the
// backend has none) and the pruner (when configured). ctx supplies values
// only: the engine runs until Stop. An engine starts at most once; after
// Stop, build a new one.
func (e *Engine) Start(ctx context.Context) error {
	if e.cfg.Mode == ModeManual {
		return ErrManualMode
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state != created {
		return ErrAlreadyStarted
	}
	var notifier ports.Notifier
	if !e.cfg.PollOnly && e.backend.Capabilities().Listen {
		notifier = e.backend.Notifier()
	}
	dc := e.cfg.Dispatcher
	d, err := dispatch.New(dispatch.Config{
		Runs:             e.backend,
		Phase:            &e.phase,
		Clock:            e.cfg.Clock,
		Notifier:         notifier,
		Concurrency:      dc.Concurrency,
		PollInterval:     dc.PollInterval,
		OrphanTTL:        dc.OrphanTTL,
		MaxClaimAttempts: dc.MaxClaimAttempts,
		DrainTimeout:     dc.DrainTimeout,
		StoreTimeout:     e.cfg.StoreTimeout,
		Jitter:           dc.Jitter,
		OnPoisoned:       dc.OnPoisoned,
		MaxFinishing:     dc.MaxFinishing,
		Drive: func(ctx context.Context, lease ports.Lease, nodesDone func()) {
			e.driver.DriveNotifying(ctx, lease, nodesDone)
		},
		ClaimPolicy: claimPolicyLabel(e.backend.Capabilities()),
		Telemetry:   e.cfg.Telemetry,
		Logger:      e.cfg.Logger,
	})
	if err != nil {
		return err
	}
	var pruner *prune.Pruner
	if e.cfg.Pruner != nil {
		if pruner, err = prune.New(e.backend, *e.cfg.Pruner, prune.Options{Clock: e.cfg.Clock, Telemetry: e.cfg.Telemetry,
			Logger: e.cfg.Logger, StoreTimeout: e.cfg.StoreTimeout}); err != nil {
			return err
		}
	}
	if err := d.Start(ctx); err != nil {
		return err
	}
	if pruner != nil {
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		e.stopPruner, e.prunerDone = cancel, make(chan struct{})
		go func() {
			defer close(e.prunerDone)
			pruner.Run(pctx)
		}()
	}
	e.dispatcher = d
	e.setState(running)
	return nil
}

// Stop shuts the engine down gracefully: no new claims; running vehicles
// yield at their next moment boundary; Stop waits for them up to
// Dispatcher.DrainTimeout or ctx's end. Work still in flight then is
// abandoned in place: its claims expire after the orphan TTL and any
// engine sharing the store recovers it. Stop returns an error wrapping
// context.DeadlineExceeded when it gave up waiting. Reads, starts and
// signals keep working after Stop, but observers are no longer called.
// A Stop while another is draining waits for that one (or its own ctx)
// and returns what it returns.
func (e *Engine) Stop(ctx context.Context) error {
	e.mu.Lock()
	switch e.state {
	case created:
		// Nothing runs in the background, but starts and signals (and, in
		// ModeManual, DrainRuns) may have called observers.
		e.setState(stopped)
		e.mu.Unlock()
		e.closeObservers(ctx)
		close(e.stopDone)
		return nil
	case stopped:
		e.mu.Unlock()
		select {
		case <-e.stopDone:
			return e.stopErr
		case <-ctx.Done():
			return fmt.Errorf("docket: waiting for the engine to stop: %w", ctx.Err())
		}
	}
	e.setState(stopped)
	close(e.stopping)
	d, stopPruner, prunerDone := e.dispatcher, e.stopPruner, e.prunerDone
	e.mu.Unlock()

	e.stopErr = e.stop(ctx, d, stopPruner, prunerDone)
	close(e.stopDone)
	return e.stopErr
}

// stop is the first Stop's work.
func (e *Engine) stop(ctx context.Context, d *dispatch.Dispatcher, stopPruner context.CancelFunc, prunerDone chan struct{}) error {
	err := d.Stop(ctx)
	if stopPruner != nil {
		stopPruner()
		<-prunerDone
	}
	e.closeObservers(ctx)
	return err
}

// closeObservers accepts no more observer deliveries and gives the running
// ones a moment (each ends at ObserverTimeout anyway): observers are best
// effort.
func (e *Engine) closeObservers(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_ = e.deliver.Close(wctx)
}

// storeCall bounds one store call by StoreTimeout.
func (e *Engine) storeCall(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.cfg.StoreTimeout)
}

// Claim policy labels of the dispatcher's telemetry. A backend says only
// whether its policy is tenant-fair, which is what tells the two apart.
const (
	claimPolicyLegacy     = "legacy"
	claimPolicyTenantFair = "tenant_fair"
)

func claimPolicyLabel(c ports.Capabilities) string {
	if c.TenantFair {
		return claimPolicyTenantFair
	}
	return claimPolicyLegacy
}

// afterCommit is the best-effort work after every commit this engine
// makes: telemetry, observers, and waking local AwaitRun callers. ctx
// should carry the transition's span, so the committed fact lands on it.
func (e *Engine) afterCommit(ctx context.Context, owner ports.OwnerScope, m *run.Moment) {
	e.deliver.Committed(ctx, owner, m)
	e.started.committed(owner, m.Run.ID, m.Run.CheckpointSeq)
	if r := m.Run; r.Status == run.StatusWaiting || r.Status.Terminal() {
		e.rested.put(owner, r)
	}
	e.commits.notify()
}

// nudge makes a running dispatcher poll at once after a write of this
// engine made a run due, unless the dispatcher listens: the store's
// announcement of the same write then wakes it as soon (measured: it
// arrives before the writer has read its own reply), and a nudge as well
// would cost a second claim that finds nothing, beside the new run's
// first commit.
func (e *Engine) nudge() {
	e.mu.Lock()
	d := e.dispatcher
	e.mu.Unlock()
	if d != nil && !d.Listening() {
		d.RequestPoll()
	}
}

func (e *Engine) newID(prefix string) string {
	if e.cfg.NewID != nil {
		return e.cfg.NewID(prefix)
	}
	return vehicle.RandomID(prefix)
}

func (e *Engine) now() time.Time { return ports.Micros(e.cfg.Clock.Now()) }

// broadcast wakes every waiter once per notify.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
