package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/app/observe"
	"github.com/docketgo/docket/app/prune"
	"github.com/docketgo/docket/ports"
)

// TenantMode says whether calls carry a tenant.
type TenantMode string

// Tenant modes.
const (
	// TenantNone (the default): calls carry no tenant and see tenantless
	// rows only.
	TenantNone TenantMode = "none"
	// TenantRequired: every call goes through Engine.Tenant with a
	// non-empty id and sees only that tenant's rows.
	TenantRequired TenantMode = "required"
)

// Mode says how runs are driven.
type Mode string

// Modes.
const (
	// ModeProduction (the default): Start launches the dispatcher, the
	// wake listener and the pruner.
	ModeProduction Mode = "production"
	// ModeManual: nothing runs in the background; tests drive due runs
	// synchronously with DrainRuns.
	ModeManual Mode = "manual"
)

// Unlimited, as DrainBudget.MaxMoments, removes the moment limit (the
// elapsed limit always applies).
const Unlimited = -1

// Defaults applied to zero configuration fields.
const (
	DefaultConcurrency = 10
	// DefaultFinishingPerPlace is MaxFinishing's default per unit of
	// Concurrency: one finishing commit costs a goroutine and a run
	// document, and large closing batches are cheaper per run.
	DefaultFinishingPerPlace = 16
	DefaultPollInterval      = time.Second
	DefaultOrphanTTL         = 60 * time.Second
	DefaultMaxClaimAttempts  = 5
	DefaultDrainTimeout      = 30 * time.Second
	DefaultMaxAttemptElapsed = 2 * time.Second
	DefaultDrainMaxMoments   = 100
	DefaultDrainMaxElapsed   = 3 * time.Second
	DefaultAbandonBackoff    = 30 * time.Second
	DefaultAbandonBackoffCap = time.Hour
	DefaultMaxClaimAbandons  = 5
	DefaultAwaitPollInterval = 50 * time.Millisecond
	// MaxConcurrency bounds Dispatcher.Concurrency: far more runs at once
	// than a process drives, and each place costs the dispatcher memory.
	MaxConcurrency         = 1 << 20
	DefaultDrainMaxRuns    = 100
	DefaultStoreTimeout    = 15 * time.Second
	DefaultObserverTimeout = observe.DefaultTimeout
	// DefaultObserverMaxInFlight is Config.ObserverMaxInFlight's default.
	DefaultObserverMaxInFlight = observe.DefaultMaxInFlight
	// SignalStaleRetries is how often a signal is re-evaluated after a
	// lost sequence race before giving up.
	SignalStaleRetries = 3
)

