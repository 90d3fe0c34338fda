package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/internal/render"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/ports"
)

func (a *app) graphCommand() *cobra.Command {
	var anyNodes bool
	validate := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Compile graph documents and report every diagnostic",
		Long: "validate parses each JSON graph document (- reads stdin) and compiles it against the\n" +
			"built-in example nodes, reporting every error and warning with its code and path.\n" +
			"With --any-nodes every node implementation is accepted (for graphs of custom workers).\n" +
			"It exits 1 when any document has an error. No database is needed.",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("expected at least one graph file")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error { return a.graphValidate(args, anyNodes) },
	}
	validate.Flags().BoolVar(&anyNodes, "any-nodes", false, "accept every node implementation reference")

	var example bool
	publish := &cobra.Command{
		Use:   "publish [FILE]",
		Short: "Store a graph document as an immutable version",
		Long: "publish compiles the document (- reads stdin) against the built-in example nodes and\n" +
			"stores it under its content hash. Publishing the same content again is idempotent.\n" +
			"--example publishes the demo's loan-review graph.",
		Args: rangeArgs(0, 1, "one graph file (or --example)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.graphPublish(cmd.Context(), args, example)
		},
	}
	publish.Flags().BoolVar(&example, "example", false, "publish the built-in loan-review graph")

	var showHash string
	var showDocument bool
	show := &cobra.Command{
		Use:   "show GRAPH_ID",
		Short: "Show a stored graph version and the graph's versions",
		Args:  exactArgs(1, "a graph id"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkHash(showHash); err != nil {
				return err
			}
			return a.graphShow(cmd.Context(), args[0], showHash, showDocument)
		},
	}
	show.Flags().StringVar(&showHash, "hash", "", "version to show (default: the newest)")
	show.Flags().BoolVar(&showDocument, "document", false, "print only the stored JSON document")

	var format, renderHash, runID string
	renderCmd := &cobra.Command{
		Use:   "render [FILE | GRAPH_ID]",
		Short: "Draw a graph as Mermaid, Graphviz DOT or text, optionally with a run's state",
		Long: "render draws a graph document from a file (- reads stdin) or a stored version. With\n" +
			"--run the run's state is overlaid: completed, running, retrying, waiting and failed nodes\n" +
			"are colored and the edges that fired are drawn bold; without a graph argument the run's\n" +
			"own graph version is drawn (a graph argument must be of the run's graph). Completed\n" +
			"nodes come from the run's document, which keeps the edges into nodes that fired and the\n" +
			"nodes they fired from, and from its retained events: once pruning deleted the events, a\n" +
			"node whose completion fired only edges to $finish (the last one, typically) or no edge\n" +
			"at all is no longer marked.",
		Args: rangeArgs(0, 1, "a graph file or id (or --run)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkHash(renderHash); err != nil {
				return err
			}
			return a.graphRender(cmd.Context(), args, render.Format(format), renderHash, runID)
		},
	}
	renderCmd.Flags().StringVar(&format, "format", "mermaid", "mermaid, dot or text")
	renderCmd.Flags().StringVar(&renderHash, "hash", "", "stored version to draw (default: the newest, or the run's)")
	renderCmd.Flags().StringVar(&runID, "run", "", "overlay this run's state")
	return groupCommand("graph", "Validate, publish, show and render graphs", validate, publish, show, renderCmd)
}

// readGraph parses a graph document from a file, or stdin for "-".
func (a *app) readGraph(path string) (*graph.Graph, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(a.io.In)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, usagef("read graph file: %v", err)
	}
	g, err := graph.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// anyNodes accepts every implementation reference with any configuration.
type anyNodes struct{}

func (anyNodes) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

type diagnosticJSON struct {
	Severity graph.Severity `json:"severity"`
	Code     string         `json:"code"`
	Path     string         `json:"path"`
	PublicID string         `json:"public_id,omitempty"`
	Message  string         `json:"message"`
}

