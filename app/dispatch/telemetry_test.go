package dispatch_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// record is one span (ended) or one emitted fact, with the name of the
// span it happened in.
type record struct {
	name   string
	parent string
	labels map[string]string
	result string
	m      ports.Measurements
}

// recorder is a ports.Telemetry that keeps everything, in order.
type recorder struct {
	mu    sync.Mutex
	spans []record
	facts []record
}

type spanKey struct{}

func labelMap(labels []ports.Label) map[string]string {
	out := map[string]string{}
	for _, l := range labels {
		out[l.Key] = l.Value
	}
	return out
}

func parentOf(ctx context.Context) string {
	name, _ := ctx.Value(spanKey{}).(string)
	return name
}

func (r *recorder) StartSpan(ctx context.Context, op string, labels ...ports.Label) (context.Context, ports.Span) {
	s := &recordedSpan{r: r, rec: record{name: op, parent: parentOf(ctx), labels: labelMap(labels)}}
	return context.WithValue(ctx, spanKey{}, op), s
}

func (r *recorder) Emit(ctx context.Context, name string, m ports.Measurements, labels ...ports.Label) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.facts = append(r.facts, record{name: name, parent: parentOf(ctx), labels: labelMap(labels), m: m})
}

func (r *recorder) Committed(context.Context, ports.CommittedFact) {}

func (r *recorder) spansNamed(name string) []record { return r.named(&r.spans, name) }
func (r *recorder) factsNamed(name string) []record { return r.named(&r.facts, name) }

func (r *recorder) named(list *[]record, name string) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []record
	for _, rec := range *list {
		if rec.name == name {
			out = append(out, rec)
		}
	}
	return out
}

type recordedSpan struct {
	r   *recorder
	rec record
}

func (s *recordedSpan) End(result string, m ports.Measurements) {
	s.rec.result, s.rec.m = result, m
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	s.r.spans = append(s.r.spans, s.rec)
}

func TestPollsAreReportedOncePerPollWithTheirClaims(t *testing.T) {
	t.Parallel()
	batch := &ports.ClaimBatch{
		Leases: []ports.Lease{
			{RunID: "fresh", Token: ports.NewClaimToken("t1"), Attempt: 1},
			{RunID: "stolen", Token: ports.NewClaimToken("t2"), Attempt: 3},
		},
		Poisoned: []ports.PoisonOutcome{
			{RunID: "a", PoisonReason: claim.ReasonMaxClaimAttempts},
			{RunID: "b", PoisonReason: "something_else"},
		},
		ReadyCandidates:   4,
		ExpiredCandidates: 1,
	}
	store := newFakeStore(firstThenEmpty(batch))
	tel := &recorder{}
	exited := make(chan struct{}, 2)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Concurrency = 4
		c.ClaimPolicy = "legacy"
		c.Telemetry = tel
		c.Drive = func(context.Context, ports.Lease, func()) { exited <- struct{}{} }
	})
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 2) // poison asks for an immediate second poll
	recv(t, exited, "a drive exit")
	recv(t, exited, "a drive exit")
	require.NoError(t, d.Stop(context.Background()))

	polls := tel.spansNamed(ports.FactDispatcherPoll)
	require.GreaterOrEqual(t, len(polls), 2)
	first := polls[0]
	assert.Equal(t, map[string]string{"claim_policy": "legacy", "source": dispatch.SourceInitial}, first.labels)
	assert.Equal(t, ports.ResultOK, first.result)
	assert.Equal(t, ports.Measurements{
		"demand": 4, "concurrency": 4, "in_flight": 0, "leases": 2, "poisoned": 2,
		"ready_candidates": 4, "expired_candidates": 1,
	}, first.m)
	assert.Equal(t, dispatch.SourceCoalesced, polls[1].labels["source"], "the re-poll after poison")
	assert.Len(t, tel.spansNamed(ports.FactDispatcherClaim), len(store.limits()), "one claim span per ClaimDue call")
	for _, c := range tel.spansNamed(ports.FactDispatcherClaim) {
		assert.Equal(t, ports.FactDispatcherPoll, c.parent)
	}
	launches := tel.spansNamed(ports.FactDispatcherLaunch)
	require.Len(t, launches, 2)
	assert.Equal(t, ports.FactDispatcherPoll, launches[0].parent)

	var attempts []string
	for _, f := range tel.factsNamed(ports.FactClaimAttempt) {
		assert.Equal(t, ports.FactDispatcherPoll, f.parent, "claim facts land on their poll's span")
		attempts = append(attempts, f.labels["result"])
	}
	assert.Equal(t, []string{dispatch.ResultAcquired, dispatch.ResultReacquired}, attempts)
	var reasons []string
	for _, f := range tel.factsNamed(ports.FactClaimPoisoned) {
		reasons = append(reasons, f.labels["reason"])
		assert.Equal(t, 1.0, f.m["count"])
	}
	assert.Equal(t, []string{ports.PoisonReasonMaxClaimAttempts, ports.ResultOther}, reasons)

	states := tel.factsNamed(ports.FactDispatcherState)
	require.NotEmpty(t, states)
	assert.Equal(t, 1.0, states[0].m["poll_active"], "the initial poll is in flight")
	inFlight := map[float64]bool{}
	for _, s := range states {
		inFlight[s.m["in_flight"]] = true
		assert.Equal(t, 4.0, s.m["concurrency"])
		assert.Equal(t, 4-s.m["in_flight"], s.m["demand"])
	}
	assert.True(t, inFlight[2], "the state shows both vehicles in flight at some point")
}

