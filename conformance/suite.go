package conformance

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/docketgo/docket/ports"
)

// Factory builds one adapter on a fresh namespace for one invariant (a new
// in-memory store, a new PostgreSQL schema, ...). ClaimDue is scope-blind,
// so namespaces must not share runs. The factory registers its teardown
// with t.Cleanup and reports setup failures with t.Fatalf. It is called
// at least once per invariant (some checks ask for a second clean
// adapter), possibly from several goroutines at once.
type Factory func(t T) Adapter

// Adapter is what a Factory hands the suite.
type Adapter struct {
	// Backend is the storage implementation under test (RunStore,
	// EventStore, GraphStore, Capabilities, Notifier).
	Backend ports.Backend
	// Clock is the store clock: the time the adapter itself stamps where
	// PostgreSQL would use CURRENT_TIMESTAMP or clock_timestamp() (retained
	// claims, refresh, immediate wakes, due-announcement checks, graph
	// publication, event insertion). The suite sets and advances it.
	// ManualClock is a ready implementation.
	Clock Clock
	// AdmissionGate is required by Features.AdmissionGate (CLAIM-012).
	AdmissionGate AdmissionGate
	// SchemaProbe is required by Features.SchemaGuards (SCHEMA-*).
	SchemaProbe SchemaProbe
}

// Clock is a store clock the suite controls.
type Clock interface {
	ports.Clock
	// Set moves the clock to t (forwards or backwards).
	Set(t time.Time)
	// Advance moves the clock by d.
	Advance(d time.Duration)
}

// ManualClock is a Clock that only moves when told to. The zero value
// reads the zero time; the suite sets it before every check.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: ports.Micros(t)} }

// Now returns the clock's time (UTC µs).
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = ports.Micros(t)
}

// Advance moves the clock by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = ports.Micros(c.now.Add(d))
}

// AdmissionGate lets CLAIM-012 close the adapter's admission gate the way
// a conflicting engine, an unsupported isolation level or a read-only
// transaction would.
type AdmissionGate interface {
	// Close makes ClaimDue refuse admission with a
	// *ports.ClaimPolicyUnavailableError carrying reason (one of the
	// ports.Unavailable* reasons) until reopen is called. A reason the
	// adapter cannot simulate returns ports.ErrUnsupported.
	Close(ctx context.Context, reason string) (reopen func(), err error)
}

// SchemaProbe gives SCHEMA-* direct access to an adapter's storage,
// bypassing its stores, to prove that the schema itself rejects corrupt
// queue states (PostgreSQL CHECK constraints and triggers).
type SchemaProbe interface {
	// BreakQueueShape tries to leave runID in the given invalid shape with
	// direct writes. It must return the storage's rejection and change
	// nothing.
	BreakQueueShape(ctx context.Context, runID string, shape QueueShape) error
	// UnfinishedCount reads the owner's unfinished-run count from the
	// claim schedule.
	UnfinishedCount(ctx context.Context, owner ports.OwnerScope) (int64, error)
	// TamperAccounting tries a direct write that would corrupt the
	// owner's unfinished accounting. It must return the storage's
	// rejection and change nothing.
	TamperAccounting(ctx context.Context, owner ports.OwnerScope, how Tampering) error
}

// QueueShape names an invalid operational state of a run row.
type QueueShape string

// Invalid queue shapes (spec §20.56).
const (
	ShapeRunningWithWakeAndClaim   QueueShape = "running_with_wake_and_claim"
	ShapeRunningWithoutWakeOrClaim QueueShape = "running_without_wake_or_claim"
	ShapeWaitingWithWake           QueueShape = "waiting_with_wake"
	ShapePoisonedWithClaim         QueueShape = "poisoned_with_claim"
)

// Tampering names a forbidden direct write to the unfinished accounting.
type Tampering string

// Forbidden accounting writes (spec §20.57).
const (
	TamperUpdateCount      Tampering = "update_count"
	TamperDeleteMembership Tampering = "delete_nonempty_membership"
	TamperTruncateRuns     Tampering = "truncate_runs"
)

// Feature names an optional capability that gates some invariants.
type Feature string

// Features.
const (
	FeatureWakeNotifications Feature = "WakeNotifications"
	FeatureTenantFairPolicy  Feature = "TenantFairPolicy"
	FeatureAdmissionGate     Feature = "AdmissionGate"
	FeatureSchemaGuards      Feature = "SchemaGuards"
)

