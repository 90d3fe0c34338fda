package inline

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/internal/runid"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/run"
)

// ErrInvalidOption is wrapped by errors about the options themselves.
var ErrInvalidOption = errors.New("invalid inline option")

// Option configures an inline call.
type Option func(*config)

type config struct {
	registry          *node.Registry
	clock             func() time.Time
	sleeper           func(context.Context, time.Duration) error
	newID             func(prefix string) string
	maxSupersteps     int
	maxSteps          int
	limitSteps        bool
	runID             string
	metadata          map[string]any
	maxAttemptElapsed time.Duration
	callingGoroutine  bool
}

// WithRegistry supplies the node implementations. The graph is compiled
// against it and its nodes are executed through it; without it every
// module node is unknown and the graph does not compile.
func WithRegistry(r *node.Registry) Option { return func(c *config) { c.registry = r } }

// WithClock replaces time.Now. The runner reads it when it plans a
// transition and again when it settles an executed superstep (timestamps
// and retry deadlines count from the end of execution), and uses UTC
// truncated to the microsecond.
func WithClock(clock func() time.Time) Option { return func(c *config) { c.clock = clock } }

// WithSleeper replaces real waiting. It is called with the time to wait for
// a retry deadline, only after the park has been accepted; the runner then
// treats that deadline as reached without reading the clock again, so a
// recording sleeper makes retries instant and deterministic. An error from
// the sleeper stops the drive and is returned.
func WithSleeper(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(c *config) { c.sleeper = sleep }
}

// WithIDGenerator replaces the random run and interrupt IDs; it is called
// with the prefix "run_" or "interrupt_".
func WithIDGenerator(newID func(prefix string) string) Option {
	return func(c *config) { c.newID = newID }
}

// WithMaxSupersteps is the superstep limit for graphs that set no
// max_supersteps policy (a compile option; it also applies to a compiled
// graph that has no limit). Zero, the default, means none; a negative n is
// an ErrInvalidOption.
func WithMaxSupersteps(n int) Option { return func(c *config) { c.maxSupersteps = n } }

// WithMaxSteps stops driving after n committed supersteps (continue or
// immediate transitions); retry parks do not count. Zero stops right after
// initialization.
func WithMaxSteps(n int) Option {
	return func(c *config) { c.maxSteps, c.limitSteps = n, true }
}

// WithRunID fixes the ID of a new run instead of generating one. It takes
// the ids the durable engine's WithRunID takes, so a run started inline can
// be stored with its id: UTF-8 text without NUL of at most
// ports.MaxIDBytes bytes, and not of the form "run_" and 32 lowercase hex
// digits that the engine reserves for idempotency keys. Any other id is an
// ErrInvalidOption; the empty id means a generated one.
func WithRunID(id string) Option { return func(c *config) { c.runID = id } }

// WithMetadata sets the application metadata of a new run.
func WithMetadata(m map[string]any) Option { return func(c *config) { c.metadata = m } }

// WithMaxAttemptElapsed is the host maximum for one node attempt (default
// 2 s). A node's timeout_ms may only shorten it; a graph with a larger
// timeout_ms is rejected before anything runs.
func WithMaxAttemptElapsed(d time.Duration) Option {
	return func(c *config) { c.maxAttemptElapsed = d }
}

// OnCallingGoroutine runs the loop, and the node of every superstep that
// activates a single node, on the calling goroutine, as a plain function
// call would, instead of on a goroutine of the runner's own. It saves a
// goroutine handoff per call, which on an otherwise idle machine costs as
// much as running a short chain. Choose it when the nodes honour their
// context.
//
// Deadlines and cancellation keep their outcomes: at its deadline an
// attempt's context ends and the attempt fails with the same timeout (a
// late result is dropped), and when the caller's context ends the call
// returns the same abandonment error. But they take effect when the node
// returns: a node that ignores its context holds the call until it does,
// where by default the call goes on without it. A node that calls
// runtime.Goexit ends the calling goroutine (as t.FailNow does in a test)
// instead of failing its attempt. Supersteps of several nodes run on the
// executor's goroutines either way.
func OnCallingGoroutine() Option { return func(c *config) { c.callingGoroutine = true } }

// setConfig fills c from the defaults and opts. It fills the caller's
// config in place: options are opaque functions, so a local one would
// escape to the heap.
func setConfig(c *config, opts []Option) error {
	*c = config{
		clock:             time.Now,
		sleeper:           sleep,
		newID:             randomID,
		maxAttemptElapsed: executor.DefaultMaxAttemptElapsed,
	}
	for i, opt := range opts {
		if opt == nil {
			return fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		opt(c)
	}
	if c.registry == nil {
		c.registry = node.NewRegistry()
	}
	switch {
	case c.clock == nil || c.sleeper == nil || c.newID == nil:
		return fmt.Errorf("%w: clock, sleeper and id generator must not be nil", ErrInvalidOption)
	case c.maxSupersteps < 0:
		return fmt.Errorf("%w: max supersteps %d is negative", ErrInvalidOption, c.maxSupersteps)
	case c.maxSteps < 0:
		return fmt.Errorf("%w: max steps %d is negative", ErrInvalidOption, c.maxSteps)
	case c.maxAttemptElapsed < time.Millisecond:
		return fmt.Errorf("%w: max attempt elapsed %s is below 1ms", ErrInvalidOption, c.maxAttemptElapsed)
	}
	if err := runid.Check(c.runID); err != nil {
		return fmt.Errorf("%w: WithRunID: %v", ErrInvalidOption, err)
	}
	return nil
}

func (c *config) now() time.Time { return run.UTCMicros(c.clock()) }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// randomID is prefix + 16 random lowercase hex digits.
func randomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return run.IDFromRandom(prefix, b)
}
