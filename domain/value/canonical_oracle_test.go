package value_test

import (
	"bytes"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/value"
)

// oracleCanonical is the first, deliberately plain canonical encoder
// (bytes.Buffer, sort.Slice, string-building float formatting). The
// optimised encoder must produce the same bytes for every value. The one
// addition: keys whose UTF-16 units tie (distinct invalid UTF-8 that both
// encode as \ufffd) are ordered by bytes, where the first encoder left
// their order to sort.Slice.
func oracleCanonical(v any) ([]byte, bool) {
	var buf bytes.Buffer
	if !oracleAppend(&buf, v) {
		return nil, false
	}
	return buf.Bytes(), true
}

func oracleAppend(buf *bytes.Buffer, v any) bool {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case string:
		oracleString(buf, x)
	case int64:
		buf.WriteString(strconv.FormatInt(x, 10))
	case int:
		buf.WriteString(strconv.Itoa(x))
	case float64:
		s, ok := oracleFloat(x)
		if !ok {
			return false
		}
		buf.WriteString(s)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if !oracleAppend(buf, e) {
				return false
			}
		}
		buf.WriteByte(']')
	case []string:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			oracleString(buf, e)
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		sort.SliceStable(keys, func(i, j int) bool { return oracleLessUTF16(keys[i], keys[j]) })
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			oracleString(buf, k)
			buf.WriteByte(':')
			if !oracleAppend(buf, x[k]) {
				return false
			}
		}
		buf.WriteByte('}')
	default:
		return false
	}
	return true
}

func oracleFloat(f float64) (string, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	if f == 0 {
		return "0.0", true
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, expPart, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expPart)
	k, n := len(digits), exp+1
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k) + ".0"
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		if n-1 >= 0 {
			s += "e+" + strconv.Itoa(n-1)
		} else {
			s += "e-" + strconv.Itoa(-(n - 1))
		}
	}
	return sign + s, true
}

func oracleString(buf *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				buf.WriteString(`\"`)
			case '\\':
				buf.WriteString(`\\`)
			case '\b':
				buf.WriteString(`\b`)
			case '\f':
				buf.WriteString(`\f`)
			case '\n':
				buf.WriteString(`\n`)
			case '\r':
				buf.WriteString(`\r`)
			case '\t':
				buf.WriteString(`\t`)
			default:
				if c < 0x20 {
					buf.WriteString(`\u00`)
					buf.WriteByte(hex[c>>4])
					buf.WriteByte(hex[c&0xf])
				} else {
					buf.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf.WriteString(`\ufffd`)
		} else {
			buf.WriteString(s[i : i+size])
		}
		i += size
	}
	buf.WriteByte('"')
}

func oracleLessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// awkwardString draws strings that stress escaping and key order: ASCII
// controls, quotes, BMP characters at both ends of the surrogate gap,
// supplementary-plane characters, and raw (possibly invalid) bytes.
func awkwardString() *rapid.Generator[string] {
	piece := rapid.OneOf(
		rapid.SampledFrom([]string{"", "a", "b", "\"", "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\ue000", "\uffff", "\ufffd", "😀", "𐀀", "\U0010ffff"}),
		rapid.StringMatching(`[a-z]{0,3}`),
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 1, 3), func(b []byte) string { return string(b) }),
	)
	return rapid.Map(rapid.SliceOfN(piece, 0, 4), func(ps []string) string { return strings.Join(ps, "") })
}