// Features say what the adapter promises beyond the core contract, and
// tune the suite. The zero value runs the core invariants with default
// tuning; every gated invariant then skips with a message naming its
// feature.
type Features struct {
	// WakeNotifications: the backend's Notifier delivers wake
	// announcements (LISTEN/NOTIFY or in-process). Enables WAKE-*.
	WakeNotifications bool
	// TenantFairPolicy: the adapter's claim policy is tenant-fair
	// (breadth-first across scopes, sticky admission). Enables FAIR-* and
	// skips the legacy age-first ordering check CLAIM-014.
	TenantFairPolicy bool
	// AdmissionGate: Adapter.AdmissionGate can close admission. Enables
	// CLAIM-012.
	AdmissionGate bool
	// SchemaGuards: Adapter.SchemaProbe reaches the schema directly
	// (PostgreSQL adapters). Enables SCHEMA-*.
	SchemaGuards bool

	// Sequential runs invariants one at a time instead of in parallel.
	Sequential bool
	// Writers is the number of goroutines in each race check (default 12).
	Writers int
	// Rounds is how often each race check repeats on fresh runs
	// (default 3).
	Rounds int
	// WakeTimeout bounds the wait for an expected announcement
	// (default 2s).
	WakeTimeout time.Duration
	// QuietWindow is how long a listener must stay silent to conclude
	// that a write announced nothing (default 75ms).
	QuietWindow time.Duration
	// LockWait bounds how long SIGNAL-006 lets ClaimDue run while a
	// mutation holds a run (default 2s).
	LockWait time.Duration
}

func (f Features) withDefaults() Features {
	if f.Writers <= 0 {
		f.Writers = 12
	}
	if f.Rounds <= 0 {
		f.Rounds = 3
	}
	if f.WakeTimeout <= 0 {
		f.WakeTimeout = 2 * time.Second
	}
	if f.QuietWindow <= 0 {
		f.QuietWindow = 75 * time.Millisecond
	}
	if f.LockWait <= 0 {
		f.LockWait = 2 * time.Second
	}
	return f
}

// Has reports whether feature f is enabled.
func (f Features) Has(feature Feature) bool {
	switch feature {
	case FeatureWakeNotifications:
		return f.WakeNotifications
	case FeatureTenantFairPolicy:
		return f.TenantFairPolicy
	case FeatureAdmissionGate:
		return f.AdmissionGate
	case FeatureSchemaGuards:
		return f.SchemaGuards
	}
	return false
}

// Run runs every invariant against the adapters factory builds, one
// subtest per invariant named "<AREA>/<ID>/<behaviour>", and returns the
// report. Invariants of one area run in parallel (unless
// Features.Sequential) when t supports it; areas run one after another.
//
// t is usually the adapter test's *testing.T; any Subtester works (see
// Testing and RunStandalone).
func Run(t T, features Features, factory Factory) *Report {
	t.Helper()
	report := newReport()
	st := subtester(t)
	if st == nil {
		t.Fatalf("conformance: %T cannot run subtests; pass a *testing.T, conformance.Testing(t) or a Subtester", t)
		return report
	}
	if factory == nil {
		t.Fatalf("conformance: nil Factory")
		return report
	}
	features = features.withDefaults()
	for _, area := range Areas() {
		invariants := invariantsOf(area)
		st.Run(string(area), func(at T) {
			ast := subtester(at)
			for _, inv := range invariants {
				ast.Run(inv.ID, func(it T) {
					if p, ok := it.(parallelizer); ok && !features.Sequential {
						p.Parallel()
					}
					subtester(it).Run(inv.Behaviour, func(bt T) {
						runInvariant(bt, inv, features, factory, report)
					})
				})
			}
		})
	}
	return report
}

// messager is the optional capability of handing back recorded messages.
type messager interface{ Messages() []string }

func runInvariant(t T, inv Invariant, features Features, factory Factory, report *Report) {
	started := time.Now()
	defer func() {
		// A panicking check or factory fails its invariant only.
		if r := recover(); r != nil {
			t.Errorf("panic: %v\n%s", r, debug.Stack())
		}
		status := StatusPass
		switch {
		case t.Failed():
			status = StatusFail
		case t.Skipped():
			status = StatusSkip
		}
		var messages []string
		if m, ok := t.(messager); ok {
			messages = m.Messages()
		}
		report.record(inv.ID, status, messages, time.Since(started))
	}()
	if inv.Requires != "" && !features.Has(inv.Requires) {
		t.Skipf("%s: feature %s is disabled (%s)", inv.ID, inv.Requires, inv.Summary)
	}
	if inv.Excludes != "" && features.Has(inv.Excludes) {
		t.Skipf("%s: does not apply when feature %s is enabled", inv.ID, inv.Excludes)
	}
	adapter := factory(t)
	if adapter.Backend == nil || adapter.Clock == nil {
		t.Fatalf("conformance: the factory returned an Adapter without Backend or Clock")
	}
	h := newHarness(t, inv, features, factory, adapter)
	inv.check(h)
}
