package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// ReferenceTime is the suite's t0. Checks express every time relative to
// it and set the store clock explicitly (starting each check at t0), so
// results never depend on the wall clock.
var ReferenceTime = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

var t0 = ReferenceTime

// Default claim parameters of the spec's claim(t) notation (§20).
const (
	defaultTTL         = time.Second
	defaultMaxAttempts = 5
)

// harness is one invariant's view of one fresh adapter.
type harness struct {
	T
	ctx      context.Context
	inv      Invariant
	features Features
	b        ports.Backend
	clock    Clock
	adapter  Adapter
	factory  Factory

	suffix  string
	counter atomic.Int64

	fixturesOnce sync.Once
	fixtures     *fixtureGraphs
}

func newHarness(t T, inv Invariant, features Features, factory Factory, adapter Adapter) *harness {
	var raw [3]byte
	_, _ = rand.Read(raw[:])
	adapter.Clock.Set(t0)
	return &harness{
		T:        t,
		ctx:      t.Context(),
		inv:      inv,
		features: features,
		b:        adapter.Backend,
		clock:    adapter.Clock,
		adapter:  adapter,
		factory:  factory,
		suffix:   hex.EncodeToString(raw[:]),
	}
}

// fresh returns a harness on a second, independent adapter from the
// factory, for checks that need a clean queue.
func (h *harness) fresh() *harness {
	h.Helper()
	a := h.factory(h.T)
	if a.Backend == nil || a.Clock == nil {
		h.Fatalf("conformance: the factory returned an Adapter without Backend or Clock")
	}
	return newHarness(h.T, h.inv, h.features, h.factory, a)
}

// id returns a fresh identifier: unique per invariant run, so suites may
// share a database and run twice in a row.
func (h *harness) id(label string) string {
	n := h.counter.Add(1)
	return fmt.Sprintf("%s-%s-%s-%d", strings.ToLower(h.inv.ID), label, h.suffix, n)
}

// at returns t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// ---- assertions -----------------------------------------------------------

// must stops the check when err is not nil.
func (h *harness) must(err error, format string, args ...any) {
	h.Helper()
	if err != nil {
		h.Fatalf("%s: unexpected error: %v", fmt.Sprintf(format, args...), err)
	}
}

// errIs reports a failure unless errors.Is(err, target).
func (h *harness) errIs(err, target error, format string, args ...any) bool {
	h.Helper()
	if !errors.Is(err, target) {
		h.Errorf("%s: got error %v, want %v", fmt.Sprintf(format, args...), describeErr(err), target)
		return false
	}
	return true
}

// errIsAny reports a failure unless err matches one of targets.
func (h *harness) errIsAny(err error, targets []error, format string, args ...any) bool {
	h.Helper()
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	h.Errorf("%s: got error %v, want one of %v", fmt.Sprintf(format, args...), describeErr(err), targets)
	return false
}

func describeErr(err error) string {
	if err == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q (%T)", err.Error(), err)
}

// expect reports a failure when ok is false.
func (h *harness) expect(ok bool, format string, args ...any) bool {
	h.Helper()
	if !ok {
		h.Errorf(format, args...)
	}
	return ok
}

// eq reports a failure when got != want.
func eq[V comparable](h *harness, got, want V, format string, args ...any) bool {
	h.Helper()
	if got != want {
		h.Errorf("%s: got %v, want %v", fmt.Sprintf(format, args...), got, want)
		return false
	}
	return true
}

// eqTime compares instants (and reports zero times readably).
func (h *harness) eqTime(got, want time.Time, format string, args ...any) bool {
	h.Helper()
	if !got.Equal(want) {
		h.Errorf("%s: got %s, want %s", fmt.Sprintf(format, args...), fmtTime(got), fmtTime(want))
		return false
	}
	return true
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "<none>"
	}
	return t.Format(time.RFC3339Nano)
}

// encodeRun renders a run canonically so two documents compare by content.
func encodeRun(r *run.Run) string {
	if r == nil {
		return "<nil run>"
	}
	b, err := run.Encode(r)
	if err != nil {
		return fmt.Sprintf("<unencodable run: %v> %#v", err, r)
	}
	return string(b)
}

