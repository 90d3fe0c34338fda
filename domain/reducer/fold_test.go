package reducer_test

import (
	"math"
	"testing"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
)

type current struct {
	value any
	set   bool
}

var unset = current{}

func set(v any) current { return current{v, true} }

func TestFold(t *testing.T) {
	t.Parallel()
	r := func(typ reducer.Type, opts ...any) reducer.Reducer {
		out := reducer.Reducer{Type: typ}
		if len(opts) > 0 {
			out.Opts = map[string]any{}
			for i := 0; i < len(opts); i += 2 {
				out.Opts[opts[i].(string)] = opts[i+1]
			}
		}
		return out
	}
	obj := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	cases := []struct {
		name    string
		reducer reducer.Reducer
		current current
		writes  []any
		want    any
	}{
		// last_value
		{"last_value takes the last write", r(reducer.LastValue), set("old"), []any{"a", "b"}, "b"},
		{"the zero reducer is last_value", reducer.Reducer{}, set("old"), []any{"a", "b"}, "b"},
		{"last_value keeps a null write", r(reducer.LastValue), set("old"), []any{"a", nil}, nil},
		{"an unknown type folds as last_value", r("newest"), set("old"), []any{"a", "b"}, "b"},

		// first_value
		{"first_value keeps the committed value", r(reducer.FirstValue), set("kept"), []any{"a", "b"}, "kept"},
		{"first_value takes the first write when unset", r(reducer.FirstValue), unset, []any{"first", "second"}, "first"},
		{"first_value counts a default as set", r(reducer.FirstValue), set("default"), []any{"first"}, "default"},

		// append
		{"append concatenates list writes and appends others", r(reducer.Append), set([]any{int64(1)}),
			[]any{int64(2), []any{int64(3), int64(4)}}, []any{int64(1), int64(2), int64(3), int64(4)}},
		{"append one then a list gives three items", r(reducer.Append), unset,
			[]any{"one", []any{"two", "three"}}, []any{"one", "two", "three"}},
		{"same-step append lands on the default in writer order", r(reducer.Append), set([]any{"seed"}),
			[]any{"from_a", "from_b"}, []any{"seed", "from_a", "from_b"}},
		{"append treats a null write as an element", r(reducer.Append), set([]any{int64(1)}), []any{nil},
			[]any{int64(1), nil}},
		{"append wraps nothing around a nested list write", r(reducer.Append), unset,
			[]any{[]any{[]any{"x"}}}, []any{[]any{"x"}}},
		{"append starts from [] when current is not a list", r(reducer.Append), set("junk"), []any{"a"}, []any{"a"}},
		{"append unique keeps first occurrences", r(reducer.Append, "unique", true), set([]any{int64(1), int64(2)}),
			[]any{int64(2), int64(3), int64(1)}, []any{int64(1), int64(2), int64(3)}},
		{"append unique is strict about numbers", r(reducer.Append, "unique", true), unset,
			[]any{[]any{int64(1), 1.0, int64(1)}}, []any{int64(1), 1.0}},
		{"append unique false keeps duplicates", r(reducer.Append, "unique", false), unset,
			[]any{"a", "a"}, []any{"a", "a"}},
		{"append max_length keeps the last n", r(reducer.Append, "max_length", int64(3)),
			set([]any{int64(1), int64(2), int64(3)}), []any{int64(4), int64(5)}, []any{int64(3), int64(4), int64(5)}},
		{"append applies unique before max_length", r(reducer.Append, "unique", true, "max_length", int64(2)),
			unset, []any{[]any{"a", "b", "a", "c", "c"}}, []any{"b", "c"}},
		{"append max_length larger than the list keeps it", r(reducer.Append, "max_length", int64(9)), unset,
			[]any{"a"}, []any{"a"}},

		// union
		{"union dedupes whole values first-wins", r(reducer.Union), set([]any{int64(1), int64(2)}),
			[]any{int64(2), int64(3)}, []any{int64(1), int64(2), int64(3)}},
		{"union compares maps deeply", r(reducer.Union), unset,
			[]any{obj("a", int64(1), "b", int64(2)), obj("b", int64(2), "a", int64(1))}, []any{obj("a", int64(1), "b", int64(2))}},
		{"union by key keeps the first element per key", r(reducer.Union, "by", "id"),
			set([]any{obj("id", "a", "v", int64(1))}),
			[]any{obj("id", "a", "v", int64(2)), obj("id", "b", "v", int64(3))},
			[]any{obj("id", "a", "v", int64(1)), obj("id", "b", "v", int64(3))}},
		{"union by path", r(reducer.Union, "by", []any{"meta", "id"}), unset,
			[]any{obj("meta", obj("id", int64(1)), "n", "x"), obj("meta", obj("id", int64(1)), "n", "y"), obj("meta", obj("id", 1.0))},
			[]any{obj("meta", obj("id", int64(1)), "n", "x"), obj("meta", obj("id", 1.0))}},
		{"union elements missing the key dedupe by whole value", r(reducer.Union, "by", "id"), set([]any{"x"}),
			[]any{"x", "y", obj("other", int64(1)), obj("other", int64(1))}, []any{"x", "y", obj("other", int64(1))}},
		{"union keyed and whole-value elements do not collide", r(reducer.Union, "by", "id"), unset,
			[]any{obj("id", "x"), "x"}, []any{obj("id", "x"), "x"}},

		// merge
		{"merge folds writes into the committed map in order", r(reducer.Merge), set(obj("z", int64(0))),
			[]any{obj("a", int64(1)), obj("a", int64(2), "b", int64(3))}, obj("z", int64(0), "a", int64(2), "b", int64(3))},
		{"merge from the zero map", r(reducer.Merge), set(map[string]any{}),
			[]any{obj("a", int64(1)), obj("b", int64(2))}, obj("a", int64(1), "b", int64(2))},
		{"merge ignores non-map writes", r(reducer.Merge), unset, []any{obj("a", int64(1)), "x", nil, []any{}},
			obj("a", int64(1))},
		{"shallow merge replaces nested maps", r(reducer.Merge), set(obj("n", obj("keep", int64(1)))),
			[]any{obj("n", obj("add", int64(2)))}, obj("n", obj("add", int64(2)))},
		{"deep merge folds nested maps", r(reducer.Merge, "deep", true), set(obj("n", obj("keep", int64(1), "x", obj("y", int64(1))))),
			[]any{obj("n", obj("add", int64(2), "x", obj("z", int64(3))))},
			obj("n", obj("keep", int64(1), "add", int64(2), "x", obj("y", int64(1), "z", int64(3))))},
		{"deep merge replaces a map with a scalar", r(reducer.Merge, "deep", true), set(obj("n", obj("k", int64(1)))),
			[]any{obj("n", "flat")}, obj("n", "flat")},

		// sum
		{"sum adds writes to the committed value", r(reducer.Sum), set(int64(2)), []any{int64(3)}, int64(5)},
		{"sum from unset starts at 0", r(reducer.Sum), unset, []any{int64(2), int64(3)}, int64(5)},
		{"sum with a float becomes a float", r(reducer.Sum), unset, []any{1.5, int64(2)}, 3.5},
		{"sum onto a float stays a float", r(reducer.Sum), set(1.0), []any{int64(1)}, 2.0},
		{"sum treats a non-number current as 0", r(reducer.Sum), set("x"), []any{int64(4)}, int64(4)},
		{"sum skips non-number writes", r(reducer.Sum), set(int64(1)), []any{"x", nil, int64(2)}, int64(3)},
		{"sum saturates instead of wrapping", r(reducer.Sum), set(int64(math.MaxInt64)), []any{int64(1)}, int64(math.MaxInt64)},
		{"sum saturates negative overflow", r(reducer.Sum), set(int64(math.MinInt64)), []any{int64(-1)}, int64(math.MinInt64)},
		{"sum never produces an infinity", r(reducer.Sum), set(math.MaxFloat64), []any{math.MaxFloat64}, math.MaxFloat64},
		{"sum adds integers exactly before saturating", r(reducer.Sum), set(int64(0)),
			[]any{int64(math.MaxInt64), int64(1), int64(-1)}, int64(math.MaxInt64)},
		{"sum adds the committed value to the exact total", r(reducer.Sum), set(int64(-10)),
			[]any{int64(math.MaxInt64), int64(1)}, int64(math.MaxInt64 - 9)},
		{"sum converts the exact integer total when a float joins", r(reducer.Sum), unset,
			[]any{int64(math.MaxInt64), int64(math.MaxInt64), 0.5}, 2 * float64(math.MaxInt64)},
		{"sum adds a float committed value to the exact integer total", r(reducer.Sum), set(0.5),
			[]any{int64(math.MinInt64), int64(math.MinInt64)}, 2 * float64(math.MinInt64)},

		// no writes
		{"no writes keep the committed value", r(reducer.Append), set([]any{"a"}), nil, []any{"a"}},
		{"no writes on an unset accumulator give its zero", r(reducer.Sum), unset, nil, int64(0)},
		{"no writes on an unset last_value give nil", r(reducer.LastValue), unset, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := value.Clone(tc.current.value)
			writesBefore := value.Clone(tc.writes)
			got := reducer.Fold(tc.reducer, tc.current.value, tc.current.set, tc.writes)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, before, tc.current.value, "current is not mutated")
			assert.Equal(t, writesBefore, value.Clone(tc.writes), "writes are not mutated")
		})
	}
}