// line is the text form of a diagnostic, one indented line under the
// document it concerns.
func (d diagnosticJSON) line() string {
	return fmt.Sprintf("  %-7s %s at %s: %s", d.Severity, d.Code, d.Path, d.Message)
}

func toDiagnosticJSON(d graph.Diagnostic) diagnosticJSON {
	return diagnosticJSON{Severity: d.Severity, Code: d.Code, Path: graph.FormatPath(d.Path), PublicID: d.PublicID, Message: d.Message}
}

type validationJSON struct {
	File        string           `json:"file"`
	GraphID     string           `json:"graph_id,omitempty"`
	Valid       bool             `json:"valid"`
	Hash        string           `json:"hash,omitempty"`
	Error       string           `json:"error,omitempty"` // the file is not a graph document
	Diagnostics []diagnosticJSON `json:"diagnostics"`

	problems []string // Error's problems, one a line in the text output
}

// documentProblems lists the problems of a document Parse refused, one
// per entry, or err's own line when it is not a document error.
func documentProblems(err error) []string {
	var all graph.DocumentErrors
	if errors.As(err, &all) {
		lines := make([]string, len(all))
		for i, de := range all {
			lines[i] = oneLine(de.Error())
		}
		return lines
	}
	var one *graph.DocumentError
	if errors.As(err, &one) {
		return []string{oneLine(one.Error())}
	}
	return []string{oneLine(err.Error())}
}

func (a *app) graphValidate(files []string, permissive bool) error {
	var impls graph.Implementations = demo.Registry()
	if permissive {
		impls = anyNodes{}
	}
	var results []validationJSON
	invalid := 0
	unknownNodes := false // an invalid graph names nodes the examples lack
	var unreadable []error
	for _, file := range files {
		g, err := a.readGraph(file)
		if err != nil {
			// One unreadable file must not hide the reports of the others.
			unreadable = append(unreadable, err)
			problems := documentProblems(err)
			results = append(results, validationJSON{File: file, Error: strings.TrimPrefix(oneLine(err.Error()), file+": "),
				Diagnostics: []diagnosticJSON{}, problems: problems})
			continue
		}
		res := validationJSON{File: file, GraphID: g.ID, Valid: true, Diagnostics: []diagnosticJSON{}}
		diagnostics := graph.Verify(g, impls, graph.Options{Profile: graph.ProfilePublish})
		if len(g.ID) > ports.MaxIDBytes {
			// Valid for the compiler, but no store could hold it: publishing would fail.
			diagnostics = append(diagnostics, graph.Diagnostic{Severity: graph.SeverityError, Code: graph.CodeInvalidPublicID, Path: []any{"id"},
				Message: fmt.Sprintf("the graph id is %d bytes long; a store holds ids of at most %d bytes", len(g.ID), ports.MaxIDBytes)})
		}
		for _, d := range diagnostics {
			if d.Severity == graph.SeverityError {
				res.Valid = false
			}
			res.Diagnostics = append(res.Diagnostics, toDiagnosticJSON(d))
		}
		if res.Valid {
			compiled, err := graph.Compile(g, impls, graph.Options{Profile: graph.ProfilePublish})
			if err != nil {
				return err
			}
			res.Hash = compiled.Hash
		} else {
			invalid++
			unknownNodes = unknownNodes || !permissive && namesUnknownNodes(diagnostics)
		}
		results = append(results, res)
	}
	if a.json {
		if err := printJSON(a.io.Out, results); err != nil {
			return err
		}
	} else {
		for _, res := range results {
			switch {
			case len(res.problems) > 1:
				fmt.Fprintf(a.io.Out, "%s: not a graph document (%d problems)\n", res.File, len(res.problems))
				for _, p := range res.problems {
					fmt.Fprintf(a.io.Out, "  %-7s %s\n", graph.SeverityError, p)
				}
				continue
			case res.Error != "":
				fmt.Fprintf(a.io.Out, "%s: not a graph document: %s\n", res.File, res.Error)
				continue
			}
			if res.Valid {
				fmt.Fprintf(a.io.Out, "%s: graph %q is valid (hash %s)\n", res.File, res.GraphID, res.Hash)
			} else {
				fmt.Fprintf(a.io.Out, "%s: graph %q is invalid\n", res.File, res.GraphID)
			}
			for _, d := range res.Diagnostics {
				fmt.Fprintln(a.io.Out, d.line())
			}
		}
	}
	if len(unreadable) > 0 {
		return usageErr(fmt.Errorf("%d of %d file(s) are not graph documents; the first: %w", len(unreadable), len(files), unreadable[0]))
	}
	if invalid > 0 {
		hint := ""
		if unknownNodes {
			hint = "; --any-nodes accepts the nodes only your own worker registers"
		}
		return failuref("%d of %d graph document(s) are invalid%s", invalid, len(files), hint)
	}
	return nil
}

