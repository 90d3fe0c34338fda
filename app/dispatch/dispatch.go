// Package dispatch is the claim loop of one engine instance: it asks the
// run store for due runs (RunStore.ClaimDue through the instance's
// admission phase) up to its free concurrency, and hands each lease to a
// vehicle goroutine. Wake announcements shorten the wait; a jittered poll
// interval is the correctness path, so a lost announcement only costs
// latency. Claims are single store statements made outside any
// transaction: nothing is held open while node code runs.
//
// Recovery of crashed workers is the store's job: every request carries
// the orphan TTL, and expired claims are stolen by whoever polls next.
// The dispatcher does not drive runs (package vehicle does) and holds no
// durable state; losing it loses nothing.
package dispatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketgo/docket/app/internal/stack"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// Poll sources (bounded telemetry labels).
const (
	SourceInitial      = "initial"
	SourceNotification = "notification"
	SourceScheduled    = "scheduled"
	SourceVehicleExit  = "vehicle_exit"
	SourceCoalesced    = "coalesced"
)

// Results of the claim.attempt fact (bounded labels).
const (
	ResultAcquired   = "acquired"
	ResultReacquired = "reacquired"
)

// DefaultStoreTimeout bounds one store call when Config.StoreTimeout is
// zero.
const DefaultStoreTimeout = 15 * time.Second

// failureReminder is how often a claim-poll failure that persists is
// logged again: its first poll is logged at once, the ones that fail the
// same way after it only in this reminder.
const failureReminder = time.Minute

// shutdownGrace is how long Stop waits, after the drain deadline, for the
// vehicles and callbacks whose context it cancelled there.
const shutdownGrace = time.Second

// ErrStopped is returned by Start on a dispatcher that was already
// started or stopped.
var ErrStopped = errors.New("dispatch: dispatcher already started or stopped")

// Config wires a dispatcher. The engine validates values; New checks only
// that the required collaborators are present.
type Config struct {
	Runs  ports.RunStore // required
	Phase *claim.Phase   // required: the instance's admission phase
	Clock ports.Clock    // nil: ports.SystemClock
	// Notifier, when set, wakes the dispatcher on announcements.
	Notifier         ports.Notifier
	Concurrency      int           // > 0
	PollInterval     time.Duration // > 0
	OrphanTTL        time.Duration
	MaxClaimAttempts int // > 0
	// DrainTimeout bounds Stop's wait for in-flight work (0: no wait).
	DrainTimeout time.Duration
	// StoreTimeout bounds each store call (a claim, a release; 0:
	// DefaultStoreTimeout). A store that does not answer in time (a
	// half-open connection, a lock wait) fails that call, so it can
	// neither stall the loop nor hold the admission phase.
	StoreTimeout time.Duration
	// Jitter returns the next poll delay for an interval n; the result is
	// clamped to [1ms, n] (default uniform in (0, n]).
	Jitter func(n time.Duration) time.Duration
	// OnPoisoned is told about runs admission poisoned. Best effort: it
	// runs in its own goroutine and a panic is logged. Its context is
	// cancelled when Stop gives up waiting for it (at the drain deadline);
	// Stop does not wait for it beyond a short grace after that.
	OnPoisoned func(ctx context.Context, poisoned []ports.PoisonOutcome)
	// Drive runs one lease to completion (the vehicle); it is called in its
	// own goroutine. ctx ends when Stop gives up waiting. A drive that
	// calls nodesDone (at most once) says that it runs no more node code
	// and only writes its outcome: its slot then goes to the next claim
	// while it finishes, if fewer than MaxFinishing drives are finishing.
	Drive func(ctx context.Context, lease ports.Lease, nodesDone func()) // required
	// MaxFinishing bounds the drives that gave their slot up and are still
	// writing their outcome (0: Concurrency), so at most Concurrency +
	// MaxFinishing claims are held at once.
	MaxFinishing int
	// ClaimPolicy is the store's claim policy as a bounded telemetry label
	// (for example "legacy"); empty leaves the label off.
	ClaimPolicy string
	Telemetry   ports.Telemetry // nil: ports.NopTelemetry
	Logger      *slog.Logger    // nil: slog.Default()
}

