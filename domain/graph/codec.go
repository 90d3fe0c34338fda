package graph

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// CodeNonDurableValue is the DocumentError code for content ToMap cannot
// write: a value that is not portable, a "$" key in open content, or a
// string that is not valid UTF-8.
const CodeNonDurableValue = "non_durable_value"

// DocumentError is a wire-codec failure. Code is CodeInvalidDocument,
// CodeUnsupportedSchemaVersion or CodeNonDurableValue; Path is the dotted
// path into the wire document ("nodes.writer.policies", "edges.e.guard.args[0]";
// "" for the root). errors.Is(err, ErrInvalidDocument) holds for every
// DocumentError, and errors.As reaches the underlying cause (for example a
// *value.NotPortableError or a *schema.DecodeError) when there is one.
type DocumentError struct {
	Code    string
	Path    string
	Message string
	Err     error // underlying cause, or nil
}

func (e *DocumentError) Error() string {
	if e.Path == "" {
		return e.Code + ": " + e.Message
	}
	return e.Code + ": " + e.Path + ": " + e.Message
}

// Unwrap exposes ErrInvalidDocument and the underlying cause.
func (e *DocumentError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidDocument}
	}
	return []error{ErrInvalidDocument, e.Err}
}

// The allowed keys of each wire record (spec §3). The JSON Schema in
// docs/graph.schema.json lists the same keys; a test keeps them in step.
var (
	wireGraphKeys   = []string{"schema_version", "id", "name", "description", "inputs", "fields", "outputs", "nodes", "edges", "policies", "metadata"}
	wireFieldKeys   = []string{"kind", "label", "description", "schema", "reducer", "required", "default", "metadata"}
	wireOutputKeys  = []string{"source", "label", "description", "schema", "metadata"}
	wireNodeKeys    = []string{"label", "description", "implementation", "branches", "config", "policies", "metadata"}
	wireEdgeKeys    = []string{"from", "to", "label", "description", "source_handle", "target_handle", "guard", "metadata"}
	wireReducerKeys = []string{"type", "opts"}
	wireGuardKeys   = []string{"op", "args"}
	// A module implementation; any other implementation map is passthrough.
	wireModuleKeys = []string{"type", "implementation"}
)

// wireGuardTag wraps a guard nested in a plain argument position.
const wireGuardTag = "$guard"

var (
	wireGraphKeySet   = wireKeySet(wireGraphKeys)
	wireFieldKeySet   = wireKeySet(wireFieldKeys)
	wireOutputKeySet  = wireKeySet(wireOutputKeys)
	wireNodeKeySet    = wireKeySet(wireNodeKeys)
	wireEdgeKeySet    = wireKeySet(wireEdgeKeys)
	wireReducerKeySet = wireKeySet(wireReducerKeys)
	wireGuardKeySet   = wireKeySet(wireGuardKeys)
	wireModuleKeySet  = wireKeySet(wireModuleKeys)

	wireReducerTypes = map[reducer.Type]bool{
		reducer.LastValue: true, reducer.FirstValue: true, reducer.Append: true,
		reducer.Union: true, reducer.Merge: true, reducer.Sum: true,
	}
	wireGuardOps = map[string]bool{
		OpAll: true, OpAny: true, OpNot: true, OpChanged: true,
		OpVersionAtLeast: true, OpExists: true, OpEquals: true, OpPath: true,
	}
)

func wireKeySet(keys []string) map[string]bool {
	set := make(map[string]bool, len(keys))
	for _, k := range keys {
		set[k] = true
	}
	return set
}

// wireBooleanOp reports whether op takes guard objects as arguments; every
// other op takes plain values, where a nested guard is "$guard"-wrapped.
func wireBooleanOp(op string) bool { return op == OpAll || op == OpAny || op == OpNot }

// Parse decodes a JSON graph document (integers and floats stay distinct)
// and loads it with FromMap.
func Parse(data []byte) (*Graph, error) {
	raw, err := value.DecodeJSON(data)
	if err != nil {
		return nil, &DocumentError{Code: CodeInvalidDocument, Message: err.Error(), Err: err}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return nil, wireInvalid("", "a graph document must be a JSON object, got %s", wireDescribe(raw))
	}
	return FromMap(m)
}

// MarshalJSON writes the canonical JSON of g's wire map (sorted keys, floats
// keep their ".0"), so equal documents give equal bytes.
func (g *Graph) MarshalJSON() ([]byte, error) {
	m, err := g.ToMap()
	if err != nil {
		return nil, err
	}
	return value.Canonical(m)
}

