package conformance

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// RunStandalone runs the whole suite outside go test (the CLI's `docket
// conformance` uses it) and returns the report with every failure and skip
// message. As under go test, the invariants of one area run concurrently
// unless Features.Sequential is set. ctx bounds every storage call (checks
// see it as T.Context). A failed, skipped or panicking check never exits
// the process.
func RunStandalone(ctx context.Context, features Features, factory Factory) *Report {
	root := newRecordingT(ctx, "conformance", nil)
	var report *Report
	root.runIsolated(func() { report = Run(root, features, factory) })
	if report == nil {
		report = newReport()
	}
	return report
}

// recordingT is a T that records failures and skips instead of reporting
// them to a testing framework. Each subtest runs on its own goroutine so
// Fatalf and Skipf can stop it with runtime.Goexit, as in package testing.
type recordingT struct {
	ctx    context.Context
	cancel context.CancelFunc
	name   string
	parent *recordingT

	mu       sync.Mutex
	failed   bool
	skipped  bool
	messages []string
	cleanups []func()

	parallel     chan struct{} // closed by Parallel
	parallelOnce sync.Once
	children     sync.WaitGroup // subtests still running
}

func newRecordingT(ctx context.Context, name string, parent *recordingT) *recordingT {
	ctx, cancel := context.WithCancel(ctx)
	return &recordingT{ctx: ctx, cancel: cancel, name: name, parent: parent, parallel: make(chan struct{})}
}

// Parallel lets the parent's Run return while this subtest keeps running;
// the parent waits for it before finishing, as package testing does.
func (t *recordingT) Parallel() { t.parallelOnce.Do(func() { close(t.parallel) }) }

func (t *recordingT) Helper()                  {}
func (t *recordingT) Name() string             { return t.name }
func (t *recordingT) Context() context.Context { return t.ctx }

func (t *recordingT) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *recordingT) Logf(string, ...any) {}

func (t *recordingT) Errorf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
}

func (t *recordingT) Fatalf(format string, args ...any) {
	t.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (t *recordingT) Skipf(format string, args ...any) {
	t.mu.Lock()
	t.skipped = true
	t.messages = append(t.messages, "skip: "+fmt.Sprintf(format, args...))
	t.mu.Unlock()
	runtime.Goexit()
}

func (t *recordingT) fail(msg string) {
	t.mu.Lock()
	t.failed = true
	t.messages = append(t.messages, msg)
	t.mu.Unlock()
	for p := t.parent; p != nil; p = p.parent {
		p.mu.Lock()
		p.failed = true
		p.mu.Unlock()
	}
}

func (t *recordingT) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}

func (t *recordingT) Skipped() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.skipped
}

// Messages returns what the test recorded, in order.
func (t *recordingT) Messages() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.messages...)
}

// Run runs f as a named subtest on a fresh goroutine and waits for it,
// including its subtests and cleanups, unless it calls Parallel. A panic
// inside f is recorded as a failure.
func (t *recordingT) Run(name string, f func(T)) bool {
	sub := newRecordingT(t.ctx, t.name+"/"+strings.ReplaceAll(name, " ", "_"), t)
	done := make(chan struct{})
	t.children.Add(1)
	go func() {
		defer t.children.Done()
		defer close(done)
		sub.runIsolated(func() { f(sub) })
	}()
	select {
	case <-done:
		return !sub.Failed()
	case <-sub.parallel:
		return true
	}
}

// runIsolated runs f on its own goroutine (so Goexit ends only f), then
// waits for f's subtests and runs the cleanups.
func (t *recordingT) runIsolated(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer t.runCleanups()
		defer t.children.Wait()
		defer func() {
			if r := recover(); r != nil {
				buf := make([]byte, 8<<10)
				buf = buf[:runtime.Stack(buf, false)]
				t.fail(fmt.Sprintf("panic: %v\n%s", r, buf))
			}
		}()
		f()
	}()
	<-done
}

func (t *recordingT) runCleanups() {
	defer t.cancel()
	for {
		t.mu.Lock()
		n := len(t.cleanups)
		if n == 0 {
			t.mu.Unlock()
			return
		}
		f := t.cleanups[n-1]
		t.cleanups = t.cleanups[:n-1]
		t.mu.Unlock()
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.fail(fmt.Sprintf("panic in cleanup: %v", r))
				}
			}()
			f()
		}()
	}
}