// namesUnknownNodes reports whether diagnostics refuse a node
// implementation no registry knows: for the CLI, which knows only the
// example nodes, the mark of a graph of the application's own nodes.
func namesUnknownNodes(diagnostics []graph.Diagnostic) bool {
	for _, d := range diagnostics {
		if d.Severity == graph.SeverityError && d.Code == graph.CodeInvalidNodeImplementation {
			return true
		}
	}
	return false
}

type versionJSON struct {
	GraphID     string `json:"graph_id"`
	Hash        string `json:"hash"`
	PublishedAt string `json:"published_at,omitempty"`
}

// publishJSON is what graph publish reports: the version, and the
// compiler's warnings about the document (never errors: a document with
// one is not published).
type publishJSON struct {
	versionJSON
	Warnings []diagnosticJSON `json:"warnings,omitempty"`
}

func (a *app) graphPublish(ctx context.Context, args []string, example bool) error {
	var g *graph.Graph
	var err error
	switch {
	case example && len(args) > 0:
		return usagef("give a graph file or --example, not both")
	case example:
		g, err = demo.Graph()
	case len(args) == 0:
		return usagef("expected a graph file (or --example)")
	default:
		g, err = a.readGraph(args[0])
	}
	if err != nil {
		return err
	}
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	v, err := c.SaveGraphVersion(ctx, g)
	if ce := (*graph.CompileError)(nil); errors.As(err, &ce) && namesUnknownNodes(ce.Diagnostics) {
		return fmt.Errorf("%w; docket publishes graphs of the example nodes only: publish a graph of your own nodes from your own worker binary, which registers them (docs/cli.md, building your own worker binary)", err)
	}
	if err != nil {
		return err
	}
	res := publishJSON{versionJSON: versionJSON{GraphID: v.Ref.GraphID, Hash: v.Ref.Hash, PublishedAt: timestamp(v.PublishedAt)}}
	if !example {
		// The store keeps no diagnostics: the compiler's warnings about
		// the document are found again, against the nodes the engine
		// compiled it with. The example's own (fields only its node code
		// names) are no news to whoever publishes it.
		for _, d := range graph.Verify(g, demo.Registry(), graph.Options{Profile: graph.ProfilePublish}) {
			if d.Severity == graph.SeverityWarning {
				res.Warnings = append(res.Warnings, toDiagnosticJSON(d))
			}
		}
	}
	if a.json {
		return printJSON(a.io.Out, res)
	}
	fmt.Fprintf(a.io.Out, "published %s@%s\n", v.Ref.GraphID, v.Ref.Hash)
	if len(res.Warnings) > 0 {
		a.say("%d warning(s):", len(res.Warnings))
		for _, d := range res.Warnings {
			a.say("%s", d.line())
		}
	}
	return nil
}

type graphShowJSON struct {
	versionJSON
	Versions []versionJSON `json:"versions"`
	Document *graph.Graph  `json:"document"`
}