// UnmarshalJSON replaces g with the document Parse reads from data.
func (g *Graph) UnmarshalJSON(data []byte) error {
	parsed, err := Parse(data)
	if err != nil {
		return err
	}
	*g = *parsed
	return nil
}

// ---------------------------------------------------------------------------
// Writing (ToMap)
// ---------------------------------------------------------------------------

// ToMap renders g as its wire map: string keys and portable values only,
// sharing no containers with g. Empty maps, empty strings and
// required:false are omitted; schema_version 0 is written as 1; a field's
// empty Kind is written as the kind of the section holding it and a
// reducer's empty Type as last_value; record IDs are the map keys; a nested
// guard in a plain argument position is wrapped as {"$guard": …}.
// FromMap(ToMap(g)) equals g whenever g is in the form FromMap returns
// (IDs equal to their keys, nil rather than empty maps and lists, kinds and
// reducer types spelled out), as the builder's documents are.
//
// It fails with a *DocumentError: CodeNonDurableValue when content is not
// portable (a "$" key, a Go value outside the portable model, invalid
// UTF-8, nesting deeper than value.MaxDepth from the document's root),
// CodeUnsupportedSchemaVersion for a version above SchemaVersion,
// CodeInvalidDocument when a structural value has no wire form (an
// unknown field kind, reducer type, guard op or schema type, a nil record,
// a non-guard argument of all/any/not, a passthrough implementation tagged
// "module"). Every map ToMap returns is accepted by FromMap.
func (g *Graph) ToMap() (map[string]any, error) {
	if g == nil {
		return nil, wireInvalid("", "cannot write a nil graph")
	}
	switch {
	case g.SchemaVersion > SchemaVersion:
		return nil, &DocumentError{Code: CodeUnsupportedSchemaVersion, Path: "schema_version",
			Message: fmt.Sprintf("version %d is newer than the supported version %d", g.SchemaVersion, SchemaVersion)}
	case g.SchemaVersion < 0:
		return nil, wireInvalid("schema_version", "must be a positive integer, got %d", g.SchemaVersion)
	}
	// The zero version means "current", so hand-built graphs need not set it.
	out := map[string]any{"schema_version": int64(SchemaVersion), "id": g.ID}
	wirePutString(out, "name", g.Name)
	wirePutString(out, "description", g.Description)

	if err := wirePutCollection(out, "inputs", g.Inputs, func(f *Field, path string) (map[string]any, error) {
		return wireWriteField(f, KindInput, path)
	}); err != nil {
		return nil, err
	}
	if err := wirePutCollection(out, "fields", g.Fields, func(f *Field, path string) (map[string]any, error) {
		return wireWriteField(f, KindState, path)
	}); err != nil {
		return nil, err
	}
	if err := wirePutCollection(out, "outputs", g.Outputs, wireWriteOutput); err != nil {
		return nil, err
	}
	if err := wirePutCollection(out, "nodes", g.Nodes, wireWriteNode); err != nil {
		return nil, err
	}
	if err := wirePutCollection(out, "edges", g.Edges, wireWriteEdge); err != nil {
		return nil, err
	}
	if err := wirePutOpen(out, "policies", g.Policies, "policies"); err != nil {
		return nil, err
	}
	if err := wirePutOpen(out, "metadata", g.Metadata, "metadata"); err != nil {
		return nil, err
	}
	// IDs, labels and every other string end up in JSON, which cannot carry
	// invalid UTF-8 faithfully.
	if err := wireCheckUTF8(out, ""); err != nil {
		return nil, &DocumentError{Code: CodeNonDurableValue, Path: err.Path, Message: err.Message}
	}
	return out, nil
}

func wirePutCollection[R any](out map[string]any, key string, records map[string]*R, write func(*R, string) (map[string]any, error)) error {
	if len(records) == 0 {
		return nil
	}
	collection := make(map[string]any, len(records))
	for _, id := range value.SortedKeys(records) {
		path := key + "." + id
		record := records[id]
		if record == nil {
			return wireInvalid(path, "the record is nil")
		}
		m, err := write(record, path)
		if err != nil {
			return err
		}
		collection[id] = m
	}
	out[key] = collection
	return nil
}

