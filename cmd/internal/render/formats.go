package render

import (
	"fmt"
	"strings"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
)

// Format names a rendering.
type Format string

// Formats.
const (
	FormatMermaid Format = "mermaid"
	FormatDOT     Format = "dot"
	FormatText    Format = "text"
)

// Formats lists every format.
func Formats() []Format { return []Format{FormatMermaid, FormatDOT, FormatText} }

// Render draws g in format f with an optional overlay.
func Render(f Format, g *graph.Graph, o *Overlay) (string, error) {
	switch f {
	case FormatMermaid:
		return Mermaid(g, o), nil
	case FormatDOT:
		return DOT(g, o), nil
	case FormatText:
		return Text(g, o), nil
	}
	return "", fmt.Errorf("unknown format %q (expected mermaid, dot or text)", f)
}

// stateStyle is the fill and stroke of each overlay state.
var stateStyle = map[NodeState][2]string{
	NodeCompleted: {"#d4edda", "#2e7d32"},
	NodeRunning:   {"#fff3cd", "#b58900"},
	NodeRetrying:  {"#ffe0b2", "#e65100"},
	NodeWaiting:   {"#dbe9ff", "#1565c0"},
	NodeFailed:    {"#f8d7da", "#c62828"},
}

var stateOrder = []NodeState{NodeCompleted, NodeRunning, NodeRetrying, NodeWaiting, NodeFailed}

// Mermaid renders a flowchart. Node ids are prefixed (n_, j_) so public
// ids such as "end" never collide with Mermaid keywords; edges that fired
// in the overlaid run are drawn thick.
func Mermaid(g *graph.Graph, o *Overlay) string {
	l := layoutOf(g)
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	if o != nil {
		fmt.Fprintf(&b, "    %%%% run %s: %s\n", o.RunID, o.Status)
	}
	finishClass := ""
	if o != nil && o.Status == run.StatusDone {
		finishClass = ":::completed"
	}
	b.WriteString("    start_((\"start\"))\n")
	for _, id := range l.nodes {
		text := l.label(id)
		if policy := policyText(g.Nodes[id]); policy != "" {
			text += "<br/><i>" + policy + "</i>"
		}
		fmt.Fprintf(&b, "    %s[\"%s\"]\n", mermaidID(id), mermaidText(text))
	}
	fmt.Fprintf(&b, "    finish_((\"finish\"))%s\n", finishClass)
	for _, e := range l.edges {
		arrow := "-->"
		if o.fired(e.ID) {
			arrow = "==>"
		}
		label := ""
		if guard := GuardText(e.Guard); guard != "" {
			label = "|\"" + mermaidText(guard) + "\"|"
		}
		target := mermaidID(e.To)
		if e.Barrier {
			join := "j_" + sanitize(e.ID)
			fmt.Fprintf(&b, "    %s{{\"join %s\"}}\n", join, mermaidText(e.ID))
			for _, from := range e.From {
				fmt.Fprintf(&b, "    %s %s %s\n", mermaidID(from), arrow, join)
			}
			fmt.Fprintf(&b, "    %s %s%s %s\n", join, arrow, label, target)
			continue
		}
		fmt.Fprintf(&b, "    %s %s%s %s\n", mermaidID(sourceOf(e)), arrow, label, target)
	}
	if o != nil {
		for _, state := range stateOrder {
			style := stateStyle[state]
			fmt.Fprintf(&b, "    classDef %s fill:%s,stroke:%s\n", state, style[0], style[1])
		}
		for _, state := range stateOrder {
			var ids []string
			for _, id := range l.nodes {
				if o.node(id) == state {
					ids = append(ids, mermaidID(id))
				}
			}
			if len(ids) > 0 {
				fmt.Fprintf(&b, "    class %s %s\n", strings.Join(ids, ","), state)
			}
		}
	}
	return b.String()
}

