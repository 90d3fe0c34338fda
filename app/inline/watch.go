package inline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/internal/stack"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// The loop runs on a drive goroutine and the caller's goroutine watches it.
// A superstep of one activation calls its node on the drive goroutine
// itself (executor.Direct), so a chain hands over to another goroutine once
// per call rather than once per attempt; a superstep of several activations
// goes through executor.Execute, one goroutine per attempt. Even a call
// that can execute only one node (StepInline, a one-node graph) is cheaper
// this way: a direct attempt needs neither the executor's batch nor its
// deadline timer.
//
// The watchdog keeps what the executor guarantees for a direct attempt:
// when its deadline passes, the caller gives up, or its node calls
// runtime.Goexit, the attempt settles as the same timeout, abandonment or
// exit failure, and the drive goes on from the committed run on a fresh
// goroutine while the old one is left to the node (a late result is
// dropped). A panic or runtime.Goexit in the runner's own code (clock,
// sleeper, ID generator) reaches the caller's goroutine as it would if the
// loop ran there.
//
// With OnCallingGoroutine the loop runs on the caller's goroutine instead
// (runHere) and no goroutine watches it: a timer and the caller's context
// abandon a running direct attempt, which the loop learns when the node
// returns.

// drive is one call's loop state. The drive goroutine owns r, steps, floor,
// step and err; the watchdog reads them only after the goroutine has
// finished or after the watchdog has taken the running attempt away from it
// (Abandon under mu, which the goroutine held when it published the
// attempt).
type drive struct {
	d     *driver
	ctx   context.Context
	once  bool // StepInline: stop after the first transition
	r     *run.Run
	steps int
	floor time.Time
	err   error
	step  superstep.Step      // the superstep of the running direct attempt
	one   [1]superstep.Result // a direct attempt's results, without a slice each

	mu        sync.Mutex
	current   *executor.Direct // the direct attempt being called, nil when none
	cancelled bool             // the caller gave up while no attempt ran

	events chan driveEvent // buffered: a goroutine's last word never blocks
	timer  *time.Timer
	// abandoned says a goroutine was left to a node, or a callback may
	// still be running: it may still touch this drive, which is then not
	// recycled.
	abandoned bool

	// here says the loop runs on the calling goroutine
	// (OnCallingGoroutine): expiry abandons a direct attempt at its
	// deadline, and cause records why the running attempt was abandoned.
	// The timer stays set from one attempt to the next (armed, until
	// firesAt; both under mu): a firing before an attempt's deadline sets
	// it again, so an attempt whose deadline is no earlier than firesAt
	// needs no timer call of its own.
	here    bool
	expiry  *time.Timer // made on first use, kept across recycling
	armed   bool
	firesAt time.Time
	cause   error
}

type driveEventKind int

const (
	// driveFinished: the loop ended; r and err are final.
	driveFinished driveEventKind = iota + 1
	// drivePanicked: the runner's own code panicked with panic.
	drivePanicked
	// driveExited: the runner's own code called runtime.Goexit.
	driveExited
	// attemptExited: the direct attempt's node called runtime.Goexit; its
	// result settles the superstep.
	attemptExited
)

type driveEvent struct {
	kind   driveEventKind
	panic  any
	result superstep.Result
}

var drives = sync.Pool{New: func() any {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &drive{events: make(chan driveEvent, 1), timer: t}
}}

// watch runs the loop from r on a drive goroutine and watches it until it
// finishes. once stops after the first transition that is not a
// sleep-through wait (StepInline); otherwise the loop runs until the run
// stops or max steps is reached.
func (d *driver) watch(ctx context.Context, r *run.Run, once bool) (*run.Run, error) {
	v := drives.Get().(*drive)
	v.d, v.ctx, v.once, v.r = d, ctx, once, r
	defer v.recycle()
	if d.cfg.callingGoroutine {
		return v.runHere()
	}
	go v.runFresh(nil)

	v.timer.Reset(d.watchEvery)
	done := ctx.Done()
	for {
		select {
		case ev := <-v.events:
			switch ev.kind {
			case driveFinished:
				return v.r, v.err
			case drivePanicked:
				panic(ev.panic)
			case driveExited:
				runtime.Goexit()
			case attemptExited:
				v.mu.Lock()
				v.current = nil
				v.mu.Unlock()
				go v.runFresh(&ev.result)
			}
		case <-v.timer.C:
			v.checkDeadline()
		case <-done:
			v.mu.Lock()
			a := v.current
			if a != nil && a.Abandon(ctx.Err()) {
				v.current, v.abandoned = nil, true
				v.mu.Unlock()
				return v.r, abandonedSuperstep(v.r.ID, ctx.Err())
			}
			// No attempt is running, or it has just settled: the loop sees
			// the context end at its next check, and no direct attempt
			// starts after this.
			v.cancelled = true
			v.mu.Unlock()
			done = nil
		}
	}
}

