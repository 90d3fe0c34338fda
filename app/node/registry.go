package node

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/docketgo/docket/domain/schema"
)

// Registry errors.
var (
	ErrInvalidRef   = errors.New("invalid implementation reference")
	ErrDuplicateRef = errors.New("implementation reference already registered")
)

// Registry maps implementation references (the "implementation" of a
// module node in a graph document) to Nodes. It implements
// graph.Implementations for the compiler. The zero Registry is empty and
// ready to use; it is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	nodes map[string]Node
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register adds n under ref. The ref must be non-empty and must not start
// with "$" (reserved on the wire); registering a ref twice is an error.
func (r *Registry) Register(ref string, n Node) error {
	switch {
	case ref == "":
		return fmt.Errorf("%w: empty", ErrInvalidRef)
	case strings.HasPrefix(ref, "$"):
		return fmt.Errorf("%w: %q starts with \"$\"", ErrInvalidRef, ref)
	case isNil(n):
		return fmt.Errorf("%w: %q has a nil node", ErrInvalidRef, ref)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.nodes[ref]; dup {
		return fmt.Errorf("%w: %q", ErrDuplicateRef, ref)
	}
	if r.nodes == nil {
		r.nodes = map[string]Node{}
	}
	r.nodes[ref] = n
	return nil
}

// MustRegister is Register that panics on error, for static setup.
func (r *Registry) MustRegister(ref string, n Node) *Registry {
	if err := r.Register(ref, n); err != nil {
		panic(err)
	}
	return r
}

// Lookup returns the node registered under ref.
func (r *Registry) Lookup(ref string) (Node, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n, ok := r.nodes[ref]
	return n, ok
}

// ConfigSchema returns the config schema of the node registered under ref
// (graph.Implementations). A panic in the node's ConfigSchema propagates:
// the compiler turns it into a diagnostic.
func (r *Registry) ConfigSchema(ref string) (*schema.Schema, bool) {
	n, ok := r.Lookup(ref)
	if !ok {
		return nil, false
	}
	return n.ConfigSchema(), true
}

// Len returns how many references are registered. References are only
// ever added, so an unchanged count means an unchanged set.
func (r *Registry) Len() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return len(r.nodes)
}

// Refs returns the registered references, sorted.
func (r *Registry) Refs() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	refs := make([]string, 0, len(r.nodes))
	for ref := range r.nodes {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	return refs
}

// isNil reports whether n is no node at all: nil, a nil pointer (or
// other nil reference) in a Node, or a function node without a function.
// Any of them would fail every attempt with a nil dereference.
func isNil(n Node) bool {
	if n == nil {
		return true
	}
	if f, ok := n.(funcNode); ok {
		return f.call == nil
	}
	switch v := reflect.ValueOf(n); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
