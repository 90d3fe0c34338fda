package reducer

import (
	"math"
	"math/big"

	"github.com/docketgo/docket/domain/value"
)

// Kind returns the reducer type, last_value for the zero Reducer.
func (r Reducer) Kind() Type {
	if r.Type == "" {
		return LastValue
	}
	return r.Type
}

// Zero returns the reducer's zero value ([] for append/union, {} for merge,
// int64 0 for sum); ok is false for last_value and first_value. A state
// field without an explicit default starts from it.
//
// The sum zero is the integer 0 whatever the field type, as in the
// reference: integer writes onto it stay integers and any float write makes
// the sum a float, which a float field accepts.
func (r Reducer) Zero() (v any, ok bool) {
	switch r.Kind() {
	case Append, Union:
		return []any{}, true
	case Merge:
		return map[string]any{}, true
	case Sum:
		return int64(0), true
	}
	return nil, false
}

// Fold folds writes (already in sorted writer order) onto current. With
// hasCurrent false the field has no committed value and no default.
//
//   - last_value: the last write.
//   - first_value: current when set (an explicit default counts), else the
//     first write.
//   - append: base ++ flat(writes); opts unique drops later duplicates
//     (strict equality), then max_length n keeps the last n.
//   - union: base ++ flat(writes) without later duplicates; opts by (a key
//     or a key path) compares elements by the value at that path, and an
//     element missing it by its whole value.
//   - merge: writes merged into the base map in order; non-map writes are
//     ignored; opts deep merges nested maps recursively.
//   - sum: (current if a number, else 0) + Σ writes; int64 stays int64, any
//     float makes the result float64. Non-number writes are skipped (they
//     cannot pass write validation). Integers add exactly: an integer
//     result outside the int64 range saturates at its bounds rather than
//     wrapping, and a float joining the sum converts the exact total.
//
// flat: a list write contributes its elements, any other write (null
// included) contributes itself. The base of append and union is current
// when it is a list, else []; of merge, current when it is a map, else {}.
// An unknown reducer type folds as last_value (CheckOpts reports it).
//
// With no writes the value does not change: Fold returns current, or the
// zero (nil for last_value and first_value) when unset.
//
// Fold never mutates current or writes, and its result shares no
// containers with them.
func Fold(r Reducer, current any, hasCurrent bool, writes []any) any {
	if len(writes) == 0 {
		if hasCurrent {
			return value.Clone(current)
		}
		zero, _ := r.Zero()
		return zero
	}
	switch r.Kind() {
	case FirstValue:
		if hasCurrent {
			return value.Clone(current)
		}
		return value.Clone(writes[0])
	case Append:
		out := concat(current, hasCurrent, writes)
		if unique, _ := r.Opts[OptUnique].(bool); unique {
			out = dedupe(out, wholeValue)
		}
		if n, ok := intOpt(r.Opts[OptMaxLength]); ok && n >= 0 && int64(len(out)) > n {
			out = out[int64(len(out))-n:]
		}
		return out
	case Union:
		return dedupe(concat(current, hasCurrent, writes), unionKey(r.Opts[OptBy]))
	case Merge:
		deep, _ := r.Opts[OptDeep].(bool)
		base := map[string]any{}
		if m, ok := current.(map[string]any); ok && hasCurrent {
			base = value.Clone(m).(map[string]any)
		}
		for _, w := range writes {
			if m, ok := w.(map[string]any); ok {
				mergeInto(base, m, deep)
			}
		}
		return base
	case Sum:
		return sum(current, hasCurrent, writes)
	}
	return value.Clone(writes[len(writes)-1])
}

// concat returns a fresh base ++ flat(writes).
func concat(current any, hasCurrent bool, writes []any) []any {
	var base []any
	if l, ok := current.([]any); ok && hasCurrent {
		base = l
	}
	size := len(base)
	for _, w := range writes {
		if l, ok := w.([]any); ok {
			size += len(l)
		} else {
			size++
		}
	}
	out := make([]any, 0, size)
	for _, e := range base {
		out = append(out, value.Clone(e))
	}
	for _, w := range writes {
		if l, ok := w.([]any); ok {
			for _, e := range l {
				out = append(out, value.Clone(e))
			}
		} else {
			out = append(out, value.Clone(w))
		}
	}
	return out
}

// dedupeKey maps an element to the value it is compared by. The tag keeps a
// keyed element from colliding with an element compared by whole value.
type dedupeKey func(element any) (tag byte, key any)

func wholeValue(element any) (byte, any) { return 'v', element }

// unionKey builds the comparison for union's by option: a string is a
// one-segment path, a list of strings a path into nested maps. Anything else
// (including an absent option) compares whole values.
func unionKey(by any) dedupeKey {
	path, ok := keyPath(by)
	if !ok {
		return wholeValue
	}
	return func(element any) (byte, any) {
		cur := element
		for _, seg := range path {
			m, isMap := cur.(map[string]any)
			if !isMap {
				return 'v', element
			}
			next, found := m[seg]
			if !found {
				return 'v', element
			}
			cur = next
		}
		return 'k', cur
	}
}

