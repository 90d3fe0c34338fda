package graph

import (
	"fmt"
	"strconv"
	"strings"
)

// Diagnostic codes. They are stable: callers and tools may match on them.
const (
	// Ingest.
	CodeNonDurableGraphValue = "non_durable_graph_value"

	// Document.
	CodeUnsupportedSchemaVersion = "unsupported_schema_version"
	CodeInvalidPublicID          = "invalid_public_id"
	CodeReservedID               = "reserved_id"
	CodeDuplicateStateID         = "duplicate_state_id"
	CodeInvalidDocument          = "invalid_document"
	CodeInvalidPolicy            = "invalid_policy"

	// Fields.
	CodeInvalidField          = "invalid_field"
	CodeMissingFieldSchema    = "missing_field_schema"
	CodeInvalidSchema         = "invalid_schema"
	CodeInvalidFieldDefault   = "invalid_field_default"
	CodeInvalidReducer        = "invalid_reducer"
	CodeReducerSchemaMismatch = "reducer_schema_mismatch"
	CodeAmbiguousListWrite    = "ambiguous_list_write"

	// Outputs.
	CodeInvalidRecord            = "invalid_record"
	CodeUnknownOutputSource      = "unknown_output_source"
	CodeIncompatibleOutputSchema = "incompatible_output_schema"

	// Nodes.
	CodeMissingNodeImplementation     = "missing_node_implementation"
	CodeUnsupportedNodeImplementation = "unsupported_node_implementation"
	CodeInvalidNodeImplementation     = "invalid_node_implementation"
	CodeInvalidNodeConfigSchema       = "invalid_node_config_schema"
	CodeInvalidNodeConfig             = "invalid_node_config"

	// Edges.
	CodeUnknownEdgeSource     = "unknown_edge_source"
	CodeUnknownEdgeTarget     = "unknown_edge_target"
	CodeInvalidFinishEndpoint = "invalid_finish_endpoint"
	CodeInvalidStartEndpoint  = "invalid_start_endpoint"
	CodeEmptyEdgeSources      = "empty_edge_sources"
	CodeDuplicateEdgeSource   = "duplicate_edge_source"

	// Branch groups.
	CodeUnknownBranchEdge        = "unknown_branch_edge"
	CodeBranchEdgeSourceMismatch = "branch_edge_source_mismatch"
	CodeDuplicateBranchEdge      = "duplicate_branch_edge"
	CodeUnguardedBranchEdge      = "unguarded_branch_edge"

	// Guards (invalid_guard also covers a guard in a non-guard position).
	CodeInvalidGuard      = "invalid_guard"
	CodeUnknownGuardField = "unknown_guard_field"
	CodeInvalidGuardPath  = "invalid_guard_path"

	// Topology, cycles, termination and orphans.
	CodeNoEntrypoint    = "no_entrypoint"
	CodeUnreachableNode = "unreachable_node"
	CodeUnboundedCycle  = "unbounded_cycle"
	CodeUnguardedCycle  = "unguarded_cycle"
	CodeNoTerminalEdge  = "no_terminal_edge"
	CodeDeadEndNode     = "dead_end_node"
	CodeOrphanedField   = "orphaned_field"

	// Lowering self-checks: a failure here is a compiler bug, still reported
	// as a diagnostic rather than a panic.
	CodeRuntimeIDCollision      = "runtime_id_collision"
	CodeMissingRuntimeChannel   = "missing_runtime_channel"
	CodeLoweringInvariantFailed = "lowering_invariant_failed"

	// CodeInvalidOptions is Verify's report of bad Options (Compile returns
	// an error wrapping ErrInvalidOptions instead).
	CodeInvalidOptions = "invalid_options"
)

// diagnostics accumulates compiler findings in the order passes emit them.
// Passes iterate sorted IDs, so the order is stable across runs.
type diagnostics []Diagnostic

func (d *diagnostics) add(sev Severity, code, message string, path []any, publicID string, metadata map[string]any) {
	*d = append(*d, Diagnostic{
		Severity: sev,
		Code:     code,
		Message:  message,
		Path:     path,
		PublicID: publicID,
		Metadata: metadata,
	})
}

func (d *diagnostics) errorf(code string, path []any, publicID string, format string, args ...any) {
	d.add(SeverityError, code, fmt.Sprintf(format, args...), path, publicID, nil)
}

func (d *diagnostics) warnf(code string, path []any, publicID string, format string, args ...any) {
	d.add(SeverityWarning, code, fmt.Sprintf(format, args...), path, publicID, nil)
}

// errorMeta is errorf with metadata (reasons, nodes, …).
func (d *diagnostics) errorMeta(code string, path []any, publicID string, metadata map[string]any, format string, args ...any) {
	d.add(SeverityError, code, fmt.Sprintf(format, args...), path, publicID, metadata)
}

func (d *diagnostics) warnMeta(code string, path []any, publicID string, metadata map[string]any, format string, args ...any) {
	d.add(SeverityWarning, code, fmt.Sprintf(format, args...), path, publicID, metadata)
}

// hasErrors reports whether any diagnostic blocks compilation.
func hasErrors(ds []Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == SeverityError {
			return true
		}
	}
	return false
}

// pathOf builds a diagnostic path; every element is a wire key or public ID.
func pathOf(segments ...string) []any {
	out := make([]any, len(segments))
	for i, s := range segments {
		out[i] = s
	}
	return out
}

// stringList turns IDs into a portable list for diagnostic metadata.
func stringList(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}

// FormatPath renders a diagnostic path as a JSON Pointer (RFC 6901), e.g.
// "/nodes/writer/policies/retry"; the empty path is "/".
func FormatPath(path []any) string {
	if len(path) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, seg := range path {
		b.WriteByte('/')
		switch s := seg.(type) {
		case string:
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
		case int:
			b.WriteString(strconv.Itoa(s))
		case int64:
			b.WriteString(strconv.FormatInt(s, 10))
		default:
			b.WriteString(fmt.Sprintf("%v", s))
		}
	}
	return b.String()
}

// String renders one diagnostic as "code at /path: message", the line format
// CompileError uses.
func (d Diagnostic) String() string {
	line := d.Code + " at " + FormatPath(d.Path) + ": " + d.Message
	if d.Severity == SeverityWarning {
		line += " (warning)"
	}
	return line
}
