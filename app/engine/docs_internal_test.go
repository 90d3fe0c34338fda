package engine

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/graphcache"
)

// docs/operations.md is the configuration reference: every field of Config
// has a row in its section, and a default written as a number, a duration
// or a boolean is the one New applies to the zero value.
func TestOperationsDocumentsEveryConfigFieldAndItsDefault(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/operations.md")
	require.NoError(t, err)
	doc := string(raw)
	section := func(heading string) string {
		_, rest, ok := strings.Cut(doc, "\n"+heading+"\n")
		require.True(t, ok, "docs/operations.md has the section %q", heading)
		if i := strings.Index(rest, "\n### "); i >= 0 {
			rest = rest[:i]
		}
		return rest
	}
	resolved, err := Config{Backend: memory.New(memory.Options{})}.resolve()
	require.NoError(t, err)

	check := func(text, name string, v reflect.Value) {
		cell, ok := defaultCell(text, name)
		if !assert.True(t, ok, "docs/operations.md documents %s", name) {
			return
		}
		if strings.Contains(cell, "×") {
			return // a default computed from another field
		}
		if d, ok := appliedElsewhere[name]; ok {
			v = reflect.ValueOf(d)
		}
		word := strings.Trim(strings.SplitN(cell, " ", 2)[0], "`")
		switch got := v.Interface().(type) {
		case time.Duration:
			if d, err := time.ParseDuration(word); err == nil {
				assert.Equal(t, got, d, "%s: documented default %s", name, cell)
			}
		case int:
			if n, err := strconv.Atoi(word); err == nil {
				assert.Equal(t, got, n, "%s: documented default %s", name, cell)
			}
		case bool:
			assert.Equal(t, strconv.FormatBool(got), word, "%s: documented default %s", name, cell)
		}
	}
	engineText := section("### Engine")
	top := reflect.ValueOf(resolved)
	for i := range top.NumField() {
		f := top.Type().Field(i)
		if f.Name == "Dispatcher" || f.Name == "Vehicle" {
			continue // sections of their own
		}
		check(engineText, f.Name, top.Field(i))
	}
	dispatcherText := section("### `Dispatcher`")
	d := reflect.ValueOf(resolved.Dispatcher)
	for i := range d.NumField() {
		check(dispatcherText, d.Type().Field(i).Name, d.Field(i))
	}
	vehicleText := section("### `Vehicle`")
	v := reflect.ValueOf(resolved.Vehicle)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "DrainBudget" {
			b := v.Field(i)
			for j := range b.NumField() {
				check(vehicleText, "DrainBudget."+b.Type().Field(j).Name, b.Field(j))
			}
			continue
		}
		check(vehicleText, name, v.Field(i))
	}
}

// appliedElsewhere holds the defaults New passes on as zero, for the
// component that owns the setting to apply.
var appliedElsewhere = map[string]any{
	"UndecodableGraphTTL": graphcache.DefaultUndecodableTTL,
}

// defaultCell is the second cell of the table row of field name
// ("| `Name` | default | ... |").
func defaultCell(text, name string) (string, bool) {
	for _, line := range strings.Split(text, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 3 && cells[0] == "| `"+name+"`" {
			return strings.TrimSpace(cells[1]), true
		}
	}
	return "", false
}