func keyPath(by any) ([]string, bool) {
	switch x := by.(type) {
	case string:
		return []string{x}, true
	case []string:
		return x, true
	case []any:
		path := make([]string, len(x))
		for i, seg := range x {
			s, ok := seg.(string)
			if !ok {
				return nil, false
			}
			path[i] = s
		}
		return path, true
	}
	return nil, false
}

// dedupe keeps the first element for every key, comparing keys with strict
// equality (value.Equal). Canonical JSON is a faithful key for that
// equality on portable values (1 and 1.0 encode differently, map order does
// not matter), so lookups are hashed; a non-portable key falls back to a
// linear scan.
func dedupe(list []any, keyOf dedupeKey) []any {
	type tagged struct {
		tag byte
		key any
	}
	seen := make(map[string]struct{}, len(list))
	var unhashable []tagged
	out := list[:0:0]
	for _, e := range list {
		tag, key := keyOf(e)
		if b, err := value.Canonical(key); err == nil {
			h := string(tag) + string(b)
			if _, dup := seen[h]; dup {
				continue
			}
			seen[h] = struct{}{}
		} else {
			dup := false
			for _, u := range unhashable {
				if u.tag == tag && value.Equal(u.key, key) {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
			unhashable = append(unhashable, tagged{tag, key})
		}
		out = append(out, e)
	}
	return out
}

// mergeInto merges a clone of write into dst (which the caller owns).
func mergeInto(dst, write map[string]any, deep bool) {
	for k, w := range write {
		if deep {
			left, leftMap := dst[k].(map[string]any)
			right, rightMap := w.(map[string]any)
			if leftMap && rightMap {
				mergeInto(left, right, true)
				continue
			}
		}
		dst[k] = value.Clone(w)
	}
}

func sum(current any, hasCurrent bool, writes []any) any {
	// Σ writes first, then the base, the order the reference adds in, so
	// float rounding matches. Integers add exactly (the reference's are
	// unbounded): only the result saturates, never a partial sum.
	var total number
	for _, w := range writes {
		total.add(w)
	}
	if hasCurrent && value.IsNumber(current) {
		var base number
		base.add(current)
		base.addNumber(&total)
		return base.result()
	}
	return total.result()
}

// number is an exact running sum: an int64 until it leaves the int64
// range, then a big.Int, and a float64 once a float joins it.
type number struct {
	i       int64
	big     *big.Int // the exact integer once it overflowed i
	f       float64
	isFloat bool
}

// add adds a write; a non-number adds nothing.
func (n *number) add(v any) {
	switch x := v.(type) {
	case int64:
		n.addInt(x)
	case float64:
		n.addFloat(x)
	}
}

func (n *number) addInt(x int64) {
	switch {
	case n.isFloat:
		n.addFloat(float64(x))
	case n.big != nil:
		n.big.Add(n.big, big.NewInt(x))
	default:
		s := n.i + x
		if (x > 0 && s < n.i) || (x < 0 && s > n.i) {
			n.big = new(big.Int).Add(big.NewInt(n.i), big.NewInt(x))
			return
		}
		n.i = s
	}
}

func (n *number) addFloat(x float64) {
	if !n.isFloat {
		n.f, n.isFloat, n.big = n.float(), true, nil
	}
	// Clamp instead of producing an infinity, which is not portable.
	n.f = clampFloat(n.f + x)
}

// addNumber adds another running sum.
func (n *number) addNumber(o *number) {
	switch {
	case o.isFloat:
		n.addFloat(o.f)
	case o.big != nil && n.isFloat:
		n.addFloat(o.float())
	case o.big != nil:
		if n.big == nil {
			n.big = big.NewInt(n.i)
		}
		n.big.Add(n.big, o.big)
	default:
		n.addInt(o.i)
	}
}

// float is the sum as the nearest float64, clamped to the finite range.
func (n *number) float() float64 {
	switch {
	case n.isFloat:
		return n.f
	case n.big != nil:
		f, _ := new(big.Float).SetInt(n.big).Float64()
		return clampFloat(f)
	}
	return float64(n.i)
}

// result is the sum as a portable number: an integer outside the int64
// range saturates at its bounds rather than wrapping.
func (n *number) result() any {
	switch {
	case n.isFloat:
		return n.f
	case n.big == nil:
		return n.i
	case n.big.IsInt64():
		return n.big.Int64()
	case n.big.Sign() > 0:
		return int64(math.MaxInt64)
	}
	return int64(math.MinInt64)
}

func clampFloat(f float64) float64 {
	return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, f))
}

// intOpt reads an integer option; Go callers may pass an int.
func intOpt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}