func wireWriteField(f *Field, sectionKind FieldKind, path string) (map[string]any, error) {
	kind := f.Kind
	if kind == "" {
		kind = sectionKind
	}
	if kind != KindInput && kind != KindState {
		return nil, wireInvalid(path+".kind", "unknown field kind %q (expected input or state)", kind)
	}
	out := map[string]any{"kind": string(kind)}
	wirePutString(out, "label", f.Label)
	wirePutString(out, "description", f.Description)
	if err := wirePutSchema(out, f.Schema, path+".schema"); err != nil {
		return nil, err
	}
	if f.Reducer != nil {
		r, err := wireWriteReducer(f.Reducer, path+".reducer")
		if err != nil {
			return nil, err
		}
		out["reducer"] = r
	}
	if f.Required {
		out["required"] = true
	}
	if f.Default != nil {
		v, err := wirePortable(f.Default, path+".default")
		if err != nil {
			return nil, err
		}
		out["default"] = v
	}
	if err := wirePutOpen(out, "metadata", f.Metadata, path+".metadata"); err != nil {
		return nil, err
	}
	return out, nil
}

func wireWriteReducer(r *reducer.Reducer, path string) (map[string]any, error) {
	t := r.Type
	if t == "" {
		t = reducer.LastValue // the zero Reducer means last_value
	}
	if !wireReducerTypes[t] {
		return nil, wireInvalid(path+".type", "unknown reducer type %q", t)
	}
	out := map[string]any{"type": string(t)}
	if err := wirePutOpen(out, "opts", r.Opts, path+".opts"); err != nil {
		return nil, err
	}
	return out, nil
}

func wirePutSchema(out map[string]any, s *schema.Schema, path string) error {
	if s == nil {
		return nil
	}
	if s.ContainsItself() {
		return wireInvalid(path, "the schema contains itself; a recursive schema has no wire form")
	}
	m := s.ToMap()
	if err := value.Check(m); err != nil {
		return wireNonDurable(path, err)
	}
	// Only what FromMap reads back may be written: this catches unknown
	// types and nil children with the schema codec's own reason.
	if _, err := schema.FromMap(m); err != nil {
		return wireSchemaError(path, err)
	}
	out["schema"] = m
	return nil
}

func wireWriteOutput(o *Output, path string) (map[string]any, error) {
	out := map[string]any{}
	wirePutString(out, "source", o.Source)
	wirePutString(out, "label", o.Label)
	wirePutString(out, "description", o.Description)
	if err := wirePutSchema(out, o.Schema, path+".schema"); err != nil {
		return nil, err
	}
	if err := wirePutOpen(out, "metadata", o.Metadata, path+".metadata"); err != nil {
		return nil, err
	}
	return out, nil
}

