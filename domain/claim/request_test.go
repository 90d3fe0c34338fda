package claim_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func validRequest() claim.Request {
	return claim.Request{Now: t0, Limit: 1, OrphanTTL: time.Second, MaxClaimAttempts: 5}
}

func TestRequestValidateNamesTheBadField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*claim.Request)
		field string
	}{
		{"zero now is rejected", func(r *claim.Request) { r.Now = time.Time{} }, "Now"},
		{"zero limit is rejected", func(r *claim.Request) { r.Limit = 0 }, "Limit"},
		{"negative ttl is rejected", func(r *claim.Request) { r.OrphanTTL = -time.Millisecond }, "OrphanTTL"},
		{"zero max attempts is rejected", func(r *claim.Request) { r.MaxClaimAttempts = 0 }, "MaxClaimAttempts"},
		{"max attempts beyond 32 bits are rejected", func(r *claim.Request) { r.MaxClaimAttempts = math.MaxInt32 + 1 }, "MaxClaimAttempts"},
		{"a limit beyond 32 bits is rejected", func(r *claim.Request) { r.Limit = math.MaxInt32 + 1 }, "Limit"},
		{"unknown preference is rejected", func(r *claim.Request) { r.Preference = "oldest" }, "Preference"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRequest()
			tt.edit(&r)
			err := r.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, claim.ErrInvalidRequest)
			var inv *claim.InvalidError
			require.True(t, errors.As(err, &inv))
			assert.Equal(t, tt.field, inv.Field)
		})
	}
}

func TestRequestValidateAcceptsZeroTTLAndEveryPreference(t *testing.T) {
	t.Parallel()
	for _, p := range []claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired} {
		r := validRequest()
		r.OrphanTTL = 0
		r.Preference = p
		assert.NoError(t, r.Validate(), "preference %q", p)
	}
}

func TestMicrosNormalizesToUTCMicroseconds(t *testing.T) {
	t.Parallel()
	in := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	got := claim.Micros(in)
	assert.Equal(t, time.UTC, got.Location())
	assert.Equal(t, 123456000, got.Nanosecond())
	assert.True(t, got.Equal(in.Truncate(time.Microsecond)))
	assert.True(t, claim.Micros(time.Time{}).IsZero())
}

func TestPreferenceFlipAlternatesReadyAndExpired(t *testing.T) {
	t.Parallel()
	assert.Equal(t, claim.PreferExpired, claim.PreferReady.Flip())
	assert.Equal(t, claim.PreferReady, claim.PreferExpired.Flip())
	assert.Equal(t, claim.PreferReady, claim.PreferNone.Flip())
}

func TestTheStoreClockBoundsEachDecisionOnItsSafeSide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		storeNow   time.Time
		dueBy      time.Time
		cutoff     time.Time
		liveAtNow  bool // a claim stamped at the caller's now minus 2 TTL
		wakeDueNow bool // a wake a minute after the caller's now
	}{
		{"no store clock: the caller's alone", time.Time{}, t0, t0.Add(-time.Second), false, false},
		{"store clock agrees", t0, t0, t0.Add(-time.Second), false, false},
		{"caller an hour ahead of the store", t0.Add(-time.Hour), t0, t0.Add(-time.Hour - time.Second), true, false},
		{"caller an hour behind the store", t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(-time.Second), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := validRequest()
			r.StoreNow = tt.storeNow
			assert.Equal(t, tt.dueBy, r.DueBy())
			assert.Equal(t, tt.cutoff, r.ExpiryCutoff())
			_, _, expired := claim.Classify(r, claim.Candidate{ClaimedAt: t0.Add(-2 * time.Second), Claimed: true})
			assert.Equal(t, tt.liveAtNow, !expired, "a claim two TTLs old by the caller's clock")
			_, _, due := claim.Classify(r, claim.Candidate{WakeAt: t0.Add(time.Minute)})
			assert.Equal(t, tt.wakeDueNow, due, "a wake a minute after the caller's now")
		})
	}
}
