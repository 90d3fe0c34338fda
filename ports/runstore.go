package ports

import (
	"context"
	"fmt"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
)

// RunStore is the durable run queue: run reads, the lifecycle writes
// (insert, fenced commit, serialized mutation) and every claim-side
// operation. The run row is the queue entry; ready, scheduled, claimed,
// expired and poisoned are derived from its operational state.
//
// A claim is the current authority to commit, not proof of a single
// executor: only the freshly stored token can refresh, release, abandon or
// satisfy the commit fence, and a steal replaces it.
//
// Operational state (claim, wake, counters, poison) and the committed
// document have separate clocks: claim operations, poisoning and poison
// recovery never change the document, its checkpoint_seq or UpdatedAt.
//
// Claim-side operations (ClaimDue, RefreshClaim, ReleaseClaim,
// AbandonClaim) run in the system scope implicitly: they are reachable only
// from the trusted dispatcher and vehicle paths, never from the facade.
type RunStore interface {
	// InsertRun stores one initialized running run under its owner scope
	// with an explicit first wake. The graph version (owner, GraphID,
	// GraphHash) must exist in the owner scope, else ErrNotFound (checked
	// first); a run id that exists in any scope is ErrConflict. The
	// moment must be the run_initialized moment (status running,
	// CheckpointSeq >= 1, valid durable shape, valid events), else
	// ErrInvalidCommit. The run, its
	// schedule and its events are written atomically; a wake at or before
	// the store clock is announced after the write is visible. A WakeAt at
	// or before the run's UpdatedAt (the starter's now) is an immediate
	// start and is stored as the earlier of it and the store clock (see
	// ImmediateWake).
	InsertRun(ctx context.Context, owner OwnerScope, p InsertRunParams) (*run.Run, error)

	// FetchRun returns the last committed run, or ErrNotFound.
	FetchRun(ctx context.Context, scope Scope, runID string) (*run.Run, error)

	// InspectRun returns the committed run plus token-free operational
	// state, or ErrNotFound.
	InspectRun(ctx context.Context, scope Scope, runID string) (*RunInfo, error)

	// ListRuns returns run summaries newest first by (StartedAt, RunID),
	// filtered by scope and p. Pagination is stable: the cursor is the
	// immutable key of the last row returned.
	ListRuns(ctx context.Context, scope Scope, p ListRunsParams) (*RunPage, error)

	// ClaimDue executes one admission under the store's claim policy
	// (see claim.Policy): it leases or poisons at most r.Limit due rows
	// (ready: unclaimed with wake_at <= now; expired: claimed_at <
	// cutoff), skipping rows a concurrent writer holds. The store sets
	// r.StoreNow to its own clock, so now is the later of r.Now and the
	// store clock and cutoff the earlier of the two minus r.OrphanTTL
	// (claim.Request.DueBy and ExpiryCutoff): a caller whose clock is
	// ahead never steals a claim the store clock says is alive, and one
	// whose clock is behind still sees what the store clock finds due. A
	// lease gets a fresh token, claimed_at = now, no wake and attempts+1;
	// a row whose attempts reached r.MaxClaimAttempts is poisoned instead
	// (reason claim.ReasonMaxClaimAttempts, poisoned_at = now). Invalid
	// requests wrap ErrInvalidArgument. Announces nothing.
	ClaimDue(ctx context.Context, r claim.Request) (*ClaimBatch, error)

	// RefreshClaim stamps the claim as alive when token is still the
	// stored token; expiry is deliberately not checked (a token keeps
	// authority past its TTL until a steal replaces it). claimed_at never
	// moves backwards: it becomes max(claimed_at, store clock); now is
	// validated but not written. A stale, foreign or malformed token, or
	// a missing run, is ErrClaimLost and changes nothing.
	RefreshClaim(ctx context.Context, runID string, token ClaimToken, now time.Time) error

	// ReleaseClaim idempotently hands back the claim held by token and
	// records an immediate wake: the earlier of now and the store clock
	// (see ImmediateWake). checkpoint_seq, claim_attempts
	// (the attempt is not refunded), claim_abandons and the document are
	// unchanged. A stale, foreign or malformed token, or a missing run,
	// changes nothing and still succeeds. Announces nothing.
	ReleaseClaim(ctx context.Context, runID string, token ClaimToken, now time.Time) error

	// AbandonClaim hands back a claim before execution: it matches only
	// when token is current and checkpoint_seq = p.ExpectedSeq, then applies
	// claim.Abandon (refund the attempt, count the abandon, reschedule or
	// poison with claim.ReasonMaxClaimAbandons). No match is AbandonStale,
	// not an error. Invalid params wrap ErrInvalidArgument. Announces
	// nothing; never changes the document.
	AbandonClaim(ctx context.Context, runID string, token ClaimToken, p claim.AbandonParams) (AbandonResult, error)

	// Commit writes a moment under the claim fence, atomically: the run,
	// its schedule and its events all commit or nothing does. The fence is
	// scope + stored token = p.ClaimToken + stored checkpoint_seq =
	// p.Moment.ExpectedSeq() + the immutable binding (GraphID, GraphHash,
	// StartedAt). Exactly one of several concurrent commits at one fence
	// wins.
	//
	// Outcomes, checked in this order: a malformed proposal (see
	// ErrInvalidCommit) before any lookup; ErrNotFound (absent or out of
	// scope); ErrInvalidCommit when the binding changed or the proposed
	// seq is ahead of stored+1; ErrStaleFence when the token or sequence
	// moved; ErrEventConflict (EventConflictError) when a stored event at
	// a proposed seq differs. The schedule comes from the moment's
	// disposition (see ScheduleOf): continue retains the claim (claimed_at
	// = store clock, no wake); immediate, at, external and terminal
	// release it with a wake of store clock, At, none and none. Success
	// resets attempts and abandons, clears poison and returns the stored
	// run. An immediate wake, or an at-wake at or before the store clock,
	// is announced after the write is visible.
	Commit(ctx context.Context, scope Scope, p CommitParams) (*run.Run, error)

	// MutateRun serializes one unclaimed (signal or admin) commit: it locks
	// the run (admission skips it meanwhile; other writers wait), calls
	// mutation with a private copy of the current run, and commits the
	// returned moment. A nil moment means "unchanged" and returns the
	// current run. The moment is fenced on checkpoint_seq (a moment built
	// from an older run is ErrStaleFence) and validated like Commit's,
	// except that continue is committed as an immediate release. The
	// commit revokes any current claim, clears poison and resets both
	// counters. An error from mutation is returned unchanged and writes
	// nothing. mutation must be pure; it runs while the run is locked, so
	// a store write to the same run from inside it would wait forever.
	MutateRun(ctx context.Context, scope Scope, runID string, mutation Mutation) (*run.Run, error)

	// RetryPoisonedRun clears poison from a non-terminal run and records
	// an immediate wake (the earlier of now and the store clock, see
	// ImmediateWake), resetting both counters, and announces a
	// wake. ErrNotFound when absent or out of scope; ErrInactiveRun when
	// terminal (checked first). A healthy run is returned unchanged with
	// no announcement. The document never changes.
	RetryPoisonedRun(ctx context.Context, scope Scope, runID string, now time.Time) (*run.Run, error)
}