// Dispatcher is one instance's claim loop.
type Dispatcher struct {
	cfg Config

	wake     chan struct{} // notifications, coalesced
	requests chan struct{} // RequestPoll, coalesced
	exits    chan exit     // a place freed: a drive ended or started finishing
	finished chan struct{} // a finishing drive ended, coalesced
	pollDone chan pollResult
	stop     chan stopRequest

	// pollCtx bounds ClaimDue calls; vehicleCtx bounds vehicles;
	// callbackCtx bounds OnPoisoned callbacks. Start makes them; pollCtx
	// ends when Stop begins waiting for vehicles, the others when it gives
	// up waiting.
	pollCtx, vehicleCtx, callbackCtx           context.Context
	cancelPoll, cancelVehicle, cancelCallbacks context.CancelFunc
	cancelListen                               context.CancelFunc

	// subscribed is true while the listener forwards a live subscription.
	subscribed atomic.Bool
	// answered is when the store last answered a claim poll, and
	// unanswered when the oldest poll since then began (Unix nanoseconds
	// of Clock; 0: none). The loop writes both; PollStatus reads them.
	answered, unanswered atomic.Int64
	// unavailable is the ports.ClaimPolicyUnavailableError reason the
	// latest claim poll failed with ("" otherwise). The loop writes it;
	// PollStatus reads it.
	unavailable atomic.Pointer[string]
	// failures logs the claim polls' failures, one episode at a time.
	failures failureLog

	mu        sync.Mutex
	started   bool
	done      chan struct{}  // closed when the loop has returned
	listening sync.WaitGroup // the listener goroutine
	callbacks pending        // OnPoisoned callbacks
	finishing pending        // drives that gave their slot up (nodesDone)
}

// pollResult is one finished claim. The poll span stays open until the
// loop has handled the batch, so the launches are its children.
type pollResult struct {
	ctx    context.Context // the poll span's
	span   ports.Span
	batch  *ports.ClaimBatch
	err    error
	demand int
}

type stopRequest struct {
	ctx   context.Context
	reply chan error
}

// New returns a dispatcher that is not running yet.
func New(cfg Config) (*Dispatcher, error) {
	switch {
	case cfg.Runs == nil:
		return nil, errors.New("dispatch: Runs is required")
	case cfg.Phase == nil:
		return nil, errors.New("dispatch: Phase is required")
	case cfg.Drive == nil:
		return nil, errors.New("dispatch: Drive is required")
	case cfg.Concurrency < 1:
		return nil, errors.New("dispatch: Concurrency must be at least 1")
	case cfg.PollInterval <= 0:
		return nil, errors.New("dispatch: PollInterval must be positive")
	case cfg.MaxClaimAttempts < 1:
		return nil, errors.New("dispatch: MaxClaimAttempts must be at least 1")
	case cfg.MaxFinishing < 0:
		return nil, errors.New("dispatch: MaxFinishing must not be negative")
	}
	if cfg.MaxFinishing == 0 {
		cfg.MaxFinishing = cfg.Concurrency
	}
	if cfg.Clock == nil {
		cfg.Clock = ports.SystemClock{}
	}
	if cfg.Jitter == nil {
		cfg.Jitter = uniform
	}
	if cfg.StoreTimeout <= 0 {
		cfg.StoreTimeout = DefaultStoreTimeout
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = ports.NopTelemetry{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	d := &Dispatcher{
		cfg:      cfg,
		wake:     make(chan struct{}, 1),
		requests: make(chan struct{}, 1),
		exits:    make(chan exit, cfg.Concurrency),
		finished: make(chan struct{}, 1),
		pollDone: make(chan pollResult, 1),
		stop:     make(chan stopRequest),
		done:     make(chan struct{}),
	}
	return d, nil
}

// Start launches the loop (and the listener when a notifier is set). ctx
// carries values only: the dispatcher runs until Stop.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.started {
		return ErrStopped
	}
	d.started = true
	base := context.WithoutCancel(ctx)
	d.pollCtx, d.cancelPoll = context.WithCancel(base)
	d.vehicleCtx, d.cancelVehicle = context.WithCancel(base)
	d.callbackCtx, d.cancelCallbacks = context.WithCancel(base)
	if d.cfg.Notifier != nil {
		var listenCtx context.Context
		listenCtx, d.cancelListen = context.WithCancel(base)
		// Subscribe before the initial poll, so every announcement made
		// after Start returns reaches this dispatcher; but wait no longer
		// than a store call may take: a subscription that hangs (a
		// blackholed server) leaves the dispatcher polling until it
		// answers, and Start and Stop free.
		subscribed := make(chan struct{})
		d.listening.Go(func() {
			ch, err := d.cfg.Notifier.Listen(listenCtx)
			close(subscribed)
			d.listen(listenCtx, ch, err)
		})
		wait := time.NewTimer(d.cfg.StoreTimeout)
		select {
		case <-subscribed:
		case <-wait.C:
			d.cfg.Logger.Warn("docket wake listener did not subscribe in time; polling until it does",
				slog.Duration("waited", d.cfg.StoreTimeout))
		}
		wait.Stop()
	}
	go d.loop()
	return nil
}

