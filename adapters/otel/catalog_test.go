package otel

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// identityKeys must never become metric labels (spec §17).
var identityKeys = []string{
	"tenant", "tenant_id", "scope", "scope_key", "run_id", "graph_id", "graph_hash", "task_id",
	"idempotency_key", "lifecycle_ref", "node", "attempt", "claim_attempt", "step", "checkpoint_seq",
	"token", "claim_token",
}

func allMetricDefs() []*metricDef {
	var out []*metricDef
	for i := range catalog {
		for j := range catalog[i].Metrics {
			out = append(out, &catalog[i].Metrics[j])
		}
	}
	return append(out, &commitsDef, &retryDelayDef)
}

func TestCatalogLabelsAreBoundedKeys(t *testing.T) {
	t.Parallel()
	for _, key := range identityKeys {
		assert.False(t, metricLabelKeys[key], "identity %q is on the metric allow-list", key)
	}
	for _, def := range allMetricDefs() {
		for _, key := range def.Labels {
			assert.True(t, metricLabelKeys[key], "%s declares label %q outside the allow-list", def.Name, key)
		}
		if def.Fixed != nil {
			assert.True(t, metricLabelKeys[def.Fixed.Key], "%s fixes %q outside the allow-list", def.Name, def.Fixed.Key)
		}
	}
}

func TestCatalogNamesAreCanonical(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, f := range catalog {
		assert.Equal(t, f.Name, canonicalName(f.Name), "catalog name %q survives canonicalization", f.Name)
		assert.False(t, seen[f.Name], "catalog name %q is listed twice", f.Name)
		seen[f.Name] = true
	}
	for alias, target := range aliases {
		assert.True(t, seen[target], "alias %q points at unknown %q", alias, target)
	}
}

// docSection returns the lines of docs/telemetry.md under heading.
func docSection(t *testing.T, heading string) []string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/telemetry.md")
	require.NoError(t, err)
	var out []string
	in := false
	for line := range strings.Lines(string(raw)) {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == heading
			continue
		}
		if in {
			out = append(out, line)
		}
	}
	require.NotEmpty(t, out, "docs/telemetry.md has a %q section", heading)
	return out
}

var firstCell = regexp.MustCompile("^\\| `([a-z_.]+)`")

func TestDocsListEveryMetricExactly(t *testing.T) {
	t.Parallel()
	var documented []string
	for _, line := range docSection(t, "## Metrics") {
		if m := firstCell.FindStringSubmatch(line); m != nil {
			documented = append(documented, m[1])
		}
	}
	var built []string
	for _, def := range allMetricDefs() {
		if !slices.Contains(built, def.Name) {
			built = append(built, def.Name)
		}
	}
	slices.Sort(documented)
	slices.Sort(built)
	assert.Equal(t, built, documented, "the metrics table in docs/telemetry.md matches the catalog")

	rows := map[string]string{}
	for _, line := range docSection(t, "## Metrics") {
		if m := firstCell.FindStringSubmatch(line); m != nil {
			rows[m[1]] = line
		}
	}
	for _, def := range allMetricDefs() {
		row := rows[def.Name]
		cells := strings.Split(row, "|")
		require.GreaterOrEqual(t, len(cells), 6, "row for %s", def.Name)
		assert.Equal(t, def.Kind.String(), strings.TrimSpace(cells[2]), "%s instrument", def.Name)
		assert.Equal(t, "`"+def.Unit+"`", strings.TrimSpace(cells[3]), "%s unit", def.Name)
		for _, key := range def.Labels {
			assert.Contains(t, cells[4], "`"+key+"`", "%s documents label %s", def.Name, key)
		}
		if def.Fixed != nil {
			assert.Contains(t, cells[4], "`"+def.Fixed.Key+"`", "%s documents label %s", def.Name, def.Fixed.Key)
		}
	}
}

func TestDocsListEveryFact(t *testing.T) {
	t.Parallel()
	documented := map[string]bool{}
	for _, line := range docSection(t, "## Facts the runtime reports") {
		if m := firstCell.FindStringSubmatch(line); m != nil {
			documented[m[1]] = true
		}
	}
	for _, f := range catalog {
		assert.True(t, documented[f.Name], "fact %s is documented", f.Name)
	}
	spans := strings.Join(docSection(t, "## Spans"), "")
	for _, f := range catalog {
		if f.Span {
			assert.Contains(t, spans, "`docket."+f.Name+"`", "span %s is documented", f.Name)
		}
	}
}
