package run

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// The hand-written timestamp codec is the time package's, byte for byte and
// value for value: every time in any location, including years the fast
// path leaves to the time package and sub-microsecond parts it truncates.
func TestAppendTimestampWritesWhatAppendFormatWrites(t *testing.T) {
	zones := []*time.Location{time.UTC, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -7*3600)}
	rapid.Check(t, func(t *rapid.T) {
		sec := rapid.Int64Range(-70_000_000_000, 260_000_000_000).Draw(t, "unix seconds") // years about -250 to 10200
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, "nanoseconds")
		at := time.Unix(sec, nsec).In(rapid.SampledFrom(zones).Draw(t, "zone"))
		prefix := []byte(rapid.StringN(0, 4, -1).Draw(t, "prefix"))
		want := at.AppendFormat(append([]byte(nil), prefix...), timeLayout)
		assert.Equal(t, string(want), string(appendTimestamp(append([]byte(nil), prefix...), at)))
	})
}

// UTCMicros is t.UTC().Truncate(time.Microsecond), equal with ==: the same
// instant, location and (no) monotonic reading, for times before and after
// the zero time and the Unix epoch, in any zone, with a monotonic reading
// or without.
func TestUTCMicrosIsTruncateToTheMicrosecond(t *testing.T) {
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("east", 5*3600+1800), time.FixedZone("west", -7*3600)}
	rapid.Check(t, func(t *rapid.T) {
		sec := rapid.Int64Range(-70_000_000_000, 260_000_000_000).Draw(t, "unix seconds")
		nsec := rapid.Int64Range(0, 999_999_999).Draw(t, "nanoseconds")
		at := time.Unix(sec, nsec).In(rapid.SampledFrom(zones).Draw(t, "zone"))
		if rapid.Bool().Draw(t, "monotonic") {
			at = time.Now().Add(time.Duration(nsec))
		}
		want := at.UTC().Truncate(time.Microsecond)
		got := UTCMicros(at)
		if got != want {
			t.Fatalf("UTCMicros(%v) = %#v, want %#v", at, got, want)
		}
	})
}

func TestParseTimestampAgreesWithTimeParse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			// well-formed timestamps, years 0000–9999
			rapid.Custom(func(t *rapid.T) string {
				at := time.Unix(rapid.Int64Range(-62_167_219_200, 253_402_300_799).Draw(t, "unix seconds"), 0).UTC()
				return at.Add(time.Duration(rapid.IntRange(0, 999_999).Draw(t, "micros")) * time.Microsecond).Format(timeLayout)
			}),
			// the right shape, each field at or just past its range's ends
			rapid.Custom(func(t *rapid.T) string {
				return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%06dZ",
					rapid.IntRange(0, 9999).Draw(t, "year"), rapid.IntRange(0, 13).Draw(t, "month"),
					rapid.IntRange(0, 32).Draw(t, "day"), rapid.IntRange(0, 25).Draw(t, "hour"),
					rapid.IntRange(0, 61).Draw(t, "minute"), rapid.IntRange(0, 61).Draw(t, "second"),
					rapid.IntRange(0, 999_999).Draw(t, "micros"))
			}),
			rapid.StringMatching(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z`),
			// near misses: any byte in any place
			rapid.Custom(func(t *rapid.T) string {
				b := []byte("2026-02-28T23:59:59.999999Z")
				b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
				return string(b)
			}),
			rapid.String(),
		).Draw(t, "text")
		want, wantErr := time.Parse(timeLayout, s)
		got, err := parseTimestamp(s)
		if wantErr != nil {
			require.Error(t, err, "%q", s)
			return
		}
		require.NoError(t, err, "%q", s)
		assert.True(t, want.Equal(got), "%q: %v != %v", s, got, want)
		assert.Equal(t, want.Location(), got.Location())
		assert.Equal(t, want, got)
	})
}

// Each field at and just past both ends of its range, the others valid,
// parses as time.Parse parses it.
func TestParseTimestampAgreesWithTimeParseAtEveryFieldsEnds(t *testing.T) {
	fields := []struct {
		name   string
		format string
		lo, hi int
	}{
		{"year", "%04d-06-15T12:30:30.500000Z", 0, 9999},
		{"month", "2026-%02d-15T12:30:30.500000Z", 1, 12},
		{"day", "2026-06-%02dT12:30:30.500000Z", 1, 30},
		{"hour", "2026-06-15T%02d:30:30.500000Z", 0, 23},
		{"minute", "2026-06-15T12:%02d:30.500000Z", 0, 59},
		{"second", "2026-06-15T12:30:%02d.500000Z", 0, 59},
		{"microsecond", "2026-06-15T12:30:30.%06dZ", 0, 999_999},
	}
	for _, f := range fields {
		for _, v := range []int{f.lo - 1, f.lo, f.hi, f.hi + 1} {
			if v < 0 {
				continue
			}
			s := fmt.Sprintf(f.format, v)
			want, wantErr := time.Parse(timeLayout, s)
			got, err := parseTimestamp(s)
			if wantErr != nil {
				assert.Error(t, err, "%s %d: %q", f.name, v, s)
				continue
			}
			if assert.NoError(t, err, "%s %d: %q", f.name, v, s) {
				assert.Equal(t, want, got, "%s %d: %q", f.name, v, s)
			}
		}
	}
}

func TestParseTimestampRejectsDaysTheMonthLacks(t *testing.T) {
	for _, s := range []string{"2026-02-29T00:00:00.000000Z", "2026-04-31T00:00:00.000000Z", "2026-01-00T00:00:00.000000Z", "2026-00-15T00:00:00.000000Z", "2026-13-01T00:00:00.000000Z", "2026-01-01T24:00:00.000000Z"} {
		_, err := parseTimestamp(s)
		assert.Error(t, err, s)
	}
	got, err := parseTimestamp("2024-02-29T12:34:56.789012Z")
	require.NoError(t, err)
	assert.Equal(t, time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC), got)
}

func BenchmarkTimestamp(b *testing.B) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 64)
		for b.Loop() {
			buf = appendTimestamp(buf[:0], at)
		}
	})
	b.Run("parse", func(b *testing.B) {
		s := at.Format(timeLayout)
		for b.Loop() {
			if _, err := parseTimestamp(s); err != nil {
				b.Fatal(err)
			}
		}
	})
}
