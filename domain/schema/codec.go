package schema

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/docketgo/docket/domain/value"
)

// ErrInvalidSchema is wrapped by every FromMap error.
var ErrInvalidSchema = errors.New("invalid schema")

// DecodeError says where and why a wire schema could not be decoded. It
// matches ErrInvalidSchema with errors.Is.
type DecodeError struct {
	Path   string // dotted path to the offending schema, "" for the root (e.g. "fields.review.item")
	Reason string
}

func (e *DecodeError) Error() string {
	if e.Path == "" {
		return "invalid schema: " + e.Reason
	}
	return fmt.Sprintf("invalid schema at %s: %s", e.Path, e.Reason)
}

// Unwrap lets errors.Is match ErrInvalidSchema.
func (e *DecodeError) Unwrap() error { return ErrInvalidSchema }

// The wire keys of a schema map.
const (
	keyType        = "type"
	keyFields      = "fields"
	keyItem        = "item"
	keyValues      = "values"
	keyRequired    = "required"
	keyDefault     = "default"
	keyConstraints = "constraints"
	keyMetadata    = "metadata"
)

var wireKeys = map[string]bool{
	keyType: true, keyFields: true, keyItem: true, keyValues: true,
	keyRequired: true, keyDefault: true, keyConstraints: true, keyMetadata: true,
}

var knownTypes = map[Type]bool{
	TypeString: true, TypeFloat: true, TypeInteger: true, TypeBoolean: true,
	TypeMap: true, TypeList: true, TypeObject: true, TypeEnum: true,
}

// Known reports whether t is one of the eight schema types.
func (t Type) Known() bool { return knownTypes[t] }

// ContainsItself reports whether s is its own descendant. A schema built in
// Go can be (a tree whose children are trees); it has no wire form, and a
// walk over it, ToMap's included, would never end.
func (s *Schema) ContainsItself() bool { return s.within(nil) }

func (s *Schema) within(ancestors []*Schema) bool {
	if s == nil {
		return false
	}
	if slices.Contains(ancestors, s) {
		return true
	}
	ancestors = append(ancestors, s)
	for _, child := range s.Fields {
		if child.within(ancestors) {
			return true
		}
	}
	return s.Item.within(ancestors)
}

// ToMap renders the wire form (s must not contain itself): keys type, fields, item, values, required
// (omitted when false), default (only when HasDefault; an explicit null stays
// null), constraints, metadata (empty maps and lists omitted). A nil schema
// renders as nil. The result shares no containers with s.
func (s *Schema) ToMap() map[string]any {
	if s == nil {
		return nil
	}
	m := map[string]any{keyType: string(s.Type)}
	if len(s.Fields) > 0 {
		fields := make(map[string]any, len(s.Fields))
		for name, child := range s.Fields {
			// A nil child has no wire form; keep the key visible as null so
			// FromMap reports it rather than silently dropping the field.
			if child == nil {
				fields[name] = nil
				continue
			}
			fields[name] = child.ToMap()
		}
		m[keyFields] = fields
	}
	if s.Item != nil {
		m[keyItem] = s.Item.ToMap()
	}
	if len(s.Values) > 0 {
		m[keyValues] = value.Clone(s.Values)
	}
	if s.Required {
		m[keyRequired] = true
	}
	if s.HasDefault {
		m[keyDefault] = value.Clone(s.Default)
	}
	if len(s.Constraints) > 0 {
		m[keyConstraints] = value.Clone(s.Constraints)
	}
	if len(s.Metadata) > 0 {
		m[keyMetadata] = value.Clone(s.Metadata)
	}
	return m
}

// FromMap parses the wire form, rejecting unknown keys and bad shapes with a
// *DecodeError wrapping ErrInvalidSchema. A null for an optional key means
// the key is absent, except "default", where null is an explicit null
// default. It does not run Check, and the result shares no containers with m.
func FromMap(m map[string]any) (*Schema, error) {
	return fromMap(m, "")
}

