package graph

import (
	"github.com/docketgo/docket/domain/schema"
)

// This file fixes the package's public contract; implementations live in
// the files named next to each declaration.

// Implementations resolves node implementation references while compiling.
// The app's node registry implements it.
type Implementations interface {
	// ConfigSchema returns the configuration schema of the implementation
	// registered as ref. ok is false when ref is not registered. A nil schema
	// means the node accepts any portable configuration. The compiler calls
	// it at most once per distinct ref per compile and treats a panic as an
	// invalid_node_config_schema diagnostic for every node using ref.
	ConfigSchema(ref string) (s *schema.Schema, ok bool)
}

// Profile selects a compile profile. Both apply the same rules today.
type Profile string

// Profiles.
const (
	ProfilePublish Profile = "publish"
	ProfileRun     Profile = "run"
)

// Options tune Compile.
type Options struct {
	Profile Profile
	// MaxSupersteps is the runtime default superstep limit used when the
	// graph sets no max_supersteps policy; 0 means none.
	MaxSupersteps int
	// EffectiveDocument compiles a stored (already effective) document:
	// node-config defaults are not materialized again, so defaults added to
	// a node type later never change a published version.
	EffectiveDocument bool
}

// CompileError carries every diagnostic of a graph that did not compile.
// Its Error string lists them all; errors.Is(err, ErrInvalidGraph) holds.
type CompileError struct {
	Diagnostics []Diagnostic // errors and warnings, in stable order
}
