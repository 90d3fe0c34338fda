package graph_test

import (
	"strings"
	"testing"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
)

// openRegistry registers every "app.*" implementation; "app.defaults" has
// a config schema with defaults, every other one accepts any config.
type openRegistry struct{}

func (openRegistry) ConfigSchema(ref string) (*schema.Schema, bool) {
	if ref == "app.defaults" {
		return &schema.Schema{Type: schema.TypeObject, Constraints: map[string]any{"open": true},
			Fields: map[string]*schema.Schema{"level": {Type: schema.TypeInteger, Default: int64(1), HasDefault: true}}}, true
	}
	return nil, strings.HasPrefix(ref, "app.")
}

// specExampleForCompiler is the spec's wire example with the reviewer's
// implementation swapped for one whose config schema has defaults.
var specExampleForCompiler = strings.Replace(wireExampleJSON,
	`"implementation": "app.reviewer"`, `"implementation": "app.defaults"`, 1)

// FuzzCompile feeds parsed documents to the compiler: it must never panic,
// Compile must fail exactly when Verify reports an error, and a compiled
// graph's effective document must read back to the same hash.
func FuzzCompile(f *testing.F) {
	f.Add([]byte(specExampleForCompiler))
	f.Add([]byte(`{"schema_version": 1, "id": "empty"}`))
	f.Add([]byte(`{"schema_version": 1, "id": "noop", "edges": {"e": {"from": "$start", "to": "$finish"}}}`))
	f.Add([]byte(`{"schema_version": 1, "id": "loop", "nodes": {"a": {"implementation": {"type": "module", "implementation": "app.a"}}},
	  "edges": {"s": {"from": "$start", "to": "a"}, "l": {"from": ["a"], "to": "a"}, "bad": {"from": "a", "to": "$start"}},
	  "policies": {"max_supersteps": 0}}`))
	f.Add([]byte(`{"schema_version": 1, "id": "guards", "inputs": {"x": {"kind": "input", "schema": {"type": "map"}}},
	  "nodes": {"a": {"implementation": {"type": "module", "implementation": "app.defaults"}, "config": {"level": "high"}}},
	  "edges": {"s": {"from": "$start", "to": "a", "guard": {"op": "path", "args": ["x", [1.5]]}},
	            "f": {"from": "a", "to": "$finish", "guard": {"op": "exists", "args": [{"$guard": {"op": "changed", "args": ["x"]}}]}}}}`))

	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := graph.Parse(data)
		if err != nil {
			return
		}
		diags := graph.Verify(g, openRegistry{}, graph.Options{})
		failed := false
		for _, d := range diags {
			if d.Code == "" || d.Message == "" || d.Path == nil {
				t.Fatalf("incomplete diagnostic %+v", d)
			}
			failed = failed || d.Severity == graph.SeverityError
		}
		c, err := graph.Compile(g, openRegistry{}, graph.Options{})
		if failed != (err != nil) {
			t.Fatalf("Verify errors %v but Compile returned %v", failed, err)
		}
		if err != nil {
			return
		}
		stored, err := c.Effective.MarshalJSON()
		if err != nil {
			t.Fatalf("effective document does not encode: %v", err)
		}
		back, err := graph.Parse(stored)
		if err != nil {
			t.Fatalf("effective document does not parse: %v", err)
		}
		again, err := graph.Compile(back, openRegistry{}, graph.Options{EffectiveDocument: true})
		if err != nil {
			t.Fatalf("effective document does not compile: %v", err)
		}
		if again.Hash != c.Hash {
			t.Fatalf("hash changed across a store: %s != %s", again.Hash, c.Hash)
		}
	})
}