// checkDeadline fails the running direct attempt when its deadline has
// passed, and sets the timer for the next look.
func (v *drive) checkDeadline() {
	v.mu.Lock()
	defer v.mu.Unlock()
	a := v.current
	if a == nil {
		v.timer.Reset(v.d.watchEvery)
		return
	}
	if wait := time.Until(a.Deadline()); wait > 0 {
		v.timer.Reset(wait)
		return
	}
	if a.Abandon(context.DeadlineExceeded) {
		v.current, v.abandoned = nil, true
		timeout := a.Timeout()
		go v.runFresh(&timeout)
	}
	// Either way the next attempt starts from now: none of them ends
	// sooner than watchEvery.
	v.timer.Reset(v.d.watchEvery)
}

func (v *drive) recycle() {
	v.timer.Stop()
	if v.abandoned {
		return
	}
	// A runtime.Goexit on the caller's goroutine leaves the loop's last
	// word unread.
	select {
	case <-v.events:
	default:
	}
	*v = drive{events: v.events, timer: v.timer, expiry: v.expiry}
	drives.Put(v)
}

// runHere is the loop on the calling goroutine (OnCallingGoroutine). There
// is no watchdog loop: the expiry timer and the caller's context abandon a
// running direct attempt from their own goroutines, and the loop learns it
// when the node returns (see execute).
func (v *drive) runHere() (*run.Run, error) {
	v.here = true
	// The timer stays armed between attempts; a node's runtime.Goexit
	// unwinds through here too.
	defer v.disarm()
	if v.ctx.Done() != nil {
		stop := context.AfterFunc(v.ctx, v.callerGaveUp)
		defer func() {
			if !stop() {
				v.abandoned = true // callerGaveUp may still be running
			}
		}()
	}
	var attempt *executor.Direct
	for v.goesOn() {
		if !v.account(v.tick(&attempt)) {
			break
		}
	}
	return v.r, v.err
}

// callerGaveUp abandons the running direct attempt when the caller's
// context ends (OnCallingGoroutine); with none running, the loop sees the
// context end at its next check and starts no other.
func (v *drive) callerGaveUp() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cancelled = true
	if a := v.current; a != nil && a.Abandon(v.ctx.Err()) {
		v.current, v.cause = nil, v.ctx.Err()
	}
}

// expire abandons the running direct attempt once its deadline has passed
// (OnCallingGoroutine). A firing left over from an earlier attempt finds
// the next one before its deadline and sets the timer again; with none
// running, the timer stays unset until the next attempt arms it.
func (v *drive) expire() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.armed = false
	a := v.current
	if a == nil {
		return
	}
	if a.Deadline().After(time.Now()) {
		v.setExpiry(a.Deadline())
		return
	}
	if a.Abandon(context.DeadlineExceeded) {
		v.current, v.cause = nil, errAttemptExpired
	}
}

// errAttemptExpired marks an attempt abandoned at its own deadline, which
// a caller's context ending with DeadlineExceeded must not pass for.
var errAttemptExpired = errors.New("inline: the attempt's deadline passed")

// callHere calls a direct attempt on the calling goroutine under the
// expiry timer, which execute armed for it (OnCallingGoroutine). An attempt abandoned while its node
// ran settles as the executor's timeout at its deadline; abandoned by the
// caller, it returns the caller's error.
func (v *drive) callHere(a *executor.Direct) ([]superstep.Result, error) {
	result, owned := a.Call()
	v.mu.Lock()
	v.current = nil
	cause := v.cause
	v.cause = nil
	v.mu.Unlock()
	switch {
	case owned:
		v.one[0] = result
	case cause == errAttemptExpired:
		v.one[0] = a.Timeout()
	default:
		return nil, cause
	}
	return v.one[:], nil
}