// RequestPoll asks for a poll now; bursts collapse into one.
func (d *Dispatcher) RequestPoll() {
	select {
	case d.requests <- struct{}{}:
	default:
	}
}

// Listening reports whether the dispatcher holds a live subscription to
// the store's wake announcements: a write the store announces then wakes
// it without RequestPoll. A subscription whose notifier says it is not
// connected (ports.ConnectedNotifier) is not live.
func (d *Dispatcher) Listening() bool {
	if !d.subscribed.Load() {
		return false
	}
	n, ok := d.cfg.Notifier.(ports.ConnectedNotifier)
	return !ok || n.Connected()
}

// PollStatus is what a health check needs to know of the claim polls.
type PollStatus struct {
	// LastAnswered is when the store last answered a claim poll (zero:
	// never yet).
	LastAnswered time.Time
	// UnansweredSince is when the oldest claim poll began that the store
	// has not answered since (it failed, or is still waiting); zero when
	// the latest poll was answered. A dispatcher whose every place is
	// taken does not poll, so this stays zero while it is busy.
	UnansweredSince time.Time
	// ClaimPolicyUnavailable is the reason (ports.UnavailableInactiveEngine
	// and the others) of the ports.ClaimPolicyUnavailableError the latest
	// claim poll failed with: the store answered and admitted nothing
	// under the dispatcher's claim policy. Empty when the latest poll was
	// answered or failed otherwise.
	ClaimPolicyUnavailable string
}

