package reducer_test

import (
	"testing"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckOpts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		reducer  reducer.Reducer
		problems []string
	}{
		{"zero reducer", reducer.Reducer{}, nil},
		{"every valid option", reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"unique": true, "max_length": int64(5)}}, nil},
		{"union by key", reducer.Reducer{Type: reducer.Union, Opts: map[string]any{"by": "id"}}, nil},
		{"union by path", reducer.Reducer{Type: reducer.Union, Opts: map[string]any{"by": []any{"a", "b"}}}, nil},
		{"merge deep", reducer.Reducer{Type: reducer.Merge, Opts: map[string]any{"deep": false}}, nil},
		{"unknown option keys are ignored", reducer.Reducer{Type: reducer.Sum, Opts: map[string]any{"unique": "x"}}, nil},
		{"unknown type", reducer.Reducer{Type: "concat"},
			[]string{`reducer type "concat" is not supported; supported types are append, first_value, last_value, merge, sum, union`}},
		{"unique not a bool", reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"unique": "yes"}},
			[]string{`append reducer option "unique" must be a boolean, got "yes"`}},
		{"max_length zero", reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"max_length": int64(0)}},
			[]string{`append reducer option "max_length" must be a positive integer, got 0`}},
		{"max_length float", reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"max_length": 2.0}},
			[]string{`append reducer option "max_length" must be a positive integer, got 2 (a float)`}},
		{"both append options wrong", reducer.Reducer{Type: reducer.Append, Opts: map[string]any{"unique": nil, "max_length": int64(-1)}},
			[]string{`append reducer option "unique" must be a boolean, got null`,
				`append reducer option "max_length" must be a positive integer, got -1`}},
		{"by empty list", reducer.Reducer{Type: reducer.Union, Opts: map[string]any{"by": []any{}}},
			[]string{`union reducer option "by" must be a string or a non-empty list of strings, got a list`}},
		{"by list with a number", reducer.Reducer{Type: reducer.Union, Opts: map[string]any{"by": []any{"a", int64(1)}}},
			[]string{`union reducer option "by" must be a string or a non-empty list of strings, got a list`}},
		{"deep not a bool", reducer.Reducer{Type: reducer.Merge, Opts: map[string]any{"deep": int64(1)}},
			[]string{`merge reducer option "deep" must be a boolean, got 1`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.problems, reducer.CheckOpts(tc.reducer))
		})
	}
}

func TestCheckSchema(t *testing.T) {
	t.Parallel()
	listOfStrings := schema.List(schema.String())
	cases := []struct {
		name     string
		typ      reducer.Type
		field    *schema.Schema
		errs     []string
		warnings []string
	}{
		{"append on a list", reducer.Append, listOfStrings, nil, nil},
		{"union on a list", reducer.Union, listOfStrings, nil, nil},
		{"sum on an integer", reducer.Sum, schema.Integer(), nil, nil},
		{"sum on a float", reducer.Sum, schema.Float(), nil, nil},
		{"merge on a map", reducer.Merge, schema.Map(), nil, nil},
		{"merge on an object", reducer.Merge, schema.Object(nil), nil, nil},
		{"last_value on anything", reducer.LastValue, schema.Boolean(), nil, nil},
		{"first_value on anything", reducer.FirstValue, listOfStrings, nil, nil},
		{"append on a string", reducer.Append, schema.String(), []string{`append reducer requires a list schema, got "string"`}, nil},
		{"union on a map", reducer.Union, schema.Map(), []string{`union reducer requires a list schema, got "map"`}, nil},
		{"sum on a string", reducer.Sum, schema.String(), []string{`sum reducer requires a numeric (float or integer) schema, got "string"`}, nil},
		{"merge on a list", reducer.Merge, listOfStrings, []string{`merge reducer requires a map or object schema, got "list"`}, nil},
		{"no schema: no pairing error", reducer.Sum, nil, nil, nil},
		{"invalid schema: no pairing error", reducer.Sum, &schema.Schema{Type: schema.TypeString, Item: schema.String()}, nil, nil},
		{"append of lists is ambiguous", reducer.Append, schema.List(schema.List(schema.String())), nil,
			[]string{"append reducer has a list-typed item; list writes concatenate, so appending a single list element requires wrapping it in an outer list"}},
		{"union of lists is ambiguous", reducer.Union, schema.List(schema.List(schema.String())), nil,
			[]string{"union reducer has a list-typed item; list writes concatenate, so appending a single list element requires wrapping it in an outer list"}},
		{"last_value of lists is not ambiguous", reducer.LastValue, schema.List(schema.List(schema.String())), nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			errs, warnings := reducer.CheckSchema(reducer.Reducer{Type: tc.typ}, tc.field)
			assert.Equal(t, tc.errs, errs)
			assert.Equal(t, tc.warnings, warnings)
		})
	}
}

