package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// The mutation tests plant one bug each in a wrapper around the memory
// adapter and show that the suite names it: at least the listed
// invariants fail. The suite runs standalone, so failures are recorded in
// the report instead of failing these tests.

// base wraps a memory store transparently; mutants embed it and override
// one method each. Its notifier relays the store's announcements and lets
// a mutant add its own.
type base struct {
	ports.Backend
	relay *relayNotifier

	mu       sync.Mutex
	tokens   map[string]ports.ClaimToken // latest lease per run
	refresh  map[string]time.Time        // claimed_at a buggy refresh "wrote"
	refToken map[string]ports.ClaimToken // the token that refresh applied to
}

func newBase(store *memory.Store) *base {
	return &base{
		Backend:  store,
		relay:    &relayNotifier{inner: store.Notifier(), subs: map[chan ports.Wake]bool{}},
		tokens:   map[string]ports.ClaimToken{},
		refresh:  map[string]time.Time{},
		refToken: map[string]ports.ClaimToken{},
	}
}

func (b *base) Notifier() ports.Notifier { return b.relay }

// ClaimDue remembers the latest token of every run (used by mutants that
// forge authority).
func (b *base) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	batch, err := b.Backend.ClaimDue(ctx, r)
	if err == nil {
		b.mu.Lock()
		for _, l := range batch.Leases {
			b.tokens[l.RunID] = l.Token
		}
		b.mu.Unlock()
	}
	return batch, err
}

// relayNotifier forwards the store's announcements and adds the mutant's.
type relayNotifier struct {
	inner ports.Notifier
	mu    sync.Mutex
	subs  map[chan ports.Wake]bool
}

func (n *relayNotifier) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	in, err := n.inner.Listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan ports.Wake, 1)
	n.mu.Lock()
	n.subs[out] = true
	n.mu.Unlock()
	go func() {
		for range in {
			n.send(out)
		}
		n.mu.Lock()
		delete(n.subs, out)
		close(out)
		n.mu.Unlock()
	}()
	return out, nil
}

func (n *relayNotifier) send(ch chan ports.Wake) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.subs[ch] {
		select {
		case ch <- ports.Wake{}:
		default:
		}
	}
}

func (n *relayNotifier) announce() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.subs {
		select {
		case ch <- ports.Wake{}:
		default:
		}
	}
}

// ---- mutants --------------------------------------------------------------

// skipsTokenCheck commits under whatever token was issued last, so any
// token (stale, foreign, none) satisfies the fence.
type skipsTokenCheck struct{ *base }

func (m skipsTokenCheck) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	if p.Moment != nil && p.Moment.Run != nil {
		m.mu.Lock()
		if tok, ok := m.tokens[p.Moment.Run.ID]; ok {
			p.ClaimToken = tok
		}
		m.mu.Unlock()
	}
	return m.base.Backend.Commit(ctx, scope, p)
}

// acceptsSeqPlusTwo renumbers a proposal that skips a sequence number.
type acceptsSeqPlusTwo struct{ *base }

func (m acceptsSeqPlusTwo) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	if p.Moment != nil && p.Moment.Run != nil {
		stored, err := m.base.Backend.FetchRun(ctx, ports.System(), p.Moment.Run.ID)
		if err == nil && p.Moment.Run.CheckpointSeq == stored.CheckpointSeq+2 {
			c := *p.Moment
			c.Run = p.Moment.Run.Clone()
			c.Run.CheckpointSeq--
			p.Moment = &c
		}
	}
	return m.base.Backend.Commit(ctx, scope, p)
}

// dropsEvents commits the run but none of its events.
type dropsEvents struct{ *base }

func (m dropsEvents) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	if p.Moment != nil {
		c := *p.Moment
		c.Events = nil
		p.Moment = &c
	}
	return m.base.Backend.Commit(ctx, scope, p)
}

// refreshMovesBackwards writes the caller's now as claimed_at (it shows
// the value such a store would hold through InspectRun).
type refreshMovesBackwards struct{ *base }