func TestFoldResultSharesNothingWithItsInputs(t *testing.T) {
	t.Parallel()
	base := []any{map[string]any{"k": "base"}}
	write := map[string]any{"k": "write"}
	out := reducer.Fold(reducer.Reducer{Type: reducer.Append}, base, true, []any{write}).([]any)
	out[0].(map[string]any)["k"] = "changed"
	out[1].(map[string]any)["k"] = "changed"
	assert.Equal(t, "base", base[0].(map[string]any)["k"])
	assert.Equal(t, "write", write["k"])

	nested := map[string]any{"n": map[string]any{"k": int64(1)}}
	merged := reducer.Fold(reducer.Reducer{Type: reducer.Merge, Opts: map[string]any{"deep": true}},
		nested, true, []any{map[string]any{"n": map[string]any{"j": int64(2)}}}).(map[string]any)
	merged["n"].(map[string]any)["k"] = "changed"
	assert.Equal(t, int64(1), nested["n"].(map[string]any)["k"])

	last := reducer.Fold(reducer.Reducer{}, nil, false, []any{write}).(map[string]any)
	last["k"] = "changed"
	assert.Equal(t, "write", write["k"])
}

func TestZero(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ  reducer.Type
		zero any
		ok   bool
	}{
		{reducer.Append, []any{}, true},
		{reducer.Union, []any{}, true},
		{reducer.Merge, map[string]any{}, true},
		{reducer.Sum, int64(0), true},
		{reducer.LastValue, nil, false},
		{reducer.FirstValue, nil, false},
		{"", nil, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.typ), func(t *testing.T) {
			t.Parallel()
			zero, ok := reducer.Reducer{Type: tc.typ}.Zero()
			assert.Equal(t, tc.zero, zero)
			assert.Equal(t, tc.ok, ok)
		})
	}
	a, _ := reducer.Reducer{Type: reducer.Merge}.Zero()
	a.(map[string]any)["x"] = int64(1)
	b, _ := reducer.Reducer{Type: reducer.Merge}.Zero()
	assert.Equal(t, map[string]any{}, b, "each zero is a fresh value")
}

func TestKind(t *testing.T) {
	t.Parallel()
	assert.Equal(t, reducer.LastValue, reducer.Reducer{}.Kind())
	assert.Equal(t, reducer.Sum, reducer.Reducer{Type: reducer.Sum}.Kind())
	assert.True(t, reducer.Union.Known())
	assert.False(t, reducer.Type("concat").Known())
}
