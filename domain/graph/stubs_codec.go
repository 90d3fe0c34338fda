package graph

// CONTRACT STUBS (codec, guards): replace the bodies, keep the signatures.

// ToMap renders g as its wire map (string keys, portable values; empty maps,
// empty strings and required:false omitted; nested guards in non-boolean
// argument positions wrapped as {"$guard": …}). It fails with a
// *value.NotPortableError when open content is not portable.
func (g *Graph) ToMap() (map[string]any, error) { panic("unimplemented") }

// FromMap parses a wire map, rejecting unknown keys, bad shapes and
// unsupported schema versions with errors wrapping ErrInvalidDocument.
func FromMap(m map[string]any) (*Graph, error) { panic("unimplemented") }

// View is the public state view that guards and nodes read. Values holds
// committed values by public ID, else a non-null default; a key is absent
// when neither exists. Versions holds committed versions (absent means 0).
// Changed holds the public field IDs changed by the last barrier (or the
// provided inputs at initialization).
type View struct {
	Values   map[string]any
	Versions map[string]int64
	Changed  map[string]bool
}

// GuardError is a runtime guard evaluation failure (a top-level path, a
// reference that is neither a field ID nor a path, an equals value that is
// a non-path guard). The run fails with guard_evaluation_failed.
type GuardError struct {
	Reasons []string
}

func (e *GuardError) Error() string { return "guard evaluation failed" }

// Eval evaluates the guard against v. A nil guard passes. Unwritten or
// missing values make a guard false; they never error.
func (g *Guard) Eval(v View) (bool, error) { panic("unimplemented") }