func (m refreshMovesBackwards) RefreshClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	err := m.base.Backend.RefreshClaim(ctx, runID, token, now)
	if err == nil {
		m.mu.Lock()
		m.refresh[runID] = ports.Micros(now)
		m.refToken[runID] = token
		m.mu.Unlock()
	}
	return err
}

func (m refreshMovesBackwards) InspectRun(ctx context.Context, scope ports.Scope, runID string) (*ports.RunInfo, error) {
	info, err := m.base.Backend.InspectRun(ctx, scope, runID)
	if err != nil || !info.Claimed() {
		return info, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if at, ok := m.refresh[runID]; ok && m.refToken[runID] == m.tokens[runID] {
		info.ClaimedAt = at
	}
	return info, nil
}

// refreshUsesCallerClock stamps refreshes with the caller's now instead of
// the store clock (max(claimed_at, now)), through a swappable store clock.
type refreshUsesCallerClock struct {
	*base
	clock *swapClock
}

func (m refreshUsesCallerClock) RefreshClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	m.clock.refreshing.Lock()
	defer m.clock.refreshing.Unlock()
	m.clock.set(now)
	defer m.clock.set(time.Time{})
	return m.base.Backend.RefreshClaim(ctx, runID, token, now)
}

// swapClock is the store clock of a mutant: the suite's clock, unless an
// override is set.
type swapClock struct {
	conformance.Clock
	refreshing sync.Mutex
	mu         sync.Mutex
	override   time.Time
}

func (c *swapClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.override = t
}

func (c *swapClock) Now() time.Time {
	c.mu.Lock()
	override := c.override
	c.mu.Unlock()
	if !override.IsZero() {
		return ports.Micros(override)
	}
	return c.Clock.Now()
}

// announcesFailedWrites announces a wake even when a write fails (as if
// the notification escaped the rolled-back transaction).
type announcesFailedWrites struct{ *base }

func (m announcesFailedWrites) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	r, err := m.base.Backend.Commit(ctx, scope, p)
	if err != nil {
		m.relay.announce()
	}
	return r, err
}

func (m announcesFailedWrites) InsertRun(ctx context.Context, owner ports.OwnerScope, p ports.InsertRunParams) (*run.Run, error) {
	r, err := m.base.Backend.InsertRun(ctx, owner, p)
	if err != nil {
		m.relay.announce()
	}
	return r, err
}

// announcesRelease announces the wake a release records.
type announcesRelease struct{ *base }

func (m announcesRelease) ReleaseClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	err := m.base.Backend.ReleaseClaim(ctx, runID, token, now)
	m.relay.announce()
	return err
}

// leaksToken puts the token into the errors of token-bearing calls.
type leaksToken struct{ *base }

func (m leaksToken) RefreshClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	if err := m.base.Backend.RefreshClaim(ctx, runID, token, now); err != nil {
		return fmt.Errorf("%w (token %s)", err, token.Reveal())
	}
	return nil
}

func (m leaksToken) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	r, err := m.base.Backend.Commit(ctx, scope, p)
	if err != nil {
		return nil, fmt.Errorf("commit with token %q: %w", p.ClaimToken.Reveal(), err)
	}
	return r, nil
}

// ignoresCommitScope commits in the system scope whatever scope it is given.
type ignoresCommitScope struct{ *base }

func (m ignoresCommitScope) Commit(ctx context.Context, _ ports.Scope, p ports.CommitParams) (*run.Run, error) {
	return m.base.Backend.Commit(ctx, ports.System(), p)
}

// reportsLostRaceAsSuccess hides ErrStaleFence: two writers both "win".
type reportsLostRaceAsSuccess struct{ *base }

func (m reportsLostRaceAsSuccess) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	r, err := m.base.Backend.Commit(ctx, scope, p)
	if errors.Is(err, ports.ErrStaleFence) {
		return p.Moment.Run, nil
	}
	return r, err
}

