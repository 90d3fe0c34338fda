package conformance

import (
	"context"
	"testing"
)

// T is the part of *testing.T the suite needs. *testing.T satisfies it, so
// an adapter's test passes its own t; RunStandalone supplies a recording
// implementation for use outside go test.
//
// Fatalf, Skipf and FailNow-like behaviour must stop the calling goroutine
// (runtime.Goexit), exactly as the testing package does; checks call them
// only from the goroutine the suite started.
type T interface {
	Helper()
	Name() string
	Context() context.Context
	Cleanup(func())
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Skipped() bool
}

// Subtester is a T that runs named subtests. The suite needs it to give
// every invariant its own result; *testing.T is adapted by Testing, and the
// standalone runner's T implements it directly.
type Subtester interface {
	T
	Run(name string, f func(T)) bool
}

// parallelizer is the optional capability of running a subtest in parallel
// with its siblings (*testing.T has it; the standalone runner does not).
type parallelizer interface{ Parallel() }

// Testing adapts t so it satisfies Subtester. Run accepts *testing.T
// directly as well; Testing exists for callers that hold a T-typed value.
func Testing(t *testing.T) Subtester { return testingT{t} }

type testingT struct{ *testing.T }

// Run starts f as a subtest. The subtest receives the raw *testing.T so
// Helper attribution in failure lines stays exact.
func (t testingT) Run(name string, f func(T)) bool {
	return t.T.Run(name, func(tt *testing.T) { f(tt) })
}

// subtester returns t's subtest capability, or nil when t has none.
func subtester(t T) Subtester {
	switch v := t.(type) {
	case Subtester:
		return v
	case *testing.T:
		return testingT{v}
	}
	return nil
}