// Config configures an Engine. The zero value of every field means its
// documented default; New validates the whole configuration once and
// reports every invalid field (see ConfigError). docs/operations.md is the
// reference.
type Config struct {
	// Backend is the storage (required): its RunStore, EventStore and
	// GraphStore, and its wake listener when it has one.
	Backend ports.Backend
	// Nodes resolves the node implementations graphs reference (default:
	// an empty registry, so only graphs without module nodes compile).
	// Register every node before Start.
	Nodes *node.Registry
	// Clock is the engine clock: run timestamps, retry deadlines, claim
	// times (default ports.SystemClock). The store bounds claims, immediate
	// wakes and pruning cut-offs by its own clock, so a skew between hosts
	// delays retries at worst (docs/operations.md, Clocks). Tests may
	// control it; it should agree with the store's clock.
	Clock ports.Clock
	// TenantMode is TenantNone (default) or TenantRequired.
	TenantMode TenantMode
	// ClaimPolicy is the claim policy the Backend must admit with (see
	// ClaimPolicy): ClaimPolicyTenantFair by default in TenantRequired
	// mode, which allows no other; otherwise, by default, whatever the
	// Backend runs.
	ClaimPolicy ClaimPolicy
	// Mode is ModeProduction (default) or ModeManual.
	Mode Mode
	// PollOnly disables the wake listener even when the backend offers
	// one: the dispatcher then relies on its poll interval alone.
	PollOnly bool
	// StoreTimeout bounds every single store call the engine makes (its
	// facade, claims, commits, hand-backs, releases, prune statements;
	// default 15s). A store that does not answer in time (a half-open
	// connection after a failover, a lock wait) fails that call instead
	// of stalling the dispatcher, a vehicle or a caller. A caller's own
	// earlier deadline still applies.
	StoreTimeout time.Duration

	Dispatcher DispatcherConfig
	Vehicle    VehicleConfig

	// MaxAttemptElapsed is this host's maximum for one node attempt
	// (default 2s, at least 1ms). A node's timeout_ms may only shorten
	// it; a graph asking for more is handed back to other hosts.
	MaxAttemptElapsed time.Duration
	// MaxSupersteps is the superstep limit of graphs that declare none
	// (default 0: none).
	MaxSupersteps int

	// Pruner enables the retention loop (nil: no pruning). Every field is
	// required; there are no retention defaults.
	Pruner *prune.Config

	// Observers receive committed checkpoints after commit, best effort.
	Observers []observe.Observer
	// ObserverTimeout is the deadline of one observer call (default 10s):
	// its context ends then and the call counts as failed if it errs.
	ObserverTimeout time.Duration
	// ObserverMaxInFlight bounds the calls of one observer running at once
	// (default 1024). A commit arriving while an observer is at the bound
	// is not delivered to it: counted as a failure with result "dropped"
	// and logged once an overload, so a slow observer costs bounded memory.
	ObserverMaxInFlight int
	// GraphCacheDisabled compiles the graph once per drive instead of once
	// per version.
	GraphCacheDisabled bool
	// UndecodableGraphTTL is how long a corrupt stored graph stays cached
	// as unusable (default 30s).
	UndecodableGraphTTL time.Duration
	// AwaitPollInterval is how often AwaitRun re-reads the run (default
	// 50ms).
	AwaitPollInterval time.Duration
	// NewID generates run and interrupt ids from a prefix ("run_",
	// "interrupt_"); default: prefix + 16 random hex digits.
	NewID func(prefix string) string

	Telemetry ports.Telemetry // default ports.NopTelemetry
	Logger    *slog.Logger    // default slog.Default()
}

// DispatcherConfig configures the claim loop.
type DispatcherConfig struct {
	// Concurrency is the maximum number of runs driven at once (default
	// 10): at most this many runs execute node code. A run whose nodes
	// are done and whose final commit (its park or its end) is in flight
	// gives its place to the next claimed run, up to MaxFinishing such
	// runs at once.
	Concurrency int
	// MaxFinishing bounds the runs whose final commit is in flight after
	// they gave their place up (default 16 × Concurrency), so the engine
	// holds at most Concurrency + MaxFinishing claims. When the database
	// falls behind, finishing runs keep their places and claiming slows
	// down with it.
	MaxFinishing int
	// PollInterval is the longest wait between polls (default 1s); each
	// wait is jittered below it. Polling is the correctness path.
	PollInterval time.Duration
	// OrphanTTL is how long a claim stays unstealable after its last
	// commit (default 60s). It must exceed Vehicle.DrainBudget.MaxElapsed.
	OrphanTTL time.Duration
	// MaxClaimAttempts poisons a run claimed this many times without
	// committed progress (default 5).
	MaxClaimAttempts int
	// DrainTimeout bounds Stop's wait for in-flight work (default 30s).
	DrainTimeout time.Duration
	// Jitter returns the next poll delay for the interval (default
	// uniform); results are clamped to [1ms, PollInterval].
	Jitter func(time.Duration) time.Duration
	// OnPoisoned is told about runs admission poisoned (best effort, in
	// its own goroutine).
	OnPoisoned func(ctx context.Context, poisoned []ports.PoisonOutcome)
}

// VehicleConfig configures how one claimed run is driven.
type VehicleConfig struct {
	DrainBudget DrainBudget
	// AbandonBackoff is the base delay of hand-backs (default 30s).
	AbandonBackoff time.Duration
	// AbandonBackoffCap caps the exponential host-incompatibility backoff
	// (default 1h, at least AbandonBackoff).
	AbandonBackoffCap time.Duration
	// MaxClaimAbandons poisons a run after this many stored-graph
	// hand-backs without progress (default 5).
	MaxClaimAbandons int
	// Jitter returns a delay in (0, n] added to stored-graph hand-backs
	// (default uniform).
	Jitter func(time.Duration) time.Duration
}

