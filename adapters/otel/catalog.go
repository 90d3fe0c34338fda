package otel

import "github.com/docketgo/docket/ports"

// The catalog: which facts (operation spans and emitted events, by
// canonical name) feed which metric instruments. A span's end is treated
// like an emitted fact of the same name whose "duration" measurement is
// the span's own elapsed time and whose "result" label is the end result,
// so a caller may report an operation either way, never both.
//
// Each instrument has exactly one entry here (the backlog and pruner
// gauges/counters are split by a fixed attribute, not by source), so a
// fact never counts twice in one metric. docs/telemetry.md lists the same
// table for operators; a test keeps the two in step.

type instrumentKind int

const (
	counterKind instrumentKind = iota + 1
	histogramKind
	gaugeKind
)

func (k instrumentKind) String() string {
	switch k {
	case counterKind:
		return "counter"
	case histogramKind:
		return "histogram"
	case gaugeKind:
		return "gauge"
	}
	return "unknown"
}

// Measurement unit conversions into the instrument's unit.
const (
	nanosToSeconds  = 1e-9 // a "duration" measurement is a time.Duration in nanoseconds
	millisToSeconds = 1e-3 // measurements named *_ms
	asIs            = 1.0
)

// source is one measurement key feeding an instrument, with the factor
// that converts it into the instrument's unit.
type source struct {
	Key   string
	Scale float64
}

// metricDef declares one instrument and how a fact feeds it.
type metricDef struct {
	Name        string
	Kind        instrumentKind
	Unit        string
	Description string
	// From lists the measurements that feed the instrument; the first one
	// present in a fact is recorded, the rest are ignored.
	From []source
	// CountsFact records 1 when none of From is present, so a counter of
	// facts works whether or not the caller passes count: 1.
	CountsFact bool
	// Labels are the bounded label keys this instrument carries.
	Labels []string
	// Fixed is an attribute added to every point, splitting one
	// instrument by source measurement (backlog class, pruned row kind).
	Fixed *fixedAttribute
	// Buckets are explicit histogram bucket boundaries (histograms only).
	Buckets []float64
}

type fixedAttribute struct {
	Key   string
	Value string
}

// factDef is one catalog entry.
type factDef struct {
	Name string
	// Span says the fact is normally reported as an operation span; false
	// means an emitted event. Both forms are accepted (docs only).
	Span    bool
	Meaning string
	Metrics []metricDef
}

// Units, in UCUM form as OpenTelemetry expects.
const (
	unitSeconds = "s"
	unitBytes   = "By"
)

var (
	secondsBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	countBuckets   = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}
	bytesBuckets   = []float64{256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}
)

// Bounded label keys. Every metric label comes from this list; a test
// checks that no catalog entry declares any other key.
const (
	keyResult          = ports.LabelResult
	keySource          = ports.LabelSource
	keyClaimPolicy     = ports.LabelClaimPolicy
	keyPreference      = ports.LabelPreference
	keyFallback        = ports.LabelFallback
	keyImplementation  = ports.LabelImplementation
	keyContentionPhase = ports.LabelContentionPhase
	keyReason          = ports.LabelReason
	keyOperation       = ports.LabelOperation
	keyStage           = ports.LabelStage
	keyOutcome         = ports.LabelOutcome
	keyBudget          = ports.LabelBudget
	keyPark            = ports.LabelPark
	keyCheckpointType  = ports.LabelCheckpointType
	keyDisposition     = ports.LabelDisposition
	keyDurableSuccess  = ports.LabelDurableSuccess
	keyClass           = ports.LabelClass
	keyKind            = ports.LabelKind
)

// metricLabelKeys is the allow-list of metric attribute keys.
var metricLabelKeys = setOf(
	keyResult, keySource, keyClaimPolicy, keyPreference, keyFallback, keyImplementation,
	keyContentionPhase, keyReason, keyOperation, keyStage, keyOutcome, keyBudget, keyPark,
	keyCheckpointType, keyDisposition, keyDurableSuccess, keyClass, keyKind,
)

// Span-only keys: identities and per-attempt details that help a trace but
// would explode a metric's cardinality. Tenant and scope are deliberately
// absent (they may name a customer); the run id correlates instead.
var (
	spanTextKeys = setOf(ports.LabelRunID, ports.LabelGraphID, ports.LabelGraphHash, ports.LabelTaskID,
		ports.LabelNode, ports.LabelLifecycleRef)
	spanIntegerKeys = setOf(ports.LabelAttempt, ports.LabelStep, ports.LabelCheckpointSeq, ports.LabelClaimAttempt)
)

