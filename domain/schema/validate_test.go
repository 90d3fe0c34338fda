package schema_test

import (
	"strings"
	"testing"

	"github.com/docketgo/docket/domain/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	str := schema.String
	status := schema.Enum("approved", "rejected")
	review := schema.Object(map[string]*schema.Schema{
		"status": status.AsRequired(),
		"note":   str(),
	})
	cases := []struct {
		name    string
		schema  *schema.Schema
		value   any
		reasons []string // nil: valid
	}{
		// null and required
		{"null passes an optional schema", str(), nil, nil},
		{"null fails a required schema", str().AsRequired(), nil, []string{"value is required but was nil"}},
		{"null passes an optional nested field", review, map[string]any{"status": "approved", "note": nil}, nil},
		{"null fails a required nested field", review, map[string]any{"status": nil},
			[]string{`"status" is required but was nil`}},
		{"null fails a required list item", schema.List(str().AsRequired()), []any{"a", nil},
			[]string{`"[1]" is required but was nil`}},
		{"null passes an optional list item", schema.List(str()), []any{nil}, nil},

		// string
		{"string accepts a string", str(), "x", nil},
		{"string rejects an integer", str(), int64(1), []string{"value: expected string, got integer"}},
		{"min_length counts runes", str().WithConstraint("min_length", 3), "héé", nil},
		{"min_length rejects short strings", str().WithConstraint("min_length", 3), "hé",
			[]string{"value: expected at least 3 characters, got 2 characters"}},
		{"max_length is inclusive", str().WithConstraint("max_length", 2), "ab", nil},
		{"max_length rejects long strings", str().WithConstraint("max_length", 2), "abc",
			[]string{"value: expected at most 2 characters, got 3 characters"}},
		{"a float length bound still applies", str().WithConstraint("min_length", 1.5), "a",
			[]string{"value: expected at least 1.5 characters, got 1 characters"}},
		{"a non-numeric length bound is ignored", str().WithConstraint("max_length", "1"), "abc", nil},
		{"pattern is an unanchored search", str().WithConstraint("pattern", "b+"), "abbc", nil},
		{"pattern can be anchored explicitly", str().WithConstraint("pattern", "^b"), "ab",
			[]string{`value: expected to match pattern "^b", got "ab"`}},
		{"a bad pattern is a reason", str().WithConstraint("pattern", "("), "x",
			[]string{"value: invalid pattern constraint \"(\": error parsing regexp: missing closing ): `(`"}},
		{"a non-string pattern is a reason", str().WithConstraint("pattern", int64(1)), "x",
			[]string{"value: pattern constraint must be a string, got integer"}},

		// numbers
		{"float accepts an integer", schema.Float(), int64(1), nil},
		{"float accepts a float", schema.Float(), 1.5, nil},
		{"float rejects a string", schema.Float(), "1", []string{"value: expected number, got string"}},
		{"integer accepts an integer", schema.Integer(), int64(-4), nil},
		{"integer rejects 1.0", schema.Integer(), 1.0, []string{"value: expected integer, got float"}},
		{"min is inclusive", schema.Integer().WithConstraint("min", 0), int64(0), nil},
		{"min rejects below", schema.Integer().WithConstraint("min", 0), int64(-1),
			[]string{"value: expected at least 0, got -1"}},
		{"max is inclusive across int and float", schema.Float().WithConstraint("max", 1), 1.0, nil},
		{"max rejects above", schema.Float().WithConstraint("max", 1.5), 1.75,
			[]string{"value: expected at most 1.5, got 1.75"}},
		{"both bounds can fail independently", schema.Float().WithConstraint("min", 2).WithConstraint("max", 1), 1.5,
			[]string{"value: expected at least 2, got 1.5", "value: expected at most 1, got 1.5"}},
		{"a non-numeric bound is ignored", schema.Integer().WithConstraint("min", "5"), int64(1), nil},
		{"large integers compare exactly", schema.Integer().WithConstraint("max", int64(1<<62)), int64(1<<62 + 1),
			[]string{"value: expected at most 4611686018427387904, got 4611686018427387905"}},
		{"an integer beyond float precision compares exactly with a float bound", schema.Integer().WithConstraint("max", float64(1<<53)), int64(1<<53 + 1),
			[]string{"value: expected at most 9007199254740992.0, got 9007199254740993"}},

		// boolean and map
		{"boolean accepts false", schema.Boolean(), false, nil},
		{"boolean rejects a string", schema.Boolean(), "true", []string{"value: expected boolean, got string"}},
		{"map accepts any map", schema.Map(), map[string]any{"a": []any{int64(1)}}, nil},
		{"map rejects a list", schema.Map(), []any{}, []string{"value: expected map, got list"}},

		// enum
		{"enum accepts a member", status, "approved", nil},
		{"enum rejects a non-member", status, "maybe",
			[]string{`value: expected one of ["approved","rejected"], got "maybe"`}},
		{"enum membership is strict about numbers", schema.Enum(1), 1.0,
			[]string{"value: expected one of [1], got 1.0"}},
		{"enum compares containers deeply", schema.Enum(map[string]any{"a": []any{1}}), map[string]any{"a": []any{int64(1)}}, nil},

		// list
		{"list validates every item with its index", schema.List(schema.Integer()), []any{int64(1), "x", 2.5},
			[]string{`"[1]": expected integer, got string`, `"[2]": expected integer, got float`}},
		{"list rejects a map", schema.List(str()), map[string]any{}, []string{"value: expected list, got map"}},
		{"min_items", schema.List(str()).WithConstraint("min_items", 1), []any{},
			[]string{"value: expected at least 1 items, got 0 items"}},
		{"max_items", schema.List(str()).WithConstraint("max_items", 1), []any{"a", "b"},
			[]string{"value: expected at most 1 items, got 2 items"}},

		// object
		{"object accepts declared keys", review, map[string]any{"status": "rejected", "note": "n"}, nil},
		{"object rejects unknown keys", review, map[string]any{"status": "approved", "zzz": 1, "aaa": 2},
			[]string{`value: unknown field "aaa"`, `value: unknown field "zzz"`}},
		{"open object admits unknown keys", review.AsOpen(), map[string]any{"status": "approved", "extra": 1}, nil},
		{"open must be exactly true", review.WithConstraint("open", "yes"), map[string]any{"status": "approved", "extra": 1},
			[]string{`value: unknown field "extra"`}},
		{"missing optional key is fine", review, map[string]any{"status": "approved"}, nil},
		{"missing required key is a reason", review, map[string]any{},
			[]string{`"status" is required but missing`}},
		{"object rejects a string", review, "x", []string{"value: expected map, got string"}},
		{"nested reasons carry the full path",
			schema.Object(map[string]*schema.Schema{"review": review, "log": schema.List(review)}),
			map[string]any{"review": map[string]any{"status": "maybe"}, "log": []any{map[string]any{}}},
			[]string{`"log[0].status" is required but missing`,
				`"review.status": expected one of ["approved","rejected"], got "maybe"`}},

		// constraints
		{"unknown constraint keys are ignored", str().WithConstraint("format", "email"), "x", nil},
		{"a nil schema accepts anything", nil, map[string]any{"a": 1}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.reasons, tc.schema.Validate(tc.value))
		})
	}
}