func mermaidID(id string) string {
	switch id {
	case graph.Start:
		return "start_"
	case graph.Finish:
		return "finish_"
	}
	return "n_" + sanitize(id)
}

// sanitize keeps [A-Za-z0-9_] and encodes anything else, so distinct ids
// stay distinct.
func sanitize(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
		case r == '_':
			b.WriteString("__")
		default:
			fmt.Fprintf(&b, "_%x_", r)
		}
	}
	return b.String()
}

// mermaidText escapes text inside a quoted Mermaid label.
func mermaidText(s string) string {
	return strings.NewReplacer(`"`, "#quot;", "\n", "<br/>").Replace(s)
}

// DOT renders a Graphviz digraph. Barrier edges go through a small join
// point; edges that fired in the overlaid run are drawn bold.
func DOT(g *graph.Graph, o *Overlay) string {
	l := layoutOf(g)
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", dotQuote(g.ID))
	if o != nil {
		fmt.Fprintf(&b, "  // run %s: %s\n", o.RunID, o.Status)
	}
	b.WriteString("  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n  edge [fontname=\"Helvetica\", fontsize=10];\n")
	fmt.Fprintf(&b, "  %s [shape=circle, label=\"start\"];\n", dotQuote(graph.Start))
	for _, id := range l.nodes {
		text := l.label(id)
		if policy := policyText(g.Nodes[id]); policy != "" {
			text += "\n" + policy
		}
		attrs := "label=" + dotQuote(text)
		if state := o.node(id); state != "" {
			style := stateStyle[state]
			attrs += fmt.Sprintf(", style=\"rounded,filled\", fillcolor=%s, color=%s, tooltip=%s",
				dotQuote(style[0]), dotQuote(style[1]), dotQuote(string(state)))
		}
		fmt.Fprintf(&b, "  %s [%s];\n", dotQuote(id), attrs)
	}
	finishAttrs := "shape=doublecircle, label=\"finish\""
	if o != nil && o.Status == run.StatusDone {
		style := stateStyle[NodeCompleted]
		finishAttrs += fmt.Sprintf(", style=filled, fillcolor=%s", dotQuote(style[0]))
	}
	fmt.Fprintf(&b, "  %s [%s];\n", dotQuote(graph.Finish), finishAttrs)
	for _, e := range l.edges {
		var attrs []string
		if guard := GuardText(e.Guard); guard != "" {
			attrs = append(attrs, "label="+dotQuote(guard))
		}
		if o.fired(e.ID) {
			attrs = append(attrs, "penwidth=2.5")
		}
		if e.Barrier {
			join := "join:" + e.ID
			fmt.Fprintf(&b, "  %s [shape=diamond, label=\"join\", width=0.3, height=0.3, fontsize=9];\n", dotQuote(join))
			for _, from := range e.From {
				fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(from), dotQuote(join), dotAttrs(boldOnly(attrs)))
			}
			fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(join), dotQuote(e.To), dotAttrs(attrs))
			continue
		}
		fmt.Fprintf(&b, "  %s -> %s%s;\n", dotQuote(sourceOf(e)), dotQuote(e.To), dotAttrs(attrs))
	}
	b.WriteString("}\n")
	return b.String()
}

func boldOnly(attrs []string) []string {
	var out []string
	for _, a := range attrs {
		if strings.HasPrefix(a, "penwidth=") {
			out = append(out, a)
		}
	}
	return out
}

func dotAttrs(attrs []string) string {
	if len(attrs) == 0 {
		return ""
	}
	return " [" + strings.Join(attrs, ", ") + "]"
}

// dotQuote makes a DOT double-quoted string.
func dotQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// stateMark is the text overlay's marker of each state.
var stateMark = map[NodeState]string{
	NodeCompleted: "✓",
	NodeRunning:   "●",
	NodeRetrying:  "↻",
	NodeWaiting:   "⏸",
	NodeFailed:    "✗",
}

