package graph

import (
	"errors"
	"fmt"
	"strings"

	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// ErrInvalidGraph is matched by *CompileError.
var ErrInvalidGraph = errors.New("invalid graph")

// ErrInvalidDocument is wrapped by every wire decoding error.
var ErrInvalidDocument = errors.New("invalid graph document")

// ErrInvalidOptions is wrapped by the error Compile returns for Options a
// caller got wrong (an unknown profile, a negative MaxSupersteps).
var ErrInvalidOptions = errors.New("invalid compile options")

// Error lists every diagnostic, one per line, as "code at /path: message".
func (e *CompileError) Error() string {
	var b strings.Builder
	errs := 0
	for _, d := range e.Diagnostics {
		if d.Severity == SeverityError {
			errs++
		}
	}
	fmt.Fprintf(&b, "invalid graph: %d error(s)", errs)
	for _, d := range e.Diagnostics {
		b.WriteByte('\n')
		b.WriteString(d.String())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrInvalidGraph) hold.
func (e *CompileError) Is(target error) bool { return target == ErrInvalidGraph }

// Compile validates g (reporting every problem at once), hashes the
// effective document and lowers it. It returns a *CompileError carrying all
// diagnostics when any diagnostic is an error. g is not mutated.
//
// impls may be nil: a graph without nodes still compiles, and every module
// node is then reported as invalid_node_implementation.
func Compile(g *Graph, impls Implementations, opts Options) (*Compiled, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	compiled, diags := compile(g, impls, opts)
	if hasErrors(diags) {
		return nil, &CompileError{Diagnostics: diags}
	}
	return compiled, nil
}

// Verify runs the same pipeline as Compile and returns its fresh
// diagnostics (errors and warnings) in stable order. Bad Options give a
// single invalid_options diagnostic.
func Verify(g *Graph, impls Implementations, opts Options) []Diagnostic {
	if err := opts.check(); err != nil {
		return []Diagnostic{{Severity: SeverityError, Code: CodeInvalidOptions, Message: err.Error(), Path: []any{}}}
	}
	_, diags := compile(g, impls, opts)
	return diags
}

func (o Options) check() error {
	switch o.Profile {
	case "", ProfilePublish, ProfileRun:
	default:
		return fmt.Errorf("%w: unknown profile %q (expected %q or %q)", ErrInvalidOptions, o.Profile, ProfilePublish, ProfileRun)
	}
	if o.MaxSupersteps < 0 {
		return fmt.Errorf("%w: MaxSupersteps must be positive or 0 for none, got %d", ErrInvalidOptions, o.MaxSupersteps)
	}
	return nil
}

// compile is the one pipeline behind Compile and Verify (spec §4.1). It
// returns the lowered graph only when no diagnostic is an error.
func compile(g *Graph, impls Implementations, opts Options) (*Compiled, []Diagnostic) {
	var d diagnostics
	if g == nil {
		d.errorf(CodeInvalidDocument, []any{}, "", "the graph document is missing (nil)")
		return nil, d
	}

	// 1. Canonicalize: a deep, normalized copy, so nothing below can touch
	// the caller's graph.
	eff, cerr := canonicalGraph(g)
	if cerr != nil {
		d.errorMeta(CodeNonDurableGraphValue, cerr.path, "", map[string]any{"error": cerr.err.Error()},
			"the graph holds content that cannot be durably encoded at %s: %v; use only portable values (nil, bool, string, int, float, lists, string-keyed maps)",
			FormatPath(cerr.path), cerr.err)
		return nil, d
	}

	// 2. Snapshot config schemas, once per distinct implementation.
	schemas := snapshotConfigSchemas(eff, impls)

	// 3. Materialize node-config defaults into the effective document.
	if !opts.EffectiveDocument {
		materializeConfigDefaults(eff, schemas)
	}

	// 4. Validate: every pass runs and reports.
	d = append(d, validate(eff, schemas, opts)...)
	if hasErrors(d) {
		return nil, d
	}

	// 5. Hash the effective document and lower it.
	hash, err := Hash(eff)
	if err != nil {
		d.errorMeta(CodeNonDurableGraphValue, []any{}, "", map[string]any{"error": err.Error()},
			"the effective graph cannot be encoded for hashing: %v", err)
		return nil, d
	}
	compiled := lower(eff, hash, opts)

	// 6. Runtime self-checks.
	d = append(d, checkLowered(compiled)...)
	if hasErrors(d) {
		return nil, d
	}
	return compiled, d
}

// moduleRef returns the registry ID of a well-formed module implementation.
func moduleRef(n *Node) (string, bool) {
	impl := n.Implementation
	ok := impl.Type == ImplementationModule && impl.Ref != "" && impl.Raw == nil
	return impl.Ref, ok
}

// configSnapshot is what one implementation said about its config schema.
type configSnapshot struct {
	registered bool
	schema     *schema.Schema // canonical and valid; nil accepts any config
	problem    string         // non-empty: the schema is unusable
}

// snapshotConfigSchemas asks impls for the config schema of every distinct
// module implementation, in sorted order, exactly once each: validation and
// materialization must see the same answer even from a stateful registry.
func snapshotConfigSchemas(g *Graph, impls Implementations) map[string]configSnapshot {
	refs := map[string]bool{}
	for _, n := range g.Nodes {
		if ref, ok := moduleRef(n); ok {
			refs[ref] = true
		}
	}
	out := make(map[string]configSnapshot, len(refs))
	for _, ref := range value.SortedKeys(refs) {
		out[ref] = fetchConfigSchema(impls, ref)
	}
	return out
}

func fetchConfigSchema(impls Implementations, ref string) configSnapshot {
	if impls == nil {
		return configSnapshot{}
	}
	s, ok, panicked := callConfigSchema(impls, ref)
	if panicked != "" {
		return configSnapshot{registered: true, problem: "ConfigSchema panicked: " + panicked}
	}
	if !ok {
		return configSnapshot{}
	}
	if s == nil {
		return configSnapshot{registered: true}
	}
	c, cerr := canonicalSchema(s, nil)
	if cerr != nil {
		return configSnapshot{registered: true, problem: "the config schema is not portable: " + cerr.err.Error()}
	}
	if problems := schema.Check(c); len(problems) > 0 {
		return configSnapshot{registered: true, problem: strings.Join(problems, "; ")}
	}
	return configSnapshot{registered: true, schema: c}
}

// callConfigSchema isolates user code: a panic becomes a diagnostic, never
// a crash of the compiling process.
func callConfigSchema(impls Implementations, ref string) (s *schema.Schema, ok bool, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			s, ok, panicked = nil, false, fmt.Sprint(r)
		}
	}()
	s, ok = impls.ConfigSchema(ref)
	return s, ok, ""
}

// materializeConfigDefaults puts, if absent, every top-level key of an
// object config schema that declares a schema default (an explicit null
// default included) into the node's config. It edits the effective copy.
func materializeConfigDefaults(g *Graph, schemas map[string]configSnapshot) {
	for _, id := range value.SortedKeys(g.Nodes) {
		n := g.Nodes[id]
		ref, ok := moduleRef(n)
		if !ok {
			continue
		}
		s := schemas[ref].schema
		if s == nil || s.Type != schema.TypeObject {
			continue
		}
		for _, key := range value.SortedKeys(s.Fields) {
			child := s.Fields[key]
			if !child.HasDefault {
				continue
			}
			if _, present := n.Config[key]; present {
				continue
			}
			if n.Config == nil {
				n.Config = map[string]any{}
			}
			n.Config[key] = value.Clone(child.Default)
		}
	}
}
