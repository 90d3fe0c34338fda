package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseJSON(t *testing.T) {
	t.Parallel()
	ok := []struct {
		name, in string
		want     any
	}{
		{"integer", "42", int64(42)},
		{"negative zero integer", "-0", int64(0)},
		{"min int64", "-9223372036854775808", int64(-1 << 63)},
		{"max int64", "9223372036854775807", int64(1<<63 - 1)},
		{"float with fraction", "1.0", 1.0},
		{"float with exponent", "1e3", 1000.0},
		{"float with signed exponent", "-2.5E-3", -0.0025},
		{"literals", " [true, false, null] ", []any{true, false, nil}},
		{"nested", `{"a":{"b":[1,{"c":"d"}]},"e":{}}`, map[string]any{"a": map[string]any{"b": []any{int64(1), map[string]any{"c": "d"}}}, "e": map[string]any{}}},
		{"empty containers", `[[],{}]`, []any{[]any{}, map[string]any{}}},
		{"escapes", `"\"\\\/\b\f\n\r\t\u0041\u00e9"`, "\"\\/\b\f\n\r\tAé"},
		{"surrogate pair", `"\ud83d\ude00"`, "😀"},
		{"raw UTF-8", `"é😀"`, "é😀"},
		{"reserved keys are kept", `{"$k":1}`, map[string]any{"$k": int64(1)}},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := DecodeJSON([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			std, err := decodeWithEncodingJSON([]byte(tc.in))
			require.NoError(t, err)
			assert.True(t, Equal(std, got), "agrees with encoding/json")
		})
	}
	bad := []struct{ name, in, want string }{
		{"empty", "", "unexpected end"},
		{"trailing data", "1 2", "unexpected data"},
		{"integer overflow", "9223372036854775808", "out of range"},
		{"negative overflow", "-9223372036854775809", "out of range"},
		{"float overflow", "1e400", "out of range"},
		{"leading zero", "01", "invalid number"},
		{"bare minus", "-", "invalid number"},
		{"missing fraction digits", "1.", "invalid number"},
		{"missing exponent digits", "1e+", "invalid number"},
		{"duplicate key", `{"a":1,"a":2}`, `duplicate key "a"`},
		{"lone surrogate", `"\ud800x"`, "half of a UTF-16 surrogate pair"},
		{"lone surrogate before an escape", `"\ud800\u0041"`, "half of a UTF-16 surrogate pair"},
		{"lone low surrogate", `"\udc00"`, "half of a UTF-16 surrogate pair"},
		{"unquoted key", `{a:1}`, "want an object key"},
		{"missing colon", `{"a" 1}`, "want ':'"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"unterminated array", `[1`, "unterminated array"},
		{"unterminated object", `{"a":1`, "unterminated object"},
		{"unterminated string", `"abc`, "unterminated string"},
		{"control character", "\"a\nb\"", "control character"},
		{"invalid escape", `"\x"`, "invalid escape"},
		{"short unicode escape", `"\u12"`, "short"},
		{"bad unicode escape", `"\u12zz"`, "invalid \\u escape"},
		{"invalid UTF-8", "\"\xff\"", "invalid UTF-8"},
		{"bad literal", "nul", "invalid literal"},
		{"too deep", strings.Repeat("[", MaxDepth+2), "nesting deeper"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := DecodeJSON([]byte(tc.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestDecodeHandsOutItsWordsInsteadOfCopies(t *testing.T) {
	t.Parallel()
	words := map[string]string{"status": "status", "running": "running"}
	got, err := DecodeJSONWords([]byte(`{"status":"running","other":"running!"}`), words)
	require.NoError(t, err)
	m := got.(map[string]any)
	for k := range m {
		if k == "status" {
			assert.Same(t, unsafe.StringData(words["status"]), unsafe.StringData(k), "the key is the held word")
		}
	}
	assert.Same(t, unsafe.StringData(words["running"]), unsafe.StringData(m["status"].(string)), "the value is the held word")
	assert.Equal(t, "running!", m["other"])
}

// TestAFailedParseLeavesNoValuesOnThePooledStack checks that a parse that
// fails inside nested objects returns its member stack empty, so the pool
// keeps no parsed values alive, and that the next parse is unaffected.
func TestAFailedParseLeavesNoValuesOnThePooledStack(t *testing.T) {
	_, err := DecodeJSON([]byte(`{"a":"kept?","b":{"c":[1,2],"d":{"e":"kept?","f":`))
	require.Error(t, err)
	stack := memberStacks.Get().(*[]member)
	for i, m := range (*stack)[:cap(*stack)] {
		require.Equal(t, member{}, m, "member %d of the pooled stack", i)
	}
	memberStacks.Put(stack)

	got, err := DecodeJSON([]byte(`{"x":{"y":1},"z":2}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"x": map[string]any{"y": int64(1)}, "z": int64(2)}, got)
}

// FuzzDecodeJSONAgreesWithEncodingJSON holds the parser to encoding/json: whatever it accepts,
// encoding/json accepts with an equal value.
func FuzzDecodeJSONAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\ud83d\ude00\u0000"`, `-0.0e-0`, `[{}]`, `1E+2`,
		`{"id":"run_1","channels":{"state:a":{"value":[1,{"b":"c"}],"version":2}},"$k":{"x":1.5}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeJSON(b)
		if err != nil {
			return
		}
		std, err := decodeWithEncodingJSON(b)
		require.NoError(t, err, "encoding/json rejects what DecodeJSON accepted")
		require.True(t, Equal(std, got))
	})
}

// decodeWithEncodingJSON is the reference: encoding/json, with numbers
// classified as DecodeJSON classifies them.
func decodeWithEncodingJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the document")
	}
	return classifyNumbers(raw)
}

func classifyNumbers(raw any) (any, error) {
	switch x := raw.(type) {
	case json.Number:
		return ParseNumber(string(x))
	case []any:
		for i, e := range x {
			v, err := classifyNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = v
		}
	case map[string]any:
		for k, e := range x {
			v, err := classifyNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = v
		}
	}
	return raw, nil
}
