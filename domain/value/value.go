// Package value is Docket's portable value model: the only content allowed in
// inputs, state, node writes, configuration, metadata, policies, interrupt
// resolutions and outputs.
//
// A portable value is one of nil, bool, string, int64, float64, []any or
// map[string]any (string keys only; keys starting with "$" are reserved at
// every depth). Integers and floats stay distinct: 1 and 1.0 are different
// values, and both survive a JSON round trip as what they were.
//
// The package is not a general JSON library: it only normalizes, compares,
// decodes and canonically encodes portable values.
package value

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNotPortable is wrapped by every error that reports a non-portable value.
var ErrNotPortable = errors.New("value is not portable")

// NotPortableError says where and why a value is not portable.
type NotPortableError struct {
	Path   string // dotted path to the offending value, "" for the root
	Reason string

	// segments are Path's keys and indexes, innermost first: a walk adds
	// each level's as it returns from a refusal.
	segments []segment
}

// segment is one step of a path: a map key, or a list index.
type segment struct {
	key   string
	index int // -1 for a key
}

func (e *NotPortableError) Error() string {
	if e.Path == "" {
		return "non-portable value: " + e.Reason
	}
	return fmt.Sprintf("non-portable value at %s: %s", e.Path, e.Reason)
}

// Unwrap lets errors.Is match ErrNotPortable.
func (e *NotPortableError) Unwrap() error { return ErrNotPortable }

// Normalize converts a Go value into its portable form: every integer kind
// becomes int64, float32 becomes float64, a json.Number becomes the int64
// or float64 its text spells, typed slices and string-keyed maps
// become []any and map[string]any. It rejects anything else (structs,
// pointers, times, NaN and infinities, non-string keys, "$" keys) with a
// *NotPortableError. The result shares no mutable containers with v.
func Normalize(v any) (any, error) {
	return normalize(v, 0)
}

// MaxDepth is how deeply portable values may nest. It bounds every walk,
// so a Go map or slice that contains itself is an error, not an endless
// recursion that overflows the stack.
const MaxDepth = 10000

// Paths are built only when a value is refused: each level prefixes its
// key or index to the child's error on the way back up.
func normalize(v any, depth int) (any, error) {
	if depth > MaxDepth {
		return nil, tooDeep()
	}
	// Portable scalars are returned as the interface value they came in:
	// boxing them again would allocate.
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool, int64:
		return v, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, invalidText()
		}
		return v, nil
	case int:
		return int64(x), nil
	case json.Number:
		return normalizeNumber(x)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, &NotPortableError{Reason: "NaN and infinities are not portable"}
		}
		return v, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, atIndex(i, err)
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if err := checkKey(k); err != nil {
				return nil, err
			}
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, atKey(k, err)
			}
			out[k] = n
		}
		return out, nil
	}
	return normalizeReflect(v, depth)
}

// normalizeNumber reads a json.Number (what a decoder with UseNumber
// produces) as the int64 or float64 its text is, by the same rules as a
// number in a stored document.
func normalizeNumber(n json.Number) (any, error) {
	v, err := DecodeJSON([]byte(n))
	if err != nil || !IsNumber(v) {
		return nil, &NotPortableError{Reason: fmt.Sprintf("json.Number %q is not a number in range", string(n))}
	}
	return v, nil
}

func normalizeReflect(v any, depth int) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.String:
		return normalize(rv.String(), depth)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return rv.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		u := rv.Uint()
		if u > math.MaxInt64 {
			return nil, &NotPortableError{Reason: "integer overflows int64"}
		}
		return int64(u), nil
	case reflect.Float32, reflect.Float64:
		return normalize(rv.Float(), depth)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return []any{}, nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, err := normalize(rv.Index(i).Interface(), depth+1)
			if err != nil {
				return nil, atIndex(i, err)
			}
			out[i] = n
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, &NotPortableError{Reason: "map keys must be strings"}
		}
		out := make(map[string]any, rv.Len())
		iter := rv.MapRange()
		for iter.Next() {
			k := iter.Key().String()
			if err := checkKey(k); err != nil {
				return nil, err
			}
			n, err := normalize(iter.Value().Interface(), depth+1)
			if err != nil {
				return nil, atKey(k, err)
			}
			out[k] = n
		}
		return out, nil
	}
	return nil, &NotPortableError{Reason: fmt.Sprintf("unsupported type %T", v)}
}

// Check reports whether v is already in portable form (as Normalize would
// return it) without copying.
func Check(v any) error { return check(v, 0) }

// CheckEntry is Check of one entry of a map: Check(m) is nil exactly when
// CheckEntry is nil for every key and value of m, so a caller that visits
// the entries anyway checks them without another pass over the map.
func CheckEntry(k string, v any) error {
	if err := checkKey(k); err != nil {
		return err
	}
	if err := check(v, 1); err != nil {
		return atKey(k, err)
	}
	return nil
}