// sameRun reports a failure unless got and want are the same document.
func (h *harness) sameRun(got, want *run.Run, format string, args ...any) bool {
	h.Helper()
	g, w := encodeRun(got), encodeRun(want)
	if g != w {
		h.Errorf("%s: run documents differ\n got: %s\nwant: %s", fmt.Sprintf(format, args...), clip(g), clip(w))
		return false
	}
	return true
}

func clip(s string) string {
	const max = 1500
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}

// sameInfo reports a failure unless two inspections are identical.
func (h *harness) sameInfo(got, want *ports.RunInfo, format string, args ...any) bool {
	h.Helper()
	what := fmt.Sprintf(format, args...)
	if got == nil || want == nil {
		h.Errorf("%s: nil RunInfo", what)
		return false
	}
	ok := h.sameRun(got.Run, want.Run, "%s: document", what)
	gs, ws := infoOps(got), infoOps(want)
	if gs != ws {
		h.Errorf("%s: operational state changed\n got: %s\nwant: %s", what, gs, ws)
		ok = false
	}
	return ok
}

// infoOps renders the operational part of a RunInfo.
func infoOps(i *ports.RunInfo) string {
	return fmt.Sprintf("owner=%s type=%s wake=%s claimed=%s attempts=%d abandons=%d poisoned=%s reason=%q",
		i.Owner, i.LatestCheckpointType, fmtTime(i.WakeAt), fmtTime(i.ClaimedAt),
		i.ClaimAttempts, i.ClaimAbandons, fmtTime(i.PoisonedAt), i.PoisonReason)
}

// ---- store shortcuts ------------------------------------------------------

func (h *harness) fetch(scope ports.Scope, runID string) *run.Run {
	h.Helper()
	r, err := h.b.FetchRun(h.ctx, scope, runID)
	h.must(err, "FetchRun(%s, %s)", scope, runID)
	return r
}

func (h *harness) inspect(runID string) *ports.RunInfo {
	h.Helper()
	info, err := h.b.InspectRun(h.ctx, ports.System(), runID)
	h.must(err, "InspectRun(system, %s)", runID)
	if info == nil || info.Run == nil {
		h.Fatalf("InspectRun(system, %s) returned no run", runID)
	}
	return info
}

// unchanged reports a failure unless the run's inspection equals before.
func (h *harness) unchanged(before *ports.RunInfo, format string, args ...any) bool {
	h.Helper()
	return h.sameInfo(h.inspect(before.Run.ID), before, format, args...)
}

// request is the spec's claim(t): limit 1, TTL 1s, five attempts.
func request(now time.Time) claim.Request {
	return claim.Request{Now: now, Limit: 1, OrphanTTL: defaultTTL, MaxClaimAttempts: defaultMaxAttempts}
}

// claimDue claims as a caller whose clock agrees with the store's: the
// store clock reads r.Now during the claim, since a store bounds every
// admission by its own clock (see claim.Request.StoreNow), and is then
// set back. The CLOCK checks skew the two on purpose and call ClaimDue
// themselves.
func (h *harness) claimDue(r claim.Request) *ports.ClaimBatch {
	h.Helper()
	defer h.clock.Set(h.clock.Now())
	h.clock.Set(r.Now)
	batch, err := h.b.ClaimDue(h.ctx, r)
	h.must(err, "ClaimDue(now=%s, limit=%d)", fmtTime(r.Now), r.Limit)
	if batch == nil {
		h.Fatalf("ClaimDue returned a nil batch")
	}
	return batch
}

// claimOne claims at now with the default policy and requires exactly the
// run runID to be leased.
func (h *harness) claimOne(now time.Time, runID string) ports.Lease {
	h.Helper()
	return h.claimOneWith(request(now), runID)
}

