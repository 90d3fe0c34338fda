// Package schema is Docket's value-schema IR: the types a field, an input,
// an interrupt resolution or a node configuration may hold, with their
// constraints, and the validation of portable values against them.
//
// It is not a JSON Schema implementation: the IR is deliberately small
// (string, float, integer, boolean, map, list, object, enum) so that every
// adapter and every language can evaluate it identically.
//
// Every schema accepts null (nil) unless it is required (Schema.Required,
// AsRequired): Enum("approve", "revise") accepts "approve", "revise" and
// null. Require the schemas of interrupt resolutions and inputs that must
// hold a value.
package schema

// Type names a schema type as written on the wire.
type Type string

// The schema types.
const (
	TypeString  Type = "string"
	TypeFloat   Type = "float"
	TypeInteger Type = "integer"
	TypeBoolean Type = "boolean"
	TypeMap     Type = "map"
	TypeList    Type = "list"
	TypeObject  Type = "object"
	TypeEnum    Type = "enum"
)

// Schema describes the values a slot accepts.
//
// Default has a distinct absent state: HasDefault false means "no default",
// while HasDefault true with Default nil is an explicit null default. The
// schema default is used only to materialize node-config defaults (the
// top-level keys of an object config schema); it never seeds state.
type Schema struct {
	Type        Type
	Fields      map[string]*Schema // object children
	Item        *Schema            // list element schema; required for lists, nil otherwise
	Values      []any              // enum members (strict equality)
	Required    bool               // null is rejected when true, at every depth
	Default     any
	HasDefault  bool
	Constraints map[string]any // min_length, max_length, pattern, min, max, min_items, max_items, open
	Metadata    map[string]any
}