func TestValidateTruncatesLongValuesInReasons(t *testing.T) {
	t.Parallel()
	reasons := schema.Enum("a").Validate(strings.Repeat("é", 500))
	require.Len(t, reasons, 1)
	assert.Less(t, len(reasons[0]), 200)
	assert.True(t, strings.HasSuffix(reasons[0], "…"))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		schema   *schema.Schema
		problems []string
	}{
		{"a scalar is valid", schema.String(), nil},
		{"a full object is valid", schema.Object(map[string]*schema.Schema{
			"tags": schema.List(schema.Enum("a", "b")).WithDefault([]any{"a"}),
		}).WithMetadata("ui", "form").AsRequired(), nil},
		{"unknown type", &schema.Schema{Type: "date"},
			[]string{`schema: unknown type "date" (expected one of boolean, enum, float, integer, list, map, object, string)`}},
		{"missing type", &schema.Schema{},
			[]string{`schema: unknown type "" (expected one of boolean, enum, float, integer, list, map, object, string)`}},
		{"list without item", &schema.Schema{Type: schema.TypeList},
			[]string{"schema: a list schema must have an item schema"}},
		{"item on a non-list", &schema.Schema{Type: schema.TypeMap, Item: schema.String()},
			[]string{`schema: only a list schema may have an item schema, this one is "map"`}},
		{"invalid nested child", schema.Object(map[string]*schema.Schema{
			"a": {Type: schema.TypeList, Item: &schema.Schema{Type: "x"}},
		}), []string{`schema.fields.a.item: unknown type "x" (expected one of boolean, enum, float, integer, list, map, object, string)`}},
		{"nil child", &schema.Schema{Type: schema.TypeObject, Fields: map[string]*schema.Schema{"a": nil}},
			[]string{"schema.fields.a: schema is missing"}},
		{"reserved field name", schema.Object(map[string]*schema.Schema{"$a": schema.String()}),
			[]string{`schema: field name "$a" is reserved (names starting with "$" are not portable)`}},
		{"non-portable values", &schema.Schema{Type: schema.TypeEnum, Values: []any{struct{}{}}},
			[]string{"schema: values: non-portable value at [0]: unsupported type struct {}"}},
		{"non-portable constraints", &schema.Schema{Type: schema.TypeString, Constraints: map[string]any{"min_length": 1}},
			[]string{"schema: constraints: non-portable value at min_length: unsupported type int"}},
		{"non-portable metadata", &schema.Schema{Type: schema.TypeString, Metadata: map[string]any{"$x": true}},
			[]string{`schema: metadata: non-portable value at $x: keys starting with "$" are reserved`}},
		{"non-portable default", &schema.Schema{Type: schema.TypeInteger, Default: 1, HasDefault: true},
			[]string{"schema: default: non-portable value: unsupported type int"}},
		{"default failing its own schema", schema.Integer().WithConstraint("min", 5).WithDefault(2),
			[]string{"schema: default does not satisfy the schema: value: expected at least 5, got 2"}},
		{"explicit null default on an optional schema", schema.String().WithDefault(nil), nil},
		{"explicit null default on a required schema", schema.String().AsRequired().WithDefault(nil),
			[]string{"schema: default does not satisfy the schema: value is required but was nil"}},
		{"nil schema", nil, []string{"schema: schema is missing"}},
		{"a schema that contains itself", tree(), []string{"schema: contains itself; a recursive schema has no wire form"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.problems, schema.Check(tc.schema))
		})
	}
}

