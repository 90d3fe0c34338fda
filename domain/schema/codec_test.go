package schema_test

import (
	"errors"
	"testing"

	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func decodeMap(t testing.TB, doc string) map[string]any {
	t.Helper()
	v, err := value.DecodeJSON([]byte(doc))
	require.NoError(t, err)
	m, ok := v.(map[string]any)
	require.True(t, ok, "document is not a JSON object")
	return m
}

func TestToMapWritesTheWireForm(t *testing.T) {
	t.Parallel()
	s := schema.Object(map[string]*schema.Schema{
		"status": schema.Enum("approved", "rejected").AsRequired(),
		"tags":   schema.List(schema.String().WithConstraint(schema.ConstraintMinLength, 1)),
		"score":  schema.Float(),
	}).AsOpen().WithMetadata("owner", "team-a")

	got, err := value.Canonical(s.ToMap())
	require.NoError(t, err)
	assert.Equal(t,
		`{"constraints":{"open":true},"fields":{"score":{"type":"float"},`+
			`"status":{"required":true,"type":"enum","values":["approved","rejected"]},`+
			`"tags":{"item":{"constraints":{"min_length":1},"type":"string"},"type":"list"}},`+
			`"metadata":{"owner":"team-a"},"type":"object"}`,
		string(got))
}

func TestToMapOmitsFalseRequiredEmptyMapsAndAbsentDefault(t *testing.T) {
	t.Parallel()
	s := &schema.Schema{Type: schema.TypeMap, Fields: map[string]*schema.Schema{}, Values: []any{},
		Constraints: map[string]any{}, Metadata: map[string]any{}}
	assert.Equal(t, map[string]any{"type": "map"}, s.ToMap())
}

func TestDefaultAbsentAndExplicitNullStayDistinct(t *testing.T) {
	t.Parallel()
	absent := schema.String()
	explicitNull := schema.String().WithDefault(nil)

	absentMap := absent.ToMap()
	nullMap := explicitNull.ToMap()
	assert.NotContains(t, absentMap, "default")
	require.Contains(t, nullMap, "default")
	assert.Nil(t, nullMap["default"])

	for _, tc := range []struct {
		name       string
		doc        string
		hasDefault bool
	}{
		{"absent", `{"type":"string"}`, false},
		{"explicit null", `{"type":"string","default":null}`, true},
		{"explicit value", `{"type":"string","default":"x"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := schema.FromMap(decodeMap(t, tc.doc))
			require.NoError(t, err)
			assert.Equal(t, tc.hasDefault, s.HasDefault)
			assert.Equal(t, decodeMap(t, tc.doc), s.ToMap())
		})
	}
}

func TestFromMapReadsEveryKey(t *testing.T) {
	t.Parallel()
	s, err := schema.FromMap(decodeMap(t, `{"type":"list","required":true,"default":[1],
		"item":{"type":"integer","constraints":{"min":0}},"constraints":{"max_items":3},
		"metadata":{"ui":"chips"}}`))
	require.NoError(t, err)
	assert.Equal(t, &schema.Schema{
		Type: schema.TypeList, Required: true, Default: []any{int64(1)}, HasDefault: true,
		Item:        &schema.Schema{Type: schema.TypeInteger, Constraints: map[string]any{"min": int64(0)}},
		Constraints: map[string]any{"max_items": int64(3)},
		Metadata:    map[string]any{"ui": "chips"},
	}, s)
}

func TestFromMapTreatsNullOptionalKeysAsAbsent(t *testing.T) {
	t.Parallel()
	s, err := schema.FromMap(decodeMap(t, `{"type":"object","fields":null,"item":null,"values":null,
		"required":null,"constraints":null,"metadata":null}`))
	require.NoError(t, err)
	assert.Equal(t, &schema.Schema{Type: schema.TypeObject}, s)
}

func TestFromMapRejectsBadShapesNamingTheKeyAndPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc, path, mention string
	}{
		{"unknown key", `{"type":"string","format":"email"}`, "", `"format"`},
		{"missing type", `{"required":true}`, "", `"type"`},
		{"type not a string", `{"type":1}`, "", `"type"`},
		{"unknown type", `{"type":"date"}`, "", `"date"`},
		{"fields not a map", `{"type":"object","fields":[]}`, "", `"fields"`},
		{"field not a map", `{"type":"object","fields":{"a":"string"}}`, "fields.a", "must be a map"},
		{"nested unknown key", `{"type":"object","fields":{"a":{"type":"list","item":{"type":"string","x":1}}}}`, "fields.a.item", `"x"`},
		{"item not a map", `{"type":"list","item":true}`, "item", "must be a map"},
		{"values not a list", `{"type":"enum","values":{"a":1}}`, "", `"values"`},
		{"required not a bool", `{"type":"string","required":"yes"}`, "", `"required"`},
		{"constraints not a map", `{"type":"string","constraints":[1]}`, "", `"constraints"`},
		{"metadata not a map", `{"type":"string","metadata":"x"}`, "", `"metadata"`},
		{"reserved key in metadata", `{"type":"string","metadata":{"$ref":1}}`, "", `"metadata"`},
		{"reserved key in default", `{"type":"map","default":{"$x":1}}`, "", `"default"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := schema.FromMap(decodeMap(t, tc.doc))
			require.Error(t, err)
			assert.ErrorIs(t, err, schema.ErrInvalidSchema)
			var decodeErr *schema.DecodeError
			require.True(t, errors.As(err, &decodeErr))
			assert.Equal(t, tc.path, decodeErr.Path)
			assert.Contains(t, err.Error(), tc.mention)
		})
	}
}