// PollStatus reports the claim polls' progress, in Clock's time. It is
// safe to call at any time, from any goroutine.
func (d *Dispatcher) PollStatus() PollStatus {
	ps := PollStatus{LastAnswered: fromNanos(d.answered.Load()), UnansweredSince: fromNanos(d.unanswered.Load())}
	if reason := d.unavailable.Load(); reason != nil {
		ps.ClaimPolicyUnavailable = *reason
	}
	return ps
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Stop drains: no new claims; a poll in flight is waited for and its
// leases are released, not launched; then in-flight vehicles and
// OnPoisoned callbacks are waited for, up to DrainTimeout or ctx's end,
// whichever comes first. Vehicles and callbacks still running then have
// their context cancelled and get a short grace to return; the vehicles
// are not released: their claims expire after the orphan TTL and another
// instance recovers them. Stop returns context.DeadlineExceeded when it
// gave up waiting, and nil when everything drained. Stopping a dispatcher
// that never started returns nil.
func (d *Dispatcher) Stop(ctx context.Context) error {
	d.mu.Lock()
	started := d.started
	d.started = true // a later Start must fail
	d.mu.Unlock()
	if !started {
		return nil
	}
	req := stopRequest{ctx: ctx, reply: make(chan error, 1)}
	select {
	case d.stop <- req:
		return <-req.reply
	case <-d.done:
		return nil
	}
}

// loop owns all accounting: in-flight vehicles, the poll in flight, the
// pending flag and the timer.
func (d *Dispatcher) loop() {
	defer close(d.done)
	var (
		inFlight      int
		polling       bool
		pending       bool
		pendingSource string
		backlog       bool // the last poll got every place it asked for
		reported      = capacity{inFlight: -1}
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()

	// report emits dispatcher.state whenever the capacity changed.
	report := func() {
		if now := (capacity{inFlight, d.finishing.count(), polling, pending}); now != reported {
			reported = now
			d.reportState(now)
		}
	}

	arm := func() { timer.Reset(d.nextDelay()) }
	startPoll := func(source string) {
		timer.Stop()
		demand := d.cfg.Concurrency - inFlight
		if demand <= 0 {
			arm()
			return
		}
		polling = true
		d.unanswered.CompareAndSwap(0, d.cfg.Clock.Now().UnixNano())
		d.poll(source, demand)
	}
	request := func(source string) {
		if polling {
			if !pending {
				pending, pendingSource = true, source
			}
			return
		}
		startPoll(source)
	}

	startPoll(SourceInitial)
	report()
	for {
		select {
		case <-d.wake:
			request(SourceNotification)
		case <-d.requests:
			request(SourceCoalesced)
		case <-timer.C:
			request(SourceScheduled)
		case e := <-d.exits:
			inFlight--
			// A drive that starts finishing has not written its outcome
			// yet, so it cannot have made work due: its place is refilled
			// at once only while the last poll found more due runs than
			// places.
			if !e.finishing || backlog {
				request(SourceVehicleExit)
			}
		case <-d.finished:
			// A finishing drive's end frees no place (it gave its own up);
			// its outcome may have made work due (a yield, say), which the
			// store announces to a live subscription. Without one, poll.
			if !d.Listening() {
				request(SourceVehicleExit)
			}
		case res := <-d.pollDone:
			polling = false
			if res.err == nil {
				d.answered.Store(d.cfg.Clock.Now().UnixNano())
				d.unanswered.Store(0)
			}
			d.notePoll(res.err)
			launched, poisoned := d.handle(context.Background(), res, inFlight, false)
			backlog = res.err == nil && len(res.batch.Leases) >= res.demand
			d.poisoned(poisoned)
			inFlight += launched
			if len(poisoned) > 0 && inFlight < d.cfg.Concurrency && !pending {
				pending, pendingSource = true, SourceCoalesced
			}
			if pending {
				pending = false
				startPoll(pendingSource)
			} else {
				arm()
			}
		case req := <-d.stop:
			timer.Stop()
			req.reply <- d.shutdown(req.ctx, polling, inFlight)
			return
		}
		report()
	}
}

// exit is a freed place: finishing when the drive goes on writing its
// outcome.
type exit struct{ finishing bool }

// capacity is what the dispatcher.state fact reports.
type capacity struct {
	inFlight, finishing int
	polling, pending    bool
}

func (d *Dispatcher) reportState(c capacity) {
	if ports.Discards(d.cfg.Telemetry) {
		return
	}
	d.cfg.Telemetry.Emit(d.pollCtx, ports.FactDispatcherState, ports.Measurements{
		"concurrency":  float64(d.cfg.Concurrency),
		"demand":       float64(max(d.cfg.Concurrency-c.inFlight, 0)),
		"in_flight":    float64(c.inFlight),
		"finishing":    float64(c.finishing),
		"poll_active":  flag(c.polling),
		"poll_pending": flag(c.pending),
	})
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// poll runs one admission in its own goroutine so the loop stays
// responsive. The dispatcher.poll span covers the claim and the handling
// of its batch; dispatcher.claim covers the admission and ClaimDue.
func (d *Dispatcher) poll(source string, demand int) {
	ctx, span := d.cfg.Telemetry.StartSpan(d.pollCtx, ports.FactDispatcherPoll,
		ports.Label{Key: ports.LabelClaimPolicy, Value: d.cfg.ClaimPolicy},
		ports.Label{Key: ports.LabelSource, Value: source})
	go func() {
		cctx, claimSpan := d.cfg.Telemetry.StartSpan(ctx, ports.FactDispatcherClaim)
		batch, err := claim.Admit(d.cfg.Phase, demand, func(pref claim.Preference) (*ports.ClaimBatch, error) {
			// The deadline bounds how long the admission phase is held:
			// DrainRuns and the next poll wait on it.
			sctx, cancel := context.WithTimeout(cctx, d.cfg.StoreTimeout)
			defer cancel()
			batch, err := d.cfg.Runs.ClaimDue(sctx, claim.Request{
				Now:              d.cfg.Clock.Now(),
				Limit:            demand,
				OrphanTTL:        d.cfg.OrphanTTL,
				MaxClaimAttempts: d.cfg.MaxClaimAttempts,
				Preference:       pref,
			})
			if err != nil && cctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				// Whatever the store did is unknown; leases it may have
				// granted expire after the orphan TTL.
				err = fmt.Errorf("dispatch: the store did not answer the claim within %s: %w", d.cfg.StoreTimeout, err)
			}
			return batch, err
		})
		claimSpan.End(resultOf(err), nil)
		d.pollDone <- pollResult{ctx: ctx, span: span, batch: batch, err: err, demand: demand}
	}()
}

// handle launches the leases of one poll (or releases them, under ctx,
// when draining or beyond capacity), ends the poll span, and reports how
// many vehicles started and which runs admission poisoned.
func (d *Dispatcher) handle(ctx context.Context, res pollResult, inFlight int, draining bool) (launched int, poisoned []ports.PoisonOutcome) {
	var leases, ready, expired int
	defer func() {
		if ports.Discards(d.cfg.Telemetry) {
			res.span.End(resultOf(res.err), nil)
			return
		}
		m := ports.Measurements{
			"demand":      float64(res.demand),
			"concurrency": float64(d.cfg.Concurrency),
			"in_flight":   float64(inFlight),
			"leases":      float64(leases),
			"poisoned":    float64(len(poisoned)),
		}
		// A failed claim saw no candidates: reporting zero would read as
		// an empty backlog while runs wait.
		if res.err == nil {
			m["ready_candidates"], m["expired_candidates"] = float64(ready), float64(expired)
		}
		res.span.End(resultOf(res.err), m)
	}()
	if res.err != nil {
		return 0, nil
	}
	leases, poisoned = len(res.batch.Leases), res.batch.Poisoned
	ready, expired = res.batch.ReadyCandidates, res.batch.ExpiredCandidates
	ReportClaims(res.ctx, d.cfg.Telemetry, res.batch)
	for _, lease := range res.batch.Leases {
		if lease.Class == claim.ClassExpired {
			d.cfg.Logger.Info("docket took over a run whose claim outlived the orphan TTL (its worker died or stalled); replaying from its last checkpoint",
				slog.String("run_id", lease.RunID), slog.Int("claim_attempt", lease.Attempt))
		}
	}
	var unused []ports.Lease
	for _, lease := range res.batch.Leases {
		if draining || inFlight+launched >= d.cfg.Concurrency {
			unused = append(unused, lease)
			continue
		}
		launched++
		d.launch(res.ctx, lease)
	}
	d.releaseAll(ctx, unused)
	return launched, poisoned
}

// ReportClaims reports the per-run facts of one claim batch: claim.attempt
// for every lease (acquired on a run's first claim, reacquired after) and
// claim.poisoned for every run admission poisoned. Every caller of
// RunStore.ClaimDue in the runtime reports its batches through it, so
// each fact has exactly one source.
func ReportClaims(ctx context.Context, t ports.Telemetry, batch *ports.ClaimBatch) {
	if batch == nil || ports.Discards(t) {
		return
	}
	for _, lease := range batch.Leases {
		result := ResultReacquired
		if lease.Attempt <= 1 {
			result = ResultAcquired
		}
		t.Emit(ctx, ports.FactClaimAttempt, ports.Measurements{"count": 1, "claim_attempts": float64(lease.Attempt)},
			ports.Label{Key: ports.LabelResult, Value: result})
	}
	for _, p := range batch.Poisoned {
		t.Emit(ctx, ports.FactClaimPoisoned, ports.Measurements{"count": 1},
			ports.Label{Key: ports.LabelReason, Value: ports.PoisonReasonLabel(p.PoisonReason)})
	}
}

// launch starts the vehicle of one lease.
func (d *Dispatcher) launch(ctx context.Context, lease ports.Lease) {
	_, span := d.cfg.Telemetry.StartSpan(ctx, ports.FactDispatcherLaunch)
	go d.run(lease)
	span.End(ports.ResultOK, nil)
}

func resultOf(err error) string {
	switch {
	case err == nil:
		return ports.ResultOK
	case errors.Is(err, context.Canceled):
		// Cancelled by the dispatcher stopping: not a failure, and not
		// logged as one either.
		return ports.ResultSkipped
	}
	return ports.ResultError
}

// run drives one lease and reports its slot free: when the drive ends, or
// earlier when it says its node work is over and a finishing place is
// free (the drive then counts as finishing until it ends). A panic that
// escapes the vehicle leaves the claim to expire.
func (d *Dispatcher) run(lease ports.Lease) {
	stack.Grow()
	finishing := false // only this goroutine reads or writes it
	defer func() {
		if !finishing {
			d.exits <- exit{}
			return
		}
		d.finishing.done()
		select {
		case d.finished <- struct{}{}:
		default: // a poll request is already queued
		}
	}()
	defer func() {
		if p := recover(); p != nil {
			d.cfg.Logger.Error("docket vehicle panicked; the claim will expire after the orphan TTL",
				slog.String("run_id", lease.RunID), slog.String("panic", fmt.Sprint(p)))
		}
	}()
	nodesDone := func() {
		if !finishing && d.finishing.tryAdd(d.cfg.MaxFinishing) {
			finishing = true
			d.exits <- exit{finishing: true}
		}
	}
	d.cfg.Drive(d.vehicleCtx, lease, nodesDone)
}

// releaseAll hands unused leases back side by side, so a slow store holds
// the loop (or a shutdown) one store call long, not one per lease.
func (d *Dispatcher) releaseAll(ctx context.Context, leases []ports.Lease) {
	if len(leases) == 1 {
		d.release(ctx, leases[0])
		return
	}
	var wg sync.WaitGroup
	for _, lease := range leases {
		wg.Go(func() { d.release(ctx, lease) })
	}
	wg.Wait()
}

func (d *Dispatcher) release(ctx context.Context, lease ports.Lease) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.StoreTimeout)
	defer cancel()
	if err := d.cfg.Runs.ReleaseClaim(ctx, lease.RunID, lease.Token, d.cfg.Clock.Now()); err != nil {
		d.cfg.Logger.Warn("docket claim release failed; the claim will expire after the orphan TTL",
			slog.String("run_id", lease.RunID), slog.String("error", err.Error()))
	}
}

