package value

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// ParseNumber classifies a JSON number literal: a fraction or exponent makes
// it a float64, otherwise it must fit in an int64.
func ParseNumber(s string) (any, error) {
	if strings.ContainsAny(s, ".eE") {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) {
			return nil, fmt.Errorf("decode json: number %s is out of range", s)
		}
		return f, nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("decode json: integer %s is out of range", s)
	}
	return i, nil
}

// Canonical encodes a portable value as canonical JSON in the style of
// RFC 8785 (JCS): object keys sorted by UTF-16 code units, no insignificant
// white space, minimal string escaping and ECMAScript number formatting,
// except that floats always read back as floats (1.0, not 1). Equal values
// give equal bytes regardless of map iteration order.
func Canonical(v any) ([]byte, error) {
	scratch := GetScratch()
	defer scratch.Release()
	b, err := appendCanonical(scratch.B[:0], v)
	scratch.B = b
	if err != nil {
		return nil, err
	}
	// The scratch buffer goes back to the pool; the caller gets exactly
	// the bytes, in one allocation.
	return bytes.Clone(b), nil
}

// MustCanonical is Canonical for values already known to be portable.
func MustCanonical(v any) []byte {
	b, err := Canonical(v)
	if err != nil {
		panic(err)
	}
	return b
}

// AppendCanonical appends the canonical encoding of v to dst and returns
// the extended slice. On error it returns dst unchanged.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	b, err := appendCanonical(dst, v)
	if err != nil {
		return dst, err
	}
	return b, nil
}

// Scratch is a pooled buffer for canonical encodings that die right after
// use: every planned superstep hashes its state view, and a view holding
// a long history is tens of kilobytes that would otherwise be grown from
// nothing, step after step. Take one with GetScratch, append to B, and
// Release it when its bytes are no longer referenced.
type Scratch struct{ B []byte }

var scratchPool = sync.Pool{New: func() any { return &Scratch{B: make([]byte, 0, 512)} }}

// GetScratch returns an empty pooled buffer.
func GetScratch() *Scratch {
	s := scratchPool.Get().(*Scratch)
	s.B = s.B[:0]
	return s
}

// maxPooledScratch keeps one huge document from pinning its buffer.
const maxPooledScratch = 1 << 20

// Release returns s to the pool; s and its bytes must not be used after.
func (s *Scratch) Release() {
	if cap(s.B) > maxPooledScratch {
		return
	}
	scratchPool.Put(s)
}

// appendCanonical appends the canonical encoding of v to dst. The []string
// and int cases are conveniences for callers that encode Go slices of IDs
// and counts; they encode as the portable list and integer they stand for.
func appendCanonical(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return AppendString(dst, x), nil
	case int64:
		return strconv.AppendInt(dst, x, 10), nil
	case int:
		return strconv.AppendInt(dst, int64(x), 10), nil
	case float64:
		return appendFloat(dst, x)
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendCanonical(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case []string:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, e)
		}
		return append(dst, ']'), nil
	case map[string]any:
		return appendObject(dst, x)
	}
	return dst, &NotPortableError{Reason: fmt.Sprintf("unsupported type %T", v)}
}

// smallObject is the number of keys sorted in a stack array; larger maps
// allocate their key list.
const smallObject = 16

