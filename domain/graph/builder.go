package graph

import (
	"errors"
	"fmt"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// ErrBuild is wrapped by every error Build returns. Portability problems
// also wrap value.ErrNotPortable.
var ErrBuild = errors.New("graph builder")

// Builder assembles a Graph document for Go callers:
//
//	g, err := graph.New("review-loop").
//		Input("topic", schema.String(), graph.Required()).
//		State("draft", schema.String()).
//		Node("writer", "app.writer", graph.Timeout(1500), graph.Retry(3, 200)).
//		Edge("edge_start", graph.Start, "writer").
//		Edge("edge_done", "writer", graph.Finish).
//		Output("final_draft", "draft").
//		Build()
//
// Values (config, policies, metadata, defaults, guard arguments, the open
// content of schemas) pass through value.Normalize when the call is made,
// so Go ints, typed slices and typed maps are fine, and later changes to
// the caller's maps do not leak in. Problems are collected and reported
// together by Build. The builder does not compile: Compile judges the
// document.
//
// Every Build returns a fresh Graph that shares nothing with the builder
// or with earlier results, so one builder may serve as a template.
type Builder struct {
	id    string
	steps []func(*buildState)
}

type buildState struct {
	g    *Graph
	errs []error
}

func (s *buildState) fail(where string, err error) {
	s.errs = append(s.errs, fmt.Errorf("%w: %s: %w", ErrBuild, where, err))
}

// New starts a graph document with the given public ID.
func New(id string) *Builder { return &Builder{id: id} }

func (b *Builder) step(f func(*buildState)) *Builder {
	b.steps = append(b.steps, f)
	return b
}

// Name sets the display name.
func (b *Builder) Name(name string) *Builder {
	return b.step(func(s *buildState) { s.g.Name = name })
}

// Description sets the graph description.
func (b *Builder) Description(description string) *Builder {
	return b.step(func(s *buildState) { s.g.Description = description })
}

// Metadata sets one graph metadata key (metadata is part of the hash).
func (b *Builder) Metadata(key string, v any) *Builder {
	n, err := buildKeyValue(key, v)
	return b.step(func(s *buildState) {
		if err != nil {
			s.fail(fmt.Sprintf("graph metadata %q", key), err)
			return
		}
		s.g.Metadata = buildPut(s.g.Metadata, key, value.Clone(n))
	})
}

// Policy sets one graph policy key. Only "max_supersteps" is interpreted.
func (b *Builder) Policy(key string, v any) *Builder {
	n, err := buildKeyValue(key, v)
	return b.step(func(s *buildState) {
		if err != nil {
			s.fail(fmt.Sprintf("graph policy %q", key), err)
			return
		}
		s.g.Policies = buildPut(s.g.Policies, key, value.Clone(n))
	})
}

// MaxSupersteps sets the graph's superstep limit policy.
func (b *Builder) MaxSupersteps(n int) *Builder { return b.Policy(PolicyMaxSupersteps, n) }

// Input declares a run input. A nil schema is kept (Compile reports it).
func (b *Builder) Input(id string, s *schema.Schema, opts ...RecordOption) *Builder {
	return b.field(id, KindInput, s, opts)
}

// State declares a state field; without a Reducer option it is last_value.
func (b *Builder) State(id string, s *schema.Schema, opts ...RecordOption) *Builder {
	return b.field(id, KindState, s, opts)
}

func (b *Builder) field(id string, kind FieldKind, s *schema.Schema, opts []RecordOption) *Builder {
	snapshot, serr := buildSchema(s)
	return b.step(func(st *buildState) {
		what := fmt.Sprintf("input %q", id)
		target := &st.g.Inputs
		if kind == KindState {
			what, target = fmt.Sprintf("state field %q", id), &st.g.Fields
		}
		if _, dup := (*target)[id]; dup {
			st.fail(what, errors.New("declared more than once"))
			return
		}
		if serr != nil {
			st.fail(what+" schema", serr)
		}
		f := &Field{ID: id, Kind: kind, Schema: snapshot.Clone()}
		buildApply(st, &buildRecord{what: what, field: f}, opts)
		if *target == nil {
			*target = map[string]*Field{}
		}
		(*target)[id] = f
	})
}

// Node declares a node backed by the node implementation registered as
// implementation. Pass "" with the Passthrough option for a non-module
// implementation map (kept verbatim; it does not compile).
func (b *Builder) Node(id, implementation string, opts ...RecordOption) *Builder {
	return b.step(func(st *buildState) {
		what := fmt.Sprintf("node %q", id)
		if _, dup := st.g.Nodes[id]; dup {
			st.fail(what, errors.New("declared more than once"))
			return
		}
		n := &Node{ID: id}
		if implementation != "" {
			n.Implementation = Implementation{Type: ImplementationModule, Ref: implementation}
		}
		buildApply(st, &buildRecord{what: what, node: n}, opts)
		if st.g.Nodes == nil {
			st.g.Nodes = map[string]*Node{}
		}
		st.g.Nodes[id] = n
	})
}

// Edge declares an edge from one source (Start or a node) to a node or
// Finish. Several edges from one source fan out.
func (b *Builder) Edge(id, from, to string, opts ...RecordOption) *Builder {
	return b.edge(id, []string{from}, false, to, opts)
}

// Join declares a barrier edge: it fires once every source has completed
// since it last fired. It is a barrier even with a single source.
func (b *Builder) Join(id string, from []string, to string, opts ...RecordOption) *Builder {
	return b.edge(id, append([]string(nil), from...), true, to, opts)
}

func (b *Builder) edge(id string, from []string, barrier bool, to string, opts []RecordOption) *Builder {
	return b.step(func(st *buildState) {
		what := fmt.Sprintf("edge %q", id)
		if _, dup := st.g.Edges[id]; dup {
			st.fail(what, errors.New("declared more than once"))
			return
		}
		e := &Edge{ID: id, Barrier: barrier, To: to}
		if len(from) > 0 {
			e.From = append([]string(nil), from...)
		}
		buildApply(st, &buildRecord{what: what, edge: e}, opts)
		if st.g.Edges == nil {
			st.g.Edges = map[string]*Edge{}
		}
		st.g.Edges[id] = e
	})
}

// Output publishes an input or state field when the run completes; an empty
// source means the field with the output's own ID.
func (b *Builder) Output(id, source string, opts ...RecordOption) *Builder {
	return b.step(func(st *buildState) {
		what := fmt.Sprintf("output %q", id)
		if _, dup := st.g.Outputs[id]; dup {
			st.fail(what, errors.New("declared more than once"))
			return
		}
		o := &Output{ID: id, Source: source}
		buildApply(st, &buildRecord{what: what, output: o}, opts)
		if st.g.Outputs == nil {
			st.g.Outputs = map[string]*Output{}
		}
		st.g.Outputs[id] = o
	})
}

// Build returns the document, or every problem found (values that are not
// portable, options given to records they do not apply to, records declared
// twice) joined in one error wrapping ErrBuild.
func (b *Builder) Build() (*Graph, error) {
	st := &buildState{g: &Graph{SchemaVersion: SchemaVersion, ID: b.id}}
	for _, f := range b.steps {
		f(st)
	}
	if len(st.errs) > 0 {
		return nil, errors.Join(st.errs...)
	}
	return st.g, nil
}

// ---------------------------------------------------------------------------
// Record options
// ---------------------------------------------------------------------------

// RecordOption sets an optional part of an input, state field, node, edge
// or output. Giving one to a record it does not apply to is a Build error.
type RecordOption func(*buildRecord)

// buildRecord is the record an option is applied to; exactly one of the
// record pointers is set.
type buildRecord struct {
	what   string
	field  *Field
	node   *Node
	edge   *Edge
	output *Output
	st     *buildState
}

func buildApply(st *buildState, r *buildRecord, opts []RecordOption) {
	r.st = st
	for _, opt := range opts {
		if opt != nil {
			opt(r)
		}
	}
}

func (r *buildRecord) misuse(option, appliesTo string) {
	r.st.fail(r.what, fmt.Errorf("option %s applies to %s only", option, appliesTo))
}

// buildValue snapshots a Go value in portable form when the option is
// created; the option reports the normalization error when applied.
func buildValue(v any) (any, error) { return value.Normalize(v) }

// buildKeyValue is buildValue for a value the caller puts under a key of
// its own naming; the key must be one the wire form can carry (UTF-8, not
// starting with "$").
func buildKeyValue(key string, v any) (any, error) {
	if err := value.Check(map[string]any{key: nil}); err != nil {
		return nil, err
	}
	return buildValue(v)
}

// Label sets the display label of any record.
func Label(label string) RecordOption {
	return func(r *buildRecord) {
		switch {
		case r.field != nil:
			r.field.Label = label
		case r.node != nil:
			r.node.Label = label
		case r.edge != nil:
			r.edge.Label = label
		case r.output != nil:
			r.output.Label = label
		}
	}
}

// Description sets the description of any record.
func Description(description string) RecordOption {
	return func(r *buildRecord) {
		switch {
		case r.field != nil:
			r.field.Description = description
		case r.node != nil:
			r.node.Description = description
		case r.edge != nil:
			r.edge.Description = description
		case r.output != nil:
			r.output.Description = description
		}
	}
}

// Metadata sets one metadata key of any record.
func Metadata(key string, v any) RecordOption {
	n, err := buildKeyValue(key, v)
	return func(r *buildRecord) {
		if err != nil {
			r.st.fail(fmt.Sprintf("%s metadata %q", r.what, key), err)
			return
		}
		v := value.Clone(n)
		switch {
		case r.field != nil:
			r.field.Metadata = buildPut(r.field.Metadata, key, v)
		case r.node != nil:
			r.node.Metadata = buildPut(r.node.Metadata, key, v)
		case r.edge != nil:
			r.edge.Metadata = buildPut(r.edge.Metadata, key, v)
		case r.output != nil:
			r.output.Metadata = buildPut(r.output.Metadata, key, v)
		}
	}
}

// Required marks an input as required.
func Required() RecordOption {
	return func(r *buildRecord) {
		if r.field == nil || r.field.Kind != KindInput {
			r.misuse("Required", "inputs")
			return
		}
		r.field.Required = true
	}
}

// Default sets a field's channel default (nil means none). It is distinct
// from the schema default.
func Default(v any) RecordOption {
	n, err := buildValue(v)
	return func(r *buildRecord) {
		if r.field == nil {
			r.misuse("Default", "inputs and state fields")
			return
		}
		if err != nil {
			r.st.fail(r.what+" default", err)
			return
		}
		r.field.Default = value.Clone(n)
	}
}

// Reducer sets a state field's reducer and its options (nil for none), for
// example Reducer(reducer.Append, map[string]any{"max_length": 50}).
func Reducer(t reducer.Type, opts map[string]any) RecordOption {
	var n any
	var err error
	if len(opts) > 0 {
		n, err = buildValue(opts)
	}
	return func(r *buildRecord) {
		if r.field == nil || r.field.Kind != KindState {
			r.misuse("Reducer", "state fields")
			return
		}
		if err != nil {
			r.st.fail(r.what+" reducer options", err)
			return
		}
		red := &reducer.Reducer{Type: t}
		if n != nil {
			red.Opts = value.Clone(n).(map[string]any)
		}
		r.field.Reducer = red
	}
}

// Config sets node configuration keys (merged over earlier Config calls).
func Config(config map[string]any) RecordOption {
	n, err := buildValue(config)
	return func(r *buildRecord) {
		if r.node == nil {
			r.misuse("Config", "nodes")
			return
		}
		if err != nil {
			r.st.fail(r.what+" config", err)
			return
		}
		for k, v := range n.(map[string]any) {
			r.node.Config = buildPut(r.node.Config, k, value.Clone(v))
		}
	}
}

// Policy sets one node policy key ("timeout_ms", "retry"; others are kept
// and ignored, "on_error" is reserved and rejected by Compile).
func Policy(key string, v any) RecordOption { return buildNodePolicy("Policy", key, v) }

// Timeout sets a node's attempt timeout in milliseconds.
func Timeout(ms int) RecordOption { return buildNodePolicy("Timeout", PolicyTimeoutMS, ms) }

// Retry sets a node's retry policy: at most maxAttempts attempts, waiting
// backoffMS milliseconds between them.
func Retry(maxAttempts, backoffMS int) RecordOption {
	return buildNodePolicy("Retry", PolicyRetry, map[string]any{RetryMaxAttempts: maxAttempts, RetryBackoffMS: backoffMS})
}

func buildNodePolicy(option, key string, v any) RecordOption {
	n, err := buildKeyValue(key, v)
	return func(r *buildRecord) {
		if r.node == nil {
			r.misuse(option, "nodes")
			return
		}
		if err != nil {
			r.st.fail(fmt.Sprintf("%s policy %q", r.what, key), err)
			return
		}
		r.node.Policies = buildPut(r.node.Policies, key, value.Clone(n))
	}
}

// Branch records an editor branch group of a node: the IDs of its outgoing
// edges that form one decision.
func Branch(group string, edgeIDs ...string) RecordOption {
	ids := append([]string(nil), edgeIDs...)
	_, err := buildKeyValue(group, nil)
	return func(r *buildRecord) {
		if r.node == nil {
			r.misuse("Branch", "nodes")
			return
		}
		if err != nil {
			r.st.fail(fmt.Sprintf("%s branch %q", r.what, group), err)
			return
		}
		if r.node.Branches == nil {
			r.node.Branches = map[string][]string{}
		}
		r.node.Branches[group] = append([]string(nil), ids...)
	}
}

// Passthrough gives a node a non-module implementation map, kept verbatim
// so it round-trips; such a node does not compile.
func Passthrough(implementation map[string]any) RecordOption {
	n, err := buildValue(implementation)
	return func(r *buildRecord) {
		if r.node == nil {
			r.misuse("Passthrough", "nodes")
			return
		}
		if err != nil {
			r.st.fail(r.what+" implementation", err)
			return
		}
		raw, _ := value.Clone(n).(map[string]any)
		if raw == nil {
			raw = map[string]any{}
		}
		if t, _ := raw["type"].(string); t == ImplementationModule {
			r.st.fail(r.what+" implementation", fmt.Errorf("a passthrough implementation cannot use \"type\": %q; pass the registry reference to Node instead", ImplementationModule))
			return
		}
		r.node.Implementation = Implementation{Raw: raw}
	}
}

// When guards an edge: it triggers only when g holds.
func When(g *Guard) RecordOption {
	var snapshot *Guard
	err := errRecursiveGuard
	if !g.containsItself() { // a copy of a recursive guard would never end
		snapshot, err = buildGuard(g)
	}
	return func(r *buildRecord) {
		if r.edge == nil {
			r.misuse("When", "edges")
			return
		}
		if err != nil {
			r.st.fail(r.what+" guard", err)
			return
		}
		r.edge.Guard, _ = buildGuard(snapshot)
	}
}

// SourceHandle sets an edge's editor source handle.
func SourceHandle(handle string) RecordOption {
	return func(r *buildRecord) {
		if r.edge == nil {
			r.misuse("SourceHandle", "edges")
			return
		}
		r.edge.SourceHandle = handle
	}
}

// TargetHandle sets an edge's editor target handle.
func TargetHandle(handle string) RecordOption {
	return func(r *buildRecord) {
		if r.edge == nil {
			r.misuse("TargetHandle", "edges")
			return
		}
		r.edge.TargetHandle = handle
	}
}

// OutputSchema gives an output an explicit schema (compatible with its
// source's); without it the output inherits the source's schema.
func OutputSchema(s *schema.Schema) RecordOption {
	snapshot, err := buildSchema(s)
	return func(r *buildRecord) {
		if r.output == nil {
			r.misuse("OutputSchema", "outputs")
			return
		}
		if err != nil {
			r.st.fail(r.what+" schema", err)
			return
		}
		r.output.Schema = snapshot.Clone()
	}
}

// buildSchema snapshots a schema with its open content (default, values,
// constraints, metadata) normalized, as Compile reads it, so a struct
// literal may hold Go ints and typed slices. A schema that contains itself
// or holds a value that is not portable is an error.
func buildSchema(s *schema.Schema) (*schema.Schema, error) {
	if s.ContainsItself() { // a copy of a recursive schema would never end
		return nil, errRecursiveSchema
	}
	c, cerr := canonicalSchema(s, nil)
	if cerr != nil {
		// Normalizing the wire form locates the value inside the schema.
		if _, err := value.Normalize(s.ToMap()); err != nil {
			return nil, err
		}
		return nil, cerr.err
	}
	if c != nil {
		if err := value.Check(c.ToMap()); err != nil { // text that is not UTF-8
			return nil, err
		}
	}
	return c, nil
}

// errRecursiveSchema reports a schema that contains itself.
var errRecursiveSchema = errors.New("contains itself; a recursive schema has no wire form")

// errRecursiveGuard reports a guard that contains itself.
var errRecursiveGuard = errors.New("contains itself; a recursive guard has no wire form")

func buildPut(m map[string]any, key string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[key] = v
	return m
}

// ---------------------------------------------------------------------------
// Guard constructors
// ---------------------------------------------------------------------------

// All holds when every guard holds (true for none).
func All(guards ...*Guard) *Guard { return &Guard{Op: OpAll, Args: buildGuardList(guards)} }

// Any holds when at least one guard holds (false for none).
func Any(guards ...*Guard) *Guard { return &Guard{Op: OpAny, Args: buildGuardList(guards)} }

// Not negates g.
func Not(g *Guard) *Guard { return &Guard{Op: OpNot, Args: []any{g}} }

// Changed holds when field was changed by the last barrier (or provided as
// an input at initialization).
func Changed(field string) *Guard { return &Guard{Op: OpChanged, Args: []any{field}} }

// VersionAtLeast holds when field's committed version (0 if unwritten) is at
// least version.
func VersionAtLeast(field string, version int) *Guard {
	return &Guard{Op: OpVersionAtLeast, Args: []any{field, int64(version)}}
}

// Exists holds when ref resolves; ref is a field ID or a Path.
func Exists(ref any) *Guard { return &Guard{Op: OpExists, Args: []any{ref}} }

// Equals holds when ref (a field ID or a Path) resolves to a value
// numerically equal to v (1 == 1.0); v may itself be a Path. Go values are
// normalized (int becomes int64).
func Equals(ref, v any) *Guard {
	if _, isGuard := v.(*Guard); !isGuard {
		if n, err := value.Normalize(v); err == nil {
			v = n
		} // else kept as given; Build reports it
	}
	return &Guard{Op: OpEquals, Args: []any{ref, v}}
}

// Path references a value inside field: each segment is a map key (string)
// or a list index (int; negative counts from the end). No segments means the
// whole value. A path is a reference, valid only inside Exists and Equals.
func Path(field string, segments ...any) *Guard {
	list := make([]any, len(segments))
	for i, s := range segments {
		if n, err := value.Normalize(s); err == nil {
			list[i] = n
		} else {
			list[i] = s // kept as given; Build reports it
		}
	}
	return &Guard{Op: OpPath, Args: []any{field, list}}
}

func buildGuardList(guards []*Guard) []any {
	if len(guards) == 0 {
		return nil
	}
	args := make([]any, len(guards))
	for i, g := range guards {
		args[i] = g
	}
	return args
}

// buildGuard deep-copies a guard with every plain argument normalized.
func buildGuard(g *Guard) (*Guard, error) {
	if g == nil {
		return nil, nil
	}
	out := &Guard{Op: g.Op}
	if len(g.Args) > 0 {
		out.Args = make([]any, len(g.Args))
	}
	for i, arg := range g.Args {
		if nested, ok := arg.(*Guard); ok {
			if nested == nil {
				return nil, fmt.Errorf("argument %d of %q is a nil guard", i, g.Op)
			}
			c, err := buildGuard(nested)
			if err != nil {
				return nil, err
			}
			out.Args[i] = c
			continue
		}
		n, err := value.Normalize(arg)
		if err != nil {
			return nil, fmt.Errorf("argument %d of %q: %w", i, g.Op, err)
		}
		out.Args[i] = n
	}
	return out, nil
}
