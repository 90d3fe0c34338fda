// Package reducer folds the writes a superstep made to one state field into
// the field's next value. Folding is deterministic: writes arrive in sorted
// writer-node order and the result never depends on which node finished
// first.
package reducer

// Type names a reducer as written on the wire.
type Type string

// The six reducers.
const (
	LastValue  Type = "last_value"
	FirstValue Type = "first_value"
	Append     Type = "append"
	Union      Type = "union"
	Merge      Type = "merge"
	Sum        Type = "sum"
)

// Reducer is a reducer type with its options (append: unique, max_length;
// union: by; merge: deep). The zero Reducer means last_value.
type Reducer struct {
	Type Type
	Opts map[string]any
}