func wireWriteNode(n *Node, path string) (map[string]any, error) {
	out := map[string]any{}
	wirePutString(out, "label", n.Label)
	wirePutString(out, "description", n.Description)
	impl, err := wireWriteImplementation(n.Implementation, path+".implementation")
	if err != nil {
		return nil, err
	}
	if impl != nil {
		out["implementation"] = impl
	}
	if len(n.Branches) > 0 {
		branches := make(map[string]any, len(n.Branches))
		for _, group := range value.SortedKeys(n.Branches) {
			if strings.HasPrefix(group, "$") {
				return nil, wireNonDurable(path+".branches", &value.NotPortableError{Path: group, Reason: `keys starting with "$" are reserved`})
			}
			edges := make([]any, len(n.Branches[group]))
			for i, id := range n.Branches[group] {
				edges[i] = id
			}
			branches[group] = edges
		}
		out["branches"] = branches
	}
	for _, open := range []struct {
		key string
		m   map[string]any
	}{{"config", n.Config}, {"policies", n.Policies}, {"metadata", n.Metadata}} {
		if err := wirePutOpen(out, open.key, open.m, path+"."+open.key); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func wireWriteImplementation(impl Implementation, path string) (map[string]any, error) {
	if impl.Raw != nil {
		if impl.Type != "" || impl.Ref != "" {
			return nil, wireInvalid(path, "an implementation sets either Raw or Type and Ref, not both")
		}
		if t, _ := impl.Raw["type"].(string); t == ImplementationModule {
			return nil, wireInvalid(path, `a passthrough implementation cannot use "type": %q; that tag is reserved for registry references`, ImplementationModule)
		}
		v, err := wirePortable(impl.Raw, path)
		if err != nil {
			return nil, err
		}
		return v.(map[string]any), nil
	}
	switch impl.Type {
	case "":
		if impl.Ref != "" {
			return nil, wireInvalid(path, "implementation %q has no type; use type %q", impl.Ref, ImplementationModule)
		}
		return nil, nil
	case ImplementationModule:
		return map[string]any{"type": ImplementationModule, "implementation": impl.Ref}, nil
	default:
		return nil, wireInvalid(path, "implementation type %q has no wire form; keep non-module implementations in Raw", impl.Type)
	}
}

func wireWriteEdge(e *Edge, path string) (map[string]any, error) {
	out := map[string]any{}
	switch {
	case e.Barrier || len(e.From) > 1:
		// A list is what makes an edge a barrier, even with one source.
		from := make([]any, len(e.From))
		for i, id := range e.From {
			from[i] = id
		}
		out["from"] = from
	case len(e.From) == 1:
		out["from"] = e.From[0]
	}
	wirePutString(out, "to", e.To)
	wirePutString(out, "label", e.Label)
	wirePutString(out, "description", e.Description)
	wirePutString(out, "source_handle", e.SourceHandle)
	wirePutString(out, "target_handle", e.TargetHandle)
	if e.Guard.containsItself() {
		return nil, wireInvalid(path+".guard", "the guard contains itself; a recursive guard has no wire form")
	}
	if e.Guard != nil {
		guard, err := wireWriteGuard(e.Guard, path+".guard")
		if err != nil {
			return nil, err
		}
		out["guard"] = guard
	}
	if err := wirePutOpen(out, "metadata", e.Metadata, path+".metadata"); err != nil {
		return nil, err
	}
	return out, nil
}

func wireWriteGuard(g *Guard, path string) (map[string]any, error) {
	if !wireGuardOps[g.Op] {
		return nil, wireInvalid(path+".op", "unknown guard op %q", g.Op)
	}
	boolean := wireBooleanOp(g.Op)
	args := make([]any, len(g.Args))
	for i, arg := range g.Args {
		argPath := path + ".args[" + strconv.Itoa(i) + "]"
		nested, isGuard := arg.(*Guard)
		switch {
		case isGuard && nested == nil:
			return nil, wireInvalid(argPath, "a nested guard is nil")
		case isGuard && boolean:
			m, err := wireWriteGuard(nested, argPath)
			if err != nil {
				return nil, err
			}
			args[i] = m
		case isGuard:
			m, err := wireWriteGuard(nested, argPath+"."+wireGuardTag)
			if err != nil {
				return nil, err
			}
			args[i] = map[string]any{wireGuardTag: m}
		case boolean:
			return nil, wireInvalid(argPath, "the arguments of %q must be guards, got %s", g.Op, wireDescribe(arg))
		default:
			v, err := wirePortable(arg, argPath)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
	}
	return map[string]any{"op": g.Op, "args": args}, nil
}

func wirePutString(out map[string]any, key, s string) {
	if s != "" {
		out[key] = s
	}
}

// wirePutOpen writes a non-empty open map after checking it is portable.
func wirePutOpen(out map[string]any, key string, m map[string]any, path string) error {
	if len(m) == 0 {
		return nil
	}
	v, err := wirePortable(m, path)
	if err != nil {
		return err
	}
	out[key] = v
	return nil
}

// wirePortable returns a deep copy of a portable value, or a
// non_durable_value error naming the offending path.
func wirePortable(v any, path string) (any, error) {
	if err := value.Check(v); err != nil {
		return nil, wireNonDurable(path, err)
	}
	return value.Clone(v), nil
}

func wireNonDurable(path string, err error) error {
	var np *value.NotPortableError
	if errors.As(err, &np) {
		return &DocumentError{Code: CodeNonDurableValue, Path: wireJoin(path, np.Path), Message: np.Reason, Err: err}
	}
	return &DocumentError{Code: CodeNonDurableValue, Path: path, Message: err.Error(), Err: err}
}

// ---------------------------------------------------------------------------
// Reading (FromMap)
// ---------------------------------------------------------------------------

// FromMap parses a wire map (portable-shaped, as value.DecodeJSON returns
// it). It rejects unknown keys, bad shapes, unknown field kinds, reducer
// types, guard ops and schema types, "$" keys in open content, invalid
// UTF-8 and nesting deeper than value.MaxDepth with a *DocumentError of
// code CodeInvalidDocument, and a schema_version above SchemaVersion with
// CodeUnsupportedSchemaVersion. A document with several such problems
// gets a DocumentErrors naming every one (in sorted-key order, so the
// list is stable); errors.As to a *DocumentError finds the first. Only a
// newer schema version, text that is not UTF-8 and too deep nesting stop
// the reading at once.
// Record IDs are taken from the map keys; a field without "kind" takes its
// section's kind; null for an optional key means absent. Empty open maps and
// lists load as nil. It does not compile the document: ID syntax, kinds
// matching their section, guard arity and every other semantic rule are the
// compiler's to report. The result shares no containers with m.
func FromMap(m map[string]any) (*Graph, error) {
	if m == nil {
		return nil, wireInvalid("", "a graph document must be a map, got null")
	}
	if err := wireCheckUTF8(m, ""); err != nil {
		return nil, err
	}
	var p wireProblems
	version, err := wireReadSchemaVersion(m)
	var unsupported *DocumentError
	if errors.As(err, &unsupported) && unsupported.Code == CodeUnsupportedSchemaVersion {
		// A newer document's other keys mean what this version cannot know.
		return nil, err
	}
	p.add(err)
	p.checkKeys(m, wireGraphKeySet, wireGraphKeys, "")
	g := &Graph{SchemaVersion: version}

	switch rawID, ok := m["id"]; {
	case !ok:
		p.add(wireInvalid("id", "missing required key"))
	default:
		if g.ID, ok = rawID.(string); !ok {
			p.add(wireInvalid("id", "must be a string, got %s", wireDescribe(rawID)))
		}
	}
	g.Name = p.str(m, "name", "")
	g.Description = p.str(m, "description", "")
	g.Inputs = wireReadCollection(&p, m, "inputs", func(p *wireProblems, id string, rec map[string]any, path string) *Field {
		return wireReadField(p, id, rec, KindInput, path)
	})
	g.Fields = wireReadCollection(&p, m, "fields", func(p *wireProblems, id string, rec map[string]any, path string) *Field {
		return wireReadField(p, id, rec, KindState, path)
	})
	g.Outputs = wireReadCollection(&p, m, "outputs", wireReadOutput)
	g.Nodes = wireReadCollection(&p, m, "nodes", wireReadNode)
	g.Edges = wireReadCollection(&p, m, "edges", wireReadEdge)
	g.Policies = p.open(m, "policies", "")
	g.Metadata = p.open(m, "metadata", "")
	if err := p.err(); err != nil {
		return nil, err
	}
	return g, nil
}

// DocumentErrors is every problem FromMap (and Parse) found in a document
// that has more than one, in sorted-key order. It unwraps to each
// *DocumentError, so errors.Is(err, ErrInvalidDocument) holds and
// errors.As to a *DocumentError yields the first.
type DocumentErrors []*DocumentError

// Error lists the problems one per line.
func (e DocumentErrors) Error() string {
	lines := make([]string, len(e))
	for i, de := range e {
		lines[i] = de.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap exposes each problem.
func (e DocumentErrors) Unwrap() []error {
	errs := make([]error, len(e))
	for i, de := range e {
		errs[i] = de
	}
	return errs
}

// wireProblems collects the problems of one document, so that FromMap
// reports all of them rather than the first.
type wireProblems []*DocumentError

func (p *wireProblems) add(err error) {
	if err == nil {
		return
	}
	var de *DocumentError
	if !errors.As(err, &de) {
		de = &DocumentError{Code: CodeInvalidDocument, Message: err.Error(), Err: err}
	}
	*p = append(*p, de)
}

// err is nil, the only problem, or DocumentErrors.
func (p wireProblems) err() error {
	switch len(p) {
	case 0:
		return nil
	case 1:
		return p[0]
	}
	return DocumentErrors(p)
}

func wireReadSchemaVersion(m map[string]any) (int, error) {
	raw, ok := m["schema_version"]
	if !ok {
		return 0, wireInvalid("schema_version", "missing required key")
	}
	v, ok := raw.(int64)
	if !ok || v < 1 {
		return 0, wireInvalid("schema_version", "must be a positive integer, got %s", wireDescribe(raw))
	}
	if v > SchemaVersion {
		return 0, &DocumentError{Code: CodeUnsupportedSchemaVersion, Path: "schema_version",
			Message: fmt.Sprintf("version %d is newer than the supported version %d", v, SchemaVersion)}
	}
	return int(v), nil
}

// wireReadCollection reads a map of records, skipping each record that is
// not a map (after noting it).
func wireReadCollection[R any](p *wireProblems, m map[string]any, key string, read func(p *wireProblems, id string, rec map[string]any, path string) *R) map[string]*R {
	raw := m[key]
	if raw == nil {
		return nil
	}
	collection, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(key, "must be a map of records, got %s", wireDescribe(raw)))
		return nil
	}
	if len(collection) == 0 {
		return nil
	}
	out := make(map[string]*R, len(collection))
	for _, id := range value.SortedKeys(collection) {
		path := key + "." + id
		rec, ok := collection[id].(map[string]any)
		if !ok {
			p.add(wireInvalid(path, "must be a map, got %s", wireDescribe(collection[id])))
			continue
		}
		out[id] = read(p, id, rec, path)
	}
	return out
}

func wireReadField(p *wireProblems, id string, m map[string]any, sectionKind FieldKind, path string) *Field {
	p.checkKeys(m, wireFieldKeySet, wireFieldKeys, path)
	f := &Field{ID: id, Kind: sectionKind}
	if raw := m["kind"]; raw != nil {
		kind, _ := raw.(string)
		if FieldKind(kind) != KindInput && FieldKind(kind) != KindState {
			p.add(wireInvalid(path+".kind", "must be \"input\" or \"state\", got %s", wireDescribe(raw)))
		} else {
			f.Kind = FieldKind(kind)
		}
	}
	f.Label = p.str(m, "label", path)
	f.Description = p.str(m, "description", path)
	f.Schema = p.schema(m, path)
	if raw := m["reducer"]; raw != nil {
		f.Reducer = wireReadReducer(p, raw, path+".reducer")
	}
	if raw := m["required"]; raw != nil {
		required, ok := raw.(bool)
		if !ok {
			p.add(wireInvalid(path+".required", "must be a boolean, got %s", wireDescribe(raw)))
		}
		f.Required = required
	}
	f.Default = p.portable(m["default"], path+".default")
	f.Metadata = p.open(m, "metadata", path)
	return f
}

// schema reads the optional "schema" key of a record.
func (p *wireProblems) schema(m map[string]any, path string) *schema.Schema {
	raw := m["schema"]
	if raw == nil {
		return nil
	}
	path = wireJoin(path, "schema")
	sm, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(path, "must be a map, got %s", wireDescribe(raw)))
		return nil
	}
	// "$" keys are reserved at every depth, field names included.
	if err := value.Check(sm); err != nil {
		p.add(wireInvalidContent(path, err))
		return nil
	}
	s, err := schema.FromMap(sm)
	if err != nil {
		p.add(wireSchemaError(path, err))
		return nil
	}
	return s
}

func wireSchemaError(path string, err error) error {
	var de *schema.DecodeError
	if errors.As(err, &de) {
		return &DocumentError{Code: CodeInvalidDocument, Path: wireJoin(path, de.Path), Message: de.Reason, Err: err}
	}
	return &DocumentError{Code: CodeInvalidDocument, Path: path, Message: err.Error(), Err: err}
}

func wireReadReducer(p *wireProblems, raw any, path string) *reducer.Reducer {
	m, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(path, "must be a map, got %s", wireDescribe(raw)))
		return nil
	}
	p.checkKeys(m, wireReducerKeySet, wireReducerKeys, path)
	opts := p.open(m, "opts", path)
	t, _ := m["type"].(string)
	if !wireReducerTypes[reducer.Type(t)] {
		if m["type"] == nil {
			p.add(wireInvalid(path+".type", "missing required key"))
		} else {
			p.add(wireInvalid(path+".type", "unknown reducer type %s (expected append, first_value, last_value, merge, sum or union)", wireDescribe(m["type"])))
		}
		return nil
	}
	return &reducer.Reducer{Type: reducer.Type(t), Opts: opts}
}

