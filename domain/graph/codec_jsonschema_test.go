package graph_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

const jsonSchemaPath = "../../docs/graph.schema.json"

func loadPublishedSchema(t testing.TB) map[string]any {
	t.Helper()
	data, err := os.ReadFile(jsonSchemaPath)
	require.NoError(t, err)
	raw, err := value.DecodeJSON(data)
	require.NoError(t, err, "docs/graph.schema.json must be valid JSON")
	root, ok := raw.(map[string]any)
	require.True(t, ok, "the schema must be a JSON object")
	return root
}

func jsonSchemaDef(t testing.TB, root map[string]any, name string) map[string]any {
	t.Helper()
	def, ok := root["$defs"].(map[string]any)[name].(map[string]any)
	require.True(t, ok, "$defs/%s is missing", name)
	return def
}

func TestPublishedSchemaListsTheCodecKeys(t *testing.T) {
	t.Parallel()
	root := loadPublishedSchema(t)
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", root["$schema"])
	assert.Equal(t, "#/$defs/graph", root["$ref"], "the document root is the graph record")

	for def, keys := range graph.WireKeySets {
		t.Run(def, func(t *testing.T) {
			t.Parallel()
			record := jsonSchemaDef(t, root, def)
			props, ok := record["properties"].(map[string]any)
			require.True(t, ok, "%s has no properties", def)
			assert.ElementsMatch(t, keys, value.SortedKeys(props), "properties of %s", def)
			assert.Equal(t, false, record["additionalProperties"], "%s must reject unknown keys", def)
		})
	}

	t.Run("valueSchema", func(t *testing.T) {
		t.Parallel()
		record := jsonSchemaDef(t, root, "valueSchema")
		props := value.SortedKeys(record["properties"].(map[string]any))
		assert.ElementsMatch(t, []string{"type", "fields", "item", "values", "required", "default", "constraints", "metadata"}, props)
		assert.Equal(t, false, record["additionalProperties"])
		// The schema codec accepts exactly these keys.
		for _, key := range props {
			if key == "type" {
				continue
			}
			_, err := schema.FromMap(map[string]any{"type": "string", key: nil})
			assert.NoError(t, err, "schema.FromMap rejects %q", key)
		}
		_, err := schema.FromMap(map[string]any{"type": "string", "format": "x"})
		assert.Error(t, err, "schema.FromMap accepts a key the JSON Schema does not list")
	})
}

// Documents a JSON Schema validator accepts but Parse refuses: the root
// description must name each of these limits.
func TestPublishedSchemaNamesWhatItCannotExpress(t *testing.T) {
	t.Parallel()
	description, _ := loadPublishedSchema(t)["description"].(string)
	for doc, limit := range map[string]string{
		`{"schema_version":1,"id":"g","metadata":{"n":9223372036854775808}}`: "signed 64-bit integer",
		`{"schema_version":1,"id":"g","metadata":{"n":1e400}}`:               "finite 64-bit float",
		`{"schema_version":1,"id":"g","description":"\udc00"}`:               "lone surrogate",
		`{"schema_version":1,"id":"g","id":"h"}`:                             "repeat a key",
		`{"schema_version":1.0,"id":"g"}`:                                    "without a fraction or exponent",
		`{"schema_version":1,"id":"g","metadata":{"deep":` + strings.Repeat("[", value.MaxDepth) + strings.Repeat("]", value.MaxDepth) + `}}`: fmt.Sprintf("nest at most %d deep", value.MaxDepth),
	} {
		_, err := graph.Parse([]byte(doc))
		require.ErrorIs(t, err, graph.ErrInvalidDocument, doc)
		assert.Contains(t, description, limit, "the schema's description does not say why Parse refuses %s", doc)
	}
}

func TestPublishedSchemaAcceptsWhatTheCodecWrites(t *testing.T) {
	t.Parallel()
	validator := newJSONSchemaValidator(loadPublishedSchema(t))

	require.NoError(t, validator.validate(wireDecodeMap(t, wireExampleJSON)), "the spec example")
	require.NoError(t, validator.validate(map[string]any{"schema_version": int64(1), "id": "g"}), "the smallest document")
	require.NoError(t, validator.validate(wireDecodeMap(t, `{"schema_version":1,"id":"g","name":null,"nodes":null,
		"fields":{"f":{"kind":null,"schema":{"type":"list","item":null,"required":null},"reducer":null,"metadata":null}},
		"edges":{"e":{"from":null,"guard":{"op":"all","args":null}}}}`)), "null for optional keys")

	rapid.Check(t, func(t *rapid.T) {
		g := wireGenGraph().Draw(t, "graph")
		m, err := g.ToMap()
		require.NoError(t, err)
		require.NoError(t, validator.validate(m))
	})
}

func TestPublishedSchemaRejectsWhatTheCodecRejects(t *testing.T) {
	t.Parallel()
	validator := newJSONSchemaValidator(loadPublishedSchema(t))
	docs := map[string]string{}
	for _, tc := range wireMalformedDocuments {
		docs[tc.name] = tc.doc
	}
	for name, tc := range wireDollarKeyDocuments {
		docs["$ key in "+name] = tc.doc
	}
	docs["passthrough with the module tag"] = `{"schema_version":1,"id":"g","nodes":{"n":{"implementation":{"type":"module","implementation":"x","handler":"y"}}}}`

	for name, doc := range docs {
		raw, err := value.DecodeJSON([]byte(doc))
		if err != nil {
			continue // not JSON at all
		}
		if _, isObject := raw.(map[string]any); !isObject {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, parseErr := graph.Parse([]byte(doc))
			require.Error(t, parseErr, "the codec must reject it")
			assert.Error(t, validator.validate(raw), "the JSON Schema must reject it")
		})
	}
}