// awkwardValue draws values up to three containers deep; wide maps (up
// to 20 keys, past the encoder's stack-sorted size) hold scalars only, so
// the generator stays small.
func awkwardValue(depth int) *rapid.Generator[any] {
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(awkwardString(), func(s string) any { return s }),
		rapid.Map(rapid.Int64(), func(i int64) any { return i }),
		rapid.Map(rapid.Int(), func(i int) any { return i }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1, -1, 1e20, 1e21, 1e-6, 1e-7, 0.1, 123.456, math.MaxFloat64, math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1)}), func(f float64) any { return f }),
		rapid.Map(rapid.SliceOfN(awkwardString(), 0, 3), func(s []string) any { return s }),
	)
	if depth == 0 {
		return scalar
	}
	return rapid.OneOf(
		scalar, scalar,
		rapid.Map(rapid.SliceOfN(awkwardValue(depth-1), 0, 3), func(l []any) any { return l }),
		rapid.Map(rapid.MapOfN(awkwardString(), awkwardValue(depth-1), 0, 3), func(m map[string]any) any { return m }),
		rapid.Map(rapid.MapOfN(awkwardString(), scalar, 0, 20), func(m map[string]any) any { return m }),
	)
}

func TestCanonicalMatchesTheReferenceEncoderOnAnyValue(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		v := awkwardValue(3).Draw(t, "v")
		want, ok := oracleCanonical(v)
		got, err := value.Canonical(v)
		if !ok {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))

		appended, err := value.AppendCanonical([]byte("prefix:"), v)
		require.NoError(t, err)
		assert.Equal(t, "prefix:"+string(want), string(appended), "AppendCanonical appends")
	})
}

func TestFormatFloatMatchesTheReferenceFormatting(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		f := rapid.Float64().Draw(t, "f")
		want, ok := oracleFloat(f)
		got, err := value.FormatFloat(f)
		if !ok {
			require.ErrorIs(t, err, value.ErrNotPortable)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
}

func TestAppendCanonicalLeavesTheBufferUnchangedOnError(t *testing.T) {
	t.Parallel()
	kept := []byte("kept")
	got, err := value.AppendCanonical(kept, map[string]any{"a": []any{1.5, math.NaN()}})
	require.ErrorIs(t, err, value.ErrNotPortable)
	assert.Equal(t, "kept", string(got))
}

func TestCanonicalSortsByUTF16CodeUnits(t *testing.T) {
	t.Parallel()
	// U+E000 sorts after U+1F600 by code point but before it by UTF-16
	// units (0xE000 < 0xD83D).
	got, err := value.Canonical(map[string]any{"\ue000": int64(1), "😀": int64(2), "z": int64(3)})
	require.NoError(t, err)
	assert.Equal(t, "{\"z\":3,\"😀\":2,\"\ue000\":1}", string(got))
}

func BenchmarkCanonicalSnapshot(b *testing.B) {
	snapshot := map[string]any{"in": "x"}
	for i := range 10 {
		snapshot["n"+strconv.Itoa(i)] = "v"
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := value.Canonical(snapshot); err != nil {
			b.Fatal(err)
		}
	}
}

// Long text takes AppendString's eight-bytes-at-a-time path: every byte
// value, at every offset of a word and next to word boundaries, is
// escaped exactly as the oracle escapes it.
func TestAppendStringEscapesEveryByteAtEveryOffset(t *testing.T) {
	t.Parallel()
	const plain = "abcdefghijklmnopqrstuvwx" // three words of plain ASCII
	for b := range 256 {
		for at := range len(plain) {
			s := plain[:at] + string([]byte{byte(b)}) + plain[at:]
			var want bytes.Buffer
			oracleString(&want, s)
			got := value.AppendString([]byte("prefix:"), s)
			if "prefix:"+want.String() != string(got) {
				t.Fatalf("byte %#x at %d: got %q, want %q", b, at, got, want.String())
			}
		}
	}
}

func TestAppendStringMatchesTheOracleOnLongText(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		piece := rapid.OneOf(
			rapid.StringMatching(`[ -~]{0,24}`), // printable ASCII, quote and backslash included
			awkwardString(),
			rapid.Map(rapid.Byte(), func(b byte) string { return string([]byte{b}) }),
		)
		s := strings.Join(rapid.SliceOfN(piece, 1, 12).Draw(t, "pieces"), "")
		var want bytes.Buffer
		oracleString(&want, s)
		assert.Equal(t, want.String(), string(value.AppendString(nil, s)))
	})
}
