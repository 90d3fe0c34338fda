package value_test

import (
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestDecodeKeepsIntegersAndFloatsDistinct(t *testing.T) {
	v, err := value.DecodeJSON([]byte(`{"i":1,"f":1.0,"e":1e3,"n":-0.5,"l":[2,2.5]}`))
	require.NoError(t, err)
	m := v.(map[string]any)
	assert.Equal(t, int64(1), m["i"])
	assert.Equal(t, float64(1), m["f"])
	assert.Equal(t, float64(1000), m["e"])
	assert.Equal(t, -0.5, m["n"])
	assert.Equal(t, []any{int64(2), 2.5}, m["l"])
}

func TestDecodeRefusesTextThatIsNotUTF8(t *testing.T) {
	t.Parallel()
	// encoding/json would turn each of these into U+FFFD, so two keys
	// could collide and the stored text differ from the sent one.
	for name, doc := range map[string]string{
		"raw invalid byte":          "{\"a\":\"caf\xe9\"}",
		"raw invalid key":           "{\"\xff\":1,\"\xfe\":2}",
		"lone high surrogate":       `{"a":"\ud800"}`,
		"lone low surrogate":        `{"a":"x\udc00"}`,
		"high surrogate, no low":    `{"a":"\ud800\u0041"}`,
		"high surrogate at the end": `{"a":"\ud83d"}`,
	} {
		_, err := value.DecodeJSON([]byte(doc))
		assert.Error(t, err, name)
	}
	for doc, want := range map[string]any{
		`{"a":"\ud83d\ude00"}`:       map[string]any{"a": "😀"},
		`{"a":"\\ud800"}`:            map[string]any{"a": `\ud800`},
		`{"a":"caf\u00e9 \"q\" \\"}`: map[string]any{"a": `café "q" \`},
	} {
		got, err := value.DecodeJSON([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, want, got, doc)
	}
}

func TestCanonicalRoundTripsNumbersAsWhatTheyWere(t *testing.T) {
	cases := map[string]any{
		`1.0`:                     1.0,
		`1`:                       int64(1),
		`0.0`:                     0.0,
		`1e+21`:                   1e21,
		`1e-7`:                    1e-7,
		`0.000001`:                1e-6,
		`123.456`:                 123.456,
		`-2.0`:                    -2.0,
		`100000000000000000000.0`: 1e20,
	}
	for want, v := range cases {
		got, err := value.Canonical(v)
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
		back, err := value.DecodeJSON(got)
		require.NoError(t, err)
		assert.True(t, value.Equal(v, back), "round trip of %s", want)
	}
}

func TestCanonicalSortsKeysAndEscapesMinimally(t *testing.T) {
	got, err := value.Canonical(map[string]any{"b": "x\"\n\u0001é", "a": []any{nil, true}})
	require.NoError(t, err)
	assert.Equal(t, `{"a":[null,true],"b":"x\"\n\u0001é"}`, string(got))
}

func TestNormalizeRejectsNonPortableValues(t *testing.T) {
	for name, v := range map[string]any{
		"struct":      struct{}{},
		"dollar key":  map[string]any{"$x": 1},
		"nested NaN":  []any{map[string]any{"a": nanValue()}},
		"int map key": map[int]string{1: "a"},
		// JSON cannot carry text that is not UTF-8: the stored run would
		// differ from the one the nodes saw, and two such keys collide.
		"invalid UTF-8 string":       []any{"caf\xe9"},
		"invalid UTF-8 key":          map[string]any{"\xff": int64(1)},
		"invalid UTF-8 typed string": []textLabel{"\xfe"},
		"invalid UTF-8 typed key":    map[textLabel]int{"\xfe": 1},
	} {
		_, err := value.Normalize(v)
		assert.ErrorIs(t, err, value.ErrNotPortable, name)
	}
	for name, v := range map[string]any{
		"invalid UTF-8 string": map[string]any{"a": []any{"caf\xe9"}},
		"invalid UTF-8 keys":   map[string]any{"\xff": int64(1), "\xfe": int64(2)},
	} {
		assert.ErrorIs(t, value.Check(v), value.ErrNotPortable, "Check of %s", name)
	}
	assert.NoError(t, value.Check(map[string]any{"café": "naïve 😀"}), "UTF-8 text is portable")

	_, err := value.Normalize(map[string]any{"a": []any{int64(1), map[string]any{"b": struct{}{}}}})
	var np *value.NotPortableError
	require.ErrorAs(t, err, &np)
	assert.Equal(t, "a[1].b", np.Path, "the path of the offending value")
	require.ErrorAs(t, value.Check(map[string]any{"a": []any{map[string]any{"$b": 1}}}), &np)
	assert.Equal(t, "a[0].$b", np.Path)

	// A Go value that contains itself is refused, not walked forever.
	loop := map[string]any{}
	loop["self"] = loop
	_, err = value.Normalize(loop)
	assert.ErrorContains(t, err, "contains itself")
	assert.ErrorContains(t, value.Check(loop), "contains itself")
	n, err := value.Normalize(map[string]any{"a": []string{"x"}, "b": 3, "c": float32(0.5)})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"a": []any{"x"}, "b": int64(3), "c": 0.5}, n)
}

// A caller that decodes JSON with UseNumber hands over json.Number values:
// they are numbers, not text, so an integer schema and numeric guards see
// them as what they were written as.
func TestNormalizeReadsJSONNumbersAsNumbers(t *testing.T) {
	n, err := value.Normalize(map[string]any{
		"count": json.Number("5"),
		"big":   json.Number("-9223372036854775808"),
		"ratio": json.Number("0.25"),
		"exp":   json.Number("1e3"),
	})
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"count": int64(5), "big": int64(math.MinInt64), "ratio": 0.25, "exp": 1000.0}, n)

	for _, bad := range []json.Number{"9223372036854775808", "1e999", "0x10", "NaN", "1_000", "", "+1", "01"} {
		_, err := value.Normalize([]any{bad})
		assert.ErrorIs(t, err, value.ErrNotPortable, "%q", bad)
	}
	assert.ErrorIs(t, value.Check(json.Number("5")), value.ErrNotPortable, "a json.Number is not yet portable")
}

type textLabel string

func nanValue() float64 { zero := 0.0; return zero / zero }

func TestEqualityStrictVersusNumeric(t *testing.T) {
	assert.False(t, value.Equal(int64(1), 1.0))
	assert.True(t, value.NumericEqual(int64(1), 1.0))
	assert.True(t, value.NumericEqual([]any{map[string]any{"a": int64(2)}}, []any{map[string]any{"a": 2.0}}))
	assert.False(t, value.NumericEqual(map[string]any{"a": int64(2)}, map[string]any{"b": int64(2)}))
}

// Above 2^53 a float64 no longer holds every integer, so converting the
// integer to a float would call distinct numbers equal (and break
// transitivity: 2^53+1 == 2^53.0 == 2^53 while 2^53+1 != 2^53). The
// comparison is exact, as the reference's term comparison is.
func TestNumericEqualityIsExactBeyondFloatPrecision(t *testing.T) {
	assert.False(t, value.NumericEqual(int64(1<<53+1), float64(1<<53)))
	assert.False(t, value.NumericEqual(float64(1<<53), int64(1<<53+1)))
	assert.False(t, value.NumericEqual(int64(math.MaxInt64), 0x1p63), "2^63 is beyond every int64")
	assert.True(t, value.NumericEqual(int64(1<<53), float64(1<<53)))
	assert.True(t, value.NumericEqual(int64(math.MinInt64), -0x1p63))
	assert.False(t, value.NumericEqual([]any{int64(1<<60 + 1)}, []any{0x1p60}))
}

func TestCompareNumbersIsExact(t *testing.T) {
	exact := func(v any) *big.Float {
		switch x := v.(type) {
		case int64:
			return new(big.Float).SetInt64(x)
		case float64:
			return big.NewFloat(x)
		}
		panic("not a number")
	}
	number := rapid.OneOf(
		rapid.Map(rapid.Int64(), func(i int64) any { return i }),
		rapid.Map(rapid.Int64(), func(i int64) any { return float64(i) }),
		rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		rapid.Map(rapid.Int64Range(-1<<54, 1<<54), func(i int64) any { return i }),
		rapid.Map(rapid.Int64Range(-1<<54, 1<<54), func(i int64) any { return float64(i) }),
	)
	rapid.Check(t, func(t *rapid.T) {
		a, b := number.Draw(t, "a"), number.Draw(t, "b")
		if f, ok := a.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			t.Skip("not portable")
		}
		if f, ok := b.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
			t.Skip("not portable")
		}
		want := exact(a).Cmp(exact(b))
		require.Equal(t, want, value.CompareNumbers(a, b))
		require.Equal(t, want == 0, value.NumericEqual(a, b))
	})
}

// portableValue generates arbitrary portable values.
func portableValue() *rapid.Generator[any] {
	return rapid.Deferred(func() *rapid.Generator[any] {
		scalar := rapid.OneOf(
			rapid.Just[any](nil),
			rapid.Map(rapid.Bool(), func(b bool) any { return b }),
			rapid.Map(rapid.String(), func(s string) any { return s }),
			rapid.Map(rapid.Int64(), func(i int64) any { return i }),
			rapid.Map(rapid.Float64(), func(f float64) any { return f }),
		)
		return rapid.OneOf(
			scalar, scalar, scalar,
			rapid.Map(rapid.SliceOfN(portableValue(), 0, 3), func(l []any) any { return l }),
			rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z]{0,4}`), portableValue(), 0, 3), func(m map[string]any) any { return m }),
		)
	})
}