func (a *app) graphShow(ctx context.Context, graphID, hash string, documentOnly bool) error {
	rt, cleanup, err := a.openEngine(ctx, engine.Config{})
	if err != nil {
		return err
	}
	defer cleanup()
	c := a.client(rt)
	page, err := c.ListGraphVersions(ctx, graphID, ports.ListGraphVersionsParams{Limit: 20})
	if err != nil {
		return err
	}
	if len(page.Versions) == 0 {
		return a.aboutGraph(graphID, ports.ErrNotFound)
	}
	chosen := page.Versions[0]
	if hash != "" {
		chosen = ports.GraphVersion{Ref: ports.GraphRef{GraphID: graphID, Hash: hash}}
		// A version older than the listed ones is looked up further, for
		// its publication time.
		more := page
		for {
			for _, v := range more.Versions {
				if v.Ref.Hash == hash {
					chosen = v
				}
			}
			if !chosen.PublishedAt.IsZero() || !more.HasMore {
				break
			}
			p := ports.ListGraphVersionsParams{Limit: ports.MaxPageLimit, Before: more.NextBefore}
			if more, err = c.ListGraphVersions(ctx, graphID, p); err != nil {
				return err
			}
		}
	}
	g, err := c.FetchGraph(ctx, chosen.Ref)
	if err != nil {
		return fmt.Errorf("graph %s@%s: %w", graphID, chosen.Ref.Hash, err)
	}
	if documentOnly {
		return printJSON(a.io.Out, g)
	}
	res := graphShowJSON{
		versionJSON: versionJSON{GraphID: graphID, Hash: chosen.Ref.Hash, PublishedAt: timestamp(chosen.PublishedAt)},
		Document:    g,
	}
	for _, v := range page.Versions {
		res.Versions = append(res.Versions, versionJSON{GraphID: graphID, Hash: v.Ref.Hash, PublishedAt: timestamp(v.PublishedAt)})
	}
	if a.json {
		return printJSON(a.io.Out, res)
	}
	return a.printGraph(res, g)
}

