package superstep_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// The planner hashes the state view slot by slot instead of through
// run.InputHash; the two must agree for any public IDs, any values and
// unset inputs.
func TestPlannedInputHashIsTheInputHashOfTheSnapshot(t *testing.T) {
	t.Parallel()
	// Public IDs are ASCII letters, digits, '_' and '-' (which sort before
	// the digits and letters).
	letters := []string{"a", "b", "z", "0", "9"}
	id := rapid.Custom(func(t *rapid.T) string {
		rest := rapid.SliceOfN(rapid.SampledFrom(append([]string{"_", "-"}, letters...)), 0, 2).Draw(t, "rest")
		return rapid.SampledFrom(letters).Draw(t, "first") + strings.Join(rest, "")
	})
	text := rapid.Map(rapid.SliceOfN(rapid.SampledFrom([]string{"x", "\"", "\\", "\n", "\x01", "é", "😀", "\xff"}), 0, 4),
		func(p []string) string { return strings.Join(p, "") })
	rapid.Check(t, func(rt *rapid.T) {
		ids := rapid.SliceOfNDistinct(id, 1, 6, func(s string) string { return s }).Draw(rt, "ids")
		d := newDoc("hash").nodes("n").edge("e", "$start", "n", nil).edge("f", "n", "$finish", nil)
		input := map[string]any{}
		for i, in := range ids {
			switch rapid.IntRange(0, 3).Draw(rt, "kind") {
			case 0:
				d.input(in, str(), nil)
				input[in] = text.Draw(rt, "text")
			case 1:
				d.input(in, float(), nil)
				input[in] = rapid.Float64Range(-1e22, 1e22).Draw(rt, "float")
			case 2:
				d.input(in, integer(), nil)
				input[in] = rapid.Int64().Draw(rt, "int")
			default:
				// A declared input left unset: absent from the view.
				d.input(in, str(), nil)
			}
			if i == 0 {
				d.field("f"+in, str(), map[string]any{"default": "dflt"})
			}
		}
		doc, err := graph.FromMap(d.m)
		require.NoError(rt, err)
		g, err := graph.Compile(doc, anyImpl{}, graph.Options{Profile: graph.ProfileRun})
		require.NoError(rt, err)
		m, err := superstep.Start(g, superstep.StartParams{RunID: "run_h", Input: input}, superstep.Env{Now: t0})
		require.NoError(rt, err)
		step, err := superstep.Advance(g, m.Run, superstep.Env{Now: t0})
		require.NoError(rt, err)
		require.Equal(rt, superstep.Execute, step.Kind)
		for _, a := range step.Activations {
			assert.Equal(rt, run.InputHash(a.Snapshot), a.InputHash)
		}
	})
}