func check(v any, depth int) error {
	if depth > MaxDepth {
		return tooDeep()
	}
	switch x := v.(type) {
	case nil, bool, int64:
		return nil
	case string:
		if !utf8.ValidString(x) {
			return invalidText()
		}
		return nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return &NotPortableError{Reason: "NaN and infinities are not portable"}
		}
		return nil
	case []any:
		for i, e := range x {
			if err := check(e, depth+1); err != nil {
				return atIndex(i, err)
			}
		}
		return nil
	case map[string]any:
		for k, e := range x {
			if err := checkKey(k); err != nil {
				return err
			}
			if err := check(e, depth+1); err != nil {
				return atKey(k, err)
			}
		}
		return nil
	}
	return &NotPortableError{Reason: fmt.Sprintf("unsupported type %T", v)}
}

// checkKey rejects reserved keys and keys that are not UTF-8 text.
func checkKey(k string) error {
	switch {
	case strings.HasPrefix(k, "$"):
		return atKey(k, &NotPortableError{Reason: "keys starting with \"$\" are reserved"})
	case !utf8.ValidString(k):
		return atKey(strings.ToValidUTF8(k, "\uFFFD"), &NotPortableError{Reason: "keys must be UTF-8 text"})
	}
	return nil
}

// invalidText rejects a string that is not UTF-8: JSON cannot carry it,
// so the stored document would hold other text than the run did.
func invalidText() error {
	return &NotPortableError{Reason: "strings must be UTF-8 text"}
}

var tooDeepReason = fmt.Sprintf("nests deeper than %d levels (a Go value that contains itself cannot be stored)", MaxDepth)

func tooDeep() error { return &NotPortableError{Reason: tooDeepReason} }

// atIndex and atKey prefix a child's position to its error's path (but
// for a value nested too deeply, whose path would be as deep).
func atIndex(i int, err error) error { return within(segment{index: i}, err) }

func atKey(k string, err error) error { return within(segment{key: k, index: -1}, err) }

func within(s segment, err error) error {
	if np, ok := err.(*NotPortableError); ok && np.Reason != tooDeepReason {
		np.segments = append(np.segments, s)
		np.Path = renderPath(np.segments)
	}
	return err
}

// renderPath writes segments (innermost first) outermost first: keys
// joined by ".", indexes as "[i]" right after what they index.
func renderPath(segments []segment) string {
	var b strings.Builder
	for i := len(segments) - 1; i >= 0; i-- {
		switch s := segments[i]; {
		case s.index >= 0:
			b.WriteString("[" + strconv.Itoa(s.index) + "]")
		case b.Len() == 0:
			b.WriteString(s.key)
		default:
			b.WriteString("." + s.key)
		}
	}
	return b.String()
}

// Equal is strict deep equality: int64(1) and float64(1) differ, lists
// compare element-wise and maps key-wise. It is the comparison used by enum
// membership and append/union de-duplication.
func Equal(a, b any) bool { return equal(a, b, false) }

// NumericEqual is deep equality in which numbers compare by numeric value
// (1 == 1.0, at any depth). It is the comparison used by the guard "equals".
func NumericEqual(a, b any) bool { return equal(a, b, true) }

func equal(a, b any, numeric bool) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case int64:
		switch y := b.(type) {
		case int64:
			return x == y
		case float64:
			return numeric && compareIntFloat(x, y) == 0
		}
		return false
	case float64:
		switch y := b.(type) {
		case float64:
			return x == y
		case int64:
			return numeric && compareIntFloat(y, x) == 0
		}
		return false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i], numeric) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv, numeric) {
				return false
			}
		}
		return true
	}
	return false
}

// Clone deep-copies a portable value so the copy shares no containers.
func Clone(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Clone(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Clone(e)
		}
		return out
	}
	return v
}

// CompareNumbers orders two numbers (int64 or float64) by their exact
// values: -1, 0 or 1. An int64 is never converted to a float64, which
// above 2^53 would round it onto a neighbour. Anything that is not a
// number orders as 0.
func CompareNumbers(a, b any) int {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return cmp.Compare(x, y)
		case float64:
			return compareIntFloat(x, y)
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return cmp.Compare(x, y)
		case int64:
			return -compareIntFloat(y, x)
		}
	}
	return 0
}

// compareIntFloat orders i and f exactly: f's integral part is compared
// as an integer, then its fraction breaks the tie.
func compareIntFloat(i int64, f float64) int {
	switch {
	case f >= 0x1p63:
		return -1
	case f < -0x1p63:
		return 1
	}
	whole := math.Trunc(f)
	if c := cmp.Compare(i, int64(whole)); c != 0 {
		return c
	}
	return cmp.Compare(0, f-whole)
}

// IsNumber reports whether v is an int64 or float64.
func IsNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

// SortedKeys returns the keys of m in ascending byte order, the order every
// "sorted" in Docket's determinism contract refers to for identifiers.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