// jsonSchemaValidator checks instances against the subset of JSON Schema
// 2020-12 that docs/graph.schema.json uses. An unknown keyword is an error,
// so the schema cannot use a rule this test does not check. "integer"
// means an int64 (Docket keeps integers and floats distinct).
type jsonSchemaValidator struct {
	root     map[string]any
	mu       sync.Mutex // parallel subtests share a validator
	patterns map[string]*regexp.Regexp
}

func newJSONSchemaValidator(root map[string]any) *jsonSchemaValidator {
	return &jsonSchemaValidator{root: root, patterns: map[string]*regexp.Regexp{}}
}

func (v *jsonSchemaValidator) validate(instance any) error {
	return v.check(v.root, instance, "")
}

var jsonSchemaAnnotations = []string{"$schema", "$id", "title", "description", "$comment", "$defs"}

func (v *jsonSchemaValidator) check(s any, inst any, at string) error {
	if b, ok := s.(bool); ok {
		if !b {
			return fmt.Errorf("%s: not allowed", at)
		}
		return nil
	}
	sm, ok := s.(map[string]any)
	if !ok {
		return fmt.Errorf("%s: schema is not an object", at)
	}
	for _, kw := range value.SortedKeys(sm) {
		if err := v.keyword(sm, kw, inst, at); err != nil {
			return err
		}
	}
	return nil
}

func (v *jsonSchemaValidator) keyword(sm map[string]any, kw string, inst any, at string) error {
	arg := sm[kw]
	switch kw {
	case "$ref":
		ref := arg.(string)
		target := any(v.root)
		for _, part := range strings.Split(strings.TrimPrefix(ref, "#"), "/")[1:] {
			m, ok := target.(map[string]any)
			if !ok {
				return fmt.Errorf("bad $ref %s", ref)
			}
			if target, ok = m[part]; !ok {
				return fmt.Errorf("dangling $ref %s", ref)
			}
		}
		return v.check(target, inst, at)
	case "type":
		names := []any{arg}
		if list, ok := arg.([]any); ok {
			names = list
		}
		for _, n := range names {
			if jsonSchemaHasType(n.(string), inst) {
				return nil
			}
		}
		return fmt.Errorf("%s: want type %v", at, arg)
	case "const":
		if !value.NumericEqual(arg, inst) {
			return fmt.Errorf("%s: want %v", at, arg)
		}
	case "enum":
		for _, e := range arg.([]any) {
			if value.NumericEqual(e, inst) {
				return nil
			}
		}
		return fmt.Errorf("%s: not one of %v", at, arg)
	case "required":
		if m, ok := inst.(map[string]any); ok {
			for _, k := range arg.([]any) {
				if _, present := m[k.(string)]; !present {
					return fmt.Errorf("%s: missing %s", at, k)
				}
			}
		}
	case "properties":
		if m, ok := inst.(map[string]any); ok {
			for k, sub := range arg.(map[string]any) {
				if val, present := m[k]; present {
					if err := v.check(sub, val, at+"."+k); err != nil {
						return err
					}
				}
			}
		}
	case "additionalProperties":
		if m, ok := inst.(map[string]any); ok {
			declared, _ := sm["properties"].(map[string]any)
			for _, k := range value.SortedKeys(m) {
				if _, isDeclared := declared[k]; !isDeclared {
					if err := v.check(arg, m[k], at+"."+k); err != nil {
						return err
					}
				}
			}
		}
	case "propertyNames":
		if m, ok := inst.(map[string]any); ok {
			for k := range m {
				if err := v.check(arg, k, at+".<key "+k+">"); err != nil {
					return err
				}
			}
		}
	case "items":
		if list, ok := inst.([]any); ok {
			for i, e := range list {
				if err := v.check(arg, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case "pattern":
		if str, ok := inst.(string); ok {
			v.mu.Lock()
			re, ok := v.patterns[arg.(string)]
			if !ok {
				re = regexp.MustCompile(arg.(string))
				v.patterns[arg.(string)] = re
			}
			v.mu.Unlock()
			if !re.MatchString(str) {
				return fmt.Errorf("%s: %q does not match %s", at, str, arg)
			}
		}
	case "not":
		if v.check(arg, inst, at) == nil {
			return fmt.Errorf("%s: matches a forbidden schema", at)
		}
	case "anyOf":
		for _, sub := range arg.([]any) {
			if v.check(sub, inst, at) == nil {
				return nil
			}
		}
		return fmt.Errorf("%s: matches none of anyOf", at)
	case "if":
		branch := "then"
		if v.check(arg, inst, at) != nil {
			branch = "else"
		}
		if sub, ok := sm[branch]; ok {
			return v.check(sub, inst, at)
		}
	case "then", "else":
		// evaluated with "if"
	default:
		if !slices.Contains(jsonSchemaAnnotations, kw) {
			return fmt.Errorf("keyword %q is not supported by this test's validator", kw)
		}
	}
	return nil
}

func jsonSchemaHasType(name string, inst any) bool {
	switch inst.(type) {
	case nil:
		return name == "null"
	case bool:
		return name == "boolean"
	case string:
		return name == "string"
	case int64:
		return name == "integer" || name == "number"
	case float64:
		return name == "number"
	case []any:
		return name == "array"
	case map[string]any:
		return name == "object"
	}
	return false
}
