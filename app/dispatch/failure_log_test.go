package dispatch_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// recordLog keeps every log record's level and message.
type recordLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *recordLog) WithGroup(string) slog.Handler      { return h }

// count is how many records of level were logged.
func (h *recordLog) count(level slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.records {
		if r.Level == level {
			n++
		}
	}
	return n
}

// last is the latest record's message and attributes.
func (h *recordLog) last() (string, map[string]string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r := h.records[len(h.records)-1]
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	return r.Message, attrs
}

// A claim-poll failure that persists is logged when it begins, then only
// as a reminder once a minute, and its end once at info: a short poll
// interval does not turn an outage, or an engine whose claim policy
// another engine replaced, into a warning a poll.
func TestAPersistentPollFailureIsLoggedOnceAMinuteNotOnEveryPoll(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		err     error
		message string
	}{
		"inactive engine": {&ports.ClaimPolicyUnavailableError{Reason: ports.UnavailableInactiveEngine},
			"docket engine is inactive: another engine made tenant_fair the schema's claim policy, so this engine, " +
				"running legacy, claims no runs; restart it with the tenant_fair claim policy, as the other engines run"},
		"store outage": {errors.New("dial tcp: connection refused"), "docket claim poll failed; retrying on the next poll"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var failing atomic.Bool
			failing.Store(true)
			store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) {
				if failing.Load() {
					return nil, tc.err
				}
				return empty(), nil
			})
			d, logs, now, polls := startLogged(t, store, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
				func(c *dispatch.Config) { c.ClaimPolicy = "legacy" })

			polls(20)
			assert.Equal(t, 1, logs.count(slog.LevelWarn), "twenty failed polls, one warning")
			msg, attrs := logs.last()
			assert.Equal(t, tc.message, msg)
			if errors.Is(tc.err, ports.ErrClaimPolicyUnavailable) {
				assert.Equal(t, "legacy", attrs["claim_policy"])
				assert.Equal(t, ports.UnavailableInactiveEngine, attrs["reason"])
				assert.Equal(t, ports.UnavailableInactiveEngine, d.PollStatus().ClaimPolicyUnavailable)
			} else {
				assert.Equal(t, tc.err.Error(), attrs["error"])
				assert.Empty(t, d.PollStatus().ClaimPolicyUnavailable, "the store did not answer")
			}

			now.Add(int64(time.Minute))
			polls(20)
			assert.Equal(t, 2, logs.count(slog.LevelWarn), "a minute later, one reminder")
			_, attrs = logs.last()
			failed, err := strconv.Atoi(attrs["failed_polls"])
			require.NoError(t, err, "the reminder counts the failed polls")
			assert.GreaterOrEqual(t, failed, 21, "the reminder counts the failed polls")

			failing.Store(false)
			polls(5)
			assert.Equal(t, 2, logs.count(slog.LevelWarn))
			assert.Equal(t, 1, logs.count(slog.LevelInfo), "answered again, said once")
			assert.Empty(t, d.PollStatus().ClaimPolicyUnavailable)

			failing.Store(true)
			polls(5)
			assert.Equal(t, 3, logs.count(slog.LevelWarn), "a new failure is logged at once")
		})
	}
}

// A poll that finds the admission gate locked (a store switching the
// schema's claim policy holds it a moment) is not worth a warning, and
// does not end the episode under way: an inactive engine whose polls meet
// the lock is not logged as inactive anew.
func TestAPollMeetingTheLockedGateIsNoWarning(t *testing.T) {
	t.Parallel()
	inactive := &ports.ClaimPolicyUnavailableError{Reason: ports.UnavailableInactiveEngine}
	locked := &ports.ClaimPolicyUnavailableError{Reason: ports.UnavailableLockContention}
	answers := []error{locked, nil, inactive, locked, inactive, locked, nil}
	store := newFakeStore(func(call int, _ claim.Request) (*ports.ClaimBatch, error) {
		if call > len(answers) || answers[call-1] == nil {
			return empty(), nil
		}
		return nil, answers[call-1]
	})
	logs := &recordLog{}
	d := newDispatcher(t, store, func(c *dispatch.Config) { c.Logger = slog.New(logs) })
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	for call := 2; call <= len(answers)+1; call++ {
		d.RequestPoll()
		store.waitCall(t, call)
	}
	assert.Equal(t, 1, logs.count(slog.LevelWarn), "the inactive engine, once")
	assert.Equal(t, 1, logs.count(slog.LevelInfo), "its end, once")
	assert.Equal(t, 1, logs.count(slog.LevelDebug), "the lock met with no episode under way")
}

// The reminder follows the dispatcher's clock, a wall clock: when it is
// set back (a time sync), a failure that persists is still reminded of a
// minute later, not only once the clock has caught up with the last
// reminder.
func TestAPollFailureIsRemindedOfAfterTheClockIsSetBack(t *testing.T) {
	t.Parallel()
	store := newFakeStore(func(int, claim.Request) (*ports.ClaimBatch, error) {
		return nil, errors.New("dial tcp: connection refused")
	})
	_, logs, now, polls := startLogged(t, store, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), nil)

	polls(3)
	require.Equal(t, 1, logs.count(slog.LevelWarn), "the failure begins")
	now.Add(-int64(time.Hour))
	polls(3)
	now.Add(int64(time.Minute))
	polls(3)
	assert.Equal(t, 2, logs.count(slog.LevelWarn), "a minute after the clock was set back, one reminder")
	_, attrs := logs.last()
	assert.NotContains(t, attrs["failing_for"], "-", "never failing for a negative time")
}

// startLogged starts a dispatcher on store whose log it records and whose
// clock reads now (start, moved by the test); polls makes n more polls,
// each one's predecessor handled once it begins.
func startLogged(t *testing.T, store *fakeStore, start time.Time, configure func(*dispatch.Config)) (d *dispatch.Dispatcher, logs *recordLog, now *atomic.Int64, polls func(n int)) {
	t.Helper()
	logs, now = &recordLog{}, &atomic.Int64{}
	now.Store(start.UnixNano())
	d = newDispatcher(t, store, func(c *dispatch.Config) {
		c.Logger = slog.New(logs)
		c.Clock = ports.ClockFunc(func() time.Time { return time.Unix(0, now.Load()) })
		if configure != nil {
			configure(c)
		}
	})
	require.NoError(t, d.Start(context.Background()))
	t.Cleanup(func() { _ = d.Stop(context.Background()) })
	calls := 1
	polls = func(n int) {
		for range n {
			calls++
			d.RequestPoll()
			store.waitCall(t, calls)
		}
	}
	return d, logs, now, polls
}