// ImmediateWake is the rule every store applies to a wake a caller meant
// as immediate (a release, a poison recovery, a run started due at its
// starter's now): it records the earlier of the caller's now and the
// store clock. Engines' clocks disagree and claims are due by the store
// clock too (see claim.Request.StoreNow), so a caller whose clock is ahead
// does not hold such a run back from every other engine by its lead,
// while one whose clock is behind makes it due at once, as it meant.
func ImmediateWake(callerNow, storeNow time.Time) time.Time {
	callerNow, storeNow = Micros(callerNow), Micros(storeNow)
	if storeNow.Before(callerNow) {
		return storeNow
	}
	return callerNow
}

// Mutation computes the next moment of a run from its current committed
// value, or nil to leave it unchanged. It may run more than once and must
// not have side effects.
type Mutation func(current *run.Run) (*run.Moment, error)

// InsertRunParams is the input of RunStore.InsertRun.
type InsertRunParams struct {
	// Moment is the run_initialized moment (run.Propose with a nil
	// committed run).
	Moment *run.Moment
	// WakeAt is the run's first wake (required).
	WakeAt time.Time
}

// CommitParams is the input of RunStore.Commit.
type CommitParams struct {
	// Moment is the proposed transition; its ExpectedSeq is the fence.
	Moment *run.Moment
	// ClaimToken is the lease's token.
	ClaimToken ClaimToken
	// Then are moments that follow Moment at once, each proposed on the
	// run of the one before it, committed atomically with Moment as one
	// transition (FuseChain): the store ends at the last moment's run,
	// schedule and checkpoint type, with every moment's events, under
	// Moment's fence. A holder fuses the moments that run no node (the
	// completion after a run's last step) so that they cost no commit of
	// their own.
	Then []*run.Moment
	// NoResult says the caller keeps the proposed run itself (the last
	// moment's run is what a success stores): a successful Commit then
	// returns a nil run, and the store need not copy the document for it.
	NoResult bool
}

// RunInfo is the committed run plus its operational state. It never
// carries the claim token. Zero times mean "not set".
type RunInfo struct {
	Run                  *run.Run
	Owner                OwnerScope
	LatestCheckpointType run.CheckpointType
	WakeAt               time.Time
	ClaimedAt            time.Time // set iff claimed
	ClaimAttempts        int
	ClaimAbandons        int
	PoisonedAt           time.Time // set iff poisoned, with PoisonReason
	PoisonReason         string
}

// Claimed reports whether the run currently has a claim.
func (i *RunInfo) Claimed() bool { return !i.ClaimedAt.IsZero() }

