package superstep_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

func TestPlanningIsDeterministic(t *testing.T) {
	t.Parallel()
	g, h, r := startMS(t)
	_, m := h.advance(r)
	r = h.accept(r, m)

	first, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	second, err := superstep.Advance(g, r.Clone(), superstep.Env{Now: t0.Add(1e9)})
	require.NoError(t, err)
	require.Equal(t, superstep.Execute, first.Kind)
	assert.Equal(t, first, second, "identity comes from committed state only")

	require.Len(t, first.Activations, 2)
	left, right := first.Activations[0], first.Activations[1]
	assert.Equal(t, "left", left.NodeID)
	assert.Equal(t, "run_1:1:left", left.TaskID)
	assert.Equal(t, "run_1:1:left:1", left.IdempotencyKey)
	assert.Equal(t, 1, left.Step)
	assert.Equal(t, 1, left.Attempt)
	assert.Equal(t, "test.node", left.Implementation)
	assert.Equal(t, graph.NodePolicy{MaxAttempts: 1}, left.Policy)
	assert.Equal(t, left.InputHash(), right.InputHash(), "one snapshot hash per superstep")
	assert.Equal(t, run.InputHash(left.Snapshot), left.InputHash())
	assert.Len(t, left.InputHash(), 64)
}

func TestSnapshotReadsFieldsPastChannelsTheGraphDoesNotDeclare(t *testing.T) {
	t.Parallel()
	// A run may hold channels this graph declares no field for, sorted
	// between its input and state channels (join:, node:); the view still
	// shows every written field.
	g := newDoc("foreign-channels").
		input("q", str(), nil).
		field("x", str(), nil).
		nodes("w", "reader").
		edge("e", "$start", "w", nil).
		edge("ew", "w", "reader", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"w": write("x", "written"), "reader": echo()})
	r := h.start(map[string]any{"q": "asked"})
	_, m := h.advance(r)
	r = h.accept(r, m)

	foreign := r.Clone()
	foreign.Channels.Set(run.Channel{ID: "join:a", Value: "ja", Version: 1})
	foreign.Channels.Set(run.Channel{ID: "node:b", Value: "nb", Version: 1})
	require.NoError(t, foreign.Validate())
	step, err := superstep.Advance(g, foreign, h.env())
	require.NoError(t, err)
	require.Len(t, step.Activations, 1)
	a := step.Activations[0]
	assert.Equal(t, map[string]any{"q": "asked", "x": "written"}, a.Snapshot)
	assert.Equal(t, int64(1), a.SourceVersions.Get("x"))
}

func TestSiblingActivationsDoNotOwnTheirSharedSnapshot(t *testing.T) {
	t.Parallel()
	// Sibling activations of one superstep share one snapshot: none may be
	// handed to its node uncopied, or one node's change would show in the
	// other's view.
	g, h, r := startMS(t)
	step, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	require.Len(t, step.Activations, 1)
	assert.True(t, step.Activations[0].Owned, "a lone activation owns its snapshot")
	_, m := h.advance(r)
	r = h.accept(r, m)

	step, err = superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	require.Len(t, step.Activations, 2)
	for _, a := range step.Activations {
		assert.False(t, a.Owned, "%s shares its snapshot with a sibling", a.NodeID)
	}
}

func TestSettleIgnoresTheOrderOfTheActivations(t *testing.T) {
	t.Parallel()
	// An executor may hand back a superstep's activations in any order,
	// each with its result: the moment is the same.
	g, h, r := startMS(t)
	_, m := h.advance(r)
	r = h.accept(r, m)

	step, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	require.Len(t, step.Activations, 2)
	results := []superstep.Result{update(map[string]any{}), update(map[string]any{})}
	inOrder, err := superstep.Settle(g, r, step, results, h.env())
	require.NoError(t, err)

	reversed := step
	reversed.Activations = []superstep.Activation{step.Activations[1], step.Activations[0]}
	got, err := superstep.Settle(g, r, reversed, []superstep.Result{results[1], results[0]}, h.env())
	require.NoError(t, err)
	assert.Equal(t, inOrder, got)
	assert.Equal(t, "left", eventsOf(got, run.EventNodeCompleted)[0].NodeID)
}

