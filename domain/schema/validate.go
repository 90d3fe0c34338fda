package schema

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/value"
)

// Validate returns the reasons v does not satisfy s (nil when it does).
//
// Null passes unless the schema is Required, at every depth. Reasons are
// sentences whose subject is `value` for the root and the quoted path for a
// nested value, for example `value is required but was nil` or
// `"review.status": expected one of ["approved","rejected"], got "maybe"`.
// The order of the reasons is deterministic: object keys are visited in
// ascending byte order and list elements by index.
//
// Differences from the reference implementation, on purpose:
//   - min_length and max_length count Unicode code points (runes), not
//     grapheme clusters: "é" written as "e" plus a combining accent has
//     length 2 here and 1 in the reference.
//   - pattern is an RE2 (Go regexp) search, unanchored like the reference's
//     PCRE match; PCRE-only syntax such as look-around or backreferences is
//     an invalid pattern here and is reported as a reason.
//
// A nil schema accepts everything (a field without a schema is not
// validated).
func (s *Schema) Validate(v any) []string {
	if s == nil {
		return nil
	}
	var reasons []string
	validate(s, v, "", &reasons)
	return reasons
}

// subject names the value at path in a reason.
func subject(path string) string {
	if path == "" {
		return "value"
	}
	return strconv.Quote(path)
}

func validate(s *Schema, v any, path string, reasons *[]string) {
	if s == nil {
		return
	}
	if v == nil {
		if s.Required {
			*reasons = append(*reasons, subject(path)+" is required but was nil")
		}
		return
	}
	mismatch := func(expected string) {
		*reasons = append(*reasons, fmt.Sprintf("%s: expected %s, got %s", subject(path), expected, value.KindName(v)))
	}
	switch s.Type {
	case TypeString:
		str, ok := v.(string)
		if !ok {
			mismatch("string")
			return
		}
		validateString(s.Constraints, str, path, reasons)
	case TypeFloat:
		if !value.IsNumber(v) {
			mismatch("number")
			return
		}
		validateBounds(s.Constraints, v, ConstraintMin, ConstraintMax, "", path, reasons)
	case TypeInteger:
		if _, ok := v.(int64); !ok {
			mismatch("integer")
			return
		}
		validateBounds(s.Constraints, v, ConstraintMin, ConstraintMax, "", path, reasons)
	case TypeBoolean:
		if _, ok := v.(bool); !ok {
			mismatch("boolean")
		}
	case TypeMap:
		if _, ok := v.(map[string]any); !ok {
			mismatch("map")
		}
	case TypeEnum:
		for _, member := range s.Values {
			if value.Equal(member, v) {
				return
			}
		}
		*reasons = append(*reasons, fmt.Sprintf("%s: expected one of %s, got %s", subject(path), show(s.Values), show(v)))
	case TypeList:
		list, ok := v.([]any)
		if !ok {
			mismatch("list")
			return
		}
		for i, element := range list {
			validate(s.Item, element, fmt.Sprintf("%s[%d]", path, i), reasons)
		}
		validateBounds(s.Constraints, int64(len(list)), ConstraintMinItems, ConstraintMaxItems, " items", path, reasons)
	case TypeObject:
		object, ok := v.(map[string]any)
		if !ok {
			mismatch("map")
			return
		}
		validateObject(s, object, path, reasons)
	default:
		*reasons = append(*reasons, fmt.Sprintf("%s: schema has unknown type %q", subject(path), s.Type))
	}
}

func validateObject(s *Schema, object map[string]any, path string, reasons *[]string) {
	open := s.IsOpen()
	keys := make(map[string]bool, len(object)+len(s.Fields))
	for k := range object {
		keys[k] = true
	}
	for k := range s.Fields {
		keys[k] = true
	}
	for _, k := range value.SortedKeys(keys) {
		child, declared := s.Fields[k]
		v, present := object[k]
		switch {
		case !declared && !open:
			*reasons = append(*reasons, fmt.Sprintf("%s: unknown field %q", subject(path), k))
		case !declared:
			// Open objects admit unknown keys without looking at them.
		case present:
			validate(child, v, joinPath(path, k), reasons)
		case child != nil && child.Required:
			*reasons = append(*reasons, subject(joinPath(path, k))+" is required but missing")
		}
	}
}

func validateString(constraints map[string]any, str, path string, reasons *[]string) {
	// Runes, not graphemes: see Validate.
	length := int64(utf8.RuneCountInString(str))
	validateBounds(constraints, length, ConstraintMinLength, ConstraintMaxLength, " characters", path, reasons)
	raw, ok := constraints[ConstraintPattern]
	if !ok || raw == nil {
		return
	}
	pattern, ok := raw.(string)
	if !ok {
		*reasons = append(*reasons, fmt.Sprintf("%s: pattern constraint must be a string, got %s", subject(path), value.KindName(raw)))
		return
	}
	re, err := compilePattern(pattern)
	if err != nil {
		*reasons = append(*reasons, fmt.Sprintf("%s: invalid pattern constraint %s: %v", subject(path), strconv.Quote(pattern), err))
		return
	}
	if !re.MatchString(str) {
		*reasons = append(*reasons, fmt.Sprintf("%s: expected to match pattern %s, got %s", subject(path), strconv.Quote(pattern), show(str)))
	}
}

