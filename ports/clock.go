package ports

import "time"

// Clock is the caller clock adapters and the runtime read. Implementations
// return UTC truncated to the microsecond.
type Clock interface {
	Now() time.Time
}

// SystemClock reads the wall clock.
type SystemClock struct{}

// Now returns the current time in UTC with microsecond precision.
func (SystemClock) Now() time.Time { return Micros(time.Now()) }

// ClockFunc adapts a function to Clock.
type ClockFunc func() time.Time

// Now calls f and normalizes its result.
func (f ClockFunc) Now() time.Time { return Micros(f()) }

// Micros normalizes t to UTC with microsecond precision, the precision of
// every stored timestamp. The zero time stays zero.
func Micros(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Truncate(time.Microsecond)
}