func TestSnapshotShowsDefaultsAndHidesUnwrittenFields(t *testing.T) {
	t.Parallel()
	g := newDoc("view").
		input("name", str(), nil).
		input("mode", str(), map[string]any{"default": "fast"}).
		field("x", str(), nil).
		field("n", integer(), map[string]any{"default": int64(3)}).
		nodes("r").
		edge("e", "$start", "r", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"r": echo()})
	r := h.start(map[string]any{"name": "ada"})
	step, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	require.Len(t, step.Activations, 1)
	a := step.Activations[0]
	assert.Equal(t, map[string]any{"name": "ada", "mode": "fast", "n": int64(3)}, a.Snapshot)
	assert.Equal(t, map[string]int64{"name": 1, "mode": 0, "x": 0, "n": 0}, a.SourceVersions.Map())
	assert.Equal(t, int64(1), a.SourceVersions.Get("name"))
	assert.Zero(t, a.SourceVersions.Get("mode"), "declared, never written")
	assert.Zero(t, a.SourceVersions.Get("e"), "an edge is not a field")
}

// An executor hands an owned snapshot to its node without copying it only
// when nothing in it is a list or a map: the flag must never claim a flat
// snapshot that holds one, whether it comes from a write or a default.
func TestSnapshotIsFlatOnlyWithoutListsOrMaps(t *testing.T) {
	t.Parallel()
	build := func(defaultValue map[string]any) *graph.Compiled {
		return newDoc("flat").
			input("name", str(), nil).
			input("opts", objectMap(), defaultValue).
			nodes("r").
			edge("e", "$start", "r", nil).
			compile(t, graph.Options{})
	}
	snapshot := func(g *graph.Compiled, input map[string]any) superstep.Activation {
		h := newHarness(t, g, map[string]behavior{"r": echo()})
		step, err := superstep.Advance(g, h.start(input), h.env())
		require.NoError(t, err)
		require.Len(t, step.Activations, 1)
		return step.Activations[0]
	}
	plain := build(nil)
	assert.True(t, snapshot(plain, map[string]any{"name": "ada"}).FlatSnapshot)
	assert.False(t, snapshot(plain, map[string]any{"name": "ada", "opts": map[string]any{"k": "v"}}).FlatSnapshot, "a written map")
	withDefault := build(map[string]any{"default": map[string]any{"k": "v"}})
	a := snapshot(withDefault, map[string]any{"name": "ada"})
	assert.Equal(t, map[string]any{"name": "ada", "opts": map[string]any{"k": "v"}}, a.Snapshot)
	assert.False(t, a.FlatSnapshot, "a default map")
}

// FlatConfig, found once per graph, is what lets an executor copy a
// node's config without looking inside it: it must be false whenever the
// config holds a list or a map, or a node could write into the graph's.
func TestConfigIsFlatOnlyWithoutListsOrMaps(t *testing.T) {
	t.Parallel()
	plan := func(config map[string]any) superstep.Activation {
		d := newDoc("flat").input("name", str(), nil).nodes("r").edge("e", "$start", "r", nil)
		if config != nil {
			d.section("nodes")["r"].(map[string]any)["config"] = config
		}
		g := d.compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"r": echo()})
		step, err := superstep.Advance(g, h.start(map[string]any{"name": "ada"}), h.env())
		require.NoError(t, err)
		require.Len(t, step.Activations, 1)
		return step.Activations[0]
	}
	assert.True(t, plan(nil).FlatConfig, "no config")
	assert.True(t, plan(map[string]any{"k": "v", "n": int64(2)}).FlatConfig)
	assert.False(t, plan(map[string]any{"k": "v", "m": map[string]any{"x": "y"}}).FlatConfig, "a map")
	assert.False(t, plan(map[string]any{"l": []any{"x"}}).FlatConfig, "a list")
}

