package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/schema"
)

// graph publish shows the compiler's warnings about the document it
// published, in graph validate's words: on stderr, so stdout stays the
// version; with --json in the document.
func TestGraphPublishShowsTheCompilersWarnings(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	g, err := demo.Graph()
	require.NoError(t, err)
	g.Fields["scratch"] = &graph.Field{ID: "scratch", Kind: graph.KindState, Schema: schema.String()}
	b, err := json.Marshal(g)
	require.NoError(t, err)
	file := graphFile(t, string(b))

	var validated []validationJSON
	c.okJSON(&validated, "graph", "validate", file)
	require.Len(t, validated, 1)
	var warnings []diagnosticJSON
	for _, d := range validated[0].Diagnostics {
		if d.Severity == graph.SeverityWarning {
			warnings = append(warnings, d)
		}
	}
	require.NotEmpty(t, warnings)
	var lines []string
	for _, d := range warnings {
		lines = append(lines, d.line())
	}
	validateOut := c.ok("graph", "validate", file).stdout
	require.Contains(t, validateOut, strings.Join(lines, "\n"))
	require.Contains(t, validateOut, "  warning orphaned_field at /fields/scratch: ")

	res := c.ok("graph", "publish", file)
	assert.Regexp(t, `^published loan-review@[0-9a-f]{64}\n$`, res.stdout)
	assert.Equal(t, fmt.Sprintf("%d warning(s):\n%s\n", len(warnings), strings.Join(lines, "\n")), res.stderr)

	var published publishJSON
	c.okJSON(&published, "graph", "publish", file)
	assert.Equal(t, warnings, published.Warnings)
}
