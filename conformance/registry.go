package conformance

import "slices"

// Area groups invariants by the part of the contract they cover.
type Area string

// Areas, in the order the suite runs them.
const (
	AreaInit    Area = "INIT"
	AreaCommit  Area = "COMMIT"
	AreaFence   Area = "FENCE"
	AreaEvent   Area = "EVENT"
	AreaSignal  Area = "SIGNAL"
	AreaClaim   Area = "CLAIM"
	AreaFair    Area = "FAIR"
	AreaRefresh Area = "REFRESH"
	AreaRelease Area = "RELEASE"
	AreaAbandon Area = "ABANDON"
	AreaPoison  Area = "POISON"
	AreaScope   Area = "SCOPE"
	AreaGraph   Area = "GRAPH"
	AreaWake    Area = "WAKE"
	AreaRedact  Area = "REDACT"
	AreaPrune   Area = "PRUNE"
	AreaOps     Area = "OPS"
	AreaSchema  Area = "SCHEMA"
)

// Areas lists every area in suite order.
func Areas() []Area {
	return []Area{AreaInit, AreaCommit, AreaFence, AreaEvent, AreaSignal, AreaClaim, AreaFair,
		AreaRefresh, AreaRelease, AreaAbandon, AreaPoison, AreaScope, AreaGraph, AreaWake,
		AreaRedact, AreaPrune, AreaOps, AreaSchema}
}

// Invariant is one black-box guarantee the suite checks. IDs are stable:
// an ID is never reused for a different guarantee.
type Invariant struct {
	ID        string // e.g. "FENCE-003"
	Area      Area
	Behaviour string // subtest name, e.g. "stale_token_cannot_commit"
	Summary   string // one line, what users rely on
	// Spec lists the §20 conformance invariants (postgres-backend.md)
	// the check covers, if any.
	Spec []int
	// Source names other sections and seed contracts it comes from.
	Source string
	// Requires is the feature that must be enabled, or "" for a core
	// invariant; Excludes is a feature under which it does not apply.
	Requires Feature
	Excludes Feature

	check func(h *harness)
}

// Invariants lists every invariant in suite order.
func Invariants() []Invariant { return slices.Clone(registry) }

func invariantsOf(area Area) []Invariant {
	var out []Invariant
	for _, inv := range registry {
		if inv.Area == area {
			out = append(out, inv)
		}
	}
	return out
}

