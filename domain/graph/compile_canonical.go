package graph

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// canonicalError says where a graph holds content that cannot be durably
// encoded. It becomes the single non_durable_graph_value diagnostic.
type canonicalError struct {
	path []any
	err  error
}

// canonicalGraph returns a deep copy of g in canonical form: every piece of
// open content normalized to portable values (ints become int64, typed
// slices and maps become []any and map[string]any), and the unset values
// the wire codec writes as their defaults filled in (schema_version 0 is 1,
// an empty record ID or field kind comes from the record's position, an
// empty reducer type is last_value, an empty output source is the output's
// ID; empty open maps and guard arguments become nil), so the effective
// document reads back from JSON exactly as it was. The copy shares nothing
// mutable with g, so later passes may change it freely without touching the
// caller's document.
//
// Records are visited in sorted order so that, with several problems, the
// reported one is always the same.
func canonicalGraph(g *Graph) (*Graph, *canonicalError) {
	out := &Graph{
		SchemaVersion: g.SchemaVersion,
		ID:            g.ID,
		Name:          g.Name,
		Description:   g.Description,
	}
	if out.SchemaVersion == 0 {
		out.SchemaVersion = SchemaVersion
	}
	var err *canonicalError
	if out.Inputs, err = canonicalRecords("inputs", g.Inputs, fieldCanonicalizer("inputs", KindInput)); err != nil {
		return nil, err
	}
	if out.Fields, err = canonicalRecords("fields", g.Fields, fieldCanonicalizer("fields", KindState)); err != nil {
		return nil, err
	}
	if out.Outputs, err = canonicalRecords("outputs", g.Outputs, canonicalOutput); err != nil {
		return nil, err
	}
	if out.Nodes, err = canonicalRecords("nodes", g.Nodes, canonicalNode); err != nil {
		return nil, err
	}
	if out.Edges, err = canonicalRecords("edges", g.Edges, canonicalEdge); err != nil {
		return nil, err
	}
	if out.Policies, err = openMap(g.Policies, pathOf("policies")); err != nil {
		return nil, err
	}
	if out.Metadata, err = openMap(g.Metadata, pathOf("metadata")); err != nil {
		return nil, err
	}
	return out, nil
}

var errNilRecord = errors.New("the record is nil")

