package graph

import "errors"

// CONTRACT STUBS: the graph implementer replaces these bodies (and moves
// the declarations into codec.go, guard.go and compile.go), keeping every
// signature so other packages compile against them meanwhile.

// ErrInvalidGraph is matched by *CompileError.
var ErrInvalidGraph = errors.New("invalid graph")

// ErrInvalidDocument is wrapped by every wire decoding error.
var ErrInvalidDocument = errors.New("invalid graph document")

func (e *CompileError) Error() string { return "invalid graph" }

// Is makes errors.Is(err, ErrInvalidGraph) hold.
func (e *CompileError) Is(target error) bool { return target == ErrInvalidGraph }

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

// NodePolicy is a node's resolved execution policy.
type NodePolicy struct {
	TimeoutMS   int // 0: none set (the host maximum applies)
	MaxAttempts int // >= 1
	BackoffMS   int // >= 0
}

// PolicyError reports invalid node policies, one reason per bad key.
type PolicyError struct {
	Reasons []string
}

func (e *PolicyError) Error() string { return "invalid node policy" }

// ResolvePolicies reads timeout_ms and retry{max_attempts,backoff_ms} and
// rejects on_error and bad values with a *PolicyError.
func ResolvePolicies(policies map[string]any) (NodePolicy, error) { panic("unimplemented") }

// Compile validates g (reporting every problem at once), hashes the
// effective document and lowers it. It returns a *CompileError carrying all
// diagnostics when any diagnostic is an error. g is not mutated.
func Compile(g *Graph, impls Implementations, opts Options) (*Compiled, error) {
	panic("unimplemented")
}

// Verify runs the same pipeline as Compile and returns its fresh
// diagnostics (errors and warnings) in stable order.
func Verify(g *Graph, impls Implementations, opts Options) []Diagnostic { panic("unimplemented") }

// Hash is hex(sha256("docket.graph.v1\n" || value.Canonical(g.ToMap()))) of a
// document as given (Compile hashes the effective document).
func Hash(g *Graph) (string, error) { panic("unimplemented") }