func TestAFailedPollEndsItsSpanWithAnError(t *testing.T) {
	t.Parallel()
	store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) { return nil, context.DeadlineExceeded })
	tel := &recorder{}
	d := newDispatcher(t, store, func(c *dispatch.Config) { c.Telemetry = tel })
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	require.NoError(t, d.Stop(context.Background()))
	polls := tel.spansNamed(ports.FactDispatcherPoll)
	require.NotEmpty(t, polls)
	assert.Equal(t, ports.ResultError, polls[0].result)
	assert.Equal(t, 0.0, polls[0].m["leases"])
	assert.Equal(t, ports.ResultError, tel.spansNamed(ports.FactDispatcherClaim)[0].result)
	assert.Empty(t, tel.factsNamed(ports.FactClaimAttempt))
}

// claimUntilCancelled is a store whose claim answers only when its
// context ends, with the context's error, as a database call does.
type claimUntilCancelled struct{ *fakeStore }

func (s claimUntilCancelled) ClaimDue(ctx context.Context, _ claim.Request) (*ports.ClaimBatch, error) {
	s.entered <- 1
	<-ctx.Done()
	return nil, ctx.Err()
}

// A poll still running at the drain deadline is cancelled by the stopping
// dispatcher: it did not fail, as the log already treats it.
func TestAPollCancelledByStopIsSkippedNotFailed(t *testing.T) {
	t.Parallel()
	base := newFakeStore(nil)
	tel := &recorder{}
	d := newDispatcher(t, base, func(c *dispatch.Config) {
		c.Runs = claimUntilCancelled{base}
		c.DrainTimeout = 20 * time.Millisecond
		c.Telemetry = tel
	})
	require.NoError(t, d.Start(context.Background()))
	base.waitCall(t, 1)
	_ = d.Stop(context.Background())
	require.Eventually(t, func() bool { return len(tel.spansNamed(ports.FactDispatcherPoll)) == 1 }, wait, time.Millisecond)
	assert.Equal(t, ports.ResultSkipped, tel.spansNamed(ports.FactDispatcherPoll)[0].result)
	assert.Equal(t, ports.ResultSkipped, tel.spansNamed(ports.FactDispatcherClaim)[0].result)
}

func TestWakesAreNotCountedByTheDispatcher(t *testing.T) {
	t.Parallel()
	store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) { return empty(), nil })
	n := &fakeNotifier{ch: make(chan ports.Wake)}
	tel := &recorder{}
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Notifier = n
		c.Telemetry = tel
	})
	require.NoError(t, d.Start(context.Background()))
	store.waitCall(t, 1)
	n.ch <- ports.Wake{}
	store.waitCall(t, 2)
	require.NoError(t, d.Stop(context.Background()))
	assert.Empty(t, tel.factsNamed(ports.FactNotification), "the listener counts notifications, once")
	var sources []string
	for _, p := range tel.spansNamed(ports.FactDispatcherPoll) {
		sources = append(sources, p.labels["source"])
	}
	assert.Contains(t, sources, dispatch.SourceNotification)
	shutdown := tel.factsNamed(ports.FactDispatcherShutdown)
	require.Len(t, shutdown, 1)
	assert.Equal(t, "drained", shutdown[0].labels["result"])
}

func TestTheStateCountsFinishingDrives(t *testing.T) {
	t.Parallel()
	store := newFakeStore(firstThenEmpty(leases("r", 1)))
	tel := &recorder{}
	finishing := make(chan struct{})
	finish := make(chan struct{})
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Telemetry = tel
		c.Drive = func(_ context.Context, _ ports.Lease, nodesDone func()) {
			nodesDone()
			close(finishing)
			<-finish
		}
	})
	seen := func() []float64 {
		var out []float64
		for _, s := range tel.factsNamed(ports.FactDispatcherState) {
			if n := s.m["finishing"]; len(out) == 0 || out[len(out)-1] != n {
				out = append(out, n)
			}
		}
		return out
	}
	require.NoError(t, d.Start(context.Background()))
	recv(t, finishing, "a drive finishing")
	store.waitCall(t, 1)
	// The count is read whenever the state changes: the place the drive
	// gave up is such a change.
	require.Eventually(t, func() bool { return slices.Equal(seen(), []float64{0, 1}) }, wait, time.Millisecond)
	close(finish)
	store.waitCall(t, 2) // the drive's end polls, after the state that no longer counts it
	require.NoError(t, d.Stop(context.Background()))
	assert.Equal(t, []float64{0, 1, 0}, seen(), "none, the drive while it finishes, none again")
}
