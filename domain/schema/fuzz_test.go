package schema_test

import (
	"testing"

	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzSchemaValidate feeds arbitrary wire schemas and values through the
// decoder, Check and Validate: none may panic, every decoded schema must
// survive the wire round trip, and validation must be deterministic.
func FuzzSchemaValidate(f *testing.F) {
	seeds := []struct{ schema, value string }{
		{`{"type":"string","constraints":{"min_length":1,"max_length":3,"pattern":"^a"}}`, `"abc"`},
		{`{"type":"string","constraints":{"pattern":"("}}`, `"x"`},
		{`{"type":"integer","constraints":{"min":0,"max":10.5}}`, `1.0`},
		{`{"type":"float","required":true}`, `null`},
		{`{"type":"enum","values":["a",1,1.0,{"k":[null]}]}`, `{"k":[null]}`},
		{`{"type":"list","item":{"type":"list","item":{"type":"boolean","required":true}},"constraints":{"max_items":1}}`, `[[true,null],[]]`},
		{`{"type":"object","fields":{"a":{"type":"map","required":true}},"constraints":{"open":true}}`, `{"b":1}`},
		{`{"type":"object","fields":{"a":{"type":"string"}},"default":{"a":2}}`, `{"a":"x","c":[]}`},
		{`{"type":"list"}`, `[1]`},
		{`{"type":"map","item":{"type":"string"},"default":null,"metadata":{"x":1}}`, `{}`},
		{`{"type":"nope"}`, `1`},
	}
	for _, s := range seeds {
		f.Add([]byte(s.schema), []byte(s.value))
	}
	f.Fuzz(func(t *testing.T, schemaJSON, valueJSON []byte) {
		raw, err := value.DecodeJSON(schemaJSON)
		if err != nil {
			return
		}
		m, ok := raw.(map[string]any)
		if !ok {
			return
		}
		s, err := schema.FromMap(m)
		if err != nil {
			assert.ErrorIs(t, err, schema.ErrInvalidSchema)
			return
		}
		back, err := schema.FromMap(s.ToMap())
		require.NoError(t, err, "ToMap output must decode")
		assert.Equal(t, s.ToMap(), back.ToMap())

		_ = schema.Check(s)
		v, err := value.DecodeJSON(valueJSON)
		if err != nil {
			return
		}
		assert.Equal(t, s.Validate(v), s.Validate(v))
		_ = schema.Compatible(s, s)
	})
}