func wireReadOutput(p *wireProblems, id string, m map[string]any, path string) *Output {
	p.checkKeys(m, wireOutputKeySet, wireOutputKeys, path)
	return &Output{
		ID:          id,
		Source:      p.str(m, "source", path),
		Label:       p.str(m, "label", path),
		Description: p.str(m, "description", path),
		Schema:      p.schema(m, path),
		Metadata:    p.open(m, "metadata", path),
	}
}

func wireReadNode(p *wireProblems, id string, m map[string]any, path string) *Node {
	p.checkKeys(m, wireNodeKeySet, wireNodeKeys, path)
	return &Node{
		ID:             id,
		Label:          p.str(m, "label", path),
		Description:    p.str(m, "description", path),
		Implementation: wireReadImplementation(p, m["implementation"], path+".implementation"),
		Branches:       wireReadBranches(p, m["branches"], path+".branches"),
		Config:         p.open(m, "config", path),
		Policies:       p.open(m, "policies", path),
		Metadata:       p.open(m, "metadata", path),
	}
}

func wireReadImplementation(p *wireProblems, raw any, path string) Implementation {
	if raw == nil {
		return Implementation{}
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(path, "must be a map, got %s", wireDescribe(raw)))
		return Implementation{}
	}
	if t, _ := m["type"].(string); t != ImplementationModule {
		// Passthrough: kept verbatim so it round-trips; it does not compile.
		if err := value.Check(m); err != nil {
			p.add(wireInvalidContent(path, err))
			return Implementation{}
		}
		return Implementation{Raw: value.Clone(m).(map[string]any)}
	}
	p.checkKeys(m, wireModuleKeySet, wireModuleKeys, path)
	ref, ok := m["implementation"].(string)
	if !ok {
		if _, present := m["implementation"]; !present {
			p.add(wireInvalid(path+".implementation", "missing required key (the registry ID of the node implementation)"))
		} else {
			p.add(wireInvalid(path+".implementation", "must be a string, got %s", wireDescribe(m["implementation"])))
		}
		return Implementation{}
	}
	return Implementation{Type: ImplementationModule, Ref: ref}
}