// poisoned logs runs admission poisoned and tells OnPoisoned in its own
// goroutine, which shutdown waits for up to the drain deadline.
func (d *Dispatcher) poisoned(outcomes []ports.PoisonOutcome) {
	if len(outcomes) == 0 {
		return
	}
	list := d.logPoisoned(outcomes)
	if d.cfg.OnPoisoned != nil {
		d.callbacks.add()
		go func() {
			defer d.callbacks.done()
			d.callOnPoisoned(d.callbackCtx, list)
		}()
	}
}

func (d *Dispatcher) logPoisoned(outcomes []ports.PoisonOutcome) []ports.PoisonOutcome {
	for _, p := range outcomes {
		d.cfg.Logger.Warn("docket run poisoned by admission",
			slog.String("run_id", p.RunID), slog.String("reason", p.PoisonReason))
	}
	return append([]ports.PoisonOutcome(nil), outcomes...)
}

func (d *Dispatcher) callOnPoisoned(ctx context.Context, list []ports.PoisonOutcome) {
	if d.cfg.OnPoisoned == nil || len(list) == 0 {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			d.cfg.Logger.Warn("docket on_poisoned callback panicked", slog.String("panic", fmt.Sprint(p)))
		}
	}()
	d.cfg.OnPoisoned(ctx, list)
}