// oddIDsReachStorage passes ids no text can hold to a storage that
// rejects them with its own untyped error.
type oddIDsReachStorage struct{ *base }

func (m oddIDsReachStorage) RefreshClaim(ctx context.Context, runID string, token ports.ClaimToken, now time.Time) error {
	if !ports.TextID(runID) {
		return errors.New("invalid byte sequence for encoding UTF8")
	}
	return m.base.Backend.RefreshClaim(ctx, runID, token, now)
}

// truncatesCursors rounds a ListRuns cursor down to its microsecond, so a
// cursor inside one skips the rows stamped in it at or after its id.
type truncatesCursors struct{ *base }

func (m truncatesCursors) ListRuns(ctx context.Context, scope ports.Scope, p ports.ListRunsParams) (*ports.RunPage, error) {
	if p.Before != nil {
		before := *p.Before
		before.StartedAt = ports.Micros(before.StartedAt)
		p.Before = &before
	}
	return m.base.Backend.ListRuns(ctx, scope, p)
}

// announcesBeforeWrite announces an insertion or commit a moment before
// its write is visible (as if the notification were sent outside the
// write's transaction, ahead of its commit).
type announcesBeforeWrite struct{ *base }

// earlyBy is how long the write lags its announcement: less than the
// quiet window, so only a check reading at the announcement notices.
const earlyBy = 10 * time.Millisecond

func (m announcesBeforeWrite) InsertRun(ctx context.Context, owner ports.OwnerScope, p ports.InsertRunParams) (*run.Run, error) {
	m.relay.announce()
	time.Sleep(earlyBy)
	return m.base.Backend.InsertRun(ctx, owner, p)
}

func (m announcesBeforeWrite) Commit(ctx context.Context, scope ports.Scope, p ports.CommitParams) (*run.Run, error) {
	m.relay.announce()
	time.Sleep(earlyBy)
	return m.base.Backend.Commit(ctx, scope, p)
}

// ignoresPreference serves a demand-1 claim in the policy's plain order
// whatever class it prefers.
type ignoresPreference struct{ *base }

func (m ignoresPreference) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	if r.Preference.Valid() {
		r.Preference = claim.PreferNone
	}
	return m.base.ClaimDue(ctx, r)
}

// leasesClaimedRuns hands out again, under its current token, every run
// it leased that is still claimed, while the batch has room: a claim that
// returns a run already leased.
type leasesClaimedRuns struct{ *base }

func (m leasesClaimedRuns) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	m.mu.Lock()
	leased := maps.Clone(m.tokens)
	m.mu.Unlock()
	batch, err := m.base.ClaimDue(ctx, r)
	if err != nil {
		return batch, err
	}
	for id, tok := range leased {
		if len(batch.Leases)+len(batch.Poisoned) >= r.Limit {
			break
		}
		info, err := m.base.Backend.InspectRun(ctx, ports.System(), id)
		if err != nil || !info.Claimed() || slices.ContainsFunc(batch.Leases, func(l ports.Lease) bool { return l.RunID == id }) {
			continue
		}
		batch.Leases = append(batch.Leases, ports.Lease{RunID: id, Owner: info.Owner, GraphID: info.Run.GraphID,
			GraphHash: info.Run.GraphHash, CheckpointSeq: info.Run.CheckpointSeq, Token: tok,
			ClaimedAt: info.ClaimedAt, Attempt: info.ClaimAttempts, OrphanTTL: r.OrphanTTL, Class: claim.ClassReady})
	}
	return batch, nil
}

// listIgnoresTenant lists every run whatever the scope.
type listIgnoresTenant struct{ *base }

func (m listIgnoresTenant) ListRuns(ctx context.Context, _ ports.Scope, p ports.ListRunsParams) (*ports.RunPage, error) {
	return m.base.Backend.ListRuns(ctx, ports.System(), p)
}

