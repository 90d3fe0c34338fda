// Package graph is the graph document users author (inputs, state fields
// with reducers, nodes, guarded edges, outputs, policies, metadata), its JSON
// wire codec, a fluent builder for Go callers, the compiler that validates a
// document and reports every problem at once, the canonical content hash,
// and the lowered runtime form the superstep algorithm executes.
//
// Documents are plain values: nothing here performs I/O or calls user code
// except through the Implementations interface the caller supplies.
package graph

import (
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// Reserved endpoints of edges. They are never record IDs.
const (
	Start  = "$start"
	Finish = "$finish"
)

// SchemaVersion is the only graph document version this package reads and writes.
const SchemaVersion = 1

// Graph is an authored graph document. Inputs and Fields share one ID
// namespace; nodes, edges and outputs each have their own. Maps are keyed by
// public ID and each record's ID field repeats its key.
type Graph struct {
	SchemaVersion int
	ID            string
	Name          string
	Description   string
	Inputs        map[string]*Field
	Fields        map[string]*Field
	Outputs       map[string]*Output
	Nodes         map[string]*Node
	Edges         map[string]*Edge
	Policies      map[string]any // open; only "max_supersteps" is interpreted
	Metadata      map[string]any // open; part of the hash
}

// FieldKind distinguishes run inputs from state fields.
type FieldKind string

// Field kinds.
const (
	KindInput FieldKind = "input"
	KindState FieldKind = "state"
)

// Field is an input or a state field. Default is the channel default (nil
// means none), distinct from Schema.Default. Reducer applies to state fields
// only (nil means last_value); Required applies to inputs only.
type Field struct {
	ID          string
	Kind        FieldKind
	Label       string
	Description string
	Schema      *schema.Schema
	Reducer     *reducer.Reducer
	Required    bool
	Default     any
	Metadata    map[string]any
}

// Output publishes one input or state field when the run completes.
// Source defaults to the output's own ID; a nil Schema inherits the source's.
type Output struct {
	ID          string
	Source      string
	Label       string
	Description string
	Schema      *schema.Schema
	Metadata    map[string]any
}

// ImplementationModule is the only executable implementation type.
const ImplementationModule = "module"

// Implementation names the code behind a node. For type "module", Ref is the
// registry ID of a node implementation. Any other shape is kept verbatim in
// Raw so it round-trips, but it does not compile.
type Implementation struct {
	Type string
	Ref  string
	Raw  map[string]any // non-module implementation maps, verbatim
}

// Node is one unit of user code in the graph. Branches is editor metadata
// (group -> edge IDs) that is validated and carried into lowering metadata
// only. Policies recognises "timeout_ms" and "retry"; "on_error" is reserved.
type Node struct {
	ID             string
	Label          string
	Description    string
	Implementation Implementation
	Branches       map[string][]string
	Config         map[string]any
	Policies       map[string]any
	Metadata       map[string]any
}

// Edge connects a source (Start, a node, or, for a barrier edge, a list of
// nodes) to a target (a node or Finish). A barrier edge fires once every
// source has completed since it last fired; it is a barrier whenever From
// was written as a list, even with one element.
type Edge struct {
	ID           string
	From         []string
	Barrier      bool
	To           string
	Label        string
	Description  string
	SourceHandle string
	TargetHandle string
	Guard        *Guard
	Metadata     map[string]any
}

// Guard is a boolean expression over the public state view. Args hold
// nested *Guard values (for all/any/not, a path reference, or an equals
// value that is itself a path), field-ID strings, path segment lists
// ([]any of string and int64) and portable values.
type Guard struct {
	Op   string
	Args []any
}

// Guard operators.
const (
	OpAll            = "all"
	OpAny            = "any"
	OpNot            = "not"
	OpChanged        = "changed"
	OpVersionAtLeast = "version_at_least"
	OpExists         = "exists"
	OpEquals         = "equals"
	OpPath           = "path"
)
