package schema

import "errors"

// CONTRACT STUBS: the schema implementer replaces these bodies, keeping
// every signature.

// ErrInvalidSchema is wrapped by FromMap errors.
var ErrInvalidSchema = errors.New("invalid schema")

// Validate returns the reasons v does not satisfy s (nil when it does).
// Reasons are sentences such as `value is required but was nil` or
// `"name": expected string, got integer`.
func (s *Schema) Validate(v any) []string { panic("unimplemented") }

// Check returns the problems that make s itself invalid (unknown type, list
// without item, item on a non-list, non-portable values, a default that
// fails its own schema, …); nil when s is valid.
func Check(s *Schema) []string { panic("unimplemented") }

// ToMap renders the wire form: keys type, fields, item, values, required
// (omitted when false), default (only when HasDefault; an explicit null stays
// null), constraints, metadata (empty maps omitted).
func (s *Schema) ToMap() map[string]any { panic("unimplemented") }

// FromMap parses the wire form, rejecting unknown keys and bad shapes with
// errors wrapping ErrInvalidSchema. It does not run Check.
func FromMap(m map[string]any) (*Schema, error) { panic("unimplemented") }

// Clone deep-copies s.
func (s *Schema) Clone() *Schema { panic("unimplemented") }
