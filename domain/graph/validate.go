package graph

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// validator runs every validation pass over the effective graph. Passes
// never stop at the first problem: a single compile reports everything,
// and each pass skips only the records it cannot interpret.
type validator struct {
	g       *Graph
	schemas map[string]configSnapshot
	opts    Options
	d       diagnostics
}

// validate runs the passes in a fixed order, each iterating sorted IDs, so
// the diagnostic order is stable.
func validate(g *Graph, schemas map[string]configSnapshot, opts Options) []Diagnostic {
	v := &validator{g: g, schemas: schemas, opts: opts}
	v.document()
	v.fields()
	v.outputs()
	v.nodes()
	v.edges()
	v.branches()
	v.guards()
	v.topology()
	v.cycles()
	v.deadEnds()
	v.orphanedFields()
	return v.d
}

// IsPublicID reports whether s is a valid public ID:
// ^[A-Za-z0-9][A-Za-z0-9_-]*$.
func IsPublicID(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Document
// ---------------------------------------------------------------------------

func (v *validator) document() {
	g := v.g
	if g.SchemaVersion != SchemaVersion {
		v.d.errorf(CodeUnsupportedSchemaVersion, pathOf("schema_version"), "",
			"graph schema_version %d is not supported; set it to %d", g.SchemaVersion, SchemaVersion)
	}
	if !IsPublicID(g.ID) {
		v.d.errorf(CodeInvalidPublicID, pathOf("id"), "",
			"graph ID %q is not a valid public ID; use letters, digits, '_' and '-', starting with a letter or digit", g.ID)
	}
	if !utf8.ValidString(g.Name) {
		v.d.errorf(CodeInvalidDocument, pathOf("name"), "", "graph name must be valid UTF-8 text")
	}
	if !utf8.ValidString(g.Description) {
		v.d.errorf(CodeInvalidDocument, pathOf("description"), "", "graph description must be valid UTF-8 text")
	}
	v.recordIDs("inputs", "input", value.SortedKeys(g.Inputs))
	v.recordIDs("fields", "field", value.SortedKeys(g.Fields))
	v.recordIDs("outputs", "output", value.SortedKeys(g.Outputs))
	v.recordIDs("nodes", "node", value.SortedKeys(g.Nodes))
	v.recordIDs("edges", "edge", value.SortedKeys(g.Edges))
	for _, id := range value.SortedKeys(g.Fields) {
		if _, ok := g.Inputs[id]; ok {
			v.d.errorf(CodeDuplicateStateID, pathOf("fields", id), id,
				"%q is declared both as an input and as a state field; inputs and fields share one namespace, rename one of them", id)
		}
	}
	// Checked whatever the topology, so an invalid limit never reaches the
	// runtime graph.
	if _, ok := maxSupersteps(g.Policies, v.opts.MaxSupersteps); !ok {
		v.d.errorf(CodeInvalidPolicy, pathOf("policies", PolicyMaxSupersteps), "",
			"graph policy \"max_supersteps\" must be a positive integer or null, got %s", describeValue(g.Policies[PolicyMaxSupersteps]))
	}
}

func (v *validator) recordIDs(collection, singular string, ids []string) {
	for _, id := range ids {
		switch {
		case id == Start || id == Finish:
			v.d.errorf(CodeReservedID, pathOf(collection, id), id,
				"%s ID %q is a reserved edge endpoint; choose another ID", singular, id)
		case !IsPublicID(id):
			v.d.errorf(CodeInvalidPublicID, pathOf(collection, id), id,
				"%s ID %q is not a valid public ID; use letters, digits, '_' and '-', starting with a letter or digit", singular, id)
		}
	}
}

// ---------------------------------------------------------------------------
// Fields, schemas and reducers
// ---------------------------------------------------------------------------

func (v *validator) fields() {
	for _, id := range value.SortedKeys(v.g.Inputs) {
		v.field("inputs", "input", KindInput, id, v.g.Inputs[id])
	}
	for _, id := range value.SortedKeys(v.g.Fields) {
		v.field("fields", "field", KindState, id, v.g.Fields[id])
	}
}

func (v *validator) field(collection, singular string, kind FieldKind, id string, f *Field) {
	var problems []string
	if f.ID != id {
		problems = append(problems, "its ID "+strconv.Quote(f.ID)+" differs from its key")
	}
	if f.Kind != kind {
		problems = append(problems, "its kind "+strconv.Quote(string(f.Kind))+" should be "+strconv.Quote(string(kind)))
	}
	problems = append(problems, textProblems(map[string]string{"label": f.Label, "description": f.Description})...)
	if len(problems) > 0 {
		v.d.errorf(CodeInvalidField, pathOf(collection, id), id, "%s %q: %s", singular, id, strings.Join(problems, "; "))
	}

	schemaOK := false
	if f.Schema == nil {
		v.d.errorf(CodeMissingFieldSchema, pathOf(collection, id, "schema"), id,
			"%s %q has no schema; every input and state field needs one", singular, id)
	} else if problems := schema.Check(f.Schema); len(problems) > 0 {
		v.d.errorMeta(CodeInvalidSchema, pathOf(collection, id, "schema"), id, reasonsMeta(problems),
			"%s %q schema is invalid: %s", singular, id, strings.Join(problems, "; "))
	} else {
		schemaOK = true
	}

	if f.Reducer != nil {
		v.reducer(collection, singular, id, *f.Reducer, f.Schema, schemaOK)
	}

	if f.Default != nil && schemaOK {
		if reasons := f.Schema.Validate(f.Default); len(reasons) > 0 {
			v.d.errorMeta(CodeInvalidFieldDefault, pathOf(collection, id, "default"), id, reasonsMeta(reasons),
				"%s %q default does not match its schema: %s", singular, id, strings.Join(reasons, "; "))
		}
	}
}

func (v *validator) reducer(collection, singular, id string, r reducer.Reducer, s *schema.Schema, schemaOK bool) {
	path := pathOf(collection, id, "reducer")
	if !r.Type.Known() {
		v.d.errorf(CodeInvalidReducer, path, id,
			"%s %q reducer type %q is not supported; use last_value, first_value, append, union, merge or sum (or omit the reducer for last_value)",
			singular, id, r.Type)
		return
	}
	// A missing or invalid schema already has its own diagnostic, so the
	// pairing is checked only against a valid one.
	var warnings []string
	if schemaOK {
		var errs []string
		errs, warnings = reducer.CheckSchema(r, s)
		for _, e := range errs {
			v.d.errorf(CodeReducerSchemaMismatch, path, id, "%s %q %s reducer does not fit its schema: %s", singular, id, r.Type, e)
		}
	}
	for _, p := range reducer.CheckOpts(r) {
		v.d.errorf(CodeInvalidReducer, path, id, "%s %q %s reducer options are invalid: %s", singular, id, r.Type, p)
	}
	for _, w := range warnings {
		v.d.warnf(CodeAmbiguousListWrite, path, id, "%s %q %s reducer: %s", singular, id, r.Type, w)
	}
}

// ---------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------

func (v *validator) outputs() {
	for _, id := range value.SortedKeys(v.g.Outputs) {
		o := v.g.Outputs[id]
		v.record("outputs", "output", id, o.ID, map[string]string{"label": o.Label, "description": o.Description})

		source := v.sourceField(o.Source)
		if source == nil {
			v.d.errorf(CodeUnknownOutputSource, pathOf("outputs", id, "source"), id,
				"output %q source %q is not an input or state field; name one of them", id, o.Source)
		}
		if o.Schema == nil {
			continue
		}
		if problems := schema.Check(o.Schema); len(problems) > 0 {
			v.d.errorMeta(CodeInvalidSchema, pathOf("outputs", id, "schema"), id, reasonsMeta(problems),
				"output %q schema is invalid: %s", id, strings.Join(problems, "; "))
			continue
		}
		if source != nil && source.Schema != nil && len(schema.Check(source.Schema)) == 0 && !schema.Compatible(o.Schema, source.Schema) {
			v.d.errorf(CodeIncompatibleOutputSchema, pathOf("outputs", id, "schema"), id,
				"output %q schema is not compatible with the schema of its source %q (types must match, an enum must contain every source value, a list item must be compatible); omit it to inherit the source's",
				id, o.Source)
		}
	}
}

func (v *validator) sourceField(id string) *Field {
	if f, ok := v.g.Inputs[id]; ok {
		return f
	}
	return v.g.Fields[id]
}

// ---------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------

func (v *validator) nodes() {
	for _, id := range value.SortedKeys(v.g.Nodes) {
		n := v.g.Nodes[id]
		v.record("nodes", "node", id, n.ID, map[string]string{"label": n.Label, "description": n.Description})
		v.implementation(id, n)
		for _, p := range nodePolicyProblems(n.Policies) {
			v.d.errorMeta(CodeInvalidPolicy, pathOf("nodes", id, "policies", p.Key), id, reasonsMeta(p.Reasons),
				"node %q: %s", id, p.message())
		}
	}
}

func nodePolicyProblems(policies map[string]any) []policyProblem {
	_, problems := resolveNodePolicies(policies)
	return problems
}

func (v *validator) implementation(id string, n *Node) {
	impl := n.Implementation
	path := pathOf("nodes", id, "implementation")
	switch {
	case impl.Type == "" && impl.Ref == "" && impl.Raw == nil:
		v.d.errorf(CodeMissingNodeImplementation, path, id,
			"node %q has no implementation; set {\"type\": \"module\", \"implementation\": \"<registry id>\"}", id)
		return
	case impl.Raw != nil:
		v.d.errorf(CodeUnsupportedNodeImplementation, path, id,
			"node %q has a passthrough implementation %s; only {\"type\": \"module\", \"implementation\": \"<registry id>\"} runs", id, describeValue(impl.Raw))
		return
	case impl.Type != ImplementationModule:
		v.d.errorf(CodeUnsupportedNodeImplementation, path, id,
			"node %q implementation type %q is not supported; only \"module\" implementations run", id, impl.Type)
		return
	case impl.Ref == "":
		v.d.errorf(CodeMissingNodeImplementation, path, id,
			"node %q module implementation names no registry ID", id)
		return
	}
	snap := v.schemas[impl.Ref]
	switch {
	case !snap.registered:
		v.d.errorf(CodeInvalidNodeImplementation, path, id,
			"node %q implementation %q is not registered; register it with the engine or fix the ID", id, impl.Ref)
	case snap.problem != "":
		v.d.errorMeta(CodeInvalidNodeConfigSchema, path, id, map[string]any{"error": snap.problem},
			"node %q implementation %q does not provide a valid config schema: %s", id, impl.Ref, snap.problem)
	case snap.schema != nil:
		config := n.Config
		if config == nil {
			config = map[string]any{} // an absent config is the empty map on the wire
		}
		if reasons := snap.schema.Validate(config); len(reasons) > 0 {
			v.d.errorMeta(CodeInvalidNodeConfig, pathOf("nodes", id, "config"), id, reasonsMeta(reasons),
				"node %q config does not match the config schema of %q: %s", id, impl.Ref, strings.Join(reasons, "; "))
		}
	}
}

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

// textProblems reports text attributes that JSON cannot carry faithfully.
// record reports a record's own problems as one invalid_record diagnostic
// at collection/key: an ID that differs from its map key, and text
// attributes that are not valid UTF-8.
func (v *validator) record(collection, singular, key, id string, text map[string]string) {
	var problems []string
	if id != key {
		problems = append(problems, "its ID "+strconv.Quote(id)+" differs from its key")
	}
	problems = append(problems, textProblems(text)...)
	if len(problems) > 0 {
		v.d.errorf(CodeInvalidRecord, pathOf(collection, key), key, "%s %q: %s", singular, key, strings.Join(problems, "; "))
	}
}

func textProblems(attrs map[string]string) []string {
	var out []string
	for _, name := range value.SortedKeys(attrs) {
		if !utf8.ValidString(attrs[name]) {
			out = append(out, "its "+name+" is not valid UTF-8 text")
		}
	}
	return out
}

func reasonsMeta(reasons []string) map[string]any {
	return map[string]any{"reasons": stringList(reasons)}
}