// DrainBudget bounds how long one claim is held before the vehicle yields.
type DrainBudget struct {
	// MaxMoments is the most commits per claim (default 100; Unlimited
	// removes the limit).
	MaxMoments int
	// MaxElapsed is the longest a drive keeps starting supersteps
	// (default 3s). It must be at least MaxAttemptElapsed and below
	// Dispatcher.OrphanTTL.
	MaxElapsed time.Duration
}

// resolve validates c and returns it with defaults applied.
func (c Config) resolve() (Config, error) {
	var problems []error
	bad := func(field, reason string) { problems = append(problems, &ConfigError{Field: field, Reason: reason}) }
	negative := func(field string, d time.Duration) {
		if d < 0 {
			bad(field, "must not be negative")
		}
	}
	negativeInt := func(field string, n int) {
		if n < 0 {
			bad(field, "must not be negative")
		}
	}

	if c.Backend == nil {
		bad("Backend", "is required")
	}
	switch c.TenantMode {
	case "":
		c.TenantMode = TenantNone
	case TenantNone, TenantRequired:
	default:
		bad("TenantMode", "must be \"none\" or \"required\"")
	}
	c.resolveClaimPolicy(bad)
	switch c.Mode {
	case "":
		c.Mode = ModeProduction
	case ModeProduction, ModeManual:
	default:
		bad("Mode", "must be \"production\" or \"manual\"")
	}

	negative("StoreTimeout", c.StoreTimeout)
	c.StoreTimeout = orDefault(c.StoreTimeout, DefaultStoreTimeout)

	d := &c.Dispatcher
	negativeInt("Dispatcher.Concurrency", d.Concurrency)
	negative("Dispatcher.PollInterval", d.PollInterval)
	negative("Dispatcher.OrphanTTL", d.OrphanTTL)
	negativeInt("Dispatcher.MaxClaimAttempts", d.MaxClaimAttempts)
	if d.MaxClaimAttempts > math.MaxInt32 {
		bad("Dispatcher.MaxClaimAttempts", fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	negative("Dispatcher.DrainTimeout", d.DrainTimeout)
	negativeInt("Dispatcher.MaxFinishing", d.MaxFinishing)
	if d.Concurrency > MaxConcurrency {
		bad("Dispatcher.Concurrency", fmt.Sprintf("must be at most %d", MaxConcurrency))
	}
	if d.PollInterval > 0 && d.PollInterval < time.Millisecond {
		bad("Dispatcher.PollInterval", "must be at least 1ms (polling is the correctness path, not a busy loop)")
	}
	d.Concurrency = orDefault(d.Concurrency, DefaultConcurrency)
	d.MaxFinishing = orDefault(d.MaxFinishing, DefaultFinishingPerPlace*d.Concurrency)
	d.PollInterval = orDefault(d.PollInterval, DefaultPollInterval)
	d.OrphanTTL = orDefault(d.OrphanTTL, DefaultOrphanTTL)
	d.MaxClaimAttempts = orDefault(d.MaxClaimAttempts, DefaultMaxClaimAttempts)
	d.DrainTimeout = orDefault(d.DrainTimeout, DefaultDrainTimeout)

	v := &c.Vehicle
	if v.DrainBudget.MaxMoments < 0 && v.DrainBudget.MaxMoments != Unlimited {
		bad("Vehicle.DrainBudget.MaxMoments", "must be positive, or Unlimited")
	}
	negative("Vehicle.DrainBudget.MaxElapsed", v.DrainBudget.MaxElapsed)
	negative("Vehicle.AbandonBackoff", v.AbandonBackoff)
	negative("Vehicle.AbandonBackoffCap", v.AbandonBackoffCap)
	negativeInt("Vehicle.MaxClaimAbandons", v.MaxClaimAbandons)
	if v.MaxClaimAbandons > math.MaxInt32 {
		bad("Vehicle.MaxClaimAbandons", fmt.Sprintf("must be at most %d", math.MaxInt32))
	}
	v.DrainBudget.MaxMoments = orDefault(v.DrainBudget.MaxMoments, DefaultDrainMaxMoments)
	v.DrainBudget.MaxElapsed = orDefault(v.DrainBudget.MaxElapsed, DefaultDrainMaxElapsed)
	v.AbandonBackoff = orDefault(v.AbandonBackoff, DefaultAbandonBackoff)
	v.AbandonBackoffCap = orDefault(v.AbandonBackoffCap, DefaultAbandonBackoffCap)
	v.MaxClaimAbandons = orDefault(v.MaxClaimAbandons, DefaultMaxClaimAbandons)
	if v.AbandonBackoffCap < v.AbandonBackoff {
		bad("Vehicle.AbandonBackoffCap", "must be at least Vehicle.AbandonBackoff")
	}

	negative("MaxAttemptElapsed", c.MaxAttemptElapsed)
	c.MaxAttemptElapsed = orDefault(c.MaxAttemptElapsed, DefaultMaxAttemptElapsed)
	if c.MaxAttemptElapsed > 0 && c.MaxAttemptElapsed < time.Millisecond {
		bad("MaxAttemptElapsed", "must be at least 1ms")
	}
	// MaxAttemptElapsed ≤ DrainBudget.MaxElapsed < OrphanTTL. Raising the
	// attempt maximum alone past the TTL breaks both: say so at once, with
	// the values, rather than one field per try.
	const together = "; for longer node attempts raise MaxAttemptElapsed, Vehicle.DrainBudget.MaxElapsed and Dispatcher.OrphanTTL together, keeping that order (docs/operations.md, long node work)"
	if c.MaxAttemptElapsed > v.DrainBudget.MaxElapsed {
		bad("Vehicle.DrainBudget.MaxElapsed", fmt.Sprintf("(%v) must be at least MaxAttemptElapsed (%v)%s",
			v.DrainBudget.MaxElapsed, c.MaxAttemptElapsed, together))
	}
	if budget := max(v.DrainBudget.MaxElapsed, c.MaxAttemptElapsed); budget >= d.OrphanTTL {
		bad("Dispatcher.OrphanTTL", fmt.Sprintf("(%v) must exceed Vehicle.DrainBudget.MaxElapsed (%v), which must be at least MaxAttemptElapsed (%v)",
			d.OrphanTTL, v.DrainBudget.MaxElapsed, c.MaxAttemptElapsed))
	}
	negativeInt("MaxSupersteps", c.MaxSupersteps)

	if c.Pruner != nil {
		if err := c.Pruner.Validate(); err != nil {
			each := []error{err}
			if joined, ok := err.(interface{ Unwrap() []error }); ok {
				each = joined.Unwrap()
			}
			for _, err := range each {
				var pe *prune.ConfigError
				if errors.As(err, &pe) {
					bad("Pruner."+pe.Field, pe.Reason)
				} else {
					bad("Pruner", err.Error())
				}
			}
		}
	}
	negative("UndecodableGraphTTL", c.UndecodableGraphTTL)
	negative("AwaitPollInterval", c.AwaitPollInterval)
	if c.AwaitPollInterval > 0 && c.AwaitPollInterval < time.Millisecond {
		bad("AwaitPollInterval", "must be at least 1ms")
	}
	c.AwaitPollInterval = orDefault(c.AwaitPollInterval, DefaultAwaitPollInterval)
	negative("ObserverTimeout", c.ObserverTimeout)
	c.ObserverTimeout = orDefault(c.ObserverTimeout, DefaultObserverTimeout)
	if c.ObserverMaxInFlight < 0 {
		bad("ObserverMaxInFlight", "must not be negative")
	}
	c.ObserverMaxInFlight = orDefault(c.ObserverMaxInFlight, DefaultObserverMaxInFlight)
	for i, o := range c.Observers {
		if f, isFunc := o.(observe.Func); o == nil || isFunc && f == nil {
			bad("Observers", "must not contain nil (index "+strconv.Itoa(i)+")")
		}
	}

	if c.Nodes == nil {
		c.Nodes = node.NewRegistry()
	}
	if c.Clock == nil {
		c.Clock = ports.SystemClock{}
	}
	if c.Telemetry == nil {
		c.Telemetry = ports.NopTelemetry{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if len(problems) > 0 {
		return c, errors.Join(problems...)
	}
	return c, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}
