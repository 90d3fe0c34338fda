package wiring

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/prune"
)

// WorkerFlags are the engine settings of `docket worker` as command-line
// flags, for a worker binary of your own: AddFlags registers them (with
// the worker's names, defaults and help) on a pflag.FlagSet, such as a
// cobra command's Flags(), and EngineConfig turns the parsed values into
// the engine.Config fields they set, refusing what `docket worker`
// refuses, in the same words. The flags are
//
//	--concurrency --max-finishing --poll-interval --poll-only --drain-timeout
//	--max-attempt-elapsed --drain-max-elapsed --orphan-ttl
//	--max-claim-attempts --max-claim-abandons
//	--event-retention --run-retention --prune-interval --batch-size
//
// (docs/cli.md, docket worker, says what each one does). The worker's
// other flags (--claim-policy, --metrics-addr, --for) are about the
// docket command itself, not the engine, and are not among them.
//
// The zero value is ready for AddFlags; use one WorkerFlags per flag set.
type WorkerFlags struct {
	concurrency       int
	maxFinishing      int
	pollInterval      time.Duration
	pollOnly          bool
	drainTimeout      time.Duration
	maxAttemptElapsed time.Duration
	drainMaxElapsed   time.Duration
	orphanTTL         time.Duration
	maxClaimAttempts  int
	maxClaimAbandons  int
	eventRetention    Retention
	runRetention      Retention
	pruneInterval     time.Duration
	batchSize         int
}

// Defaults of the worker's pruning flags (the engine has none: pruning
// is off unless both retentions are given).
const (
	DefaultPruneInterval  = time.Hour
	DefaultPruneBatchSize = 1000
)

// ErrInvalidFlag is wrapped by every error EngineConfig returns: the
// command line asks for settings the engine refuses. `docket worker`
// reports it as a usage error (exit 2).
var ErrInvalidFlag = errors.New("invalid flag")

// flagError is one refused setting, worded by its flags' names.
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return ErrInvalidFlag }

// AddFlags registers the flags on fs with the engine's defaults.
func (f *WorkerFlags) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&f.concurrency, "concurrency", engine.DefaultConcurrency, "runs driven at once")
	fs.IntVar(&f.maxFinishing, "max-finishing", 0, "runs whose final commit may be in flight after giving their place up (0: 16 × --concurrency)")
	fs.DurationVar(&f.pollInterval, "poll-interval", engine.DefaultPollInterval, "longest wait between polls")
	fs.BoolVar(&f.pollOnly, "poll-only", false, "do not LISTEN for wake-ups (e.g. behind PgBouncer transaction pooling)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", engine.DefaultDrainTimeout, "how long stopping waits for running work")
	fs.DurationVar(&f.maxAttemptElapsed, "max-attempt-elapsed", engine.DefaultMaxAttemptElapsed,
		"longest node attempt (raise with --drain-max-elapsed and --orphan-ttl, keeping max-attempt-elapsed ≤ drain-max-elapsed < orphan-ttl)")
	fs.DurationVar(&f.drainMaxElapsed, "drain-max-elapsed", engine.DefaultDrainMaxElapsed, "longest a claimed run keeps starting supersteps before it is handed on")
	fs.DurationVar(&f.orphanTTL, "orphan-ttl", engine.DefaultOrphanTTL, "how long a dead worker's claim holds its run before another worker takes it over")
	fs.IntVar(&f.maxClaimAttempts, "max-claim-attempts", engine.DefaultMaxClaimAttempts, "claims without progress before a run is poisoned")
	fs.IntVar(&f.maxClaimAbandons, "max-claim-abandons", engine.DefaultMaxClaimAbandons, "hand-backs without progress (a graph this worker cannot run) before a run is poisoned")
	fs.Var(&f.eventRetention, "event-retention", "prune events older than this (e.g. 7d)")
	fs.Var(&f.runRetention, "run-retention", "prune finished runs older than this (e.g. 30d)")
	fs.DurationVar(&f.pruneInterval, "prune-interval", DefaultPruneInterval, "time between prune passes")
	fs.IntVar(&f.batchSize, "batch-size", DefaultPruneBatchSize, "rows of each kind one prune pass deletes at most")
}