// NeverClaimed reports whether the run waits for its first claim: it is
// running, still at its initialization checkpoint, and no worker has ever
// claimed it. A run that stays so while workers poll has no worker that
// claims it (none on its schema, or one whose claim policy refuses it).
func (i *RunInfo) NeverClaimed() bool {
	return i.Run != nil && i.Run.Status == run.StatusRunning &&
		i.LatestCheckpointType == run.CheckpointRunInitialized && i.ClaimAttempts == 0 && !i.Claimed()
}

// Poisoned reports whether the run is poisoned.
func (i *RunInfo) Poisoned() bool { return !i.PoisonedAt.IsZero() }

// RunSummary is the lightweight list form of a run (no state, no token).
type RunSummary struct {
	RunID         string
	Owner         OwnerScope
	GraphID       string
	GraphHash     string
	Status        run.Status
	Step          int
	CheckpointSeq int64
	StartedAt     time.Time
	UpdatedAt     time.Time
	FinishedAt    time.Time
}

// RunCursor is the exclusive pagination key of ListRuns.
type RunCursor struct {
	StartedAt time.Time
	RunID     string
}

// Limits of list pages.
const (
	DefaultRunPageLimit   = 100
	DefaultEventPageLimit = 250
	MaxPageLimit          = 1000
)

// ListRunsParams filters and pages ListRuns. Limit must be in
// 1..MaxPageLimit. Empty filters mean "any"; Statuses must hold known
// durable statuses.
type ListRunsParams struct {
	Limit     int
	Before    *RunCursor // exclusive: (started_at, run_id) < cursor
	GraphID   string
	GraphHash string
	Statuses  []run.Status
	// OpenInterrupts keeps only the runs whose committed document holds
	// at least one open interrupt, however many newer runs hold none (the
	// filter comes before Limit). A cancelled run keeps the interrupts it
	// never had answered: with Statuses running and waiting it selects
	// the runs whose interrupts can be answered. It reads the documents
	// of the runs the other filters leave: an inspection filter, not a
	// hot path.
	OpenInterrupts bool
}

// Validate reports the first malformed field as an *InvalidArgumentError:
// a limit out of range, an unknown status, or an incomplete cursor or one
// whose RunID is not TextID.
func (p ListRunsParams) Validate() error {
	if p.Limit < 1 || p.Limit > MaxPageLimit {
		return invalidLimit()
	}
	for _, st := range p.Statuses {
		if !KnownStatus(st) {
			return &InvalidArgumentError{Field: "Statuses", Reason: fmt.Sprintf("%q is not a durable status", st)}
		}
	}
	if p.Before != nil && (p.Before.StartedAt.IsZero() || p.Before.RunID == "") {
		return &InvalidArgumentError{Field: "Before", Reason: "needs StartedAt and RunID"}
	}
	if p.Before != nil && !TextID(p.Before.RunID) {
		// No page returns such a key, and stores could not compare it alike.
		return &InvalidArgumentError{Field: "Before", Reason: "RunID is not a text id"}
	}
	return nil
}

// RunPage is one page of ListRuns. NextBefore is the key of the last
// returned row; an empty page echoes the cursor it was given. HasMore
// reports that at least one more row exists past NextBefore.
type RunPage struct {
	Runs       []RunSummary
	NextBefore *RunCursor
	HasMore    bool
}

// ClaimBatch is the outcome of ClaimDue: len(Leases)+len(Poisoned) <=
// Request.Limit, and no run appears twice.
type ClaimBatch struct {
	Leases   []Lease
	Poisoned []PoisonOutcome
	// Candidate class sizes seen by the policy (telemetry).
	ReadyCandidates   int
	ExpiredCandidates int
}

// Lease is one acquired claim. It carries the token in memory only.
type Lease struct {
	RunID         string
	Owner         OwnerScope
	GraphID       string
	GraphHash     string
	CheckpointSeq int64
	Token         ClaimToken
	ClaimedAt     time.Time
	Attempt       int           // post-increment claim_attempts, >= 1
	OrphanTTL     time.Duration // echo of the request
	Class         claim.Class   // expired means this lease is a steal
	// Run is the committed run at CheckpointSeq as the claim read it, when
	// the store reads it in the same operation (nil otherwise: the holder
	// fetches it). It is the holder's own copy, so the holder can skip
	// one read per claim.
	Run *run.Run
}

// PoisonOutcome is a run poisoned by admission.
type PoisonOutcome struct {
	RunID        string
	Owner        OwnerScope // the run's scope, so a callback can act on it
	PoisonedAt   time.Time
	PoisonReason string
	Class        claim.Class
}

// AbandonResult is the disposition of AbandonClaim. Every value is
// success-shaped: the caller stops without committing in all three cases.
type AbandonResult string

// Abandon results.
const (
	AbandonRescheduled AbandonResult = "rescheduled"
	AbandonPoisoned    AbandonResult = "poisoned"
	AbandonStale       AbandonResult = "stale"
)