// listIgnoresOpenInterrupts lists runs as if no filter on open interrupts
// were asked for.
type listIgnoresOpenInterrupts struct{ *base }

func (m listIgnoresOpenInterrupts) ListRuns(ctx context.Context, scope ports.Scope, p ports.ListRunsParams) (*ports.RunPage, error) {
	p.OpenInterrupts = false
	return m.base.Backend.ListRuns(ctx, scope, p)
}

// eventsOutOfOrder returns each event page newest first.
type eventsOutOfOrder struct{ *base }

func (m eventsOutOfOrder) ListEvents(ctx context.Context, scope ports.Scope, runID string, p ports.ListEventsParams) (*ports.EventPage, error) {
	page, err := m.base.Backend.ListEvents(ctx, scope, runID, p)
	if err == nil {
		slices.Reverse(page.Events)
	}
	return page, err
}

// abandonIgnoresSeq hands back whatever the stored seq (after a commit too).
type abandonIgnoresSeq struct{ *base }

func (m abandonIgnoresSeq) AbandonClaim(ctx context.Context, runID string, token ports.ClaimToken, p claim.AbandonParams) (ports.AbandonResult, error) {
	if stored, err := m.base.Backend.FetchRun(ctx, ports.System(), runID); err == nil {
		p.ExpectedSeq = stored.CheckpointSeq
	}
	return m.base.Backend.AbandonClaim(ctx, runID, token, p)
}

// poisonedStillClaimable recovers every run a claim poisons and claims it again.
type poisonedStillClaimable struct{ *base }

func (m poisonedStillClaimable) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	batch, err := m.base.ClaimDue(ctx, r)
	if err != nil || len(batch.Poisoned) == 0 {
		return batch, err
	}
	for _, p := range batch.Poisoned {
		_, _ = m.base.Backend.RetryPoisonedRun(ctx, ports.System(), p.RunID, r.Now)
	}
	return m.base.ClaimDue(ctx, r)
}

// prunesIdleRuns prunes by queue state instead of status: a run with
// neither wake nor claim (a poisoned one too) counts as finished. The
// runs it "deletes" beyond the store's own read as absent.
type prunesIdleRuns struct {
	*base
	gone map[string]bool
}

func (m prunesIdleRuns) PruneRuns(ctx context.Context, p ports.PruneParams) (ports.PruneRunsResult, error) {
	res, err := m.base.Backend.PruneRuns(ctx, p)
	if err != nil {
		return res, err
	}
	page, err := m.base.Backend.ListRuns(ctx, ports.System(), ports.ListRunsParams{Limit: ports.MaxPageLimit})
	if err != nil {
		return res, err
	}
	for _, sum := range page.Runs {
		info, err := m.base.Backend.InspectRun(ctx, ports.System(), sum.RunID)
		if err == nil && !m.isGone(sum.RunID) && info.Poisoned() && info.Run.UpdatedAt.Before(p.Before) && res.Runs < p.BatchSize {
			m.mu.Lock()
			m.gone[sum.RunID] = true
			m.mu.Unlock()
			res.Runs++
		}
	}
	return res, nil
}

func (m prunesIdleRuns) isGone(runID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gone[runID]
}

func (m prunesIdleRuns) FetchRun(ctx context.Context, scope ports.Scope, runID string) (*run.Run, error) {
	if m.isGone(runID) {
		return nil, ports.ErrNotFound
	}
	return m.base.Backend.FetchRun(ctx, scope, runID)
}

// ---- harness --------------------------------------------------------------

var quickFeatures = conformance.Features{
	WakeNotifications: true,
	Writers:           8,
	Rounds:            2,
	QuietWindow:       25 * time.Millisecond,
	WakeTimeout:       time.Second,
}

func mutantFactory(wrap func(b *base, clock *swapClock) ports.Backend) conformance.Factory {
	return func(t conformance.T) conformance.Adapter {
		clock := &swapClock{Clock: conformance.NewManualClock(conformance.ReferenceTime)}
		store := memory.New(memory.Options{Clock: clock})
		return conformance.Adapter{Backend: wrap(newBase(store), clock), Clock: clock}
	}
}