// A committed state that holds a value no store could hold (a run built
// by hand, say) is refused at planning instead of being handed to a node,
// whether the graph's defaults are none, scalars or containers.
func TestAdvanceRefusesAStateThatIsNotPortable(t *testing.T) {
	t.Parallel()
	for defaults, doc := range map[string]*doc{
		"no defaults":      newDoc("portable"),
		"a scalar default": newDoc("portable").field("mode", str(), map[string]any{"default": "fast"}),
		"a map default":    newDoc("portable").input("opts", objectMap(), map[string]any{"default": map[string]any{"k": "v"}}),
	} {
		g := doc.input("name", str(), nil).field("list", listOf(str()), nil).nodes("r").edge("e", "$start", "r", nil).compile(t, graph.Options{})
		h := newHarness(t, g, map[string]behavior{"r": echo()})
		r := h.start(map[string]any{"name": "ada"})
		for name, v := range map[string]any{"a Go struct": struct{}{}, "NaN": math.NaN(), "in a list": []any{"x", struct{}{}}} {
			bad := r.Clone()
			bad.Channels.Set(run.Channel{ID: "state:list", Value: v, Version: 1})
			_, err := superstep.Advance(g, bad, h.env())
			assert.ErrorIs(t, err, superstep.ErrInvalidRun, defaults+", "+name)
			assert.ErrorContains(t, err, "not portable", defaults+", "+name)
		}
		_, err := superstep.Advance(g, r, h.env())
		require.NoError(t, err, defaults)
	}
}

func TestAdvanceOutsideTheActiveLifecycle(t *testing.T) {
	t.Parallel()
	g := mlGraph(t)
	h := newHarness(t, g, mlNodes())
	r := h.start(map[string]any{"value": "v"})

	created := *r
	created.Status = run.StatusCreated
	_, err := superstep.Advance(g, &created, h.env())
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)

	for _, status := range []run.Status{run.StatusDone, run.StatusFailed, run.StatusCancelled} {
		terminal := *r
		terminal.Status = status
		step, err := superstep.Advance(g, &terminal, h.env())
		require.NoError(t, err)
		assert.Equal(t, superstep.Step{Kind: superstep.Terminal}, step)
	}

	other := seGraph(t)
	_, err = superstep.Advance(other, r, h.env())
	assert.ErrorIs(t, err, superstep.ErrGraphMismatch)
}

func TestEdgeIntoAnInterruptedNodeIsConsumed(t *testing.T) {
	t.Parallel()
	// §7.2 consequence: the edge fires while gate's interrupt is open, gate
	// does not run then, and runs once after the resolution.
	g := newDoc("consumed").
		field("decision", str(), nil).
		field("applied", str(), nil).
		nodes("gate", "poke").
		edge("edge_gate", "$start", "gate", nil).
		edge("edge_poke", "$start", "poke", nil).
		edge("edge_poke_gate", "poke", "gate", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"gate": interruptOnce("decision", "applied"), "poke": echo()})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, r.Status)
	assert.Contains(t, r.ChangedChannels, "edge:edge_poke_gate")
	gateRuns := func() int {
		n := 0
		for _, c := range h.calls {
			if c.node == "gate" {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, gateRuns())

	var id string
	for id = range r.Interrupts {
	}
	m, err := superstep.ResolveInterrupt(g, r, id, "ok", h.env())
	require.NoError(t, err)
	r = h.drive(h.accept(r, m))
	require.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, 2, gateRuns())
	assert.Equal(t, "ok", r.Channels.Value("state:applied"))
}

func TestSettleRejectsMismatchedResults(t *testing.T) {
	t.Parallel()
	g := mlGraph(t)
	h := newHarness(t, g, mlNodes())
	r := h.start(map[string]any{"value": "v"})
	step, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	_, err = superstep.Settle(g, r, step, nil, h.env())
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)
	_, err = superstep.Settle(g, r, superstep.Step{Kind: superstep.Wait}, nil, h.env())
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)
}

func TestInterruptNeedsAnIDGenerator(t *testing.T) {
	t.Parallel()
	g := irGraph(t)
	h := newHarness(t, g, irNodes())
	r := h.start(nil)
	step, err := superstep.Advance(g, r, h.env())
	require.NoError(t, err)
	_, err = superstep.Settle(g, r, step, h.execute(step), superstep.Env{Now: t0})
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)

	same := superstep.Env{Now: t0, NewInterruptID: func() string { return "" }}
	_, err = superstep.Settle(g, r, step, h.execute(step), same)
	assert.ErrorIs(t, err, superstep.ErrInvalidRun)
}

// startMS starts a run of msGraph whose every node echoes: source first,
// then left and right beside each other, then combine.
func startMS(t *testing.T) (*graph.Compiled, *harness, *run.Run) {
	t.Helper()
	g := msGraph(t)
	h := newHarness(t, g, map[string]behavior{"source": echo(), "left": echo(), "right": echo(), "combine": echo()})
	return g, h, h.start(nil)
}
