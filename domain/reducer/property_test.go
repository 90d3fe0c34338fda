package reducer_test

import (
	"fmt"
	"sort"
	"testing"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// smallValue draws from a small alphabet so duplicates, int/float twins and
// key collisions are common.
func smallValue(depth int) *rapid.Generator[any] {
	scalar := rapid.SampledFrom([]any{nil, true, "a", "b", int64(1), 1.0, int64(2), 0.5})
	if depth == 0 {
		return scalar
	}
	return rapid.OneOf(scalar, scalar,
		rapid.Map(rapid.SliceOfN(smallValue(depth-1), 0, 3), func(l []any) any { return l }),
		rapid.Map(rapid.MapOfN(rapid.SampledFrom([]string{"id", "k", "n"}), smallValue(depth-1), 0, 3),
			func(m map[string]any) any { return m }),
	)
}

// smallNumber draws integers and exactly representable floats, so sums are
// exact whatever the grouping.
func smallNumber() *rapid.Generator[any] {
	return rapid.OneOf(
		rapid.Map(rapid.Int64Range(-1000, 1000), func(i int64) any { return i }),
		rapid.Map(rapid.Int64Range(-1000, 1000), func(i int64) any { return float64(i) / 4 }),
	)
}

// reducerGen draws any reducer with any valid option combination.
func reducerGen() *rapid.Generator[reducer.Reducer] {
	return rapid.Custom(func(t *rapid.T) reducer.Reducer {
		r := reducer.Reducer{Type: rapid.SampledFrom([]reducer.Type{
			reducer.LastValue, reducer.FirstValue, reducer.Append, reducer.Union, reducer.Merge, reducer.Sum,
		}).Draw(t, "type")}
		opts := map[string]any{}
		switch r.Type {
		case reducer.Append:
			if rapid.Bool().Draw(t, "unique") {
				opts["unique"] = true
			}
			if rapid.Bool().Draw(t, "windowed") {
				opts["max_length"] = rapid.Int64Range(1, 4).Draw(t, "max_length")
			}
		case reducer.Union:
			switch rapid.IntRange(0, 2).Draw(t, "by") {
			case 1:
				opts["by"] = "id"
			case 2:
				opts["by"] = []any{"k", "id"}
			}
		case reducer.Merge:
			opts["deep"] = rapid.Bool().Draw(t, "deep")
		}
		if len(opts) > 0 {
			r.Opts = opts
		}
		require.Empty(t, reducer.CheckOpts(r))
		return r
	})
}

func writeGen(r reducer.Reducer) *rapid.Generator[any] {
	switch r.Kind() {
	case reducer.Sum:
		return smallNumber()
	case reducer.Merge:
		return rapid.OneOf(
			rapid.Map(rapid.MapOfN(rapid.SampledFrom([]string{"id", "k", "n"}), smallValue(2), 0, 3),
				func(m map[string]any) any { return m }),
			smallValue(0),
		)
	}
	return smallValue(2)
}

func currentGen(t *rapid.T, r reducer.Reducer) (any, bool) {
	if !rapid.Bool().Draw(t, "has_current") {
		return nil, false
	}
	switch r.Kind() {
	case reducer.Append, reducer.Union:
		return rapid.SliceOfN(smallValue(1), 0, 4).Draw(t, "current"), true
	case reducer.Merge:
		return rapid.MapOfN(rapid.SampledFrom([]string{"id", "k", "n"}), smallValue(2), 0, 3).Draw(t, "current"), true
	case reducer.Sum:
		return smallNumber().Draw(t, "current"), true
	}
	return smallValue(2).Draw(t, "current"), true
}

type arrival struct {
	writer string
	write  any
}

// foldInWriterOrder is what a barrier does: whatever order the node results
// arrived in, writes are folded in ascending writer-ID order.
func foldInWriterOrder(r reducer.Reducer, current any, hasCurrent bool, arrivals []arrival) any {
	sorted := append([]arrival(nil), arrivals...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].writer < sorted[j].writer })
	writes := make([]any, len(sorted))
	for i, a := range sorted {
		writes[i] = a.write
	}
	return reducer.Fold(r, current, hasCurrent, writes)
}