func TestCanonicalIsStableUnderReencoding(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := portableValue().Draw(t, "v")
		first, err := value.Canonical(v)
		require.NoError(t, err)
		back, err := value.DecodeJSON(first)
		require.NoError(t, err)
		assert.True(t, value.Equal(v, back))
		second, err := value.Canonical(back)
		require.NoError(t, err)
		assert.Equal(t, string(first), string(second))
	})
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1.5,"x",null]`, `1e400`, `{"$guard":{}}`, `"\ud800"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := value.DecodeJSON(data)
		if err != nil {
			return
		}
		enc, err := value.Canonical(v)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		back, err := value.DecodeJSON(enc)
		if err != nil {
			t.Fatalf("canonical output does not decode: %v", err)
		}
		if !value.Equal(v, back) {
			t.Fatalf("round trip changed the value: %s", enc)
		}
	})
}

// BenchmarkAppendString encodes 8 KB of plain prose, the bulk of a state
// that holds a conversation.
func BenchmarkAppendString(b *testing.B) {
	text := strings.Repeat("the model reads the request and plans a tool call. ", 160)
	b.SetBytes(int64(len(text)))
	buf := make([]byte, 0, 2*len(text))
	for b.Loop() {
		buf = value.AppendString(buf[:0], text)
	}
}