func fromMap(m map[string]any, path string) (*Schema, error) {
	if m == nil {
		return nil, &DecodeError{Path: path, Reason: "schema must be a map, got null"}
	}
	for _, k := range value.SortedKeys(m) {
		if !wireKeys[k] {
			return nil, &DecodeError{Path: path, Reason: fmt.Sprintf("unknown key %q", k)}
		}
	}
	s := &Schema{}

	rawType, ok := m[keyType]
	if !ok || rawType == nil {
		return nil, &DecodeError{Path: path, Reason: `missing "type"`}
	}
	typeName, ok := rawType.(string)
	if !ok {
		return nil, &DecodeError{Path: path, Reason: fmt.Sprintf(`"type" must be a string, got %s`, value.KindName(rawType))}
	}
	s.Type = Type(typeName)
	if !s.Type.Known() {
		return nil, &DecodeError{Path: path, Reason: fmt.Sprintf(`unknown type %q (expected one of %s)`, typeName, typeList())}
	}

	if raw := m[keyFields]; raw != nil {
		fields, ok := raw.(map[string]any)
		if !ok {
			return nil, &DecodeError{Path: path, Reason: fmt.Sprintf(`"fields" must be a map, got %s`, value.KindName(raw))}
		}
		if len(fields) > 0 {
			s.Fields = make(map[string]*Schema, len(fields))
		}
		for _, name := range value.SortedKeys(fields) {
			childPath := joinPath(path, keyFields+"."+name)
			child, ok := fields[name].(map[string]any)
			if !ok {
				return nil, &DecodeError{Path: childPath, Reason: fmt.Sprintf("schema must be a map, got %s", value.KindName(fields[name]))}
			}
			decoded, err := fromMap(child, childPath)
			if err != nil {
				return nil, err
			}
			s.Fields[name] = decoded
		}
	}

	if raw := m[keyItem]; raw != nil {
		item, ok := raw.(map[string]any)
		if !ok {
			return nil, &DecodeError{Path: joinPath(path, keyItem), Reason: fmt.Sprintf("schema must be a map, got %s", value.KindName(raw))}
		}
		decoded, err := fromMap(item, joinPath(path, keyItem))
		if err != nil {
			return nil, err
		}
		s.Item = decoded
	}

	if raw := m[keyValues]; raw != nil {
		values, ok := raw.([]any)
		if !ok {
			return nil, &DecodeError{Path: path, Reason: fmt.Sprintf(`"values" must be a list, got %s`, value.KindName(raw))}
		}
		if err := portable(values, path, keyValues); err != nil {
			return nil, err
		}
		if len(values) > 0 {
			s.Values = value.Clone(values).([]any)
		}
	}

	if raw := m[keyRequired]; raw != nil {
		required, ok := raw.(bool)
		if !ok {
			return nil, &DecodeError{Path: path, Reason: fmt.Sprintf(`"required" must be a boolean, got %s`, value.KindName(raw))}
		}
		s.Required = required
	}

	if raw, ok := m[keyDefault]; ok {
		if err := portable(raw, path, keyDefault); err != nil {
			return nil, err
		}
		s.Default, s.HasDefault = value.Clone(raw), true
	}

	var err error
	if s.Constraints, err = openMap(m[keyConstraints], path, keyConstraints); err != nil {
		return nil, err
	}
	if s.Metadata, err = openMap(m[keyMetadata], path, keyMetadata); err != nil {
		return nil, err
	}
	return s, nil
}

// openMap decodes an optional string-keyed map of portable values; null and
// empty both decode to nil so round trips stay exact.
func openMap(raw any, path, key string) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, &DecodeError{Path: path, Reason: fmt.Sprintf("%q must be a map, got %s", key, value.KindName(raw))}
	}
	if err := portable(m, path, key); err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	return value.Clone(m).(map[string]any), nil
}

func portable(v any, path, key string) error {
	if err := value.Check(v); err != nil {
		return &DecodeError{Path: path, Reason: fmt.Sprintf("%q: %v", key, err)}
	}
	return nil
}

// Clone deep-copies s; a nil schema clones to nil.
func (s *Schema) Clone() *Schema { return s.cloneWithin(nil) }

// cloneOf pairs a schema on the path being cloned with its copy.
type cloneOf struct{ original, copy *Schema }

// cloneWithin clones s below ancestors. A schema that contains itself
// (built by hand in Go) gets a copy that contains itself at the same
// place, rather than a walk that never ends: Check and the graph builder
// then report it.
func (s *Schema) cloneWithin(ancestors []cloneOf) *Schema {
	if s == nil {
		return nil
	}
	for _, a := range ancestors {
		if a.original == s {
			return a.copy
		}
	}
	out := &Schema{
		Type:       s.Type,
		Required:   s.Required,
		Default:    value.Clone(s.Default),
		HasDefault: s.HasDefault,
	}
	ancestors = append(ancestors, cloneOf{s, out})
	out.Item = s.Item.cloneWithin(ancestors)
	if s.Fields != nil {
		out.Fields = make(map[string]*Schema, len(s.Fields))
		for name, child := range s.Fields {
			out.Fields[name] = child.cloneWithin(ancestors)
		}
	}
	if s.Values != nil {
		out.Values = cloneList(s.Values)
	}
	if s.Constraints != nil {
		out.Constraints = cloneMap(s.Constraints)
	}
	if s.Metadata != nil {
		out.Metadata = cloneMap(s.Metadata)
	}
	return out
}

func cloneList(l []any) []any {
	out := make([]any, len(l))
	for i, e := range l {
		out[i] = value.Clone(e)
	}
	return out
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = value.Clone(e)
	}
	return out
}

func joinPath(path, segment string) string {
	if path == "" {
		return segment
	}
	return path + "." + segment
}

func typeList() string {
	names := make([]string, 0, len(knownTypes))
	for t := range knownTypes {
		names = append(names, string(t))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}