// validateBounds applies inclusive min/max constraints to a measured number;
// a bound that is not a number is ignored.
func validateBounds(constraints map[string]any, measured any, minKey, maxKey, unit, path string, reasons *[]string) {
	if lo := constraints[minKey]; value.IsNumber(lo) && value.CompareNumbers(measured, lo) < 0 {
		*reasons = append(*reasons, fmt.Sprintf("%s: expected at least %s%s, got %s%s", subject(path), show(lo), unit, show(measured), unit))
	}
	if hi := constraints[maxKey]; value.IsNumber(hi) && value.CompareNumbers(measured, hi) > 0 {
		*reasons = append(*reasons, fmt.Sprintf("%s: expected at most %s%s, got %s%s", subject(path), show(hi), unit, show(measured), unit))
	}
}

// maxShown caps how much of a value a reason quotes, so a large state value
// does not flood diagnostics.
const maxShown = 120

// show renders v as canonical JSON for a reason, truncated to maxShown bytes.
func show(v any) string {
	b, err := value.Canonical(v)
	s := string(b)
	if err != nil {
		s = fmt.Sprintf("%v", v)
	}
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Check returns the problems that make s itself invalid; nil when s is
// valid. A valid schema has a known type, field names that are UTF-8 text
// not starting with "$" whose children are valid, an item exactly when it is a list (and
// a valid one), portable values, constraints and metadata, and, when it has
// a default, a portable default that satisfies the schema itself.
//
// Each problem starts with the path of the offending schema ("schema" for
// the root, then e.g. "schema.fields.review.item").
func Check(s *Schema) []string {
	if s.ContainsItself() {
		// A walk over it would never end.
		return []string{"schema: contains itself; a recursive schema has no wire form"}
	}
	var problems []string
	check(s, "schema", &problems)
	return problems
}

func check(s *Schema, path string, problems *[]string) {
	add := func(format string, args ...any) {
		*problems = append(*problems, path+": "+fmt.Sprintf(format, args...))
	}
	if s == nil {
		add("schema is missing")
		return
	}
	if !s.Type.Known() {
		add("unknown type %q (expected one of %s)", s.Type, typeList())
	}
	for _, name := range value.SortedKeys(s.Fields) {
		child := path + ".fields." + name
		switch {
		case !utf8.ValidString(name):
			// Problems are text too: the path shows the name as it would be
			// encoded.
			child = path + ".fields." + strings.ToValidUTF8(name, "\uFFFD")
			add("field name %q is not UTF-8 text", name)
		case strings.HasPrefix(name, "$"):
			add("field name %q is reserved (names starting with \"$\" are not portable)", name)
		}
		check(s.Fields[name], child, problems)
	}
	switch {
	case s.Type == TypeList && s.Item == nil:
		add("a list schema must have an item schema")
	case s.Type == TypeList:
		check(s.Item, path+".item", problems)
	case s.Item != nil:
		add("only a list schema may have an item schema, this one is %q", s.Type)
	}
	if s.Values != nil {
		if err := value.Check(s.Values); err != nil {
			add("values: %v", err)
		}
	}
	if s.Constraints != nil {
		if err := value.Check(s.Constraints); err != nil {
			add("constraints: %v", err)
		}
	}
	if s.Metadata != nil {
		if err := value.Check(s.Metadata); err != nil {
			add("metadata: %v", err)
		}
	}
	if s.HasDefault {
		if err := value.Check(s.Default); err != nil {
			add("default: %v", err)
		} else if s.Type.Known() {
			for _, reason := range s.Validate(s.Default) {
				add("default does not satisfy the schema: %s", reason)
			}
		}
	}
}

// Compatible reports whether an output schema may present values of a
// source field schema: the types are the same; an enum output contains every
// source value; a list output with an item schema needs a source item
// compatible with it (recursively). A list output without an item accepts
// any source list. Both schemas are assumed valid (see Check).
func Compatible(output, source *Schema) bool {
	if output == nil || source == nil || output.Type != source.Type {
		return false
	}
	switch output.Type {
	case TypeEnum:
		for _, v := range source.Values {
			if !containsValue(output.Values, v) {
				return false
			}
		}
	case TypeList:
		if output.Item == nil {
			return true
		}
		if source.Item == nil {
			return false
		}
		return Compatible(output.Item, source.Item)
	}
	return true
}

func containsValue(list []any, v any) bool {
	for _, e := range list {
		if value.Equal(e, v) {
			return true
		}
	}
	return false
}
