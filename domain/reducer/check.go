package reducer

import (
	"fmt"

	"github.com/docketgo/docket/domain/schema"
)

// The options each reducer interprets; other keys are kept and ignored.
const (
	OptUnique    = "unique"     // append: bool, drop later duplicates
	OptMaxLength = "max_length" // append: positive int, keep the last n
	OptBy        = "by"         // union: key string or non-empty list of keys (a path)
	OptDeep      = "deep"       // merge: bool, merge nested maps recursively
)

// Known reports whether t is one of the six reducer types.
func (t Type) Known() bool {
	switch t {
	case LastValue, FirstValue, Append, Union, Merge, Sum:
		return true
	}
	return false
}

// CheckOpts returns the problems with r's type and options (unknown type,
// append.unique not bool, append.max_length not a positive int, union.by not
// a string or non-empty string list, merge.deep not bool). A present option
// holding null is a problem too. Each problem is a sentence naming the
// option; the compiler reports them as invalid_reducer.
func CheckOpts(r Reducer) []string {
	kind := r.Kind()
	if !kind.Known() {
		return []string{fmt.Sprintf("reducer type %q is not supported; supported types are %s",
			kind, "append, first_value, last_value, merge, sum, union")}
	}
	type rule struct {
		key, want string
		ok        func(any) bool
	}
	var rules []rule
	switch kind {
	case Append:
		rules = []rule{
			{OptUnique, "a boolean", isBool},
			{OptMaxLength, "a positive integer", isPositiveInt},
		}
	case Union:
		rules = []rule{{OptBy, "a string or a non-empty list of strings", isKeyPath}}
	case Merge:
		rules = []rule{{OptDeep, "a boolean", isBool}}
	}
	var problems []string
	for _, rl := range rules {
		v, present := r.Opts[rl.key]
		if present && !rl.ok(v) {
			problems = append(problems, fmt.Sprintf("%s reducer option %q must be %s, got %s", kind, rl.key, rl.want, describe(v)))
		}
	}
	return problems
}

func isBool(v any) bool { _, ok := v.(bool); return ok }

func isPositiveInt(v any) bool {
	n, ok := intOpt(v)
	return ok && n > 0
}

func isKeyPath(v any) bool {
	path, ok := keyPath(v)
	if !ok {
		return false
	}
	if _, single := v.(string); single {
		return true
	}
	return len(path) > 0
}

// CheckSchema pairs a reducer with its field schema: errors for
// reducer_schema_mismatch (append/union need list, sum needs integer/float,
// merge needs map/object); warnings for ambiguous_list_write (append/union
// item is itself a list, so a list write always concatenates and a single
// list element has to be wrapped in an outer list).
//
// A nil or invalid field schema (see schema.Check) gets no pairing error:
// it already has its own diagnostic.
func CheckSchema(r Reducer, field *schema.Schema) (errs, warnings []string) {
	kind := r.Kind()
	var allowed []schema.Type
	var want string
	switch kind {
	case Append, Union:
		allowed, want = []schema.Type{schema.TypeList}, "a list schema"
	case Sum:
		allowed, want = []schema.Type{schema.TypeFloat, schema.TypeInteger}, "a numeric (float or integer) schema"
	case Merge:
		allowed, want = []schema.Type{schema.TypeMap, schema.TypeObject}, "a map or object schema"
	}
	if allowed != nil && field != nil && schema.Check(field) == nil && !contains(allowed, field.Type) {
		errs = append(errs, fmt.Sprintf("%s reducer requires %s, got %q", kind, want, field.Type))
	}
	if (kind == Append || kind == Union) && field != nil && field.Type == schema.TypeList &&
		field.Item != nil && field.Item.Type == schema.TypeList {
		warnings = append(warnings, fmt.Sprintf(
			"%s reducer has a list-typed item; list writes concatenate, so appending a single list element requires wrapping it in an outer list", kind))
	}
	return errs, warnings
}

func contains(types []schema.Type, t schema.Type) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// WriteSchema is the schema one write must satisfy for a field with this
// reducer (spec §2.4); nil field schema means writes are not validated.
//
//   - last_value, first_value (and unknown types): the field schema.
//   - append, union: {list, item} for a list write, the item schema for any
//     other write (nil, so unvalidated, when the field has no item).
//   - merge on an object: the object with every top-level field made
//     optional, the object itself required and its default dropped; merge
//     on anything else: {field type, required}.
//   - sum: {field type, required}, constraints dropped (a write is an
//     increment, not the total).
//
// The result may share child schemas with field; treat it as read-only.
func WriteSchema(r Reducer, field *schema.Schema, write any) *schema.Schema {
	if field == nil {
		return nil
	}
	switch r.Kind() {
	case Append, Union:
		if _, isList := write.([]any); isList {
			return &schema.Schema{Type: schema.TypeList, Item: field.Item}
		}
		return field.Item
	case Merge:
		if field.Type != schema.TypeObject {
			return &schema.Schema{Type: field.Type, Required: true}
		}
		out := *field // shallow: only the top level changes
		out.Required = true
		out.Default, out.HasDefault = nil, false
		if field.Fields != nil {
			out.Fields = make(map[string]*schema.Schema, len(field.Fields))
			for name, child := range field.Fields {
				if child == nil {
					out.Fields[name] = nil
					continue
				}
				relaxed := *child
				relaxed.Required = false
				out.Fields[name] = &relaxed
			}
		}
		return &out
	case Sum:
		return &schema.Schema{Type: field.Type, Required: true}
	}
	return field
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return fmt.Sprintf("%t", x)
	case string:
		return fmt.Sprintf("%q", x)
	case int64, int:
		return fmt.Sprintf("%d", x)
	case float64:
		return fmt.Sprintf("%g (a float)", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