func wireReadBranches(p *wireProblems, raw any, path string) map[string][]string {
	if raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(path, "must be a map of group names to edge ID lists, got %s", wireDescribe(raw)))
		return nil
	}
	if len(m) == 0 {
		return nil
	}
	out := make(map[string][]string, len(m))
	for _, group := range value.SortedKeys(m) {
		groupPath := path + "." + group
		if strings.HasPrefix(group, "$") {
			p.add(wireInvalid(groupPath, `keys starting with "$" are reserved`))
			continue
		}
		out[group] = p.stringList(m[group], groupPath, "a list of edge IDs")
	}
	return out
}

func wireReadEdge(p *wireProblems, id string, m map[string]any, path string) *Edge {
	p.checkKeys(m, wireEdgeKeySet, wireEdgeKeys, path)
	e := &Edge{ID: id}
	switch from := m["from"].(type) {
	case nil:
	case string:
		e.From = []string{from}
	case []any:
		e.From, e.Barrier = p.stringList(from, path+".from", "a source ID or a list of source IDs"), true
	default:
		p.add(wireInvalid(path+".from", "must be a source ID or a list of source IDs, got %s", wireDescribe(from)))
	}
	e.To = p.str(m, "to", path)
	e.Label = p.str(m, "label", path)
	e.Description = p.str(m, "description", path)
	e.SourceHandle = p.str(m, "source_handle", path)
	e.TargetHandle = p.str(m, "target_handle", path)
	if raw := m["guard"]; raw != nil {
		e.Guard = wireReadGuard(p, raw, path+".guard")
	}
	e.Metadata = p.open(m, "metadata", path)
	return e
}

