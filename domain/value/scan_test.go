package value

import (
	"errors"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanAll reads one value with the scanner's piecewise reads, as a
// decoder of a fixed layout does, down to depth levels; below them, and
// for floats, it takes Value. It checks what DecodeJSON checks that the
// scanner leaves to its caller (duplicate keys) and that Len counts what
// is read.
func scanAll(s *Scanner, level int) (any, error) {
	if level > 40 {
		return s.Value(level), nil
	}
	switch s.Peek() {
	case '{':
		n := s.Len()
		if !s.Object() {
			return nil, errors.New("Object refused an object")
		}
		m := map[string]any{}
		for {
			k, more := s.Key()
			if !more {
				break
			}
			key := string(k)
			v, err := scanAll(s, level+1)
			if err != nil {
				return nil, err
			}
			if _, dup := m[key]; dup {
				return nil, errors.New("duplicate key")
			}
			m[key] = v
		}
		if s.Err() == nil && n != len(m) {
			return nil, errors.New("Len miscounted an object")
		}
		return m, s.Err()
	case '[':
		n := s.Len()
		if !s.Array() {
			return nil, errors.New("Array refused an array")
		}
		l := []any{}
		for s.Element() {
			v, err := scanAll(s, level+1)
			if err != nil {
				return nil, err
			}
			l = append(l, v)
		}
		if s.Err() == nil && n != len(l) {
			return nil, errors.New("Len miscounted an array")
		}
		return l, s.Err()
	case '"':
		str, _ := s.String()
		return str, s.Err()
	case 'n':
		s.Null()
		return nil, s.Err()
	}
	if n, ok := s.Int(); ok {
		return n, nil
	}
	return s.Value(level), s.Err()
}

// scanDocument reads b whole with scanAll.
func scanDocument(b []byte) (any, error) {
	s := NewScanner(b, nil, 0)
	defer s.Release()
	v, err := scanAll(s, 0)
	if err != nil {
		return nil, err
	}
	if err := s.End(); err != nil {
		return nil, err
	}
	return v, nil
}

func TestScannerReadsWhatDecodeJSONReads(t *testing.T) {
	t.Parallel()
	docs := []string{
		`42`, `-0`, `1.5`, `1e3`, ` [true, false, null] `, `"\"\\\/\b\f\n\r\t\u0041\u00e9"`, `"\ud83d\ude00"`,
		`{"a":{"b":[1,{"c":"d"}]},"e":{}}`, `[[],{}]`, `{ "a" : [ 1 , "x" , { } ] , "b" : null }`,
		`{"k":"a,b}]","l":["[{\"",2]}`, `{"$k":1}`,
		// refused
		``, `1 2`, `9223372036854775808`, `01`, `-`, `1.`, `{"a":1,"a":2}`, `{a:1}`, `{"a" 1}`, `[1,]`,
		`[1 2]`, `{"a":1 "b":2}`, `{,"a":1}`, `[,1]`, `[1`, `{"a":1`, `{"a":1,}`, `"abc`, "\"a\nb\"", `"\x"`,
		"\"\xff\"", `nul`, `{"a":nul}`, strings.Repeat("[", MaxDepth+2),
	}
	for _, doc := range docs {
		want, wantErr := DecodeJSON([]byte(doc))
		got, err := scanDocument([]byte(doc))
		if wantErr != nil {
			assert.Error(t, err, "%q is refused", doc)
			continue
		}
		require.NoError(t, err, "%q is read", doc)
		assert.Equal(t, want, got, "%q", doc)
	}
}

func TestScannerLeavesWhatItDoesNotReadForTheCaller(t *testing.T) {
	t.Parallel()
	s := NewScanner([]byte(`[2.5,"x",null,{"a":1}]`), nil, 0)
	defer s.Release()
	require.True(t, s.Array())
	require.True(t, s.Element())
	_, ok := s.Int()
	assert.False(t, ok, "a float is not an integer")
	_, ok = s.String()
	assert.False(t, ok)
	assert.Equal(t, 2.5, s.Value(1), "the float is still there to read")
	require.True(t, s.Element())
	assert.False(t, s.Null())
	assert.False(t, s.Object())
	assert.Equal(t, "x", s.Value(1))
	require.True(t, s.Element())
	assert.True(t, s.Null())
	require.True(t, s.Element())
	assert.Equal(t, map[string]any{"a": int64(1)}, s.Value(1))
	assert.False(t, s.Element())
	require.NoError(t, s.End())
}

// A document's records repeat the same keys and short values; the
// scanner holds each once instead of allocating it again.
func TestScannerHoldsARepeatedStringOnce(t *testing.T) {
	t.Parallel()
	s := NewScanner([]byte(`[{"type":"string"},{"type":"string"}]`), nil, 0)
	defer s.Release()
	got := s.Value(0).([]any)
	require.NoError(t, s.End())
	first, second := got[0].(map[string]any), got[1].(map[string]any)
	key := func(m map[string]any) string {
		for k := range m {
			return k
		}
		return ""
	}
	assert.Same(t, unsafe.StringData(key(first)), unsafe.StringData(key(second)))
	assert.Same(t, unsafe.StringData(first["type"].(string)), unsafe.StringData(second["type"].(string)))
	assert.Equal(t, map[string]any{"type": "string"}, second)
}

func FuzzScannerAgreesWithDecodeJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x",null,true]}`, `"\ud83d\ude00\u0000"`, `[{}]`, `{"a":1,"a":2}`,
		`{"id":"run_1","channels":{"state:a":{"value":[1,{"b":"c"}],"version":2}},"$k":{"x":1.5}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, wantErr := DecodeJSON(b)
		got, err := scanDocument(b)
		if wantErr != nil {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.True(t, Equal(want, got))
	})
}
