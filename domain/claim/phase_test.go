package claim_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/docketgo/docket/domain/claim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func admit(p *claim.Phase, demand int, err error) claim.Preference {
	var got claim.Preference
	_, _ = claim.Admit(p, demand, func(pref claim.Preference) (int, error) {
		got = pref
		return 0, err
	})
	return got
}

func TestPhaseFlipsOnlyAfterSuccessfulDemandOneCalls(t *testing.T) {
	t.Parallel()
	var p claim.Phase
	assert.Equal(t, claim.PreferReady, p.Preference(), "a new phase starts at ready")

	assert.Equal(t, claim.PreferReady, admit(&p, 1, nil))
	assert.Equal(t, claim.PreferExpired, p.Preference(), "demand 1 success flips")

	assert.Equal(t, claim.PreferExpired, admit(&p, 1, errors.New("boom")))
	assert.Equal(t, claim.PreferExpired, p.Preference(), "an error does not flip")

	assert.Equal(t, claim.PreferExpired, admit(&p, 2, nil))
	assert.Equal(t, claim.PreferExpired, p.Preference(), "demand above 1 does not flip")

	assert.Equal(t, claim.PreferExpired, admit(&p, 1, nil))
	assert.Equal(t, claim.PreferReady, p.Preference(), "flips back")
}

func TestPhasePanicReleasesWithoutFlipping(t *testing.T) {
	t.Parallel()
	var p claim.Phase
	require.Panics(t, func() {
		_, _ = claim.Admit(&p, 1, func(claim.Preference) (int, error) { panic("vehicle bug") })
	})
	assert.Equal(t, claim.PreferReady, p.Preference(), "the phase is usable and unflipped")
}

func TestPhaseSerializesCalls(t *testing.T) {
	t.Parallel()
	var p claim.Phase
	var inside, peak atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			_, _ = claim.Admit(&p, 1, func(claim.Preference) (int, error) {
				n := inside.Add(1)
				if n > peak.Load() {
					peak.Store(n)
				}
				inside.Add(-1)
				return 0, nil
			})
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), peak.Load())
	assert.Equal(t, claim.PreferReady, p.Preference(), "an even number of demand-1 calls flips back")
}