func wireReadGuard(p *wireProblems, raw any, path string) *Guard {
	m, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(path, "must be a guard object {op, args}, got %s", wireDescribe(raw)))
		return nil
	}
	p.checkKeys(m, wireGuardKeySet, wireGuardKeys, path)
	op, _ := m["op"].(string)
	known := wireGuardOps[op]
	switch {
	case known:
	case m["op"] == nil:
		p.add(wireInvalid(path+".op", "missing required key"))
	default:
		p.add(wireInvalid(path+".op", "unknown guard op %s (expected all, any, not, changed, version_at_least, exists, equals or path)", wireDescribe(m["op"])))
	}
	var args []any
	switch raw := m["args"].(type) {
	case nil:
	case []any:
		args = raw
	default:
		p.add(wireInvalid(path+".args", "must be a list, got %s", wireDescribe(raw)))
	}
	if !known {
		return nil
	}
	g := &Guard{Op: op}
	if len(args) == 0 {
		return g
	}
	boolean := wireBooleanOp(op)
	g.Args = make([]any, len(args))
	for i, arg := range args {
		argPath := path + ".args[" + strconv.Itoa(i) + "]"
		if boolean {
			g.Args[i] = wireReadGuard(p, arg, argPath)
			continue
		}
		if wrapper, ok := arg.(map[string]any); ok {
			if inner, tagged := wrapper[wireGuardTag]; tagged {
				if len(wrapper) != 1 {
					p.add(wireInvalid(argPath, "a %q wrapper must have no other keys", wireGuardTag))
					continue
				}
				g.Args[i] = wireReadGuard(p, inner, argPath+"."+wireGuardTag)
				continue
			}
		}
		g.Args[i] = p.portable(arg, argPath)
	}
	return g
}