func (h *harness) claimOneWith(r claim.Request, runID string) ports.Lease {
	h.Helper()
	batch := h.claimDue(r)
	if len(batch.Leases) != 1 || len(batch.Poisoned) != 0 || batch.Leases[0].RunID != runID {
		h.Fatalf("ClaimDue(now=%s): want exactly one lease of %s, got %s", fmtTime(r.Now), runID, describeBatch(batch))
	}
	return batch.Leases[0]
}

// claimNothing requires an empty batch.
func (h *harness) claimNothing(r claim.Request, format string, args ...any) bool {
	h.Helper()
	batch := h.claimDue(r)
	if len(batch.Leases)+len(batch.Poisoned) != 0 {
		h.Errorf("%s: want an empty batch, got %s", fmt.Sprintf(format, args...), describeBatch(batch))
		return false
	}
	return true
}

func describeBatch(b *ports.ClaimBatch) string {
	var parts []string
	for _, l := range b.Leases {
		parts = append(parts, fmt.Sprintf("lease(%s attempt=%d class=%s)", l.RunID, l.Attempt, l.Class))
	}
	for _, p := range b.Poisoned {
		parts = append(parts, fmt.Sprintf("poisoned(%s %s)", p.RunID, p.PoisonReason))
	}
	if len(parts) == 0 {
		return "[]"
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func (h *harness) commit(scope ports.Scope, m *run.Moment, token ports.ClaimToken) (*run.Run, error) {
	return h.b.Commit(h.ctx, scope, ports.CommitParams{Moment: m, ClaimToken: token})
}

func (h *harness) mustCommit(scope ports.Scope, m *run.Moment, token ports.ClaimToken) *run.Run {
	h.Helper()
	r, err := h.commit(scope, m, token)
	h.must(err, "Commit(%s, seq %d)", m.Run.ID, m.Run.CheckpointSeq)
	return r
}

// mutate commits m as a serialized (unclaimed) mutation.
func (h *harness) mutate(scope ports.Scope, runID string, m *run.Moment) (*run.Run, error) {
	return h.b.MutateRun(h.ctx, scope, runID, func(*run.Run) (*run.Moment, error) { return m, nil })
}

func (h *harness) refresh(runID string, token ports.ClaimToken, now time.Time) error {
	return h.b.RefreshClaim(h.ctx, runID, token, now)
}

func (h *harness) release(runID string, token ports.ClaimToken, now time.Time) {
	h.Helper()
	h.must(h.b.ReleaseClaim(h.ctx, runID, token, now), "ReleaseClaim(%s)", runID)
}

// abandonParams is a poisoning hand-back fenced on seq at now with
// retry_at = now+30s and three permitted abandons.
func abandonParams(seq int64, now time.Time) claim.AbandonParams {
	return claim.AbandonParams{ExpectedSeq: seq, Now: now, RetryAt: now.Add(30 * time.Second), MaxClaimAbandons: 3}
}

func (h *harness) abandon(runID string, token ports.ClaimToken, p claim.AbandonParams) ports.AbandonResult {
	h.Helper()
	res, err := h.b.AbandonClaim(h.ctx, runID, token, p)
	h.must(err, "AbandonClaim(%s)", runID)
	return res
}

// poison drives runID into claim-time poisoning at now: it claims with
// max 1 (attempt 1), releases, and claims again (poison outcome).
func (h *harness) poison(runID string, now time.Time) {
	h.Helper()
	r := readyOnly(now)
	r.MaxClaimAttempts = 1
	lease := h.claimOneWith(r, runID)
	h.release(runID, lease.Token, now)
	batch := h.claimDue(r)
	if len(batch.Leases) != 0 || len(batch.Poisoned) != 1 || batch.Poisoned[0].RunID != runID {
		h.Fatalf("poisoning %s: want one poison outcome, got %s", runID, describeBatch(batch))
	}
}

// ---- races ---------------------------------------------------------------

// together runs every fn in its own goroutine, releasing them at one
// instant to maximise overlap, and returns when all have finished.
func together(fns ...func()) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn()
		}()
	}
	close(start)
	wg.Wait()
}