func TestTransparentWrapperPassesTheSuite(t *testing.T) {
	t.Parallel()
	report := conformance.RunStandalone(t.Context(), quickFeatures,
		mutantFactory(func(b *base, _ *swapClock) ports.Backend { return b }))
	if !report.Passed() {
		t.Fatalf("the unmutated wrapper must pass; report:\n%s", report)
	}
}

func TestSuiteCatchesPlantedBugs(t *testing.T) {
	t.Parallel()
	mutants := []struct {
		name     string
		wrap     func(b *base, clock *swapClock) ports.Backend
		mustFail []string
	}{
		{"commit_skips_the_token_check",
			func(b *base, _ *swapClock) ports.Backend { return skipsTokenCheck{b} },
			[]string{"FENCE-002", "FENCE-003", "CLAIM-005"}},
		{"commit_accepts_seq_plus_two",
			func(b *base, _ *swapClock) ports.Backend { return acceptsSeqPlusTwo{b} },
			[]string{"FENCE-004"}},
		{"odd_ids_reach_storage",
			func(b *base, _ *swapClock) ports.Backend { return oddIDsReachStorage{b} },
			[]string{"OPS-007"}},
		{"cursors_truncated_to_the_microsecond",
			func(b *base, _ *swapClock) ports.Backend { return truncatesCursors{b} },
			[]string{"OPS-008"}},
		{"commit_drops_the_events",
			func(b *base, _ *swapClock) ports.Backend { return dropsEvents{b} },
			[]string{"COMMIT-001", "EVENT-001", "FENCE-007"}},
		{"refresh_moves_claimed_at_backwards",
			func(b *base, _ *swapClock) ports.Backend { return refreshMovesBackwards{b} },
			[]string{"REFRESH-001"}},
		{"refresh_uses_the_caller_clock",
			func(b *base, c *swapClock) ports.Backend { return refreshUsesCallerClock{b, c} },
			[]string{"REFRESH-001"}},
		{"failed_writes_announce",
			func(b *base, _ *swapClock) ports.Backend { return announcesFailedWrites{b} },
			[]string{"WAKE-006"}},
		{"announcement_precedes_the_write",
			func(b *base, _ *swapClock) ports.Backend { return announcesBeforeWrite{b} },
			[]string{"WAKE-007"}},
		{"claim_ignores_the_preference",
			func(b *base, _ *swapClock) ports.Backend { return ignoresPreference{b} },
			[]string{"CLAIM-009"}},
		{"claim_returns_a_run_already_leased",
			func(b *base, _ *swapClock) ports.Backend { return leasesClaimedRuns{b} },
			[]string{"CLAIM-010"}},
		{"list_ignores_the_tenant",
			func(b *base, _ *swapClock) ports.Backend { return listIgnoresTenant{b} },
			[]string{"SCOPE-004"}},
		{"list_ignores_open_interrupts",
			func(b *base, _ *swapClock) ports.Backend { return listIgnoresOpenInterrupts{b} },
			[]string{"OPS-003"}},
		{"events_listed_newest_first",
			func(b *base, _ *swapClock) ports.Backend { return eventsOutOfOrder{b} },
			[]string{"EVENT-004"}},
		{"abandon_ignores_the_seq_fence",
			func(b *base, _ *swapClock) ports.Backend { return abandonIgnoresSeq{b} },
			[]string{"ABANDON-002"}},
		{"poisoned_runs_stay_claimable",
			func(b *base, _ *swapClock) ports.Backend { return poisonedStillClaimable{b} },
			[]string{"CLAIM-006"}},
		{"prune_takes_poisoned_runs",
			func(b *base, _ *swapClock) ports.Backend { return prunesIdleRuns{b, map[string]bool{}} },
			[]string{"PRUNE-002"}},
		{"release_announces",
			func(b *base, _ *swapClock) ports.Backend { return announcesRelease{b} },
			[]string{"WAKE-005"}},
		{"errors_leak_the_token",
			func(b *base, _ *swapClock) ports.Backend { return leaksToken{b} },
			[]string{"REDACT-003"}},
		{"commit_ignores_scope",
			func(b *base, _ *swapClock) ports.Backend { return ignoresCommitScope{b} },
			[]string{"FENCE-006", "SCOPE-001"}},
		{"lost_race_reported_as_success",
			func(b *base, _ *swapClock) ports.Backend { return reportsLostRaceAsSuccess{b} },
			[]string{"FENCE-001", "FENCE-007"}},
		{"lease_carries_the_inserted_run",
			func(b *base, _ *swapClock) ports.Backend {
				return &staleLeaseRun{base: b, first: map[string]*run.Run{}}
			},
			[]string{"CLAIM-015"}},
		{"listeners_never_close",
			func(b *base, _ *swapClock) ports.Backend { return notifierWith{b, neverClosing{b.relay}} },
			[]string{"WAKE-008"}},
		{"only_the_newest_listener_hears",
			func(b *base, _ *swapClock) ports.Backend { return notifierWith{b, &newestOnly{inner: b.relay}} },
			[]string{"WAKE-008"}},
	}
	for _, m := range mutants {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			report := conformance.RunStandalone(t.Context(), quickFeatures, mutantFactory(m.wrap))
			failed := report.Failed()
			for _, id := range m.mustFail {
				if !slices.Contains(failed, id) {
					t.Errorf("mutant %s: %s did not fail (failed: %v)", m.name, id, failed)
				}
			}
			t.Logf("mutant %s fails %v", m.name, failed)
		})
	}
}