func TestWriteSchema(t *testing.T) {
	t.Parallel()
	item := schema.String().WithConstraint(schema.ConstraintMinLength, 1)
	list := schema.List(item).WithConstraint(schema.ConstraintMaxItems, 1).AsRequired()
	object := schema.Object(map[string]*schema.Schema{
		"name": schema.String().AsRequired(),
		"age":  schema.Integer(),
		"address": schema.Object(map[string]*schema.Schema{
			"city": schema.String().AsRequired(),
		}),
	}).WithDefault(map[string]any{"name": "x"}).AsOpen()
	integer := schema.Integer().WithConstraint(schema.ConstraintMin, 0).WithDefault(5)

	t.Run("no field schema means no validation", func(t *testing.T) {
		t.Parallel()
		for _, typ := range []reducer.Type{reducer.LastValue, reducer.FirstValue, reducer.Append, reducer.Union, reducer.Merge, reducer.Sum} {
			assert.Nil(t, reducer.WriteSchema(reducer.Reducer{Type: typ}, nil, "x"), typ)
		}
	})
	t.Run("last_value and first_value use the field schema", func(t *testing.T) {
		t.Parallel()
		assert.Same(t, list, reducer.WriteSchema(reducer.Reducer{}, list, "x"))
		assert.Same(t, list, reducer.WriteSchema(reducer.Reducer{Type: reducer.FirstValue}, list, "x"))
	})
	t.Run("append and union: a scalar write against the item", func(t *testing.T) {
		t.Parallel()
		for _, typ := range []reducer.Type{reducer.Append, reducer.Union} {
			ws := reducer.WriteSchema(reducer.Reducer{Type: typ}, list, "x")
			assert.Equal(t, item, ws)
			assert.Nil(t, ws.Validate(nil), "an optional item admits a null write")
			assert.NotEmpty(t, ws.Validate(""))
		}
	})
	t.Run("append and union: a list write as a bare list of items", func(t *testing.T) {
		t.Parallel()
		for _, typ := range []reducer.Type{reducer.Append, reducer.Union} {
			ws := reducer.WriteSchema(reducer.Reducer{Type: typ}, list, []any{"a", "b"})
			assert.Equal(t, &schema.Schema{Type: schema.TypeList, Item: item}, ws)
			assert.Nil(t, ws.Validate([]any{"a", "b"}), "the field's max_items does not bound one write")
			assert.Equal(t, []string{`"[0]": expected string, got integer`}, ws.Validate([]any{int64(42)}))
		}
	})
	t.Run("merge on an object relaxes top-level required fields", func(t *testing.T) {
		t.Parallel()
		ws := reducer.WriteSchema(reducer.Reducer{Type: reducer.Merge}, object, map[string]any{"age": int64(3)})
		require.NotNil(t, ws)
		assert.True(t, ws.Required)
		assert.False(t, ws.HasDefault)
		assert.True(t, ws.IsOpen(), "constraints are kept")
		assert.Nil(t, ws.Validate(map[string]any{"age": int64(3)}))
		assert.Equal(t, []string{`"age": expected integer, got string`}, ws.Validate(map[string]any{"age": "x"}))
		assert.Equal(t, []string{"value is required but was nil"}, ws.Validate(nil))
		assert.Equal(t, []string{`"address.city" is required but missing`},
			ws.Validate(map[string]any{"address": map[string]any{}}), "nested required fields stay required")
		assert.True(t, object.Fields["name"].Required, "the field schema is not mutated")
		assert.False(t, object.Required)
	})
	t.Run("merge on a closed object rejects unknown keys", func(t *testing.T) {
		t.Parallel()
		closed := schema.Object(map[string]*schema.Schema{"a": schema.Integer()})
		ws := reducer.WriteSchema(reducer.Reducer{Type: reducer.Merge}, closed, map[string]any{})
		assert.Equal(t, []string{`value: unknown field "bogus"`}, ws.Validate(map[string]any{"bogus": int64(1)}))
	})
	t.Run("merge on a map requires a map", func(t *testing.T) {
		t.Parallel()
		ws := reducer.WriteSchema(reducer.Reducer{Type: reducer.Merge}, schema.Map().WithMetadata("k", "v"), map[string]any{})
		assert.Equal(t, &schema.Schema{Type: schema.TypeMap, Required: true}, ws)
	})
	t.Run("sum requires a bare number of the field type", func(t *testing.T) {
		t.Parallel()
		ws := reducer.WriteSchema(reducer.Reducer{Type: reducer.Sum}, integer, int64(-5))
		assert.Equal(t, &schema.Schema{Type: schema.TypeInteger, Required: true}, ws)
		assert.Nil(t, ws.Validate(int64(-5)), "the field's min does not bound an increment")
		assert.NotEmpty(t, ws.Validate(nil))
		assert.NotEmpty(t, ws.Validate("5"))
		assert.NotEmpty(t, ws.Validate(1.5))
	})
}