// canonicalRecords copies the records of collection in sorted key order
// with canonicalRecord. A nil collection stays nil; a nil record cannot be
// encoded.
func canonicalRecords[R any](collection string, in map[string]*R, canonicalRecord func(id string, r *R) (*R, *canonicalError)) (map[string]*R, *canonicalError) {
	if in == nil {
		return nil, nil
	}
	out := make(map[string]*R, len(in))
	for _, id := range value.SortedKeys(in) {
		r := in[id]
		if r == nil {
			return nil, &canonicalError{path: pathOf(collection, id), err: errNilRecord}
		}
		c, err := canonicalRecord(id, r)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	return out, nil
}

// fieldCanonicalizer copies the fields of collection, whose kind is kind.
func fieldCanonicalizer(collection string, kind FieldKind) func(string, *Field) (*Field, *canonicalError) {
	return func(id string, f *Field) (*Field, *canonicalError) {
		c := &Field{
			ID:          f.ID,
			Kind:        f.Kind,
			Label:       f.Label,
			Description: f.Description,
			Required:    f.Required,
		}
		if c.ID == "" {
			c.ID = id
		}
		if c.Kind == "" {
			c.Kind = kind
		}
		var err *canonicalError
		if c.Schema, err = canonicalSchema(f.Schema, pathOf(collection, id, "schema")); err != nil {
			return nil, err
		}
		if f.Reducer != nil {
			opts, err := openMap(f.Reducer.Opts, pathOf(collection, id, "reducer", "opts"))
			if err != nil {
				return nil, err
			}
			c.Reducer = &reducer.Reducer{Type: f.Reducer.Type, Opts: opts}
			if c.Reducer.Type == "" {
				c.Reducer.Type = reducer.LastValue // the zero Reducer means last_value
			}
		}
		if c.Default, err = openValue(f.Default, pathOf(collection, id, "default")); err != nil {
			return nil, err
		}
		if c.Metadata, err = openMap(f.Metadata, pathOf(collection, id, "metadata")); err != nil {
			return nil, err
		}
		return c, nil
	}
}

func canonicalOutput(id string, o *Output) (*Output, *canonicalError) {
	c := &Output{ID: o.ID, Source: o.Source, Label: o.Label, Description: o.Description}
	if c.ID == "" {
		c.ID = id
	}
	// The wire default of source is the output's ID; writing it out keeps
	// the effective document identical however the source was spelled.
	if c.Source == "" {
		c.Source = id
	}
	var err *canonicalError
	if c.Schema, err = canonicalSchema(o.Schema, pathOf("outputs", id, "schema")); err != nil {
		return nil, err
	}
	if c.Metadata, err = openMap(o.Metadata, pathOf("outputs", id, "metadata")); err != nil {
		return nil, err
	}
	return c, nil
}

func canonicalNode(id string, n *Node) (*Node, *canonicalError) {
	c := &Node{ID: n.ID, Label: n.Label, Description: n.Description}
	if c.ID == "" {
		c.ID = id
	}
	var err *canonicalError
	c.Implementation = Implementation{Type: n.Implementation.Type, Ref: n.Implementation.Ref}
	if c.Implementation.Raw, err = openMap(n.Implementation.Raw, pathOf("nodes", id, "implementation")); err != nil {
		return nil, err
	}
	if len(n.Branches) > 0 {
		c.Branches = make(map[string][]string, len(n.Branches))
		for _, group := range value.SortedKeys(n.Branches) {
			if !utf8.ValidString(group) || strings.HasPrefix(group, "$") {
				return nil, &canonicalError{path: pathOf("nodes", id, "branches"),
					err: fmt.Errorf("branch group name %q is not portable (invalid UTF-8 or a reserved \"$\" prefix)", group)}
			}
			c.Branches[group] = append([]string(nil), n.Branches[group]...)
		}
	}
	if c.Config, err = openMap(n.Config, pathOf("nodes", id, "config")); err != nil {
		return nil, err
	}
	if c.Policies, err = openMap(n.Policies, pathOf("nodes", id, "policies")); err != nil {
		return nil, err
	}
	if c.Metadata, err = openMap(n.Metadata, pathOf("nodes", id, "metadata")); err != nil {
		return nil, err
	}
	return c, nil
}

func canonicalEdge(id string, e *Edge) (*Edge, *canonicalError) {
	c := &Edge{
		ID:           e.ID,
		From:         append([]string(nil), e.From...),
		Barrier:      e.Barrier,
		To:           e.To,
		Label:        e.Label,
		Description:  e.Description,
		SourceHandle: e.SourceHandle,
		TargetHandle: e.TargetHandle,
	}
	if c.ID == "" {
		c.ID = id
	}
	if e.Guard.containsItself() {
		return nil, &canonicalError{path: pathOf("edges", id, "guard"), err: errors.New("the guard contains itself (a recursive guard cannot be stored)")}
	}
	var err *canonicalError
	if c.Guard, err = canonicalGuard(e.Guard, pathOf("edges", id, "guard")); err != nil {
		return nil, err
	}
	if c.Metadata, err = openMap(e.Metadata, pathOf("edges", id, "metadata")); err != nil {
		return nil, err
	}
	return c, nil
}

// canonicalGuard copies a guard, normalizing every non-guard argument. A
// nil nested guard cannot be encoded; a nil top-level guard means "none".
func canonicalGuard(g *Guard, path []any) (*Guard, *canonicalError) {
	if g == nil {
		return nil, nil
	}
	c := &Guard{Op: g.Op}
	if len(g.Args) > 0 { // empty arguments stay nil, as the codec reads them
		c.Args = make([]any, len(g.Args))
	}
	for i, arg := range g.Args {
		if nested, ok := arg.(*Guard); ok {
			if nested == nil {
				return nil, &canonicalError{path: path, err: fmt.Errorf("argument %d of %q is a nil guard", i, g.Op)}
			}
			cn, err := canonicalGuard(nested, path)
			if err != nil {
				return nil, err
			}
			c.Args[i] = cn
			continue
		}
		v, err := openValue(arg, path)
		if err != nil {
			return nil, err
		}
		c.Args[i] = v
	}
	return c, nil
}

// canonicalSchema deep-copies a schema with its open content normalized.
// Whether the schema is valid is the validation passes' business, except
// that a schema containing itself (easy to build in Go, impossible to
// store) is refused here: every later walk would recurse without end.
func canonicalSchema(s *schema.Schema, path []any) (*schema.Schema, *canonicalError) {
	return canonicalSchemaWithin(s, path, nil)
}

// canonicalSchemaWithin is canonicalSchema below the given ancestors.
func canonicalSchemaWithin(s *schema.Schema, path []any, ancestors []*schema.Schema) (*schema.Schema, *canonicalError) {
	if s == nil {
		return nil, nil
	}
	if slices.Contains(ancestors, s) {
		return nil, &canonicalError{path: path, err: errors.New("the schema contains itself (a recursive schema cannot be stored)")}
	}
	ancestors = append(ancestors, s)
	c := &schema.Schema{Type: s.Type, Required: s.Required, HasDefault: s.HasDefault}
	if len(s.Fields) > 0 {
		c.Fields = make(map[string]*schema.Schema, len(s.Fields))
		for _, name := range value.SortedKeys(s.Fields) {
			child := s.Fields[name]
			if child == nil {
				return nil, &canonicalError{path: path, err: fmt.Errorf("schema field %q is nil", name)}
			}
			if !utf8.ValidString(name) {
				return nil, &canonicalError{path: path, err: errors.New("a schema field name is not valid UTF-8")}
			}
			cc, err := canonicalSchemaWithin(child, path, ancestors)
			if err != nil {
				return nil, err
			}
			c.Fields[name] = cc
		}
	}
	var err *canonicalError
	if c.Item, err = canonicalSchemaWithin(s.Item, path, ancestors); err != nil {
		return nil, err
	}
	if s.Values != nil {
		c.Values = make([]any, len(s.Values))
		for i, v := range s.Values {
			if c.Values[i], err = openValue(v, path); err != nil {
				return nil, err
			}
		}
	}
	if s.HasDefault {
		if c.Default, err = openValue(s.Default, path); err != nil {
			return nil, err
		}
	}
	if c.Constraints, err = openMap(s.Constraints, path); err != nil {
		return nil, err
	}
	if c.Metadata, err = openMap(s.Metadata, path); err != nil {
		return nil, err
	}
	return c, nil
}

// openMap normalizes an open map. An empty map becomes nil: the wire omits
// both, so they read back alike.
func openMap(m map[string]any, path []any) (map[string]any, *canonicalError) {
	if len(m) == 0 {
		return nil, nil
	}
	v, err := openValue(m, path)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// openValue normalizes one open value and rejects strings that are not
// valid UTF-8, which JSON cannot carry faithfully (they would hash one way
// and read back another).
func openValue(v any, path []any) (any, *canonicalError) {
	n, err := value.Normalize(v)
	if err != nil {
		return nil, &canonicalError{path: path, err: err}
	}
	if err := checkUTF8(n); err != nil {
		return nil, &canonicalError{path: path, err: err}
	}
	return n, nil
}

func checkUTF8(v any) error {
	switch x := v.(type) {
	case string:
		if !utf8.ValidString(x) {
			return fmt.Errorf("string %q is not valid UTF-8", x)
		}
	case []any:
		for _, e := range x {
			if err := checkUTF8(e); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range value.SortedKeys(x) {
			if !utf8.ValidString(k) {
				return fmt.Errorf("key %q is not valid UTF-8", k)
			}
			if err := checkUTF8(x[k]); err != nil {
				return err
			}
		}
	}
	return nil
}