// shutdown implements Stop inside the loop goroutine.
func (d *Dispatcher) shutdown(callerCtx context.Context, polling bool, inFlight int) error {
	started := time.Now()
	if d.cancelListen != nil {
		d.cancelListen()
	}
	ctx, cancel := context.WithTimeout(callerCtx, d.cfg.DrainTimeout)
	defer cancel()

	if polling {
		select {
		case res := <-d.pollDone:
			d.notePoll(res.err)
			// Releases end at the drain deadline too: a lease not handed
			// back by then expires after the orphan TTL.
			_, poisoned := d.handle(ctx, res, inFlight, true)
			d.poisoned(poisoned)
		case <-ctx.Done():
			d.cancelPoll()
			// The cancelled claim returns soon: release what it got and end
			// its span without holding up the shutdown. Its callback, if
			// any, runs after Stop, bounded by the grace alone. It gets its
			// own copy of inFlight, which the shutdown goes on updating.
			go func(inFlight int) {
				_, poisoned := d.handle(context.Background(), <-d.pollDone, inFlight, true)
				cbCtx, cancel := context.WithTimeout(context.WithoutCancel(d.callbackCtx), shutdownGrace)
				defer cancel()
				d.callOnPoisoned(cbCtx, d.logPoisoned(poisoned))
			}(inFlight)
		}
	}
	d.cancelPoll()
	inFlight = d.awaitExits(inFlight, ctx.Done())
	// A drive that gives its slot up while this waits counts as finishing,
	// so the finishing drives are looked at only once the slots are empty.
	finishingDone := d.finishing.drained()
	finishingLate := !closedBy(finishingDone, ctx.Done())
	callbacksDone := d.callbacks.drained()
	remaining, callbacksLate := inFlight, !closedBy(callbacksDone, ctx.Done())
	if finishingLate {
		remaining += d.finishing.count()
	}
	if remaining > 0 || callbacksLate {
		// Go cannot abandon a goroutine: cancel the stragglers and give them
		// a moment to return. Vehicles' claims are not released.
		d.cancelVehicle()
		d.cancelCallbacks()
		graceCtx, cancelGrace := context.WithTimeout(context.Background(), shutdownGrace)
		d.awaitExits(inFlight, graceCtx.Done())
		closedBy(finishingDone, graceCtx.Done())
		closedBy(callbacksDone, graceCtx.Done())
		cancelGrace()
	}
	d.cancelVehicle()
	d.cancelCallbacks()
	result := "drained"
	if remaining > 0 || callbacksLate {
		result = "timeout"
	}
	d.cfg.Telemetry.Emit(callerCtx, ports.FactDispatcherShutdown, ports.Measurements{
		"duration_ms":        float64(time.Since(started)) / float64(time.Millisecond),
		"vehicles_remaining": float64(remaining),
	}, ports.Label{Key: ports.LabelResult, Value: result})
	d.listening.Wait() // its subscription ended first thing; it returns promptly
	switch {
	case remaining > 0:
		return fmt.Errorf("dispatch: %d vehicle(s) still running at the drain deadline: %w", remaining, context.DeadlineExceeded)
	case callbacksLate:
		return fmt.Errorf("dispatch: OnPoisoned callbacks still running at the drain deadline: %w", context.DeadlineExceeded)
	}
	return nil
}