func appendObject(dst []byte, m map[string]any) ([]byte, error) {
	var stack [smallObject]string
	keys := stack[:0]
	if len(m) > smallObject {
		keys = make([]string, 0, len(m))
	}
	for k := range m {
		keys = append(keys, k)
	}
	sortUTF16(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = AppendString(dst, k)
		dst = append(dst, ':')
		var err error
		if dst, err = appendCanonical(dst, m[k]); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// FormatFloat formats f the way ECMAScript's Number.prototype.toString does
// (as RFC 8785 requires), appending ".0" when that form would read back as an
// integer.
func FormatFloat(f float64) (string, error) {
	var stack [40]byte
	b, err := appendFloat(stack[:0], f)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// appendFloat appends FormatFloat's text of f to dst.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, &NotPortableError{Reason: "NaN and infinities are not portable"}
	}
	if f == 0 {
		return append(dst, "0.0"...), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits and decimal exponent: "d.dddde±XX".
	var stack [32]byte
	e := strconv.AppendFloat(stack[:0], f, 'e', -1, 64)
	ePos := bytes.IndexByte(e, 'e')
	exp := parseExponent(e[ePos+1:])
	var digitBuf [24]byte
	digits := append(digitBuf[:0], e[0])
	if ePos > 1 {
		digits = append(digits, e[2:ePos]...) // skip the '.'
	}
	k := len(digits)
	n := exp + 1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
		return append(dst, ".0"...), nil
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		return append(dst, digits[n:]...), nil
	case -6 < n && n <= 0:
		dst = append(dst, "0."...)
		for range -n {
			dst = append(dst, '0')
		}
		return append(dst, digits...), nil
	}
	dst = append(dst, digits[0])
	if k > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	if n-1 >= 0 {
		dst = append(dst, "e+"...)
		return strconv.AppendInt(dst, int64(n-1), 10), nil
	}
	dst = append(dst, "e-"...)
	return strconv.AppendInt(dst, int64(-(n - 1)), 10), nil
}

// parseExponent reads strconv's exponent text ("+21", "-07").
func parseExponent(b []byte) int {
	n := 0
	for _, c := range b[1:] {
		n = n*10 + int(c-'0')
	}
	if b[0] == '-' {
		return -n
	}
	return n
}

const hexDigits = "0123456789abcdef"

// AppendString appends s as a canonical JSON string: only '"', '\\' and
// control characters are escaped (\b \f \n \r \t by name, the rest as
// \u00XX); other characters, non-ASCII included, are written as they are,
// and each invalid UTF-8 byte becomes \ufffd.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0 // s[start:i] is pending plain text
	for i := 0; i < len(s); {
		// Eight plain ASCII bytes at a time: the long texts of a state
		// (messages, documents) are mostly that.
		for i+8 <= len(s) && plainASCII8(uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"':
				dst = append(dst, `\"`...)
			case '\\':
				dst = append(dst, `\\`...)
			case '\b':
				dst = append(dst, `\b`...)
			case '\f':
				dst = append(dst, `\f`...)
			case '\n':
				dst = append(dst, `\n`...)
			case '\r':
				dst = append(dst, `\r`...)
			case '\t':
				dst = append(dst, `\t`...)
			default:
				dst = append(dst, `\u00`...)
				dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// plainASCII8 reports whether the eight bytes of x are all ASCII that a JSON
// string holds unescaped: none is a control character, '"', '\\' or above
// 0x7F. The tests are the classic bitwise "has a byte less than n" and "has
// a zero byte" on one 64-bit word; each is exact as a yes/no answer.
func plainASCII8(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := x^(ones*'"'), x^(ones*'\\')
	special := x | // a high bit: non-ASCII
		(x-ones*0x20) & ^x | // a byte below 0x20
		(quote-ones) & ^quote |
		(backslash-ones) & ^backslash
	return special&highs == 0
}

// sortUTF16 sorts keys by their UTF-16 code units, as RFC 8785 requires.
// Byte order of valid UTF-8 is code point order, which differs from UTF-16
// order only when a supplementary-plane character (a four-byte sequence,
// lead byte >= 0xF0) meets U+E000..U+FFFF; so the plain byte sort is exact
// unless a key holds a four-byte sequence or invalid UTF-8.
func sortUTF16(keys []string) {
	for _, k := range keys {
		for i := 0; i < len(k); i++ {
			if c := k[i]; c >= utf8.RuneSelf && (c >= 0xF0 || !utf8.ValidString(k)) {
				slices.SortFunc(keys, compareUTF16)
				return
			}
		}
	}
	slices.Sort(keys)
}

// compareUTF16 compares two strings by UTF-16 code units; invalid UTF-8
// bytes compare as U+FFFD (the text they encode as). Keys whose units tie
// fall back to byte order, so the sort is deterministic.
func compareUTF16(a, b string) int {
	if c := compareUnits(a, b); c != 0 {
		return c
	}
	return strings.Compare(a, b)
}

func compareUnits(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		a, b = a[na:], b[nb:]
		if ra == rb {
			continue
		}
		ua1, ua2 := utf16Units(ra)
		ub1, ub2 := utf16Units(rb)
		if ua1 != ub1 {
			return cmp.Compare(ua1, ub1)
		}
		if ua2 != ub2 {
			return cmp.Compare(ua2, ub2)
		}
	}
	return cmp.Compare(len(a), len(b)) // one is empty: the shorter sorts first
}

// utf16Units returns r's UTF-16 code units; the second is 0 for a
// single-unit character (0 is below every low surrogate, so a single unit
// followed by more text still compares correctly against a pair).
func utf16Units(r rune) (uint16, uint16) {
	if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError || r2 != utf8.RuneError {
		return uint16(r1), uint16(r2)
	}
	return uint16(r), 0
}
