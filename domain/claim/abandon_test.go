package claim_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func validAbandon() claim.AbandonParams {
	return claim.AbandonParams{ExpectedSeq: 1, Now: t0, RetryAt: t0.Add(30 * time.Second), MaxClaimAbandons: 3}
}

func TestAbandonParamsValidateNamesTheBadField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*claim.AbandonParams)
		field string
	}{
		{"negative expected seq", func(p *claim.AbandonParams) { p.ExpectedSeq = -1 }, "ExpectedSeq"},
		{"zero now", func(p *claim.AbandonParams) { p.Now = time.Time{} }, "Now"},
		{"zero retry_at", func(p *claim.AbandonParams) { p.RetryAt = time.Time{} }, "RetryAt"},
		{"retry_at before now", func(p *claim.AbandonParams) { p.RetryAt = t0.Add(-time.Microsecond) }, "RetryAt"},
		{"zero max abandons", func(p *claim.AbandonParams) { p.MaxClaimAbandons = 0 }, "MaxClaimAbandons"},
		{"max abandons beyond 32 bits", func(p *claim.AbandonParams) { p.MaxClaimAbandons = math.MaxInt32 + 1 }, "MaxClaimAbandons"},
		{"zero backoff base", func(p *claim.AbandonParams) { p.Backoff = &claim.Backoff{Cap: time.Second} }, "Backoff.Base"},
		{"cap below base", func(p *claim.AbandonParams) {
			p.Backoff = &claim.Backoff{Base: time.Second, Cap: time.Millisecond}
		}, "Backoff.Cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := validAbandon()
			tt.edit(&p)
			err := p.Validate()
			require.ErrorIs(t, err, claim.ErrInvalidRequest)
			var inv *claim.InvalidError
			require.True(t, errors.As(err, &inv))
			assert.Equal(t, tt.field, inv.Field)
		})
	}
	assert.NoError(t, validAbandon().Validate())
	sameInstant := validAbandon()
	sameInstant.RetryAt = t0
	assert.NoError(t, sameInstant.Validate(), "retry_at equal to now is allowed")
}

func TestAbandonReschedulesUntilTheMaximumThenPoisons(t *testing.T) {
	t.Parallel()
	p := validAbandon() // max 3
	counters := claim.Counters{Attempts: 1}
	for i := 1; i <= 3; i++ {
		d := claim.Abandon(p, counters)
		require.False(t, d.Poisoned, "hand-back %d", i)
		assert.Equal(t, claim.Counters{Attempts: 0, Abandons: i}, d.Counters)
		assert.Equal(t, p.RetryAt, d.WakeAt)
		assert.True(t, d.PoisonedAt.IsZero())
		counters = claim.Counters{Attempts: d.Counters.Attempts + 1, Abandons: d.Counters.Abandons}
	}
	d := claim.Abandon(p, counters)
	assert.True(t, d.Poisoned)
	assert.Equal(t, claim.ReasonMaxClaimAbandons, d.PoisonReason)
	assert.Equal(t, t0, d.PoisonedAt)
	assert.True(t, d.WakeAt.IsZero())
	assert.Equal(t, claim.Counters{Attempts: 0, Abandons: 3}, d.Counters, "abandons stay at the maximum")
}

func TestAbandonNeverRefundsBelowZero(t *testing.T) {
	t.Parallel()
	d := claim.Abandon(validAbandon(), claim.Counters{})
	assert.Equal(t, 0, d.Counters.Attempts)
}

func TestNonPoisoningBackoffGrowsToTheCap(t *testing.T) {
	t.Parallel()
	p := validAbandon()
	p.NonPoisoning = true
	p.MaxClaimAbandons = 1
	p.Backoff = &claim.Backoff{Base: 100 * time.Millisecond, Cap: 300 * time.Millisecond}
	var wakes []time.Duration
	counters := claim.Counters{Attempts: 1}
	for range 4 {
		d := claim.Abandon(p, counters)
		require.False(t, d.Poisoned, "non-poisoning never poisons")
		wakes = append(wakes, d.WakeAt.Sub(t0))
		counters = claim.Counters{Attempts: d.Counters.Attempts + 1, Abandons: d.Counters.Abandons}
		assert.Equal(t, 0, d.Counters.Attempts)
	}
	assert.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond, 300 * time.Millisecond}, wakes)
	assert.Equal(t, 4, counters.Abandons)
}

func TestNonPoisoningWithoutBackoffUsesRetryAt(t *testing.T) {
	t.Parallel()
	p := validAbandon()
	p.NonPoisoning = true
	d := claim.Abandon(p, claim.Counters{Attempts: 1, Abandons: 99})
	assert.False(t, d.Poisoned)
	assert.Equal(t, p.RetryAt, d.WakeAt)
	assert.Equal(t, 100, d.Counters.Abandons)
}

func TestBackoffIgnoredByPoisoningAbandon(t *testing.T) {
	t.Parallel()
	p := validAbandon()
	p.Backoff = &claim.Backoff{Base: time.Millisecond, Cap: time.Second}
	d := claim.Abandon(p, claim.Counters{Attempts: 1})
	assert.Equal(t, p.RetryAt, d.WakeAt)
}

func TestBackoffDelaySaturatesWithoutOverflow(t *testing.T) {
	t.Parallel()
	b := claim.Backoff{Base: time.Hour, Cap: 2 * time.Hour}
	assert.Equal(t, time.Hour, b.Delay(0))
	assert.Equal(t, 2*time.Hour, b.Delay(1))
	assert.Equal(t, 2*time.Hour, b.Delay(1000), "exponent clamps at 30 and the product never wraps")
	huge := claim.Backoff{Base: time.Millisecond, Cap: 1 << 62}
	assert.Equal(t, time.Millisecond<<30, huge.Delay(31), "the exponent stops at 30")
}

func TestBackoffDelayIsMonotoneAndBounded(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		base := time.Duration(rapid.Int64Range(1, int64(time.Hour)).Draw(t, "base"))
		capD := base + time.Duration(rapid.Int64Range(0, int64(100*time.Hour)).Draw(t, "extra"))
		b := claim.Backoff{Base: base, Cap: capD}
		n := rapid.IntRange(0, 100).Draw(t, "abandons")
		d, next := b.Delay(n), b.Delay(n+1)
		if d < base || d > capD {
			t.Fatalf("delay %v outside [%v, %v]", d, base, capD)
		}
		if next < d {
			t.Fatalf("delay decreased: %v then %v", d, next)
		}
		if n <= 30 && d < capD && d != base<<n {
			t.Fatalf("delay %v is not base·2^%d", d, n)
		}
	})
}