func TestFoldDoesNotDependOnCompletionOrder(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := reducerGen().Draw(t, "reducer")
		current, hasCurrent := currentGen(t, r)
		n := rapid.IntRange(1, 6).Draw(t, "writers")
		arrivals := make([]arrival, n)
		for i := range arrivals {
			arrivals[i] = arrival{writer: fmt.Sprintf("node-%d", i), write: writeGen(r).Draw(t, "write")}
		}
		want := foldInWriterOrder(r, current, hasCurrent, arrivals)

		shuffled := rapid.Permutation(arrivals).Draw(t, "arrival_order")
		got := foldInWriterOrder(r, current, hasCurrent, shuffled)
		assert.True(t, value.Equal(want, got), "want %#v, got %#v", want, got)
	})
}

func TestFoldingStepByStepEqualsFoldingAtOnce(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := reducerGen().Draw(t, "reducer")
		if unique, _ := r.Opts["unique"].(bool); unique && r.Opts["max_length"] != nil {
			// Windowing between steps can drop an element whose later
			// duplicate then survives: a documented non-associativity.
			return
		}
		current, hasCurrent := currentGen(t, r)
		first := rapid.SliceOfN(writeGen(r), 1, 3).Draw(t, "first_step")
		second := rapid.SliceOfN(writeGen(r), 1, 3).Draw(t, "second_step")

		stepwise := reducer.Fold(r, reducer.Fold(r, current, hasCurrent, first), true, second)
		atOnce := reducer.Fold(r, current, hasCurrent, append(append([]any{}, first...), second...))
		assert.True(t, value.Equal(atOnce, stepwise), "at once %#v, step by step %#v", atOnce, stepwise)
	})
}

func TestFoldNeverMutatesItsInputs(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		r := reducerGen().Draw(t, "reducer")
		current, hasCurrent := currentGen(t, r)
		writes := rapid.SliceOfN(writeGen(r), 0, 4).Draw(t, "writes")
		currentBefore, writesBefore := value.Clone(current), value.Clone(writes)

		out := reducer.Fold(r, current, hasCurrent, writes)
		scribble(out)

		assert.True(t, value.Equal(currentBefore, current), "current changed")
		assert.True(t, value.Equal(writesBefore, writes), "writes changed")
	})
}

// scribble overwrites every container reachable from v, so any container
// the result shares with an input shows up as a changed input.
func scribble(v any) {
	switch x := v.(type) {
	case []any:
		for i := range x {
			scribble(x[i])
			x[i] = "scribbled"
		}
	case map[string]any:
		for k := range x {
			scribble(x[k])
			x[k] = "scribbled"
		}
	}
}

func TestUnionKeepsEveryDistinctElementOnce(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.SliceOfN(smallValue(1), 0, 4).Draw(t, "base")
		writes := rapid.SliceOfN(smallValue(1), 1, 4).Draw(t, "writes")
		out := reducer.Fold(reducer.Reducer{Type: reducer.Union}, base, true, writes).([]any)

		var flat []any
		flat = append(flat, base...)
		for _, w := range writes {
			if l, ok := w.([]any); ok {
				flat = append(flat, l...)
			} else {
				flat = append(flat, w)
			}
		}
		for i := range out {
			for j := i + 1; j < len(out); j++ {
				assert.False(t, value.Equal(out[i], out[j]), "duplicate %#v", out[i])
			}
		}
		for _, e := range flat {
			found := false
			for _, o := range out {
				found = found || value.Equal(e, o)
			}
			assert.True(t, found, "lost %#v", e)
		}
		// First occurrences keep their relative order.
		var firsts []any
		for _, e := range flat {
			dup := false
			for _, f := range firsts {
				dup = dup || value.Equal(e, f)
			}
			if !dup {
				firsts = append(firsts, e)
			}
		}
		assert.True(t, value.Equal(firsts, out))
	})
}
