package schema

import "github.com/docketgo/docket/domain/value"

// The constraint keys Validate enforces. Other keys are kept and ignored.
const (
	ConstraintMinLength = "min_length" // string, inclusive, counted in runes
	ConstraintMaxLength = "max_length" // string, inclusive, counted in runes
	ConstraintPattern   = "pattern"    // string, unanchored RE2 search
	ConstraintMin       = "min"        // float/integer, inclusive
	ConstraintMax       = "max"        // float/integer, inclusive
	ConstraintMinItems  = "min_items"  // list, inclusive
	ConstraintMaxItems  = "max_items"  // list, inclusive
	ConstraintOpen      = "open"       // object: true admits unknown keys
)

// String is a schema for strings.
func String() *Schema { return &Schema{Type: TypeString} }

// Float is a schema for numbers; it accepts integers too.
func Float() *Schema { return &Schema{Type: TypeFloat} }

// Integer is a schema for integers only (1.0 is rejected).
func Integer() *Schema { return &Schema{Type: TypeInteger} }

// Boolean is a schema for booleans.
func Boolean() *Schema { return &Schema{Type: TypeBoolean} }

// Map is a schema for any string-keyed map.
func Map() *Schema { return &Schema{Type: TypeMap} }

// List is a schema for lists whose elements satisfy item. The item is
// cloned so later changes to it do not leak in.
func List(item *Schema) *Schema { return &Schema{Type: TypeList, Item: item.Clone()} }

// Object is a schema for maps with declared fields; unknown keys are
// rejected unless the schema is made Open. The fields are cloned.
func Object(fields map[string]*Schema) *Schema {
	s := &Schema{Type: TypeObject}
	if len(fields) > 0 {
		s.Fields = make(map[string]*Schema, len(fields))
		for name, child := range fields {
			s.Fields[name] = child.Clone()
		}
	}
	return s
}

// Enum is a schema for a closed set of values, compared strictly (1 and 1.0
// differ). Go values are normalized to their portable form (int becomes
// int64); a value that cannot be normalized is kept as given so Check
// reports it.
func Enum(values ...any) *Schema {
	s := &Schema{Type: TypeEnum}
	if len(values) > 0 {
		s.Values = make([]any, len(values))
		for i, v := range values {
			s.Values[i] = normalized(v)
		}
	}
	return s
}

// AsRequired returns a copy of s that rejects null (and, as an object
// field, rejects a missing key).
func (s *Schema) AsRequired() *Schema {
	out := s.Clone()
	out.Required = true
	return out
}

// AsOptional returns a copy of s that accepts null.
func (s *Schema) AsOptional() *Schema {
	out := s.Clone()
	out.Required = false
	return out
}

// WithDefault returns a copy of s with schema default v (nil is an explicit
// null default). The value is normalized to its portable form.
func (s *Schema) WithDefault(v any) *Schema {
	out := s.Clone()
	out.Default, out.HasDefault = normalized(v), true
	return out
}

// WithoutDefault returns a copy of s with no schema default.
func (s *Schema) WithoutDefault() *Schema {
	out := s.Clone()
	out.Default, out.HasDefault = nil, false
	return out
}

// WithConstraint returns a copy of s with constraint key set to v (see the
// Constraint* keys). The value is normalized to its portable form.
func (s *Schema) WithConstraint(key string, v any) *Schema {
	out := s.Clone()
	if out.Constraints == nil {
		out.Constraints = map[string]any{}
	}
	out.Constraints[key] = normalized(v)
	return out
}

// AsOpen returns a copy of an object schema that admits unknown keys.
func (s *Schema) AsOpen() *Schema { return s.WithConstraint(ConstraintOpen, true) }

// WithMetadata returns a copy of s with metadata key set to v, normalized to
// its portable form.
func (s *Schema) WithMetadata(key string, v any) *Schema {
	out := s.Clone()
	if out.Metadata == nil {
		out.Metadata = map[string]any{}
	}
	out.Metadata[key] = normalized(v)
	return out
}

// WithField returns a copy of an object schema with field name set to a
// clone of child.
func (s *Schema) WithField(name string, child *Schema) *Schema {
	out := s.Clone()
	if out.Fields == nil {
		out.Fields = map[string]*Schema{}
	}
	out.Fields[name] = child.Clone()
	return out
}

// IsOpen reports whether an object schema admits unknown keys
// (constraints.open is exactly true).
func (s *Schema) IsOpen() bool {
	open, ok := s.Constraints[ConstraintOpen].(bool)
	return ok && open
}

func normalized(v any) any {
	n, err := value.Normalize(v)
	if err != nil {
		return v
	}
	return n
}