// spanMeasurementKeys is the allow-list of measurements copied onto spans
// and span events as numeric attributes. "duration" is absent: a span has
// its own timing.
var spanMeasurementKeys = setOf(
	"count", "duration_ms", "concurrency", "demand", "in_flight", "finishing", "poll_active", "poll_pending",
	"leases", "poisoned", "vehicles_remaining", "claim_attempts", "ready_candidates",
	"expired_candidates", "ready_selected", "expired_selected", "steals", "ready_oldest_age_ms",
	"expired_oldest_age_ms", "contentions", "matched", "bytes", "selected_rows", "attempted_rows",
	"encoded_bytes", "committed_moments", "elapsed_ms", "claim_held_ms", "claim_attempt",
	"attempt", "step", "checkpoint_seq", "retry_delay_ms", "events_deleted", "runs_deleted",
	"cascade_events_deleted", "graphs_deleted",
)

func setOf(keys ...string) map[string]bool {
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out
}

// durationOf builds the duration histogram every operation has.
func durationOf(fact string, labels ...string) metricDef {
	return metricDef{
		Name:        "docket." + fact + ".duration",
		Kind:        histogramKind,
		Unit:        unitSeconds,
		Description: "Duration of " + fact + ".",
		From:        []source{{"duration", nanosToSeconds}, {"duration_ms", millisToSeconds}},
		Labels:      labels,
		Buckets:     secondsBuckets,
	}
}

// factCounter builds a counter of facts (count measurement, default 1).
func factCounter(name, unit, description string, labels ...string) metricDef {
	return metricDef{
		Name: name, Kind: counterKind, Unit: unit, Description: description,
		From: []source{{"count", asIs}}, CountsFact: true, Labels: labels,
	}
}

func backlogGauge(key, class string) metricDef {
	return metricDef{
		Name: "docket.backlog", Kind: gaugeKind, Unit: "{run}",
		Description: "Due runs seen by the last claim, by candidate class (ready: due and unclaimed; expired: claim past the orphan TTL), each cut at the claim's demand.",
		From:        []source{{key, asIs}},
		Fixed:       &fixedAttribute{keyClass, class},
	}
}

func prunedCounter(key, kind string) metricDef {
	return metricDef{
		Name: "docket.pruner.deleted", Kind: counterKind, Unit: "{row}",
		Description: "Rows deleted by the pruner, by kind.",
		From:        []source{{key, asIs}},
		Labels:      []string{keyResult},
		Fixed:       &fixedAttribute{keyKind, kind},
	}
}

func gauge(name, key, description string) metricDef {
	return metricDef{Name: name, Kind: gaugeKind, Unit: "{run}", Description: description, From: []source{{key, asIs}}}
}