// checkKeys notes every key outside allowed, in sorted order.
func (p *wireProblems) checkKeys(m map[string]any, allowed map[string]bool, list []string, path string) {
	for _, k := range value.SortedKeys(m) {
		if !allowed[k] {
			p.add(wireInvalid(wireJoin(path, k), "unknown key (allowed: %s)", strings.Join(list, ", ")))
		}
	}
}

// str reads an optional string; null and absent read as "".
func (p *wireProblems) str(m map[string]any, key, path string) string {
	raw := m[key]
	if raw == nil {
		return ""
	}
	s, ok := raw.(string)
	if !ok {
		p.add(wireInvalid(wireJoin(path, key), "must be a string, got %s", wireDescribe(raw)))
	}
	return s
}

func (p *wireProblems) stringList(raw any, path, what string) []string {
	list, ok := raw.([]any)
	if !ok {
		p.add(wireInvalid(path, "must be %s, got %s", what, wireDescribe(raw)))
		return nil
	}
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, e := range list {
		s, ok := e.(string)
		if !ok {
			p.add(wireInvalid(path+"["+strconv.Itoa(i)+"]", "must be a string, got %s", wireDescribe(e)))
		}
		out[i] = s
	}
	return out
}

// open reads an optional open map; null, absent and empty read as nil.
func (p *wireProblems) open(m map[string]any, key, path string) map[string]any {
	raw := m[key]
	if raw == nil {
		return nil
	}
	path = wireJoin(path, key)
	open, ok := raw.(map[string]any)
	if !ok {
		p.add(wireInvalid(path, "must be a map, got %s", wireDescribe(raw)))
		return nil
	}
	if len(open) == 0 {
		return nil
	}
	if v, _ := p.portable(open, path).(map[string]any); v != nil {
		return v
	}
	return nil
}

// portable clones a portable value, or notes why it is not one.
func (p *wireProblems) portable(v any, path string) any {
	if err := value.Check(v); err != nil {
		p.add(wireInvalidContent(path, err))
		return nil
	}
	return value.Clone(v)
}

// wireInvalidContent reports non-portable content met while loading, where
// it is a malformed document rather than a value the caller could fix.
func wireInvalidContent(path string, err error) error {
	var np *value.NotPortableError
	if errors.As(err, &np) {
		return &DocumentError{Code: CodeInvalidDocument, Path: wireJoin(path, np.Path), Message: np.Reason, Err: err}
	}
	return &DocumentError{Code: CodeInvalidDocument, Path: path, Message: err.Error(), Err: err}
}

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

func wireInvalid(path, format string, args ...any) *DocumentError {
	return &DocumentError{Code: CodeInvalidDocument, Path: path, Message: fmt.Sprintf(format, args...)}
}

// wireJoin appends a relative dotted path ("x.y", "[2].z") to path.
func wireJoin(path, rel string) string {
	switch {
	case rel == "":
		return path
	case path == "":
		return rel
	case rel[0] == '[':
		return path + rel
	}
	return path + "." + rel
}

// wireCheckUTF8 rejects what JSON cannot carry faithfully: strings and keys
// that are not valid UTF-8, and nesting deeper than value.MaxDepth counted
// from the document's root, as value.DecodeJSON counts it (open content is
// checked only below its own key). The first offender in sorted order is
// named.
func wireCheckUTF8(v any, path string) *DocumentError {
	return wireCheckText(v, path, 0)
}

func wireCheckText(v any, path string, depth int) *DocumentError {
	if depth > value.MaxDepth {
		return wireInvalid(path, "the document nests deeper than %d levels", value.MaxDepth)
	}
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return wireInvalid(path, "string is not valid UTF-8")
		}
	case []any:
		for i, e := range x {
			if err := wireCheckText(e, path+"["+strconv.Itoa(i)+"]", depth+1); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range value.SortedKeys(x) {
			if !utf8.ValidString(k) {
				return wireInvalid(path, "a key is not valid UTF-8")
			}
			if err := wireCheckText(x[k], wireJoin(path, k), depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// wireDescribe names the portable kind of v for messages.
func wireDescribe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return strconv.Quote(x)
	case int64:
		return "the integer " + strconv.FormatInt(x, 10)
	case float64:
		return "a float"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("a Go %T", v)
}
