package graph

import (
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
)

// Runtime channel ID prefixes. A runtime ID is the prefix plus a public ID.
const (
	InputPrefix  = "input:"
	StatePrefix  = "state:"
	EdgePrefix   = "edge:"
	NodePrefix   = "node:"
	OutputPrefix = "output:"
)

// ChannelKind says what a runtime channel carries.
type ChannelKind string

// Channel kinds.
const (
	ChannelInput     ChannelKind = "input"
	ChannelState     ChannelKind = "state"
	ChannelEphemeral ChannelKind = "ephemeral" // single-source edge activation
	ChannelBarrier   ChannelKind = "barrier"   // multi-source edge activation
)

// Compiled is the lowered, executable form of a graph. It is produced by
// Compile and never mutated afterwards; all slices are sorted.
type Compiled struct {
	ID            string // "<graph_id>@<first 12 hex of hash>", display only
	GraphID       string
	Hash          string // 64 lowercase hex
	Effective     *Graph // the effective (defaults materialized) document that was hashed
	Channels      map[string]*Channel
	Nodes         map[string]*RuntimeNode // keyed by public node ID
	NodeIDs       []string                // sorted public node IDs
	Edges         map[string]*RuntimeEdge // keyed by public edge ID
	StartEdges    []string                // sorted IDs of edges from $start
	Outputs       []*RuntimeOutput        // sorted by ID
	InputIDs      []string                // sorted public input IDs
	FieldIDs      []string                // sorted public state field IDs
	MaxSupersteps int                     // effective limit; 0 means unlimited
	Metadata      map[string]any          // lowering metadata: public<->runtime maps, branches
}

// Channel is one runtime channel. Input and state channels hold values;
// edge channels hold activations.
type Channel struct {
	ID         string // runtime ID
	PublicID   string
	Kind       ChannelKind
	Schema     *schema.Schema // nil: writes are not validated
	Reducer    reducer.Reducer
	Default    any // input: field default; state: field default, else reducer zero
	HasDefault bool
	Required   bool     // inputs only
	Sources    []string // barrier channels: sorted source node IDs
}

// RuntimeNode is one executable node. Policies are kept raw and resolved at
// plan time (ResolvePolicies) so a hand-edited runtime graph fails the run
// instead of the process.
type RuntimeNode struct {
	ID             string // public ID
	RuntimeID      string
	Implementation string // registry ID
	Config         map[string]any
	Policies       map[string]any
	Metadata       map[string]any
	Subscribe      []string // sorted edge channel IDs of edges into this node
	OutgoingEdges  []string // sorted public IDs of edges with this node in From
}

// RuntimeEdge is one lowered edge. From is ["$start"] for start edges.
type RuntimeEdge struct {
	ID        string
	ChannelID string
	From      []string
	To        string
	Guard     *Guard
	Barrier   bool
}

// RuntimeOutput publishes SourceChannel at completion.
type RuntimeOutput struct {
	ID            string
	RuntimeID     string
	SourceChannel string
	Schema        *schema.Schema
}

// Severity of a diagnostic.
type Severity string

// Severities.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
)

// Diagnostic is one compiler finding. Code is stable; Path points into the
// wire document (e.g. ["nodes","writer","policies","retry"]).
type Diagnostic struct {
	Severity  Severity
	Code      string
	Message   string
	Path      []any
	PublicID  string
	RuntimeID string
	Metadata  map[string]any
}
