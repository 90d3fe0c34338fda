package reducer

import "github.com/docketgo/docket/domain/schema"

// CONTRACT STUBS: the reducer implementer replaces these bodies, keeping
// every signature.

// Kind returns the reducer type, last_value for the zero Reducer.
func (r Reducer) Kind() Type { panic("unimplemented") }

// Zero returns the reducer's zero value ([] for append/union, {} for merge,
// 0 for sum); ok is false for last_value and first_value.
func (r Reducer) Zero() (v any, ok bool) { panic("unimplemented") }

// CheckOpts returns the problems with r's type and options (unknown type,
// append.unique not bool, append.max_length not a positive int, union.by not
// a string or non-empty string list, merge.deep not bool).
func CheckOpts(r Reducer) []string { panic("unimplemented") }

// CheckSchema pairs a reducer with its field schema: errors for
// reducer_schema_mismatch (append/union need list, sum needs integer/float,
// merge needs map/object); warnings for ambiguous_list_write (append/union
// item is itself a list).
func CheckSchema(r Reducer, field *schema.Schema) (errs, warnings []string) { panic("unimplemented") }

// WriteSchema is the schema one write must satisfy for a field with this
// reducer (spec §2.4); nil field schema means writes are not validated.
func WriteSchema(r Reducer, field *schema.Schema, write any) *schema.Schema { panic("unimplemented") }

// Fold folds writes (already in sorted writer order) onto current. With
// hasCurrent false the field has no committed value and no default.
func Fold(r Reducer, current any, hasCurrent bool, writes []any) any { panic("unimplemented") }