// pending counts goroutines a shutdown waits for without blocking their
// start: unlike a WaitGroup, one may start while another goroutine waits.
type pending struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; nil while n is zero
}

func (p *pending) add() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	p.n++
}

// tryAdd is add unless limit are counted already.
func (p *pending) tryAdd(limit int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= limit {
		return false
	}
	if p.n == 0 {
		p.idle = make(chan struct{})
	}
	p.n++
	return true
}

// count is how many are counted now.
func (p *pending) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *pending) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n--
	if p.n == 0 {
		close(p.idle)
		p.idle = nil
	}
}

// drained returns a channel closed once nothing counted now is running.
func (p *pending) drained() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n == 0 {
		return closed
	}
	return p.idle
}

var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// closedBy reports whether done closed before deadline did.
func closedBy(done, deadline <-chan struct{}) bool {
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-deadline:
		return false
	}
}

// awaitExits waits for n vehicles to exit or for deadline, and returns
// how many are still running.
func (d *Dispatcher) awaitExits(n int, deadline <-chan struct{}) int {
	for n > 0 {
		select {
		case <-d.exits:
			n--
		case <-deadline:
			return n
		}
	}
	return 0
}

// listen forwards announcements as coalesced wakes, resubscribing after a
// failure (polling covers the gap). ch and err are the first
// subscription's result.
func (d *Dispatcher) listen(ctx context.Context, ch <-chan ports.Wake, err error) {
	for {
		if err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.Warn("docket wake listener failed; polling only until it recovers", slog.String("error", err.Error()))
			}
		} else {
			// The listener reports notifications itself; this only forwards.
			d.subscribed.Store(true)
			for range ch {
				select {
				case d.wake <- struct{}{}:
				default:
				}
			}
			d.subscribed.Store(false)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(d.cfg.PollInterval):
		}
		ch, err = d.cfg.Notifier.Listen(ctx)
	}
}

// nextDelay is the jittered poll delay, clamped to [1ms, interval].
func (d *Dispatcher) nextDelay() time.Duration {
	n := d.cfg.PollInterval
	lo := min(time.Millisecond, n)
	return min(max(d.cfg.Jitter(n), lo), n)
}

// uniform returns a duration uniform in (0, n] at microsecond granularity.
func uniform(n time.Duration) time.Duration {
	units := int64(n / time.Microsecond)
	if units <= 1 {
		return n
	}
	return time.Duration(rand.Int64N(units)+1) * time.Microsecond
}

// failureLog logs the claim polls' failures as episodes rather than one
// line a poll, which at a short poll interval would be several lines a
// second saying the same thing: an episode is logged when it begins (a
// failure after an answered poll, or one of another kind than the
// episode's), then every failureReminder while its polls go on failing,
// and once, at info, when a poll is answered again. The kinds are the
// inactive engine (ports.UnavailableInactiveEngine: another engine made
// the other claim policy the schema's, which lasts until this one is
// restarted) and every other failure (an outage, a timeout, another
// admission refusal), whose reminders carry the latest error. A poll that
// found the admission gate locked (ports.UnavailableLockContention, while
// a store that opens switches the schema's claim policy) is a moment's
// wait: it goes on the episode under way, and begins one only at debug
// level, which is logged at warn only if it lasts to its reminder.
type failureLog struct {
	kind     string // "" while polls are answered
	began    time.Time
	reminded time.Time // when the episode was last logged
	failed   int       // polls failed in the episode
	warned   bool      // the episode was logged at warn
}