// registry is the suite. Order within an area is by ID.
var registry = []Invariant{
	// INIT: run insertion.
	{ID: "INIT-001", Area: AreaInit, Behaviour: "insert_then_fetch_and_inspect", Spec: []int{1},
		Summary: "an inserted run reads back unchanged with its first wake, no claim, zero counters, no poison and its events",
		Source:  "seed run store: insert_run, fetch_run, inspect_run", check: checkInsertThenRead},
	{ID: "INIT-002", Area: AreaInit, Behaviour: "duplicate_run_id_conflicts", Spec: []int{2},
		Summary: "inserting an existing run id (same or different content) is ErrConflict and leaves the original untouched",
		Source:  "seed run store: insert_run", check: checkDuplicateInsert},
	{ID: "INIT-003", Area: AreaInit, Behaviour: "missing_graph_is_not_found", Spec: []int{3},
		Summary: "inserting a run whose graph version is not published in the owner scope is ErrNotFound and stores nothing",
		Source:  "seed run store: the graph version must already exist", check: checkInsertMissingGraph},
	{ID: "INIT-004", Area: AreaInit, Behaviour: "only_initialized_shapes_insert", Spec: []int{4},
		Summary: "a non-running status, seq 0, missing updated_at, a non-run_initialized checkpoint or a missing wake is rejected and stores nothing",
		Source:  "seed run store: initialization is the only insert shape", check: checkInsertShapes},
	{ID: "INIT-005", Area: AreaInit, Behaviour: "initial_events_are_validated", Spec: []int{5},
		Summary: "foreign or malformed initial events are ErrInvalidCommit, two different events at one seq ErrEventConflict, identical duplicates store once",
		Source:  "spec §5.1", check: checkInsertEvents},
	{ID: "INIT-006", Area: AreaInit, Behaviour: "first_wake_gates_admission", Spec: []int{6},
		Summary: "a run inserted with a due wake is claimable now; a future wake is claimable only from that wake on",
		Source:  "spec §5.2", check: checkInsertWake},
	{ID: "INIT-007", Area: AreaInit, Behaviour: "graph_lookup_precedes_run_id_conflict", Spec: nil,
		Summary: "an insertion whose graph version is not published in the owner scope is ErrNotFound even when its run id is taken, and the stored run stays",
		Source:  "spec §5.1 (the order of checks is normative), §5.2 step 1", check: checkInsertGraphBeforeConflict},
	{ID: "INIT-008", Area: AreaInit, Behaviour: "one_winner_among_concurrent_inserts", Spec: nil,
		Summary: "of concurrent inserts of one run id exactly one stores its run and events; every other is ErrConflict",
		Source:  "seed run store: insert_run inserts one initialized run; spec §5.1", check: checkConcurrentInserts},

	// COMMIT: claimed commits.
	{ID: "COMMIT-001", Area: AreaCommit, Behaviour: "fenced_advance_retains_claim", Spec: []int{7},
		Summary: "a continue moment committed under the current token advances the run and keeps the claim stamped at the store clock",
		Source:  "seed run store: commit", check: checkFencedAdvance},
	{ID: "COMMIT-002", Area: AreaCommit, Behaviour: "schedule_must_fit_status", Spec: []int{14},
		Summary: "external with running, terminal with running, continue or immediate with waiting are ErrInvalidCommit and write nothing",
		Source:  "spec §2.4", check: checkSchedulePairing},
	{ID: "COMMIT-003", Area: AreaCommit, Behaviour: "schedule_sets_claim_and_wake", Spec: []int{15},
		Summary: "retain keeps the claim; immediate, at, external and terminal release it with wake store-now, At, none and none",
		Source:  "spec §2.4, §4", check: checkScheduleEffects},
	{ID: "COMMIT-004", Area: AreaCommit, Behaviour: "commit_resets_claim_health", Spec: []int{16},
		Summary: "any successful commit resets claim attempts and abandons to zero and clears poison",
		Source:  "spec §4", check: checkCommitResetsHealth},
	{ID: "COMMIT-005", Area: AreaCommit, Behaviour: "fused_chain_commits_atomically", Spec: nil,
		Summary: "a continue moment and the moments that follow it commit as one transition under the first's fence; a broken chain writes nothing, a replay is stale",
		Source:  "ports.CommitParams.Then", check: checkFusedChain},
	{ID: "COMMIT-006", Area: AreaCommit, Behaviour: "no_result_commit_stores_the_proposal", Spec: nil,
		Summary: "a commit with NoResult returns no run on success and stores exactly the proposed run and its events; its failures are reported as without it",
		Source:  "ports.CommitParams.NoResult", check: checkNoResultCommit},

	// FENCE: the commit fence.
	{ID: "FENCE-001", Area: AreaFence, Behaviour: "replayed_commit_is_stale", Spec: []int{8},
		Summary: "repeating a successful commit verbatim is ErrStaleFence",
		Source:  "seed guarantees: one winning durable transition", check: checkReplayIsStale},
	{ID: "FENCE-002", Area: AreaFence, Behaviour: "foreign_token_cannot_commit", Spec: []int{9},
		Summary: "a commit with a well-formed foreign token (or none) is ErrStaleFence and persists nothing, events included",
		Source:  "seed run store: commit", check: checkForeignToken},
	{ID: "FENCE-003", Area: AreaFence, Behaviour: "stale_token_cannot_commit", Spec: []int{33},
		Summary: "after a steal the old token's commit is ErrStaleFence while the new token commits",
		Source:  "seed run store: only the freshly stored token can satisfy the commit fence", check: checkStaleTokenCommit},
	{ID: "FENCE-004", Area: AreaFence, Behaviour: "commit_requires_stored_seq_plus_one", Spec: []int{10},
		Summary: "a proposal two ahead of the stored seq is ErrInvalidCommit (never success, also for unknown runs); one behind is stale",
		Source:  "seed guarantees: the proposed run must advance checkpoint_seq by exactly one", check: checkSequenceSkip},
	{ID: "FENCE-005", Area: AreaFence, Behaviour: "immutable_binding_is_enforced", Spec: []int{11},
		Summary: "a commit changing graph id, graph hash or started_at is ErrInvalidCommit, even with a wrong token, and writes nothing",
		Source:  "spec §5.3", check: checkImmutableBinding},
	{ID: "FENCE-006", Area: AreaFence, Behaviour: "out_of_scope_commit_is_not_found", Spec: []int{12},
		Summary: "a commit under another tenant or for an unknown run is ErrNotFound",
		Source:  "spec §5.3", check: checkCommitScope},
	{ID: "FENCE-007", Area: AreaFence, Behaviour: "one_winner_among_concurrent_commits", Spec: []int{13},
		Summary: "of many concurrent commits at one fence exactly one succeeds, the rest are ErrStaleFence, and the stored run and events are the winner's",
		Source:  "seed guarantees: atomic, single durable winner", check: checkConcurrentCommits},
	{ID: "FENCE-008", Area: AreaFence, Behaviour: "only_the_stored_spelling_is_the_token", Spec: nil,
		Summary: "another spelling of the stored token (upper case) neither refreshes nor releases the claim",
		Source:  "seed run store: only the freshly stored token can refresh, release, abandon, or satisfy the commit fence", check: checkTokenSpelling},
	{ID: "FENCE-009", Area: AreaFence, Behaviour: "commit_races_steal_to_one_winner", Spec: nil,
		Summary: "a holder's commit racing a steal of its expired claim: exactly one wins; a commit that loses is ErrStaleFence and writes nothing, a steal that loses leases nothing",
		Source:  "seed guarantees: a stale vehicle cannot commit after another claimant changes the token", check: checkCommitVersusSteal},

	// EVENT: retained events.
	{ID: "EVENT-001", Area: AreaEvent, Behaviour: "identical_event_is_idempotent", Spec: []int{18},
		Summary: "re-appending an identical stored event with new ones succeeds and leaves the stored event unchanged, its insertion time (what retention goes by) included",
		Source:  "seed guarantees: idempotent by {run_id, seq}", check: checkIdenticalEvent},
	{ID: "EVENT-002", Area: AreaEvent, Behaviour: "conflicting_event_rolls_back_commit", Spec: []int{19},
		Summary: "a commit carrying different content (payload, type, node or timestamp) at a stored seq is ErrEventConflict; the run seq is unchanged and its new events absent",
		Source:  "seed guarantees: run update and event append all commit or all roll back", check: checkConflictingEvent},
	{ID: "EVENT-003", Area: AreaEvent, Behaviour: "lost_fence_persists_no_event", Spec: []int{20},
		Summary: "a commit that loses its fence persists none of its events",
		Source:  "seed guarantees: atomic run transition and retained events", check: checkLostFenceEvents},
	{ID: "EVENT-004", Area: AreaEvent, Behaviour: "pages_walk_retained_events", Spec: []int{21},
		Summary: "event pages with gaps report next cursor, has_more, retained bounds and the committed latest seq",
		Source:  "spec §7", check: checkEventPages},
	{ID: "EVENT-005", Area: AreaEvent, Behaviour: "pruned_history_keeps_latest_seq", Spec: []int{22},
		Summary: "a visible run with no retained events has no latest event, an empty page with nil bounds and its committed latest seq",
		Source:  "spec §7", check: checkPrunedHistory},
	{ID: "EVENT-006", Area: AreaEvent, Behaviour: "event_reads_validate_input", Spec: nil,
		Summary: "absent events and unknown runs are ErrNotFound; seq 0, negative after_seq and out-of-range limits are ErrInvalidArgument",
		Source:  "spec §7, ports.EventStore", check: checkEventReadInput},
	{ID: "EVENT-007", Area: AreaEvent, Behaviour: "no_event_follows_the_largest_seq", Spec: nil,
		Summary: "a page after the largest seq an int64 holds is empty, echoes the cursor and has no more",
		Source:  "ports.ListEventsParams: AfterSeq >= 0", check: checkEventPageAtTheLastSeq},
	{ID: "EVENT-008", Area: AreaEvent, Behaviour: "non_portable_payload_is_invalid_commit", Spec: nil,
		Summary: "a commit whose event payload is not a portable value (a Go int, a NaN, text that is not UTF-8, a reserved key) is ErrInvalidCommit and changes nothing",
		Source:  "spec §8: events carry portable payloads; ports.RunStore.Commit", check: checkNonPortablePayload},
	{ID: "EVENT-009", Area: AreaEvent, Behaviour: "event_ids_no_text_can_hold_are_invalid_commit", Spec: nil,
		Summary: "a commit whose event names a node, channel or task by an id no text column can hold (a NUL byte, bytes that are not UTF-8) is ErrInvalidCommit and changes nothing",
		Source:  "ports.TextID; ports.RunStore.Commit", check: checkEventIDsNoTextCanHold},

	// SIGNAL: serialized (unclaimed) mutations.
	{ID: "SIGNAL-001", Area: AreaSignal, Behaviour: "compare_and_set_once", Spec: []int{23},
		Summary: "a mutation moment commits once; the same moment again is ErrStaleFence",
		Source:  "seed run store: mutate_run", check: checkSignalCASOnce},
	{ID: "SIGNAL-002", Area: AreaSignal, Behaviour: "signal_revokes_claim", Spec: []int{24},
		Summary: "a committed mutation revokes the current claim: refresh is ErrClaimLost, commit ErrStaleFence, and the run gets a wake",
		Source:  "spec §5.4", check: checkSignalRevokesClaim},
	{ID: "SIGNAL-003", Area: AreaSignal, Behaviour: "one_winner_among_concurrent_signals", Spec: []int{25},
		Summary: "of many concurrent mutations fenced on one seq exactly one succeeds, the rest are ErrStaleFence",
		Source:  "spec §5.4", check: checkConcurrentSignals},
	{ID: "SIGNAL-004", Area: AreaSignal, Behaviour: "signal_clears_poison", Spec: []int{26},
		Summary: "a mutation committed on a poisoned run clears poison and counters (cancel: terminal, no wake)",
		Source:  "spec §5.4, §6.11", check: checkSignalClearsPoison},
	{ID: "SIGNAL-005", Area: AreaSignal, Behaviour: "invalid_signals_change_nothing", Spec: []int{27},
		Summary: "rebound graph, wrong tenant, conflicting event, another run's moment, failing or nil mutation change nothing; continue commits as an immediate release",
		Source:  "seed run store: mutate_run; ports.RunStore.MutateRun", check: checkSignalValidation},
	{ID: "SIGNAL-006", Area: AreaSignal, Behaviour: "claims_skip_a_run_under_mutation", Spec: []int{28},
		Summary: "while a mutation holds a run, ClaimDue returns promptly without it; afterwards the run is claimable",
		Source:  "spec §5.4", check: checkSignalVersusClaim},
	{ID: "SIGNAL-007", Area: AreaSignal, Behaviour: "cancel_of_a_claimed_run_fences_its_holder", Spec: nil,
		Summary: "after a claimed run is cancelled, its holder's refresh, abandon, release and commit change nothing, and nothing claims it",
		Source:  "spec §5.4, §6.7–6.9", check: checkCancelFencesHolder},

	// CLAIM: admission.
	{ID: "CLAIM-001", Area: AreaClaim, Behaviour: "nothing_due_yields_empty_batch", Spec: []int{29},
		Summary: "with no eligible run ClaimDue returns an empty batch",
		Source:  "seed run store: claim_due", check: checkClaimEmpty},
	{ID: "CLAIM-002", Area: AreaClaim, Behaviour: "lease_has_documented_shape", Spec: []int{30},
		Summary: "a lease carries a fresh token, claimed_at = now, attempt 1, the stored seq, the owner, the graph, the TTL echo and, if any, a private copy of the committed run",
		Source:  "spec §6.2", check: checkLeaseShape},
	{ID: "CLAIM-003", Area: AreaClaim, Behaviour: "ready_boundary_is_inclusive", Spec: []int{31},
		Summary: "a wake exactly at now is due; one microsecond later is not",
		Source:  "spec §6.4", check: checkReadyBoundary},
	{ID: "CLAIM-004", Area: AreaClaim, Behaviour: "expiry_boundary_is_strict", Spec: []int{32},
		Summary: "a claim exactly TTL old is not stealable; a moment later it is stolen with a new token and attempt 2",
		Source:  "spec §6.4", check: checkExpiryBoundary},
	{ID: "CLAIM-005", Area: AreaClaim, Behaviour: "steal_preserves_document", Spec: []int{33},
		Summary: "a steal changes only authority: the document is unchanged and the old token can neither refresh, release nor commit",
		Source:  "seed run store: an expired holder can overlap a new holder after a steal", check: checkStealPreservesDocument},
	{ID: "CLAIM-006", Area: AreaClaim, Behaviour: "attempt_ceiling_poisons", Spec: []int{34},
		Summary: "with max N, N claims lease (attempts 1..N) and the next selection poisons with max_claim_attempts_exceeded, naming the run's owner, clearing claim and wake (a released run's too); poisoned runs are never claimed",
		Source:  "spec §6.4, §6.11", check: checkAttemptCeiling},
	{ID: "CLAIM-007", Area: AreaClaim, Behaviour: "outcomes_bounded_by_limit", Spec: []int{35},
		Summary: "leases plus poison outcomes never exceed the limit, and a poison outcome consumes a slot",
		Source:  "spec §6.2", check: checkLimitBound},
	{ID: "CLAIM-008", Area: AreaClaim, Behaviour: "each_class_gets_a_slot", Spec: []int{36},
		Summary: "with limit >= 2 and both classes non-empty, each class gets at least one outcome whatever the age skew",
		Source:  "spec §6.4", check: checkClassReservation},
	{ID: "CLAIM-009", Area: AreaClaim, Behaviour: "demand_one_honours_preference", Spec: []int{37},
		Summary: "at limit 1 the preferred class is served first and an empty preferred class falls through",
		Source:  "spec §6.4", check: checkPreference},
	{ID: "CLAIM-010", Area: AreaClaim, Behaviour: "concurrent_claimers_are_disjoint", Spec: []int{38},
		Summary: "concurrent claimers draining a backlog lease every run exactly once with distinct tokens",
		Source:  "spec §6.2", check: checkDisjointClaims},
	{ID: "CLAIM-011", Area: AreaClaim, Behaviour: "invalid_request_is_rejected", Spec: []int{39},
		Summary: "zero now, limit 0, negative TTL, max 0 or an unknown preference is ErrInvalidArgument and mutates nothing",
		Source:  "spec §6.2", check: checkInvalidClaimRequest},
	{ID: "CLAIM-012", Area: AreaClaim, Behaviour: "closed_gate_admits_nothing", Spec: []int{40},
		Summary: "a closed admission gate is ClaimPolicyUnavailableError with its reason and mutates nothing",
		Source:  "spec §6.3", Requires: FeatureAdmissionGate, check: checkAdmissionGate},
	{ID: "CLAIM-013", Area: AreaClaim, Behaviour: "claims_never_touch_the_document", Spec: []int{17},
		Summary: "leases, steals and claim-time poisoning leave the committed run, its seq and updated_at unchanged",
		Source:  "seed run store: claims never rewrite updated_at", check: checkClaimKeepsDocument},
	{ID: "CLAIM-014", Area: AreaClaim, Behaviour: "legacy_ready_order_is_oldest_first", Spec: nil,
		Summary: "the FIFO policy admits ready runs by wake time, ties by insertion order",
		Source:  "spec §6.5", Excludes: FeatureTenantFairPolicy, check: checkLegacyOrder},
	{ID: "CLAIM-015", Area: AreaClaim, Behaviour: "lease_run_is_the_committed_run", Spec: nil,
		Summary: "a lease's run, when it carries one, is the run as last committed (at the lease's seq), after commits and after a steal",
		Source:  "ports.Lease.Run: the holder starts from it without a read", check: checkLeaseRunIsCommitted},
	{ID: "CLAIM-016", Area: AreaClaim, Behaviour: "store_clock_bounds_skewed_callers", Spec: nil,
		Summary: "a caller whose clock is ahead cannot steal a claim before the store clock expires it; one whose clock is behind still leases a run due by the store clock, stamped no earlier than the store clock; a poisoning is stamped like a lease, by the later clock",
		Source:  "claim.Request.StoreNow: engines' clocks disagree, the store's is the one they share", check: checkSkewedCallerClocks},
	{ID: "CLAIM-017", Area: AreaClaim, Behaviour: "immediate_wakes_are_never_after_the_store_clock", Spec: nil,
		Summary: "a release, a poison recovery and a start due at its starter's now by a caller whose clock is ahead wake at the store clock, not the caller's now; a deliberately later first wake is kept",
		Source:  "ports.ImmediateWake", check: checkImmediateWakesOfAFastCaller},
	{ID: "CLAIM-018", Area: AreaClaim, Behaviour: "held_runs_never_shorten_a_claim", Spec: nil,
		Summary: "runs a concurrent writer holds are skipped and free due runs take their place: a claim leases as many as its limit and the free due runs allow, even when every run a tenant-fair claim would page first is held",
		Source:  "ports.RunStore.ClaimDue: skipping rows a concurrent writer holds", check: checkHeldRunsNeverShortenAClaim},

	// FAIR: tenant-fair admission (optional policy).
	{ID: "FAIR-001", Area: AreaFair, Behaviour: "breadth_first_across_scopes", Spec: nil,
		Summary: "each due scope's head is admitted before any scope's second run",
		Source:  "spec §6.6", Requires: FeatureTenantFairPolicy, check: checkFairBreadthFirst},
	{ID: "FAIR-002", Area: AreaFair, Behaviour: "admitted_runs_come_first", Spec: nil,
		Summary: "within a scope an admitted run beats an older queued run",
		Source:  "spec §6.6", Requires: FeatureTenantFairPolicy, check: checkFairSticky},
	{ID: "FAIR-003", Area: AreaFair, Behaviour: "idle_scopes_never_take_demand", Spec: nil,
		Summary: "scopes with only future work never absorb a demand-1 claim while a run is due elsewhere",
		Source:  "spec §6.6", Requires: FeatureTenantFairPolicy, check: checkFairIdleScopes},
	{ID: "FAIR-004", Area: AreaFair, Behaviour: "admission_follows_each_transition", Spec: nil,
		Summary: "a claimed at-wake commit, an unclaimed immediate mutation, an abandon and a poisoning with its recovery give up the scope's admission; a claimed immediate commit keeps it, after retained commits too",
		Source:  "spec §4, §6.6", Requires: FeatureTenantFairPolicy, check: checkAdmissionTransitions},
	{ID: "FAIR-005", Area: AreaFair, Behaviour: "held_runs_keep_admitted_runs_first", Spec: nil,
		Summary: "when the admitted runs a scope's page holds are all held, a claim leases the scope's free admitted run, not an older queued one",
		Source:  "spec §6.6; ports.RunStore.ClaimDue: skipping rows a concurrent writer holds", Requires: FeatureTenantFairPolicy, check: checkFairHeldKeepsAdmittedFirst},

	// REFRESH.
	{ID: "REFRESH-001", Area: AreaRefresh, Behaviour: "claimed_at_never_moves_backwards", Spec: []int{41},
		Summary: "refresh sets claimed_at to max(claimed_at, store clock): never backwards, never the caller's now",
		Source:  "seed run store: refresh_claim", check: checkRefreshMonotone},
	{ID: "REFRESH-002", Area: AreaRefresh, Behaviour: "refresh_ignores_expiry", Spec: []int{41},
		Summary: "an expired but unstolen token still refreshes",
		Source:  "seed run store: expiry is deliberately absent from the predicate", check: checkRefreshIgnoresExpiry},
	{ID: "REFRESH-003", Area: AreaRefresh, Behaviour: "stale_token_loses_claim", Spec: []int{33},
		Summary: "a stolen, released, foreign, zero or malformed token, or an unknown run, is ErrClaimLost and changes nothing",
		Source:  "seed run store: refresh_claim", check: checkRefreshStale},

	// RELEASE.
	{ID: "RELEASE-001", Area: AreaRelease, Behaviour: "release_records_immediate_wake", Spec: []int{42},
		Summary: "release clears the claim, sets wake to now and keeps seq, attempts, abandons and the document; a zero now is ErrInvalidArgument and changes nothing",
		Source:  "seed run store: release_claim", check: checkRelease},
	{ID: "RELEASE-002", Area: AreaRelease, Behaviour: "release_is_idempotent", Spec: []int{42},
		Summary: "a second release succeeds and changes nothing",
		Source:  "seed run store: idempotently releases", check: checkReleaseIdempotent},
	{ID: "RELEASE-003", Area: AreaRelease, Behaviour: "stale_release_changes_nothing", Spec: []int{33},
		Summary: "release with a stolen, foreign, zero or malformed token, or for an unknown run, succeeds and disturbs nothing",
		Source:  "seed run store: a missing or stale token changes nothing", check: checkReleaseStale},
	{ID: "RELEASE-004", Area: AreaRelease, Behaviour: "release_keeps_the_attempt", Spec: nil,
		Summary: "a released attempt still counts: the next claim is attempt 2 and max_claim_attempts still poisons",
		Source:  "spec §6.8", check: checkReleaseKeepsAttempt},
	{ID: "RELEASE-005", Area: AreaRelease, Behaviour: "release_racing_a_steal_never_frees_the_new_claim", Spec: nil,
		Summary: "a holder's release racing a steal of its expired claim never frees the claim of a claimer that leased the run (stolen, or ready at the release's wake)",
		Source:  "seed run store: only the freshly stored token can refresh, release, abandon, or satisfy the commit fence", check: checkReleaseVersusSteal},
	{ID: "RELEASE-006", Area: AreaRelease, Behaviour: "release_ignores_expiry", Spec: nil,
		Summary: "an expired but unstolen token still releases: the claim is cleared with a wake at now and the next claim leases the run as a ready run",
		Source:  "seed run store: a token remains valid after its TTL until another claimant replaces it; spec §6.8", check: checkReleaseIgnoresExpiry},

	// ABANDON.
	{ID: "ABANDON-001", Area: AreaAbandon, Behaviour: "hand_back_refunds_the_attempt", Spec: []int{43},
		Summary: "abandon reverses the attempt (never below zero, after a retained commit too), counts the abandon and schedules retry_at without touching the document",
		Source:  "seed run store: abandon_claim", check: checkAbandon},
	{ID: "ABANDON-002", Area: AreaAbandon, Behaviour: "stale_abandon_changes_nothing", Spec: []int{44},
		Summary: "abandon after a steal, after a commit, for an unknown run or with a malformed token is AbandonStale and changes nothing",
		Source:  "seed run store: a stale token or an advanced checkpoint sequence matches nothing", check: checkAbandonStale},
	{ID: "ABANDON-003", Area: AreaAbandon, Behaviour: "poisons_at_the_limit", Spec: []int{45},
		Summary: "with max N, N abandons reschedule and the next poisons with max_claim_abandons_exceeded, no wake, abandons N",
		Source:  "seed run store: abandon_claim", check: checkAbandonPoison},
	{ID: "ABANDON-004", Area: AreaAbandon, Behaviour: "non_poisoning_backoff_grows_to_cap", Spec: []int{46},
		Summary: "non-poisoning abandons never poison and wake at now+base·2^abandons capped (100, 200, 300, 300 ms)",
		Source:  "seed run store: with :backoff the wake grows exponentially up to the cap", check: checkAbandonBackoff},
	{ID: "ABANDON-005", Area: AreaAbandon, Behaviour: "invalid_policy_is_rejected", Spec: []int{47},
		Summary: "retry_at before now, max 0 or beyond 32 bits, negative seq or a bad backoff is ErrInvalidArgument and changes nothing",
		Source:  "spec §6.9", check: checkAbandonInput},
	{ID: "ABANDON-006", Area: AreaAbandon, Behaviour: "abandon_races_steal_to_one_effect", Spec: []int{48},
		Summary: "an abandon racing a steal has exactly one effect",
		Source:  "spec §6.9", check: checkAbandonVersusSteal},
	{ID: "ABANDON-007", Area: AreaAbandon, Behaviour: "abandon_ignores_expiry", Spec: nil,
		Summary: "an expired but unstolen token still abandons: the run is rescheduled at retry_at with the attempt refunded",
		Source:  "seed run store: a token remains valid after its TTL until another claimant replaces it; spec §6.9", check: checkAbandonIgnoresExpiry},

	// POISON.
	{ID: "POISON-001", Area: AreaPoison, Behaviour: "recovery_clears_poison", Spec: []int{49},
		Summary: "retrying a poisoned run clears poison (its reason too) and counters and wakes it at now, document unchanged; a zero now is ErrInvalidArgument and changes nothing",
		Source:  "seed run store: retry_poisoned_run", check: checkPoisonRecovery},
	{ID: "POISON-002", Area: AreaPoison, Behaviour: "recovery_is_idempotent_and_guarded", Spec: []int{50},
		Summary: "retrying a healthy run changes nothing; another scope is ErrNotFound; a terminal run is ErrInactiveRun",
		Source:  "seed run store: retry_poisoned_run", check: checkPoisonRecoveryGuards},
	{ID: "POISON-003", Area: AreaPoison, Behaviour: "poisoning_revokes_the_claim", Spec: nil,
		Summary: "once a claim-time poisoning or an abandon at the limit poisons a run, its holder's token refreshes, commits, abandons and releases nothing",
		Source:  "seed run store: only the freshly stored token can refresh, release, abandon, or satisfy the commit fence; spec §4", check: checkPoisonRevokesTheClaim},

	// SCOPE.
	{ID: "SCOPE-001", Area: AreaScope, Behaviour: "runs_and_events_are_isolated", Spec: []int{51},
		Summary: "a tenant's run is visible to that tenant and system only; reads, events, commits and signals elsewhere are ErrNotFound",
		Source:  "seed run store: explicit SQL-enforced scope", check: checkRunIsolation},
	{ID: "SCOPE-002", Area: AreaScope, Behaviour: "run_ids_are_unique_across_scopes", Spec: []int{2},
		Summary: "a run id taken in one scope is ErrConflict in every other scope",
		Source:  "spec §2.1", check: checkRunIDsGlobal},
	{ID: "SCOPE-003", Area: AreaScope, Behaviour: "graphs_are_isolated", Spec: []int{52},
		Summary: "graph versions are visible to their owner only, and system is rejected by graph operations",
		Source:  "spec §8", check: checkGraphIsolation},
	{ID: "SCOPE-004", Area: AreaScope, Behaviour: "list_is_scoped_newest_first", Spec: []int{53},
		Summary: "ListRuns returns in-scope runs newest first by (started_at, run_id), whatever their updated_at; the cursor walks every row once; system sees all",
		Source:  "seed run store: list_runs", check: checkListRuns},
	{ID: "SCOPE-005", Area: AreaScope, Behaviour: "invalid_scope_is_rejected", Spec: nil,
		Summary: "the zero Scope is ErrInvalidScope on every scoped call, and system cannot own runs",
		Source:  "spec §2.1", check: checkInvalidScope},

	// GRAPH.
	{ID: "GRAPH-001", Area: AreaGraph, Behaviour: "resave_is_idempotent", Spec: []int{54},
		Summary: "re-saving a version succeeds and keeps its publication time and the version order",
		Source:  "spec §8", check: checkGraphResave},
	{ID: "GRAPH-002", Area: AreaGraph, Behaviour: "hash_must_address_content", Spec: []int{54},
		Summary: "a hash that is not the document's is ErrInvalidGraphHash and stores nothing; a fetched version hashes to its ref",
		Source:  "spec §8", check: checkGraphHash},
	{ID: "GRAPH-003", Area: AreaGraph, Behaviour: "latest_is_first_version", Spec: []int{54},
		Summary: "versions list newest first with a walking cursor; latest is the first listed; unknown ids are empty or ErrNotFound",
		Source:  "spec §8", check: checkGraphVersions},

	// WAKE: announcements.
	{ID: "WAKE-001", Area: AreaWake, Behaviour: "due_insert_announces", Spec: []int{55},
		Summary: "inserting a run due at or before the store clock announces; a future first wake does not",
		Source:  "seed run store: run insertion announces a wake due at or before the clock", Requires: FeatureWakeNotifications, check: checkWakeInsert},
	{ID: "WAKE-002", Area: AreaWake, Behaviour: "immediate_commits_announce", Spec: []int{55},
		Summary: "claimed and unclaimed immediate commits announce",
		Source:  "seed run store: moment commit and signal mutation announce", Requires: FeatureWakeNotifications, check: checkWakeImmediate},
	{ID: "WAKE-003", Area: AreaWake, Behaviour: "only_due_at_wakes_announce", Spec: []int{55},
		Summary: "an at-wake at or before the store clock announces; a future one does not",
		Source:  "spec §9", Requires: FeatureWakeNotifications, check: checkWakeAt},
	{ID: "WAKE-004", Area: AreaWake, Behaviour: "recovery_announces_once", Spec: []int{55},
		Summary: "recovering a poisoned run announces; retrying a healthy run does not",
		Source:  "seed run store: poison recovery announces", Requires: FeatureWakeNotifications, check: checkWakeRecovery},
	{ID: "WAKE-005", Area: AreaWake, Behaviour: "silent_writes_never_announce", Spec: []int{55},
		Summary: "claims, refresh, release, abandon, poisoning, retained, external and terminal commits, graph saves and pruning announce nothing",
		Source:  "seed run store: release and abandonment record their wakes without a notification", Requires: FeatureWakeNotifications, check: checkWakeSilent},
	{ID: "WAKE-006", Area: AreaWake, Behaviour: "failed_writes_announce_nothing", Spec: []int{55},
		Summary: "stale, invalid, conflicting, duplicate and failed writes that would have announced announce nothing",
		Source:  "seed run store: dropped on rollback", Requires: FeatureWakeNotifications, check: checkWakeFailed},
	{ID: "WAKE-007", Area: AreaWake, Behaviour: "announcement_follows_commit", Spec: []int{55},
		Summary: "when an announcement arrives the write that caused it is already visible",
		Source:  "seed run store: exposed only after that transaction commits", Requires: FeatureWakeNotifications, check: checkWakeAfterCommit},
	{ID: "WAKE-008", Area: AreaWake, Behaviour: "every_listener_hears_and_closes_with_its_context", Spec: nil,
		Summary: "two listeners both hear one announcement, and each listener's channel closes once its context ends",
		Source:  "ports.Notifier: the channel closes when ctx is done (a dispatcher's Stop waits for it)", Requires: FeatureWakeNotifications, check: checkWakeListeners},

	// REDACT: claim tokens.
	{ID: "REDACT-001", Area: AreaRedact, Behaviour: "token_absent_from_inspection", Spec: nil,
		Summary: "no rendering of FetchRun, InspectRun or RunInfo contains the claim token",
		Source:  "seed run store: claim tokens are redacted from inspection; spec §18", check: checkTokenNotInInspection},
	{ID: "REDACT-002", Area: AreaRedact, Behaviour: "token_absent_from_summaries", Spec: nil,
		Summary: "no rendering of ListRuns pages or summaries contains the claim token",
		Source:  "spec §18", check: checkTokenNotInSummaries},
	{ID: "REDACT-003", Area: AreaRedact, Behaviour: "token_absent_from_errors", Spec: nil,
		Summary: "no error of a token-bearing call, formatted with %v, %+v or %#v, contains a claim token",
		Source:  "design: claim tokens never appear in errors", check: checkTokenNotInErrors},
	{ID: "REDACT-004", Area: AreaRedact, Behaviour: "leases_render_redacted", Spec: nil,
		Summary: "formatting a lease or claim batch (any verb, JSON) never reveals the token",
		Source:  "spec §18", check: checkLeaseRendering},

	// PRUNE: retention.
	{ID: "PRUNE-001", Area: AreaPrune, Behaviour: "event_prune_is_strict_and_bounded", Spec: nil,
		Summary: "PruneEvents deletes at most BatchSize events inserted strictly before the cutoff, oldest first; the run keeps its latest seq",
		Source:  "spec §13, ports.EventStore", check: checkPruneEvents},
	{ID: "PRUNE-002", Area: AreaPrune, Behaviour: "run_prune_takes_only_old_terminal_runs", Spec: nil,
		Summary: "PruneRuns deletes terminal runs updated strictly before the cutoff with their events, never running (poisoned included) or waiting ones",
		Source:  "spec §13, ports.EventStore", check: checkPruneRuns},
	{ID: "PRUNE-003", Area: AreaPrune, Behaviour: "sub_microsecond_cutoff_stays_strict", Spec: nil,
		Summary: "a cutoff inside a microsecond still prunes the rows stamped strictly before it",
		Source:  "ports.PruneParams: Before is a strict cutoff", check: checkPruneCutoffInsideMicrosecond},
	{ID: "PRUNE-004", Area: AreaPrune, Behaviour: "graph_prune_keeps_the_newest_and_referenced_versions", Spec: nil,
		Summary: "PruneGraphVersions deletes, oldest first and a batch at a time, versions beyond the newest Keep of their owner's graph that no run of that owner references",
		Source:  "spec §13 step 5, ports.GraphStore", check: checkPruneGraphVersions},
	{ID: "PRUNE-005", Area: AreaPrune, Behaviour: "counts_beyond_32_bits_are_invalid", Spec: nil,
		Summary: "a batch size or keep count beyond 32 bits is ErrInvalidArgument and prunes nothing",
		Source:  "ports.PruneParams, ports.PruneGraphsParams", check: checkPruneCountsBeyond32Bits},
	{ID: "PRUNE-006", Area: AreaPrune, Behaviour: "event_retention_follows_insertion_by_the_store_clock", Spec: nil,
		Summary: "PruneEvents goes by when the store clock inserted an event, not by the event's timestamp: events proposed by a clock behind the store outlive a cutoff they predate, events proposed by a clock ahead do not",
		Source:  "seed delivery guarantees: retained events during their configured retention period; spec §13", check: checkPruneEventsByInsertion},

	// OPS: operational state.
	{ID: "OPS-001", Area: AreaOps, Behaviour: "operational_writes_never_touch_the_document", Spec: []int{17},
		Summary: "claim, refresh, release, steal, abandon, poisoning and recovery never change the document, its seq, type or updated_at",
		Source:  "seed run store: updated_at belongs to the last committed run document", check: checkOperationalWrites},
	{ID: "OPS-002", Area: AreaOps, Behaviour: "times_are_utc_microseconds", Spec: nil,
		Summary: "every stored or returned time is UTC truncated to the microsecond, whatever the caller passed",
		Source:  "spec §2.5", check: checkTimePrecision},
	{ID: "OPS-003", Area: AreaOps, Behaviour: "list_filters_and_limits", Spec: nil,
		Summary: "ListRuns filters by graph id, graph hash, statuses and open interrupts; bad limits or statuses are ErrInvalidArgument",
		Source:  "spec §6.1", check: checkListFilters},
	{ID: "OPS-004", Area: AreaOps, Behaviour: "unknown_run_is_not_found", Spec: nil,
		Summary: "every scoped call on an unknown run is ErrNotFound",
		Source:  "spec §6.1", check: checkUnknownRun},
	{ID: "OPS-005", Area: AreaOps, Behaviour: "capabilities_match_features", Spec: nil,
		Summary: "the backend's capability probe agrees with the declared Features",
		Source:  "ports.Backend", check: checkCapabilities},
	{ID: "OPS-006", Area: AreaOps, Behaviour: "returned_values_are_private", Spec: nil,
		Summary: "mutating a value passed to or returned by the store never changes what is stored",
		Source:  "ports: functions never mutate their inputs", check: checkNoAliasing},
	{ID: "OPS-007", Area: AreaOps, Behaviour: "ids_no_text_can_hold_name_nothing", Spec: nil,
		Summary: "run, graph and hash ids that are not UTF-8 text without NUL name no row: reads are ErrNotFound or empty, claim calls lost or stale, a cursor holding one ErrInvalidArgument, a graph with such an id ErrInvalidGraph",
		Source:  "ports.TextID", check: checkIDsNoTextCanHold},
	{ID: "OPS-008", Area: AreaOps, Behaviour: "sub_microsecond_cursors_stay_exclusive", Spec: nil,
		Summary: "a ListRuns or ListGraphVersions cursor inside a microsecond lists every row stamped in that microsecond, whatever its id",
		Source:  "ports.RunCursor, ports.GraphCursor: exclusive keys", check: checkSubMicrosecondCursors},
	{ID: "OPS-009", Area: AreaOps, Behaviour: "ids_beyond_the_byte_limit_name_nothing", Spec: nil,
		Summary: "tenant, run, graph and hash ids of ports.MaxIDBytes bytes are stored, claimed and read back together; one byte more names no row: reads are ErrNotFound or empty, claim calls lost or stale, a cursor ErrInvalidArgument, a tenant an invalid scope, a graph ErrInvalidGraph, a run ErrInvalidCommit",
		Source:  "ports.MaxIDBytes, ports.TextID", check: checkIDsBeyondTheByteLimit},

	// SCHEMA: PostgreSQL schema guards.
	{ID: "SCHEMA-001", Area: AreaSchema, Behaviour: "queue_shape_is_enforced_by_storage", Spec: []int{56},
		Summary: "direct writes leaving a run with both or neither of wake and claim, a waiting wake or a poisoned claim are rejected",
		Source:  "spec §3.2 (PostgreSQL-only)", Requires: FeatureSchemaGuards, check: checkQueueShapeGuards},
	{ID: "SCHEMA-002", Area: AreaSchema, Behaviour: "unfinished_accounting_is_exact", Spec: []int{57},
		Summary: "the claim schedule counts unfinished runs per scope exactly and rejects direct tampering",
		Source:  "spec §3.6 (PostgreSQL-only)", Requires: FeatureSchemaGuards, check: checkUnfinishedAccounting},
}