// leaseOf returns batch's lease of run runID, or nil.
func leaseOf(batch *ports.ClaimBatch, runID string) *ports.Lease {
	for i := range batch.Leases {
		if batch.Leases[i].RunID == runID {
			return &batch.Leases[i]
		}
	}
	return nil
}

// oneWinner races one write per moment, all fenced at the same point of
// run runID, and checks the fence admits exactly one: every other write is
// lost (ErrStaleFence for commits, ErrConflict for inserts) and the stored
// run and events are the winner's. noun names a writer and fence the
// shared fence in failure messages.
func (h *harness) oneWinner(round int, noun, fence, runID string, lost error, moments []*run.Moment, write func(*run.Moment) error) {
	h.Helper()
	errs := make([]error, len(moments))
	writes := make([]func(), len(moments))
	for i, m := range moments {
		writes[i] = func() { errs[i] = write(m) }
	}
	together(writes...)

	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner < 0:
			winner = i
		case err == nil:
			h.Errorf("round %d: %ss %d and %d both committed at %s", round, noun, winner, i, fence)
		default:
			h.errIs(err, lost, "round %d: losing %s %d", round, noun, i)
		}
	}
	if winner < 0 {
		h.Errorf("round %d: no %s committed", round, noun)
		return
	}
	h.sameRun(h.fetch(ports.System(), runID), moments[winner].Run, "round %d: stored run is the winner's", round)
	h.eventsStored(moments[winner], "round %d: stored events are the winner's", round)
}

// ---- token redaction ------------------------------------------------------

// renderings returns every way a value commonly reaches a log or an error.
func renderings(v any) []string {
	out := []string{fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), fmt.Sprintf("%s", v)}
	if b, err := json.Marshal(v); err == nil {
		out = append(out, string(b))
	}
	if err, ok := v.(error); ok && err != nil {
		out = append(out, err.Error())
		for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
			out = append(out, e.Error(), fmt.Sprintf("%+v", e))
		}
	}
	return out
}

// noToken reports a failure when any rendering of v contains a raw token.
func (h *harness) noToken(v any, tokens []ports.ClaimToken, format string, args ...any) bool {
	h.Helper()
	for _, tok := range tokens {
		raw := tok.Reveal()
		if raw == "" {
			continue
		}
		for _, s := range renderings(v) {
			if strings.Contains(s, raw) {
				h.Errorf("%s: a claim token appears in %q", fmt.Sprintf(format, args...), clip(s))
				return false
			}
		}
		// A reflective walk catches tokens kept in unexported fields that
		// no verb prints but a debugger or %#v of a parent might.
		if containsString(reflect.ValueOf(v), raw, 0) {
			h.Errorf("%s: a claim token is held in the value (%T)", fmt.Sprintf(format, args...), v)
			return false
		}
	}
	return true
}

// containsString walks v looking for a string field equal to or containing
// raw, skipping ports.ClaimToken values (which are the token by design).
func containsString(v reflect.Value, raw string, depth int) bool {
	if depth > 12 || !v.IsValid() {
		return false
	}
	if v.Type() == reflect.TypeOf(ports.ClaimToken{}) {
		return false
	}
	switch v.Kind() {
	case reflect.String:
		return strings.Contains(v.String(), raw)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return false
		}
		return containsString(v.Elem(), raw, depth+1)
	case reflect.Struct:
		for i := range v.NumField() {
			if containsString(v.Field(i), raw, depth+1) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return bytes.Contains(bytesOf(v), []byte(raw))
		}
		for i := range v.Len() {
			if containsString(v.Index(i), raw, depth+1) {
				return true
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if containsString(iter.Key(), raw, depth+1) || containsString(iter.Value(), raw, depth+1) {
				return true
			}
		}
	}
	return false
}

func bytesOf(v reflect.Value) []byte {
	out := make([]byte, v.Len())
	for i := range out {
		out[i] = byte(v.Index(i).Uint())
	}
	return out
}

// readyOnly is claim(now) with a TTL so long that no claim expires: only
// due unclaimed runs are candidates.
func readyOnly(now time.Time) claim.Request {
	r := request(now)
	r.OrphanTTL = 100000 * time.Hour
	return r
}