func (a *app) printGraph(res graphShowJSON, g *graph.Graph) error {
	w := a.io.Out
	title := g.ID
	if g.Name != "" {
		title += " — " + g.Name
	}
	fmt.Fprintf(w, "graph %s\nversion %s published %s\n", title, res.Hash, orDash(res.PublishedAt))
	if g.Description != "" {
		fmt.Fprintf(w, "%s\n", g.Description)
	}
	fmt.Fprintln(w)
	t := newTable(w, "FIELD", "KIND", "TYPE", "REDUCER")
	for _, section := range []map[string]*graph.Field{g.Inputs, g.Fields} {
		for _, id := range sortedKeys(section) {
			f := section[id]
			typ, reducerName := "-", "-"
			if f.Schema != nil {
				typ = string(f.Schema.Type)
			}
			if f.Reducer != nil {
				reducerName = string(f.Reducer.Type)
			}
			kind := string(f.Kind)
			if f.Required {
				kind += " (required)"
			}
			t.row(id, kind, typ, reducerName)
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "NODE", "IMPLEMENTATION", "POLICIES")
	for _, id := range sortedKeys(g.Nodes) {
		n := g.Nodes[id]
		policies := "-"
		if len(n.Policies) > 0 {
			policies = compactJSON(n.Policies)
		}
		t.row(id, orDash(n.Implementation.Ref), policies)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "EDGE", "FROM", "TO", "GUARD")
	for _, id := range sortedKeys(g.Edges) {
		e := g.Edges[id]
		from := strings.Join(e.From, " + ")
		if e.Barrier {
			from = "[" + from + "]"
		}
		t.row(id, from, e.To, orDash(render.GuardText(e.Guard)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = newTable(w, "VERSION", "PUBLISHED")
	for _, v := range res.Versions {
		t.row(v.Hash, v.PublishedAt)
	}
	return t.flush()
}

type renderJSON struct {
	Format  render.Format `json:"format"`
	GraphID string        `json:"graph_id"`
	Hash    string        `json:"hash,omitempty"`
	RunID   string        `json:"run_id,omitempty"`
	Status  run.Status    `json:"run_status,omitempty"`
	Diagram string        `json:"diagram"`
}

func (a *app) graphRender(ctx context.Context, args []string, format render.Format, hash, runID string) error {
	if _, err := render.Render(format, &graph.Graph{}, nil); err != nil {
		return usageErr(err)
	}
	if len(args) == 0 && runID == "" {
		return usagef("expected a graph file or id, or --run")
	}
	var g *graph.Graph
	var err error
	source := ""
	if len(args) == 1 {
		source = args[0]
	}
	fromFile := source == "-" || (source != "" && fileExists(source))
	if fromFile {
		if g, err = a.readGraph(source); err != nil {
			return err
		}
	}
	res := renderJSON{Format: format, Hash: hash}
	var r *run.Run
	var events []run.Event
	if !fromFile || runID != "" {
		rt, cleanup, err := a.openEngine(ctx, engine.Config{})
		if err != nil {
			return err
		}
		defer cleanup()
		c := a.client(rt)
		if runID != "" {
			if r, err = c.FetchRun(ctx, runID); err != nil {
				return about("run", runID, err)
			}
			if events, err = allEvents(ctx, c, runID); err != nil {
				return err
			}
			res.RunID, res.Status = r.ID, r.Status
		}
		if !fromFile {
			ref, err := a.resolveRef(ctx, c, source, hash, r)
			if err != nil {
				return err
			}
			if g, err = c.FetchGraph(ctx, ref); err != nil {
				return fmt.Errorf("graph %s@%s: %w", ref.GraphID, ref.Hash, err)
			}
			res.Hash = ref.Hash
		}
	}
	res.GraphID = g.ID
	if r != nil && r.GraphID != g.ID {
		// Its nodes are not the drawing's: nothing would be marked, and the
		// run's status would be put on a graph it never ran.
		return usagef("run %q is a run of graph %q, not of %q: give --run alone to draw its own graph", r.ID, r.GraphID, g.ID)
	}
	var overlay *render.Overlay
	if r != nil {
		overlay = render.OverlayOf(g, r, events)
	}
	res.Diagram, _ = render.Render(format, g, overlay)
	if a.json {
		return printJSON(a.io.Out, res)
	}
	_, err = io.WriteString(a.io.Out, res.Diagram)
	return err
}

// resolveRef picks the stored version to draw: --hash, else the run's
// version when the run is of this graph, else the newest.
func (a *app) resolveRef(ctx context.Context, c *engine.Client, graphID, hash string, r *run.Run) (ports.GraphRef, error) {
	if graphID == "" {
		graphID = r.GraphID
	}
	switch {
	case hash != "":
		return ports.GraphRef{GraphID: graphID, Hash: hash}, nil
	case r != nil && r.GraphID == graphID:
		return ports.GraphRef{GraphID: graphID, Hash: r.GraphHash}, nil
	}
	v, err := c.LatestGraphRef(ctx, graphID)
	if err != nil {
		if errors.Is(err, ports.ErrNotFound) && !strings.ContainsAny(graphID, "./") {
			return ports.GraphRef{}, a.aboutGraph(graphID, err)
		}
		if errors.Is(err, ports.ErrNotFound) {
			return ports.GraphRef{}, usagef("%q is neither a readable file nor a stored graph id", graphID)
		}
		return ports.GraphRef{}, err
	}
	return v.Ref, nil
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

// allEvents reads every retained event of a run.
func allEvents(ctx context.Context, c *engine.Client, runID string) ([]run.Event, error) {
	var events []run.Event
	var after int64
	for {
		page, err := c.ListEvents(ctx, runID, ports.ListEventsParams{AfterSeq: after, Limit: ports.MaxPageLimit})
		if err != nil {
			return nil, fmt.Errorf("run %q events: %w", runID, err)
		}
		events = append(events, page.Events...)
		if !page.HasMore {
			return events, nil
		}
		after = page.NextAfterSeq
	}
}