// notifierWith is a backend whose notifier is n.
type notifierWith struct {
	*base
	n ports.Notifier
}

func (b notifierWith) Notifier() ports.Notifier { return b.n }

// neverClosing forwards announcements but never closes its channels: a
// dispatcher's Stop, waiting for its listener to end, would hang.
type neverClosing struct{ inner ports.Notifier }

func (n neverClosing) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	in, err := n.inner.Listen(ctx)
	if err != nil {
		return nil, err
	}
	out := make(chan ports.Wake, 1)
	go func() {
		for range in {
			select {
			case out <- ports.Wake{}:
			default:
			}
		}
	}()
	return out, nil
}

// newestOnly delivers to the newest listener alone.
type newestOnly struct {
	inner ports.Notifier
	mu    sync.Mutex
	gen   int
}

func (n *newestOnly) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	in, err := n.inner.Listen(ctx)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.gen++
	mine := n.gen
	n.mu.Unlock()
	out := make(chan ports.Wake, 1)
	go func() {
		defer close(out)
		for range in {
			n.mu.Lock()
			newest := n.gen == mine
			n.mu.Unlock()
			if newest {
				select {
				case out <- ports.Wake{}:
				default:
				}
			}
		}
	}()
	return out, nil
}

// staleLeaseRun hands every lease the run as first inserted: a holder
// starting from it would propose at a stale fence.
type staleLeaseRun struct {
	*base
	mu    sync.Mutex
	first map[string]*run.Run
}

func (m *staleLeaseRun) InsertRun(ctx context.Context, owner ports.OwnerScope, p ports.InsertRunParams) (*run.Run, error) {
	r, err := m.base.InsertRun(ctx, owner, p)
	if err == nil {
		m.mu.Lock()
		m.first[r.ID] = r.Clone()
		m.mu.Unlock()
	}
	return r, err
}

func (m *staleLeaseRun) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	batch, err := m.base.ClaimDue(ctx, r)
	if err == nil {
		m.mu.Lock()
		for i := range batch.Leases {
			if first, ok := m.first[batch.Leases[i].RunID]; ok {
				batch.Leases[i].Run = first.Clone()
			}
		}
		m.mu.Unlock()
	}
	return batch, err
}