// Text renders a terminal picture: one block per source, its edges as
// branches, joins as "a + b ══▶ c".
func Text(g *graph.Graph, o *Overlay) string {
	l := layoutOf(g)
	var b strings.Builder
	title := g.ID
	if g.Name != "" {
		title += " — " + g.Name
	}
	b.WriteString(title + "\n")
	if o != nil {
		fmt.Fprintf(&b, "run %s: %s   (✓ completed  ● running  ↻ retrying  ⏸ waiting  ✗ failed)\n", o.RunID, o.Status)
	}
	b.WriteString("\n")
	name := func(id string) string {
		switch id {
		case graph.Start:
			return "(start)"
		case graph.Finish:
			return "(finish)"
		}
		text := id
		if mark := stateMark[o.node(id)]; mark != "" {
			text += " " + mark
		}
		return text
	}
	type branch struct{ to, note string }
	bySource := map[string][]branch{}
	described := map[string]bool{} // nodes whose label and policies were shown
	// describe notes a node's label and policies where it is first drawn
	// as the target of an edge or a join.
	describe := func(id string) []string {
		n := g.Nodes[id]
		if n == nil || described[id] {
			return nil
		}
		described[id] = true
		var notes []string
		if n.Label != "" && n.Label != n.ID {
			notes = append(notes, "\""+n.Label+"\"")
		}
		if policy := policyText(n); policy != "" {
			notes = append(notes, policy)
		}
		return notes
	}
	var joins []*graph.Edge
	for _, e := range l.edges {
		if e.Barrier {
			joins = append(joins, e)
			continue
		}
		var notes []string
		if guard := GuardText(e.Guard); guard != "" {
			notes = append(notes, "when "+guard)
		}
		notes = append(notes, describe(e.To)...)
		bySource[sourceOf(e)] = append(bySource[sourceOf(e)], branch{to: e.To, note: strings.Join(notes, "; ")})
	}
	width := 0
	for _, branches := range bySource {
		for _, br := range branches {
			width = max(width, len([]rune(name(br.to))))
		}
	}
	writeBlock := func(from string) {
		b.WriteString(name(from) + "\n")
		branches := bySource[from]
		for i, br := range branches {
			glyph := "├─▶ "
			if i == len(branches)-1 {
				glyph = "└─▶ "
			}
			line := "  " + glyph + name(br.to)
			if br.note != "" {
				line += strings.Repeat(" ", width-len([]rune(name(br.to)))+3) + br.note
			}
			b.WriteString(line + "\n")
		}
	}
	writeJoin := func(j *graph.Edge) {
		names := make([]string, len(j.From))
		for i, f := range j.From {
			names[i] = name(f)
		}
		line := strings.Join(names, " + ") + " ══▶ " + name(j.To) + "   (join: waits for all)"
		if guard := GuardText(j.Guard); guard != "" {
			line += " when " + guard
		}
		if notes := describe(j.To); len(notes) > 0 {
			line += "; " + strings.Join(notes, "; ")
		}
		b.WriteString(line + "\n")
	}
	// Walk the layout; a join is drawn as soon as all its sources are.
	visited := map[string]bool{}
	joined := map[string]bool{}
	for _, id := range append([]string{graph.Start}, l.nodes...) {
		if len(bySource[id]) > 0 {
			writeBlock(id)
		}
		visited[id] = true
		for _, j := range joins {
			if !joined[j.ID] && allVisited(j.From, visited) {
				joined[j.ID] = true
				writeJoin(j)
			}
		}
	}
	for _, from := range sortedKeys(bySource) {
		if !visited[from] { // a source that is not a node: drawn anyway
			writeBlock(from)
		}
	}
	for _, j := range joins {
		if !joined[j.ID] { // a source that is not a node: drawn anyway
			writeJoin(j)
		}
	}
	return b.String()
}

// allVisited reports whether every source has been walked.
func allVisited(sources []string, visited map[string]bool) bool {
	for _, s := range sources {
		if !visited[s] {
			return false
		}
	}
	return true
}
