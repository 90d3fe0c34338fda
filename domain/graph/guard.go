package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/docketgo/docket/domain/value"
)

// View is the public state view that guards and nodes read. Values holds
// committed values by public ID, else a non-null default; a key is absent
// when neither exists. Versions holds committed versions (absent means 0).
// Changed holds the public field IDs changed by the last barrier (or the
// provided inputs at initialization).
type View struct {
	Values   map[string]any
	Versions map[string]int64
	Changed  map[string]bool
}

// GuardError is a runtime guard evaluation failure (a top-level path, a
// reference that is neither a field ID nor a path, an equals value that is
// a non-path guard, an unknown op or malformed arguments). The run fails
// with guard_evaluation_failed.
type GuardError struct {
	Reasons []string
}

func (e *GuardError) Error() string {
	return "guard evaluation failed: " + strings.Join(e.Reasons, "; ")
}

// containsItself reports whether g is its own descendant. A guard built in
// Go can be; it has no wire form, and a walk over it would never end.
func (g *Guard) containsItself() bool { return g.within(nil) }

func (g *Guard) within(ancestors []*Guard) bool {
	if g == nil {
		return false
	}
	if slices.Contains(ancestors, g) {
		return true
	}
	ancestors = append(ancestors, g)
	for _, arg := range g.Args {
		if nested, ok := arg.(*Guard); ok && nested.within(ancestors) {
			return true
		}
	}
	return false
}

// Eval evaluates the guard against v (spec §2.7). A nil guard passes.
// Unwritten or missing values make a guard false; they never error. all and
// any evaluate every argument left to right (no short circuit, so a broken
// argument is reported even after a deciding one) and stop at the first
// error. equals compares numerically (1 == 1.0, at any depth).
//
// Eval does not allocate unless it fails: it runs for every candidate edge
// in every superstep.
func (g *Guard) Eval(v View) (bool, error) {
	if g == nil {
		return true, nil
	}
	return g.eval(&v)
}

func (g *Guard) eval(v *View) (bool, error) {
	switch g.Op {
	case OpAll, OpAny:
		all := g.Op == OpAll
		result := all
		for i, arg := range g.Args {
			nested, ok := arg.(*Guard)
			if !ok || nested == nil {
				return false, evalFailure("argument %d of %q must be a guard, got %s", i, g.Op, evalDescribe(arg))
			}
			r, err := nested.eval(v)
			if err != nil {
				return false, err
			}
			if all {
				result = result && r
			} else {
				result = result || r
			}
		}
		return result, nil

	case OpNot:
		if len(g.Args) != 1 {
			return false, evalFailure("%q takes exactly one guard, got %d arguments", OpNot, len(g.Args))
		}
		nested, ok := g.Args[0].(*Guard)
		if !ok || nested == nil {
			return false, evalFailure("the argument of %q must be a guard, got %s", OpNot, evalDescribe(g.Args[0]))
		}
		r, err := nested.eval(v)
		if err != nil {
			return false, err
		}
		return !r, nil

	case OpChanged:
		if len(g.Args) != 1 {
			return false, evalFailure("%q takes [field], got %d arguments", OpChanged, len(g.Args))
		}
		field, ok := g.Args[0].(string)
		if !ok {
			return false, evalFailure("the field of %q must be a field ID, got %s", OpChanged, evalDescribe(g.Args[0]))
		}
		return v.Changed[field], nil

	case OpVersionAtLeast:
		if len(g.Args) != 2 {
			return false, evalFailure("%q takes [field, version], got %d arguments", OpVersionAtLeast, len(g.Args))
		}
		field, ok := g.Args[0].(string)
		if !ok {
			return false, evalFailure("the field of %q must be a field ID, got %s", OpVersionAtLeast, evalDescribe(g.Args[0]))
		}
		n, ok := evalInt(g.Args[1])
		if !ok || n < 0 {
			return false, evalFailure("the version of %q must be an integer >= 0, got %s", OpVersionAtLeast, evalDescribe(g.Args[1]))
		}
		return v.Versions[field] >= n, nil

	case OpExists:
		if len(g.Args) != 1 {
			return false, evalFailure("%q takes [ref], got %d arguments", OpExists, len(g.Args))
		}
		_, found, err := evalResolve(g.Args[0], v)
		return found, err

	case OpEquals:
		if len(g.Args) != 2 {
			return false, evalFailure("%q takes [ref, value], got %d arguments", OpEquals, len(g.Args))
		}
		// The comparison value is resolved first, as the reference does, so
		// its errors win over the reference's.
		want, wantFound := g.Args[1], true
		if nested, ok := want.(*Guard); ok {
			if nested == nil || nested.Op != OpPath {
				return false, evalFailure("the value of %q may be a path, not %s", OpEquals, evalDescribe(want))
			}
			var err error
			if want, wantFound, err = evalResolve(nested, v); err != nil {
				return false, err
			}
		}
		got, found, err := evalResolve(g.Args[0], v)
		if err != nil || !found || !wantFound {
			return false, err
		}
		return value.NumericEqual(got, want), nil

	case OpPath:
		return false, evalFailure("%q is a reference, not a condition; use it inside %q or %q", OpPath, OpExists, OpEquals)
	}
	return false, evalFailure("unknown guard op %q", g.Op)
}

// evalResolve resolves a reference: a field ID, or a path guard
// [field, [segments...]]. found is false when the field is unwritten or the
// path leads nowhere.
func evalResolve(ref any, v *View) (resolved any, found bool, err error) {
	switch r := ref.(type) {
	case string:
		resolved, found = v.Values[r]
		return resolved, found, nil
	case *Guard:
		if r == nil || r.Op != OpPath {
			break
		}
		if len(r.Args) != 2 {
			return nil, false, evalFailure("%q takes [field, segments], got %d arguments", OpPath, len(r.Args))
		}
		field, ok := r.Args[0].(string)
		if !ok {
			return nil, false, evalFailure("the field of %q must be a field ID, got %s", OpPath, evalDescribe(r.Args[0]))
		}
		segments, ok := r.Args[1].([]any)
		if !ok {
			return nil, false, evalFailure("the segments of %q must be a list, got %s", OpPath, evalDescribe(r.Args[1]))
		}
		current, ok := v.Values[field]
		if !ok {
			return nil, false, nil
		}
		for _, segment := range segments {
			if current, ok = evalStep(current, segment); !ok {
				return nil, false, nil
			}
		}
		return current, true, nil
	}
	return nil, false, evalFailure("a guard reference must be a field ID or a path, got %s", evalDescribe(ref))
}

// evalStep follows one path segment: a string key into a map or an integer
// index into a list (negative counts from the end). Anything else is missing.
func evalStep(container, segment any) (any, bool) {
	switch c := container.(type) {
	case map[string]any:
		key, ok := segment.(string)
		if !ok {
			return nil, false
		}
		next, ok := c[key]
		return next, ok
	case []any:
		i, ok := evalInt(segment)
		if !ok {
			return nil, false
		}
		if i < 0 {
			i += int64(len(c))
		}
		if i < 0 || i >= int64(len(c)) {
			return nil, false
		}
		return c[i], true
	}
	return nil, false
}

// evalInt accepts int64 (the portable integer) and int (a hand-built guard).
func evalInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	}
	return 0, false
}

func evalFailure(format string, args ...any) error {
	return &GuardError{Reasons: []string{fmt.Sprintf(format, args...)}}
}

func evalDescribe(v any) string {
	if g, ok := v.(*Guard); ok {
		if g == nil {
			return "a nil guard"
		}
		return fmt.Sprintf("a %q guard", g.Op)
	}
	return wireDescribe(v)
}