// arm makes sure the expiry timer fires by deadline, the running
// attempt's. A timer already set to fire no later needs nothing: its
// firing finds this attempt and sets it again. v.mu is held.
func (v *drive) arm(deadline time.Time) {
	if v.armed && !v.firesAt.After(deadline) {
		return
	}
	v.setExpiry(deadline)
}

// setExpiry sets the expiry timer to fire at deadline. v.mu is held.
func (v *drive) setExpiry(deadline time.Time) {
	wait := time.Until(deadline)
	if v.expiry == nil {
		v.expiry = time.AfterFunc(wait, v.expire)
	} else {
		v.expiry.Reset(wait)
	}
	v.armed, v.firesAt = true, deadline
}

// disarm stops the expiry timer when the loop ends. One that has fired may
// still be running expire, which touches the drive: it is then not
// recycled.
func (v *drive) disarm() {
	v.mu.Lock()
	armed := v.armed
	v.armed = false
	v.mu.Unlock()
	if armed && !v.expiry.Stop() {
		v.abandoned = true
	}
}

// runFresh is run on a new drive goroutine.
func (v *drive) runFresh(resumed *superstep.Result) {
	stack.Grow()
	v.run(resumed)
}

// run is a drive goroutine: it settles a superstep whose direct attempt the
// watchdog settled (resumed), then loops. Its last word goes to the
// watchdog, unless it was left to a node.
func (v *drive) run(resumed *superstep.Result) {
	var attempt *executor.Direct // the direct attempt this goroutine is calling
	finished := false
	defer func() {
		switch {
		case finished:
			v.events <- driveEvent{kind: driveFinished}
		case attempt != nil:
			// runtime.Goexit inside the node (any panic there is recovered
			// by Call), or the attempt was abandoned and this goroutine
			// only leaves.
			if result, ok := attempt.Exited(); ok {
				v.events <- driveEvent{kind: attemptExited, result: result}
			}
		default:
			if p := recover(); p != nil {
				v.events <- driveEvent{kind: drivePanicked, panic: p}
			} else {
				v.events <- driveEvent{kind: driveExited}
			}
		}
	}()
	if resumed != nil {
		v.one[0] = *resumed
		if !v.account(v.settle(v.step, v.one[:])) {
			finished = true
			return
		}
	}
	for v.goesOn() {
		if !v.account(v.tick(&attempt)) {
			break
		}
	}
	finished = true
}

// goesOn says whether the loop plans another tick.
func (v *drive) goesOn() bool {
	return v.once || (!v.r.Status.Terminal() && (!v.d.cfg.limitSteps || v.steps < v.d.cfg.maxSteps))
}

// account records one tick and says whether the loop goes on.
func (v *drive) account(next *run.Run, outcome tickOutcome, floor time.Time, err error) bool {
	v.r = next
	if err != nil {
		v.err = err
		return false
	}
	switch outcome {
	case advanced:
		v.steps++
		v.floor = time.Time{}
		return !v.once
	case parkedAt:
		v.floor = floor
		return !v.once
	case waited:
		v.floor = floor
		return true
	}
	return false
}

// execute runs the activations of step: a single one directly on this
// goroutine under the watchdog, several through the executor.
func (v *drive) execute(step superstep.Step, attempt **executor.Direct) ([]superstep.Result, error) {
	if len(step.Activations) != 1 {
		return v.d.exec.Execute(v.ctx, v.r.ID, step.Activations)
	}
	if err := v.ctx.Err(); err != nil {
		return nil, err
	}
	a, failed := v.d.exec.Prepare(v.ctx, v.r.ID, &step.Activations[0])
	if a == nil {
		v.one[0] = failed
		return v.one[:], nil
	}
	v.mu.Lock()
	if v.cancelled {
		v.mu.Unlock()
		return nil, v.ctx.Err()
	}
	v.step, v.current = step, a
	if v.here {
		v.arm(a.Deadline())
		v.mu.Unlock()
		return v.callHere(a)
	}
	v.mu.Unlock()

	*attempt = a
	result, owned := a.Call()
	if !owned {
		// The watchdog settled the attempt and went on without this
		// goroutine.
		runtime.Goexit()
	}
	*attempt = nil
	v.mu.Lock()
	v.current = nil
	v.mu.Unlock()
	v.one[0] = result
	return v.one[:], nil
}

// abandonedSuperstep is the error of a superstep given up because the
// caller's context ended.
func abandonedSuperstep(runID string, err error) error {
	return fmt.Errorf("inline: superstep of run %q abandoned: %w", runID, err)
}