func TestFromMapRejectsNil(t *testing.T) {
	t.Parallel()
	_, err := schema.FromMap(nil)
	assert.ErrorIs(t, err, schema.ErrInvalidSchema)
}

func TestFromMapDoesNotAliasItsInput(t *testing.T) {
	t.Parallel()
	m := decodeMap(t, `{"type":"enum","values":[["a"]],"default":{"k":[1]},"metadata":{"m":{"n":1}}}`)
	s, err := schema.FromMap(m)
	require.NoError(t, err)
	m["values"].([]any)[0].([]any)[0] = "changed"
	m["default"].(map[string]any)["k"] = "changed"
	m["metadata"].(map[string]any)["m"].(map[string]any)["n"] = "changed"
	assert.Equal(t, []any{[]any{"a"}}, s.Values)
	assert.Equal(t, map[string]any{"k": []any{int64(1)}}, s.Default)
	assert.Equal(t, map[string]any{"m": map[string]any{"n": int64(1)}}, s.Metadata)
}

func TestCloneIsDeep(t *testing.T) {
	t.Parallel()
	original := schema.Object(map[string]*schema.Schema{
		"tags": schema.List(schema.String()).WithDefault([]any{"a"}),
	}).WithConstraint(schema.ConstraintOpen, true).WithMetadata("k", []any{int64(1)})
	want := original.ToMap()

	c := original.Clone()
	c.Fields["tags"].Item.Type = schema.TypeInteger
	c.Fields["tags"].Default.([]any)[0] = "b"
	c.Fields["extra"] = schema.Boolean()
	c.Constraints["open"] = false
	c.Metadata["k"].([]any)[0] = int64(2)

	assert.Equal(t, want, original.ToMap())
	assert.Nil(t, (*schema.Schema)(nil).Clone())
}

// A schema built by hand to contain itself (a tree type) is copied with
// the same shape, so the builders return it for Check and the graph
// builder to report instead of recursing until the stack overflows.
func TestCloneKeepsASchemaThatContainsItself(t *testing.T) {
	t.Parallel()
	c := tree().Clone()
	require.True(t, c.ContainsItself())
	assert.Same(t, c, c.Fields["children"].Item, "the copy contains itself, not the original")
	for _, derived := range []*schema.Schema{
		tree().AsRequired(), tree().WithDefault(map[string]any{}), tree().WithConstraint(schema.ConstraintOpen, true),
		schema.List(tree()), schema.Object(map[string]*schema.Schema{"root": tree()}), schema.Object(nil).WithField("root", tree()),
	} {
		assert.True(t, derived.ContainsItself())
		assert.NotEmpty(t, schema.Check(derived))
	}
}

