package graph

import "errors"

// CONTRACT STUBS: the compiler implementer replaces these bodies, keeping every
// signature so other packages compile against them meanwhile.

// ErrInvalidGraph is matched by *CompileError.
var ErrInvalidGraph = errors.New("invalid graph")

// ErrInvalidDocument is wrapped by every wire decoding error.
var ErrInvalidDocument = errors.New("invalid graph document")

func (e *CompileError) Error() string { return "invalid graph" }

// Is makes errors.Is(err, ErrInvalidGraph) hold.
func (e *CompileError) Is(target error) bool { return target == ErrInvalidGraph }

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
