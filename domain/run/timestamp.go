package run

import "time"

// timeLayout writes timestamps as RFC 3339 in UTC with exactly six
// fractional digits, so they sort as text and parse back to the microsecond.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// timestampLen is the length of a timestamp written in timeLayout.
const timestampLen = len(timeLayout)

// UTCMicros is t in UTC truncated to the microsecond, without a monotonic
// reading: t.UTC().Truncate(time.Microsecond), the precision every stored
// timestamp has. Truncate divides by its argument on each call, and every
// transition takes its time this way more than once. A second holds a
// whole number of microseconds, so the nanoseconds past the last one are
// those of the nanosecond-of-second.
func UTCMicros(t time.Time) time.Time {
	t = t.UTC() // also drops the monotonic reading
	if ns := t.Nanosecond() % 1000; ns != 0 {
		t = t.Add(-time.Duration(ns))
	}
	return t
}

// appendTimestamp appends t in timeLayout, as t.AppendFormat(b, timeLayout)
// does. Every commit writes a run's timestamps and every claim reads them
// back; the time package interprets the layout on each call, which cost
// more than the rest of a small document's encoding, so the fixed layout
// is written digit by digit here (years outside 0–9999 take the general
// path).
func appendTimestamp(b []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, timeLayout)
	}
	hour, minute, second := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, minute, 2)
	b = append(b, ':')
	b = appendDigits(b, second, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1000, 6)
	return append(b, 'Z')
}

// appendDigits appends the n lowest decimal digits of v (v >= 0), zero
// padded.
func appendDigits(b []byte, v, n int) []byte {
	b = append(b, make([]byte, n)...)
	for i := len(b) - 1; i >= len(b)-n; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// parseTimestamp parses s in timeLayout, as time.Parse(timeLayout, string(s))
// does, and takes time.Parse's path (and error) for anything that is not a
// well-formed timestamp of exactly that shape.
// It reads the text of a document in place (as bytes) without allocating.
func parseTimestamp[T string | []byte](s T) (time.Time, error) {
	if len(s) != timestampLen || s[4] != '-' || s[7] != '-' || s[10] != 'T' ||
		s[13] != ':' || s[16] != ':' || s[19] != '.' || s[26] != 'Z' {
		return time.Parse(timeLayout, string(s))
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	second, ok6 := digits(s[17:19])
	micros, ok7 := digits(s[20:26])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) ||
		month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59 {
		return time.Parse(timeLayout, string(s))
	}
	t := time.Date(year, time.Month(month), day, hour, minute, second, micros*1000, time.UTC)
	if t.Day() != day {
		// time.Date normalised a day the month does not have.
		return time.Parse(timeLayout, string(s))
	}
	return t, nil
}

// digits reads s as an unsigned decimal number.
func digits[T string | []byte](s T) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}
