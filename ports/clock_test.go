package ports_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/ports"
)

// Micros is UTC truncated to the microsecond, whatever the time's zone,
// precision or monotonic reading, and the zero time stays zero.
func TestMicrosIsUTCTruncatedToTheMicrosecond(t *testing.T) {
	t.Parallel()
	assert.True(t, ports.Micros(time.Time{}).IsZero())
	now := time.Now() // with a monotonic reading
	assert.Equal(t, now.UTC().Round(0).Truncate(time.Microsecond), ports.Micros(now))
	rng := rand.New(rand.NewPCG(1, 2))
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -8*3600)}
	for range 10_000 {
		sec := rng.Int64N(253402300800+62135596800) - 62135596800 // years 1 to 9999
		nsec := rng.Int64N(1_000_000_000)
		if rng.IntN(2) == 0 {
			nsec -= nsec % 1000 // whole microseconds, as stored and clock times are
		}
		in := time.Unix(sec, nsec).In(zones[rng.IntN(len(zones))])
		got, want := ports.Micros(in), in.UTC().Truncate(time.Microsecond)
		if got != want { // the same instant, location and representation
			t.Fatalf("Micros(%v) = %v, want %v", in, got, want)
		}
	}
}