// EngineConfig returns the engine configuration the flags ask for: the
// Dispatcher and Vehicle limits, PollOnly, MaxAttemptElapsed and, with
// both retentions, the Pruner. Set the other fields (Backend, Nodes,
// Telemetry, Logger, TenantMode...) yourself, or let NewEngine do it.
//
// Every setting the engine would refuse is refused here already, before
// anything connects: each problem at once, joined, each naming the flags
// at fault ("--orphan-ttl (1m0s) must exceed --drain-max-elapsed ..."),
// never a Go field. The errors wrap ErrInvalidFlag.
func (f *WorkerFlags) EngineConfig() (engine.Config, error) {
	cfg := engine.Config{
		PollOnly:          f.pollOnly,
		MaxAttemptElapsed: f.maxAttemptElapsed,
		Dispatcher: engine.DispatcherConfig{
			Concurrency:      f.concurrency,
			MaxFinishing:     f.maxFinishing,
			PollInterval:     f.pollInterval,
			DrainTimeout:     f.drainTimeout,
			OrphanTTL:        f.orphanTTL,
			MaxClaimAttempts: f.maxClaimAttempts,
		},
		Vehicle: engine.VehicleConfig{
			DrainBudget:      engine.DrainBudget{MaxElapsed: f.drainMaxElapsed},
			MaxClaimAbandons: f.maxClaimAbandons,
		},
	}
	var problems []error
	bad := func(format string, args ...any) {
		problems = append(problems, &flagError{msg: fmt.Sprintf(format, args...)})
	}
	// A flag's default is the engine's default: 0 would not mean it, so
	// these limits are refused at 0 rather than silently defaulted.
	var notPositive []string
	for _, limit := range []struct {
		name string
		ok   bool
	}{
		{"--orphan-ttl", f.orphanTTL > 0},
		{"--max-attempt-elapsed", f.maxAttemptElapsed > 0},
		{"--drain-max-elapsed", f.drainMaxElapsed > 0},
		{"--max-claim-attempts", f.maxClaimAttempts >= 1},
		{"--max-claim-abandons", f.maxClaimAbandons >= 1},
		{"--concurrency", f.concurrency >= 1},
		{"--poll-interval", f.pollInterval > 0},
	} {
		if !limit.ok {
			notPositive = append(notPositive, limit.name)
		}
	}
	if len(notPositive) > 0 {
		bad("%s must be positive", joinNames(notPositive))
	}
	if f.drainTimeout < 0 {
		bad("--drain-timeout must not be negative")
	}
	if f.maxFinishing < 0 {
		bad("--max-finishing must not be negative")
	}
	switch events, runs := f.eventRetention, f.runRetention; {
	case events.set != runs.set:
		bad("pruning needs both --event-retention and --run-retention")
	case runs.set:
		if err := CheckRetentions(&events, &runs); err != nil {
			bad("%s", err)
		}
		if f.batchSize < 1 || f.batchSize > math.MaxInt32 {
			bad("--batch-size must be in 1..%d", math.MaxInt32)
		}
		if f.pruneInterval <= 0 {
			bad("--prune-interval must be positive")
		}
		cfg.Pruner = &prune.Config{Interval: f.pruneInterval, EventRetention: events.d, RunRetention: runs.d, BatchSize: f.batchSize}
	}
	if len(problems) > 0 {
		return engine.Config{}, errors.Join(problems...)
	}
	// What is left is the engine's own rules across settings (the order of
	// the attempt, drain and orphan limits; lower bounds): ask the engine,
	// and name its fields by their flags.
	if err := engineRules(cfg); err != nil {
		return engine.Config{}, err
	}
	return cfg, nil
}