func TestCompatible(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name           string
		output, source *schema.Schema
		want           bool
	}{
		{"same scalar type", schema.String().AsRequired(), schema.String(), true},
		{"different types", schema.Float(), schema.Integer(), false},
		{"enum output covers the source values", schema.Enum("a", "b", "c"), schema.Enum("b", "a"), true},
		{"enum output misses a source value", schema.Enum("a"), schema.Enum("a", "b"), false},
		{"enum membership is strict", schema.Enum(1.0), schema.Enum(1), false},
		{"list output without item accepts any list", &schema.Schema{Type: schema.TypeList}, schema.List(schema.String()), true},
		{"list items are checked recursively", schema.List(schema.Enum("a", "b")), schema.List(schema.Enum("a")), true},
		{"incompatible list items", schema.List(schema.Integer()), schema.List(schema.String()), false},
		{"output item without source item", schema.List(schema.String()), &schema.Schema{Type: schema.TypeList}, false},
		{"objects compare by type only", schema.Object(nil), schema.Object(map[string]*schema.Schema{"a": schema.String()}), true},
		{"nil schemas", nil, schema.String(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, schema.Compatible(tc.output, tc.source))
		})
	}
}

// tree is a schema that contains itself, as Go allows: a node with a list
// of child nodes.
func tree() *schema.Schema {
	t := &schema.Schema{Type: schema.TypeObject}
	t.Fields = map[string]*schema.Schema{"children": {Type: schema.TypeList, Item: t}}
	return t
}
