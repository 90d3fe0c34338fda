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
	u := t.UTC()
	if u.Nanosecond()%int(time.Microsecond) == 0 {
		return u // whole microseconds (every stored and clock time): nothing to cut
	}
	return u.Truncate(time.Microsecond)
}

// CeilMicros is Micros rounded up: a strict "before t" test on stored,
// microsecond timestamps is exactly "before CeilMicros(t)", where
// Micros(t) would let a row stamped in t's own microsecond through.
func CeilMicros(t time.Time) time.Time {
	m := Micros(t)
	if m.Before(t.UTC()) {
		return m.Add(time.Microsecond)
	}
	return m
}