func TestModifiersReturnCopies(t *testing.T) {
	t.Parallel()
	base := schema.Integer()
	required := base.AsRequired()
	withDefault := base.WithDefault(3)
	bounded := base.WithConstraint(schema.ConstraintMin, 0)

	assert.Equal(t, schema.Integer(), base, "the receiver is unchanged")
	assert.True(t, required.Required)
	assert.False(t, required.AsOptional().Required)
	assert.Equal(t, int64(3), withDefault.Default, "Go ints are normalized to int64")
	assert.True(t, withDefault.HasDefault)
	assert.False(t, withDefault.WithoutDefault().HasDefault)
	assert.Equal(t, map[string]any{"min": int64(0)}, bounded.Constraints)
	assert.Equal(t, []any{int64(1), "a"}, schema.Enum(1, "a").Values)

	field := schema.String()
	obj := schema.Object(nil).WithField("name", field)
	field.Required = true
	assert.False(t, obj.Fields["name"].Required, "WithField keeps its own copy")
	assert.True(t, schema.Object(nil).AsOpen().IsOpen())
	assert.False(t, schema.Object(nil).WithConstraint(schema.ConstraintOpen, "true").IsOpen())
}

// schemaGen generates valid-shaped schemas (not necessarily passing Check:
// defaults are arbitrary portable values) up to the given depth.
func schemaGen(depth int) *rapid.Generator[*schema.Schema] {
	return rapid.Custom(func(t *rapid.T) *schema.Schema {
		types := []schema.Type{schema.TypeString, schema.TypeFloat, schema.TypeInteger, schema.TypeBoolean, schema.TypeMap, schema.TypeEnum}
		if depth > 0 {
			types = append(types, schema.TypeList, schema.TypeObject)
		}
		s := &schema.Schema{Type: rapid.SampledFrom(types).Draw(t, "type")}
		switch s.Type {
		case schema.TypeList:
			s.Item = schemaGen(depth-1).Draw(t, "item")
		case schema.TypeObject:
			fields := rapid.MapOfN(rapid.StringMatching(`[a-z]{1,4}`), schemaGen(depth-1), 0, 3).Draw(t, "fields")
			if len(fields) > 0 {
				s.Fields = fields
			}
		case schema.TypeEnum:
			values := rapid.SliceOfN(portableValue(1), 1, 3).Draw(t, "values")
			s.Values = values
		}
		s.Required = rapid.Bool().Draw(t, "required")
		if rapid.Bool().Draw(t, "has_default") {
			s.Default, s.HasDefault = portableValue(2).Draw(t, "default"), true
		}
		constraints := rapid.MapOfN(rapid.SampledFrom([]string{"min", "max", "min_length", "pattern", "open", "custom"}),
			portableValue(1), 0, 2).Draw(t, "constraints")
		if len(constraints) > 0 {
			s.Constraints = constraints
		}
		metadata := rapid.MapOfN(rapid.StringMatching(`[a-z]{1,3}`), portableValue(1), 0, 2).Draw(t, "metadata")
		if len(metadata) > 0 {
			s.Metadata = metadata
		}
		return s
	})
}

// portableValue generates portable values nested up to depth.
func portableValue(depth int) *rapid.Generator[any] {
	scalar := rapid.OneOf(
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.StringN(0, 6, -1), func(s string) any { return s }),
		rapid.Map(rapid.Int64Range(-5, 5), func(i int64) any { return i }),
		rapid.Map(rapid.Float64Range(-5, 5), func(f float64) any { return f }),
	)
	if depth == 0 {
		return scalar
	}
	return rapid.OneOf(scalar, scalar,
		rapid.Map(rapid.SliceOfN(portableValue(depth-1), 0, 3), func(l []any) any { return l }),
		rapid.Map(rapid.MapOfN(rapid.StringMatching(`[a-z]{0,3}`), portableValue(depth-1), 0, 3), func(m map[string]any) any { return m }),
	)
}

func TestWireRoundTripPreservesEverySchema(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		s := schemaGen(3).Draw(t, "schema")
		wire := s.ToMap()
		// Through JSON, as stored documents travel.
		encoded, err := value.Canonical(wire)
		require.NoError(t, err)
		decoded, err := value.DecodeJSON(encoded)
		require.NoError(t, err)
		back, err := schema.FromMap(decoded.(map[string]any))
		require.NoError(t, err)
		assert.Equal(t, s, back)
		assert.Equal(t, wire, back.ToMap())
		assert.Equal(t, s, s.Clone())
	})
}