// Pruning describes the pruning the flags ask for, for a status line:
// "no pruning", or "pruning every 1h0m0s (events after 7d, finished runs
// after 30d)".
func (f *WorkerFlags) Pruning() string {
	if !f.runRetention.set || !f.eventRetention.set {
		return "no pruning"
	}
	return fmt.Sprintf("pruning every %s (events after %s, finished runs after %s)", f.pruneInterval, f.eventRetention.s, f.runRetention.s)
}

// engineRules reports what engine.New would refuse in cfg, but for its
// missing Backend (New stops at validation without one, so nothing is
// built), in flag names.
func engineRules(cfg engine.Config) error {
	cfg.Backend = nil
	_, err := engine.New(cfg)
	each := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		each = joined.Unwrap()
	}
	var problems []error
	for _, e := range each {
		msg := e.Error()
		var ce *engine.ConfigError
		if errors.As(e, &ce) {
			if ce.Field == "Backend" {
				continue
			}
			// Without the "engine config:" its Error puts before each
			// field: the user gave flags, not an engine.Config.
			msg = ce.Field + " " + ce.Reason
		}
		problems = append(problems, &flagError{msg: engineFlagNames.Replace(msg)})
	}
	return errors.Join(problems...)
}

// engineFlagNames names the engine settings WorkerFlags sets by their
// flags, in the engine's configuration errors. Longer names come first:
// at one position the first match wins.
var engineFlagNames = strings.NewReplacer(
	"Vehicle.DrainBudget.MaxElapsed", "--drain-max-elapsed",
	"Vehicle.MaxClaimAbandons", "--max-claim-abandons",
	"Dispatcher.Concurrency", "--concurrency",
	"Dispatcher.MaxFinishing", "--max-finishing",
	"Dispatcher.PollInterval", "--poll-interval",
	"Dispatcher.DrainTimeout", "--drain-timeout",
	"Dispatcher.OrphanTTL", "--orphan-ttl",
	"Dispatcher.MaxClaimAttempts", "--max-claim-attempts",
	"Pruner.Interval", "--prune-interval",
	"Pruner.EventRetention", "--event-retention",
	"Pruner.RunRetention", "--run-retention",
	"Pruner.BatchSize", "--batch-size",
	"RunRetention", "--run-retention",
	"MaxAttemptElapsed", "--max-attempt-elapsed",
)

// joinNames lists flag names in prose: "a", "a and b", "a, b and c".
func joinNames(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// CheckRetentions refuses, in the flags' names, an --event-retention
// above the --run-retention: a pruned run's events go with it.
func CheckRetentions(events, runs *Retention) error {
	if events.d > runs.d {
		return fmt.Errorf("--event-retention (%s) must not exceed --run-retention (%s): a pruned run's events go with it", events.s, runs.s)
	}
	return nil
}

// Retention is a flag value for a retention: a duration ("72h") or whole
// days ("30d"). Its zero value is unset.
type Retention struct {
	d   time.Duration
	s   string // as given, for messages
	set bool
}

// Duration is the retention (0 when unset).
func (r *Retention) Duration() time.Duration { return r.d }

// IsSet reports whether the flag was given.
func (r *Retention) IsSet() bool { return r.set }

// String is the retention as it was given ("30d"), or "" when unset.
func (r *Retention) String() string { return r.s }

// Set parses "72h" or "30d"; a negative retention is refused.
func (r *Retention) Set(s string) error {
	d, err := parseRetention(s)
	if err != nil {
		return err
	}
	r.d, r.s, r.set = d, s, true
	return nil
}

// Type names the flag's kind in pflag's usage text.
func (r *Retention) Type() string { return "duration" }

func parseRetention(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > math.MaxInt64/int(24*time.Hour) {
			return 0, fmt.Errorf("%q: want a duration such as 72h or 30d", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration such as 72h or 30d", s)
	}
	return d, nil
}