func TestNotPortablePathsKeepTheirSeparators(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    any
		want string
	}{
		{map[string]any{"a": map[string]any{"": nanValue()}}, "a."},
		{map[string]any{"a": map[string]any{"[0]": nanValue()}}, "a.[0]"},
		{map[string]any{"a": []any{map[string]any{"b": []any{int64(1), nanValue()}}}}, "a[0].b[1]"},
		{[]any{map[string]any{"$x": int64(1)}}, "[0].$x"},
	} {
		_, normalizeErr := value.Normalize(tc.v)
		for name, err := range map[string]error{"Check": value.Check(tc.v), "Normalize": normalizeErr} {
			var np *value.NotPortableError
			require.ErrorAs(t, err, &np, name)
			assert.Equal(t, tc.want, np.Path, "%s of %v", name, tc.v)
		}
	}
}

// A map is portable exactly when CheckEntry passes each of its entries:
// keys that are reserved or not UTF-8, values of any kind, and values
// nested to the depth limit and past it. (Errors are compared by
// presence: which one a map with several bad entries reports depends on
// its iteration order.)
func TestCheckEntryIsCheckOfOneEntry(t *testing.T) {
	t.Parallel()
	key := rapid.OneOf(awkwardString(), rapid.SampledFrom([]string{"$", "$ref", "a$"}))
	nested := func(levels int) any {
		var v any = "leaf"
		for range levels {
			v = []any{v}
		}
		return v
	}
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.MapOfN(key, rapid.OneOf(awkwardValue(3),
			rapid.Map(rapid.IntRange(value.MaxDepth-2, value.MaxDepth+1), nested)), 0, 4).Draw(t, "m")
		all := true
		for k, v := range m {
			err := value.CheckEntry(k, v)
			all = all && err == nil
			assert.Equal(t, value.Check(map[string]any{k: v}) == nil, err == nil, "key %q", k)
		}
		assert.Equal(t, all, value.Check(m) == nil)
	})
}