// Episode kinds of failureLog.
const (
	failureInactive   = "inactive"
	failureContention = "contention"
	failureOther      = "other"
)

// notePoll records the admission refusal of one finished claim poll for
// PollStatus and logs what the poll changes (the loop's goroutine only; a
// poll the dispatcher cancelled changes nothing).
func (d *Dispatcher) notePoll(err error) {
	f := &d.failures
	if errors.Is(err, context.Canceled) {
		return
	}
	var unavailable *ports.ClaimPolicyUnavailableError
	if errors.As(err, &unavailable) {
		d.unavailable.Store(&unavailable.Reason)
	} else {
		d.unavailable.Store(nil)
	}
	now := d.cfg.Clock.Now()
	if err == nil {
		if !f.warned {
			*f = failureLog{}
			return
		}
		attrs := []any{slog.Int("failed_polls", f.failed), slog.Duration("failing_for", max(now.Sub(f.began), 0).Round(time.Millisecond))}
		if f.kind == failureInactive {
			d.cfg.Logger.Info("docket claims runs again: the schema's claim policy is this engine's",
				append(attrs, slog.String("claim_policy", d.cfg.ClaimPolicy))...)
		} else {
			d.cfg.Logger.Info("docket claim polls are answered again", attrs...)
		}
		*f = failureLog{}
		return
	}
	kind := failureOther
	if unavailable != nil {
		switch unavailable.Reason {
		case ports.UnavailableInactiveEngine:
			kind = failureInactive
		case ports.UnavailableLockContention:
			kind = failureContention
			if f.kind != "" {
				kind = f.kind
			}
		}
	}
	if kind != f.kind {
		*f = failureLog{kind: kind, began: now, reminded: now, failed: 1}
		if kind == failureContention {
			d.cfg.Logger.Debug("docket claim poll found the admission gate locked; retrying on the next poll",
				slog.String("error", err.Error()))
			return
		}
		f.warned = true
		d.logFailure(kind, err, nil)
		return
	}
	f.failed++
	// Clock is a wall clock: set back, it re-anchors the episode, so the
	// next reminder is a minute after the step, not once the clock has
	// caught up with the last one, and failing_for is never negative.
	if now.Before(f.reminded) {
		f.reminded = now
	}
	if now.Before(f.began) {
		f.began = now
	}
	if now.Sub(f.reminded) < failureReminder {
		return
	}
	f.reminded, f.warned = now, true
	d.logFailure(kind, err, []any{slog.Int("failed_polls", f.failed), slog.Duration("failing_for", now.Sub(f.began).Round(time.Millisecond))})
}

// logFailure logs a failure episode's beginning (reminder nil) or a
// reminder of it.
func (d *Dispatcher) logFailure(kind string, err error, reminder []any) {
	if kind == failureInactive {
		state := "is"
		if reminder != nil {
			state = "is still"
		}
		msg := fmt.Sprintf("docket engine %s inactive: another engine made the other claim policy the schema's, "+
			"so this engine claims no runs; restart it with the claim policy the other engines run", state)
		if theirs := otherClaimPolicy(d.cfg.ClaimPolicy); theirs != "" {
			msg = fmt.Sprintf("docket engine %s inactive: another engine made %s the schema's claim policy, "+
				"so this engine, running %s, claims no runs; restart it with the %s claim policy, as the other engines run",
				state, theirs, d.cfg.ClaimPolicy, theirs)
		}
		d.cfg.Logger.Warn(msg, append([]any{slog.String("claim_policy", d.cfg.ClaimPolicy),
			slog.String("reason", ports.UnavailableInactiveEngine)}, reminder...)...)
		return
	}
	msg := "docket claim poll failed; retrying on the next poll"
	if reminder != nil {
		msg = "docket claim polls still failing; retrying on each poll"
	}
	d.cfg.Logger.Warn(msg, append([]any{slog.String("error", err.Error())}, reminder...)...)
}

// otherClaimPolicy is the claim policy label other than policy ("" when
// policy is not one of the two).
func otherClaimPolicy(policy string) string {
	switch policy {
	case "legacy":
		return "tenant_fair"
	case "tenant_fair":
		return "legacy"
	}
	return ""
}