// catalog is the fixed list of facts that feed metrics.
var catalog = []factDef{
	{
		Name: ports.FactDispatcherPoll, Span: true,
		Meaning: "One dispatcher poll: claim due runs up to the free concurrency.",
		Metrics: []metricDef{
			durationOf(ports.FactDispatcherPoll, keyClaimPolicy, keySource, keyResult),
			{
				Name: "docket.claims", Kind: counterKind, Unit: "{claim}",
				Description: "Runs claimed (leases acquired) by dispatcher polls.",
				From:        []source{{"leases", asIs}}, Labels: []string{keyClaimPolicy, keySource},
			},
			{
				Name: "docket.admission.poisoned", Kind: counterKind, Unit: "{run}",
				Description: "Runs poisoned by admission during dispatcher polls instead of being claimed.",
				From:        []source{{"poisoned", asIs}}, Labels: []string{keyClaimPolicy},
			},
			backlogGauge("ready_candidates", "ready"),
			backlogGauge("expired_candidates", "expired"),
		},
	},
	{
		Name: ports.FactDispatcherClaim, Span: true,
		Meaning: "The claim call of one dispatcher poll (admission and ClaimDue).",
		Metrics: []metricDef{durationOf(ports.FactDispatcherClaim, keyResult)},
	},
	{
		Name:    ports.FactDispatcherState,
		Meaning: "The dispatcher's capacity after a change.",
		Metrics: []metricDef{
			gauge("docket.dispatcher.concurrency", "concurrency", "Vehicles this dispatcher may run at once."),
			gauge("docket.dispatcher.demand", "demand", "Free vehicle slots (concurrency minus in flight)."),
			gauge("docket.dispatcher.in_flight", "in_flight", "Vehicles driving a claimed run now."),
			gauge("docket.dispatcher.finishing", "finishing", "Vehicles that gave their place up and are still writing their final commit."),
		},
	},
	{
		Name: ports.FactDispatcherLaunch, Span: true,
		Meaning: "Starting one vehicle for a lease.",
		Metrics: []metricDef{durationOf(ports.FactDispatcherLaunch, keyResult)},
	},
	{
		Name: ports.FactDispatcherShutdown, Span: true,
		Meaning: "A dispatcher's graceful drain on shutdown.",
		Metrics: []metricDef{durationOf(ports.FactDispatcherShutdown, keyResult)},
	},
	{
		Name:    ports.FactNotification,
		Meaning: "One wake notification received by a listener.",
		Metrics: []metricDef{factCounter("docket.notifications", "{notification}", "Wake notifications, received (ours) or ignored.", keyResult)},
	},
	{
		Name: ports.FactRunStoreClaim, Span: true,
		Meaning: "One ClaimDue call on the run store.",
		Metrics: []metricDef{
			durationOf(ports.FactRunStoreClaim, keyPreference, keyFallback, keyResult),
			{
				Name: "docket.claim.steals", Kind: counterKind, Unit: "{claim}",
				Description: "Claims taken over from a holder whose claim passed the orphan TTL.",
				From:        []source{{"steals", asIs}},
			},
			backlogGauge("ready_candidates", "ready"),
			backlogGauge("expired_candidates", "expired"),
		},
	},
	{
		Name: ports.FactRunStoreCommit, Span: true,
		Meaning: "One fenced commit of a moment by a vehicle.",
		Metrics: []metricDef{durationOf(ports.FactRunStoreCommit, keyResult)},
	},
	{
		Name: ports.FactClaimPolicyAdmission, Span: true,
		Meaning: "The admission phase of one claim.",
		Metrics: []metricDef{durationOf(ports.FactClaimPolicyAdmission, keyImplementation, keyResult)},
	},
	{
		Name:    ports.FactClaimAttempt,
		Meaning: "One lease acquired: first claim or a reacquisition.",
		Metrics: []metricDef{factCounter("docket.claim.attempts", "{claim}", "Claim attempts per lease: acquired (attempt 1) or reacquired.", keyResult)},
	},
	{
		Name:    ports.FactClaimPoisoned,
		Meaning: "A run poisoned (claim attempts or abandons exhausted).",
		Metrics: []metricDef{factCounter("docket.poisoned", "{run}", "Runs poisoned, by reason.", keyReason)},
	},
	{
		Name:    ports.FactAdmissionRelease,
		Meaning: "A tenant admission released.",
		Metrics: []metricDef{factCounter("docket.admission.releases", "{release}", "Admissions released, by reason.", keyReason)},
	},
	{
		Name: ports.FactClaimOperation, Span: true,
		Meaning: "A claim operation: refresh, release, abandon or poison recovery.",
		Metrics: []metricDef{durationOf(ports.FactClaimOperation, keyOperation, keyResult)},
	},
	{
		Name:    ports.FactFenceLost,
		Meaning: "A vehicle lost its fence: another writer moved the run first.",
		Metrics: []metricDef{factCounter("docket.fence_losses", "{fence_loss}", "Fence losses, by stage (pre_fetch or commit).", keyStage, keyResult)},
	},
	{
		Name: ports.FactGraphCacheFetch, Span: true,
		Meaning: "One graph cache lookup.",
		Metrics: []metricDef{
			durationOf(ports.FactGraphCacheFetch, keyResult),
			factCounter("docket.graph_cache.lookups", "{lookup}", "Graph cache lookups, by result (hit, miss, incompatible, generation_invalidated).", keyResult),
		},
	},
	{
		Name: ports.FactGraphFetch, Span: true,
		Meaning: "Fetching a stored graph version.",
		Metrics: []metricDef{durationOf(ports.FactGraphFetch, keyResult)},
	},
	{
		Name: ports.FactGraphCompile, Span: true,
		Meaning: "Compiling a stored graph version.",
		Metrics: []metricDef{durationOf(ports.FactGraphCompile, keyResult)},
	},
	{
		Name: ports.FactRunCodec, Span: true,
		Meaning: "Encoding or decoding a run's private storage format.",
		Metrics: []metricDef{
			durationOf(ports.FactRunCodec, keyOperation, keyResult),
			{
				Name: "docket.run_codec.size", Kind: histogramKind, Unit: unitBytes,
				Description: "Encoded run size.",
				From:        []source{{"bytes", asIs}}, Labels: []string{keyOperation}, Buckets: bytesBuckets,
			},
		},
	},
	{
		Name: ports.FactStore, Span: true,
		Meaning: "One storage statement of an adapter.",
		Metrics: []metricDef{durationOf(ports.FactStore, keyOperation, keyResult)},
	},
	{
		Name: ports.FactStoreOperation, Span: true,
		Meaning: "One transition-level storage operation.",
		Metrics: []metricDef{durationOf(ports.FactStoreOperation, keyOperation, keyResult)},
	},
	{
		Name: ports.FactLifecycleTransition, Span: true,
		Meaning: "One lifecycle transition outside a vehicle: a start or a signal.",
		Metrics: []metricDef{durationOf(ports.FactLifecycleTransition, keyOperation, keyResult)},
	},
	{
		Name: ports.FactMoment, Span: true,
		Meaning: "One moment: plan, execute a superstep, and commit under the fence.",
		Metrics: []metricDef{durationOf(ports.FactMoment, keyResult)},
	},
	{
		Name: ports.FactNodeAttempt, Span: true,
		Meaning: "One attempt of one node task.",
		Metrics: []metricDef{durationOf(ports.FactNodeAttempt, keyResult)},
	},
	{
		Name: ports.FactVehicle, Span: true,
		Meaning: "One vehicle's life: fetch, graph, moment loop, hand-back.",
		Metrics: []metricDef{durationOf(ports.FactVehicle, keyResult)},
	},
	{
		Name: ports.FactVehicleDrain, Span: true,
		Meaning: "One drain of a claimed run until it parks or stops.",
		Metrics: []metricDef{
			{
				Name: "docket.vehicle.drain.duration", Kind: histogramKind, Unit: unitSeconds,
				Description: "Duration of one drain of a claimed run.",
				From:        []source{{"duration", nanosToSeconds}, {"duration_ms", millisToSeconds}, {"elapsed_ms", millisToSeconds}},
				Labels:      []string{keyOutcome, keyBudget, keyResult}, Buckets: secondsBuckets,
			},
			{
				Name: "docket.vehicle.drain.moments", Kind: histogramKind, Unit: "{moment}",
				Description: "Moments committed by one drain.",
				From:        []source{{"committed_moments", asIs}},
				Labels:      []string{keyOutcome, keyResult}, Buckets: countBuckets,
			},
			{
				Name: "docket.vehicle.claim_held", Kind: histogramKind, Unit: unitSeconds,
				Description: "How long the drain held its claim.",
				From:        []source{{"claim_held_ms", millisToSeconds}},
				Labels:      []string{keyOutcome, keyResult}, Buckets: secondsBuckets,
			},
		},
	},
	{
		Name:    ports.FactVehicleDiscard,
		Meaning: "A vehicle dropped a proposal (commit or read failed for a reason other than the fence).",
		Metrics: []metricDef{factCounter("docket.vehicle.discards", "{proposal}", "Proposals discarded by vehicles, by stage and reason.", keyStage, keyResult)},
	},
	{
		Name:    ports.FactVehicleCrash,
		Meaning: "A vehicle panicked or broke an invariant; its claim is left to expire.",
		Metrics: []metricDef{factCounter("docket.vehicle.crashes", "{vehicle}", "Vehicle crashes.", keyResult)},
	},
	{
		Name: ports.FactPrunerPass, Span: true,
		Meaning: "One pruner pass.",
		Metrics: []metricDef{
			durationOf(ports.FactPrunerPass, keyResult),
			prunedCounter("events_deleted", "events"),
			prunedCounter("runs_deleted", "runs"),
			prunedCounter("cascade_events_deleted", "cascade_events"),
			prunedCounter("graphs_deleted", "graphs"),
		},
	},
	{
		Name: ports.FactObserver, Span: true,
		Meaning: "One checkpoint observer call after a commit.",
		Metrics: []metricDef{durationOf(ports.FactObserver, keyCheckpointType, keyResult)},
	},
	{
		Name:    ports.FactObserverFailure,
		Meaning: "A checkpoint observer failed or panicked (the commit stands).",
		Metrics: []metricDef{factCounter("docket.checkpoint.observer.failures", "{call}", "Checkpoint observer failures.", keyCheckpointType, keyResult)},
	},
}

// aliases map other spellings a caller may use to a catalog name.
var aliases = map[string]string{
	"node.execution": ports.FactNodeAttempt,
}

// Committed facts feed two instruments of their own (Telemetry.Committed).
var (
	commitsDef = metricDef{
		Name: "docket.commits", Kind: counterKind, Unit: "{commit}",
		Description: "Durable transitions committed, by checkpoint type and disposition.",
		Labels:      []string{keyCheckpointType, keyDisposition},
	}
	retryDelayDef = metricDef{
		Name: "docket.commit.retry_delay", Kind: histogramKind, Unit: unitSeconds,
		Description: "Delay before a committed node retry runs (retry_scheduled commits).",
		Buckets:     secondsBuckets,
	}
)
