package superstep_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

func TestStartInitializesTheRun(t *testing.T) {
	t.Parallel()
	g := mlGraph(t)
	m, err := superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: map[string]any{"value": "hello"}}, superstep.Env{Now: t0})
	require.NoError(t, err)
	checkMoment(t, nil, m)

	r := m.Run
	assert.Equal(t, run.StatusRunning, r.Status)
	assert.Equal(t, g.GraphID, r.GraphID)
	assert.Equal(t, g.Hash, r.GraphHash)
	assert.Equal(t, map[string]any{"value": "hello"}, r.Input)
	assert.Equal(t, 0, r.Step)
	assert.Equal(t, t0, r.StartedAt)
	assert.Equal(t, t0, r.UpdatedAt)
	assert.Equal(t, run.Channel{ID: "input:value", Value: "hello", Version: 1}, channelOf(r, "input:value"))
	assert.Equal(t, run.Channel{ID: "edge:edge_start", Value: true, Version: 1}, channelOf(r, "edge:edge_start"))
	assert.Equal(t, []string{"edge:edge_start", "input:value"}, r.ChangedChannels)

	assert.Equal(t, cpInit, m.CheckpointType)
	assert.Equal(t, run.Disposition{Kind: run.DispositionContinue}, m.Disposition)
	require.Equal(t, []run.EventType{run.EventRunInitialized, run.EventChannelUpdated, run.EventEdgeTriggered, run.EventCheckpointCommitted}, eventTypes(m))
	assert.Equal(t, map[string]any{"inputs": []any{"value"}}, m.Events[0].Payload)
	assert.Equal(t, "input:value", m.Events[1].ChannelID)
	assert.Equal(t, map[string]any{"version": int64(1)}, m.Events[1].Payload)
	assert.Equal(t, "edge:edge_start", m.Events[2].ChannelID)
	assert.Equal(t, map[string]any{"edge_id": "edge_start"}, m.Events[2].Payload, "init edge events carry no \"to\"")
	for _, e := range m.Events {
		assert.Equal(t, 0, e.Step)
		assert.Equal(t, t0, e.Timestamp)
	}

	// §12 case 2: the init moment's checkpoint metadata.
	assert.Equal(t, map[string]any{
		"checkpoint_seq":   int64(1),
		"checkpoint_type":  "run_initialized",
		"graph_step":       int64(0),
		"park_reason":      nil,
		"wake_disposition": "continue",
		"active_superstep": nil,
		"node_attempts":    []any{},
	}, m.Metadata.Map())
}

func TestStartRejectsInvalidInput(t *testing.T) {
	t.Parallel()
	g := newDoc("inputs").
		input("value", str(), map[string]any{"required": true}).
		input("count", integer(), nil).
		input("mode", str(), map[string]any{"required": true, "default": "fast"}).
		field("out", str(), nil).
		nodes("n").
		edge("e", "$start", "n", nil).
		compile(t, graph.Options{})

	tests := []struct {
		name    string
		input   map[string]any
		reasons []any
	}{
		{"a missing required input without default", map[string]any{}, []any{`required input "value" is missing`}},
		{"a nil input counts as empty", nil, []any{`required input "value" is missing`}},
		{"unknown keys come first, then missing, then invalid",
			map[string]any{"zeta": 1, "alpha": 2, "count": "x"},
			[]any{`unknown input "alpha"`, `unknown input "zeta"`, `required input "value" is missing`, `input "count": ` + firstReason(t, integer(), "x")}},
		{"a schema violation names the input", map[string]any{"value": 42}, []any{`input "value": ` + firstReason(t, str(), int64(42))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: tc.input}, superstep.Env{Now: t0})
			require.Nil(t, m)
			var se *superstep.Error
			require.ErrorAs(t, err, &se)
			assert.ErrorIs(t, err, superstep.ErrInvalidInput)
			assert.Equal(t, "init", se.Phase)
			assert.Equal(t, tc.reasons, se.Details["reasons"])
		})
	}

	t.Run("a non-portable value is invalid input", func(t *testing.T) {
		t.Parallel()
		_, err := superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: map[string]any{"value": struct{}{}}}, superstep.Env{Now: t0})
		assert.ErrorIs(t, err, superstep.ErrInvalidInput)
		_, err = superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: map[string]any{"value": "caf\xe9"}}, superstep.Env{Now: t0})
		assert.ErrorIs(t, err, superstep.ErrInvalidInput, "text that is not UTF-8")
	})

	t.Run("Go values are normalized into portable ones", func(t *testing.T) {
		t.Parallel()
		m, err := superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: map[string]any{"value": "v", "count": 7}}, superstep.Env{Now: t0})
		require.NoError(t, err)
		assert.Equal(t, int64(7), m.Run.Input["count"])
		assert.Equal(t, int64(7), m.Run.Channels.Value("input:count"))
		written := m.Run.Channels.Has("input:mode")
		assert.False(t, written, "defaults are not written at init")
	})
}

func firstReason(t *testing.T, s map[string]any, v any) string {
	t.Helper()
	g := newDoc("probe").input("x", s, nil).compile(t, graph.Options{})
	reasons := g.Channels["input:x"].Schema.Validate(v)
	require.NotEmpty(t, reasons)
	return reasons[0]
}

func TestStartEvaluatesStartEdgeGuards(t *testing.T) {
	t.Parallel()
	// §12 case 10: guards route on the inputs.
	premium := guardOp("equals", "premium_user", true)
	g := newDoc("guards").
		input("premium_user", boolean(), nil).
		nodes("premium", "standard").
		edge("edge_premium", "$start", "premium", premium).
		edge("edge_standard", "$start", "standard", guardOp("not", premium)).
		edge("edge_start_finish", "$start", "$finish", guardOp("changed", "premium_user")).
		compile(t, graph.Options{})
	nodes := map[string]behavior{"premium": echo(), "standard": echo()}

	tests := []struct {
		name  string
		input map[string]any
		ran   []string
		fired []string
	}{
		{"premium users take the premium edge", map[string]any{"premium_user": true}, []string{"premium"}, []string{"edge_premium", "edge_start_finish"}},
		{"false takes the standard edge", map[string]any{"premium_user": false}, []string{"standard"}, []string{"edge_standard", "edge_start_finish"}},
		{"a missing input takes the standard edge", map[string]any{}, []string{"standard"}, []string{"edge_standard"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, g, nodes)
			r := h.start(tc.input)
			var fired []string
			for _, e := range eventsOf(h.moments[0], run.EventEdgeTriggered) {
				fired = append(fired, e.Payload["edge_id"].(string))
			}
			assert.Equal(t, tc.fired, fired)
			r = h.drive(r)
			require.Equal(t, run.StatusDone, r.Status)
			var ran []string
			for _, c := range h.calls {
				ran = append(ran, c.node)
			}
			assert.Equal(t, tc.ran, ran)
		})
	}
}

func TestStartFailsOnGuardEvaluationError(t *testing.T) {
	t.Parallel()
	// The compiler rejects a top-level path; a hand-edited runtime graph
	// still fails the start instead of the process.
	g := newDoc("bad-guard").
		input("x", str(), nil).
		nodes("n").
		edge("edge_bad", "$start", "n", guardOp("exists", "x")).
		compile(t, graph.Options{})
	g.Edges["edge_bad"].Guard = &graph.Guard{Op: graph.OpPath, Args: []any{"x", []any{}}}
	m, err := superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: map[string]any{"x": "v"}}, superstep.Env{Now: t0})
	require.Nil(t, m)
	var se *superstep.Error
	require.ErrorAs(t, err, &se)
	assert.Equal(t, superstep.CodeGuardEvaluationFailed, se.Code)
	assert.Equal(t, "init", se.Phase)
	assert.Equal(t, "edge_bad", se.Details["edge_id"])
	assert.NotEmpty(t, se.Details["reasons"])
}

func TestStartKeepsAFalseStateDefault(t *testing.T) {
	t.Parallel()
	// Divergence from the reference (which drops a false state default):
	// nodes and guards see false.
	g := newDoc("false-default").
		field("flag", boolean(), map[string]any{"default": false}).
		field("seen", boolean(), nil).
		nodes("reader").
		edge("e", "$start", "reader", nil).
		compile(t, graph.Options{})
	h := newHarness(t, g, map[string]behavior{"reader": copyField("flag", "seen")})
	r := h.drive(h.start(nil))
	require.Equal(t, run.StatusDone, r.Status)
	require.Len(t, h.calls, 1)
	v, ok := h.calls[0].snapshot["flag"]
	assert.True(t, ok)
	assert.Equal(t, false, v)
	assert.Equal(t, false, r.Channels.Value("state:seen"))
}

func TestResumeIsASavedInit(t *testing.T) {
	t.Parallel()
	g := irGraph(t)
	h := newHarness(t, g, irNodes())
	waiting := h.drive(h.start(nil))
	require.Equal(t, run.StatusWaiting, waiting.Status)

	later := t0.Add(time.Minute)
	m, err := superstep.Resume(g, waiting, superstep.Env{Now: later})
	require.NoError(t, err)
	checkMoment(t, waiting, m)
	assert.Equal(t, cpInit, m.CheckpointType)
	assert.Equal(t, run.Disposition{Kind: run.DispositionExternal, Reason: run.ReasonAwaitingInterrupts}, m.Disposition)
	require.Equal(t, []run.EventType{run.EventRunInitialized, run.EventCheckpointCommitted}, eventTypes(m))
	assert.Equal(t, map[string]any{"resumed": true}, m.Events[0].Payload)
	assert.Equal(t, waiting.Step, m.Events[0].Step)
	// Only updated_at (and the sequences) change.
	want := *waiting
	want.UpdatedAt = later
	want.CheckpointSeq, want.EventSeq = m.Run.CheckpointSeq, m.Run.EventSeq
	assert.Equal(t, &want, m.Run)

	running := *waiting
	running.Status = run.StatusRunning
	m, err = superstep.Resume(g, &running, superstep.Env{Now: later})
	require.NoError(t, err)
	assert.Equal(t, run.DispositionContinue, m.Disposition.Kind)

	done := *waiting
	done.Status = run.StatusDone
	m, err = superstep.Resume(g, &done, superstep.Env{Now: later})
	assert.NoError(t, err)
	assert.Nil(t, m, "a terminal run has nothing to resume")

	other := newDoc("other").nodes("x").edge("e", "$start", "x", nil).compile(t, graph.Options{})
	_, err = superstep.Resume(other, waiting, superstep.Env{Now: later})
	assert.ErrorIs(t, err, superstep.ErrGraphMismatch)

	created := *waiting
	created.Status = run.StatusCreated
	_, err = superstep.Resume(g, &created, superstep.Env{Now: later})
	assert.True(t, errors.Is(err, superstep.ErrInvalidRun))
}

// run_initialized lists the inputs given, in order, whether all of them
// (a payload built once per graph) or some.
func TestStartListsTheGivenInputs(t *testing.T) {
	t.Parallel()
	g := newDoc("inputs").
		input("b", str(), nil).
		input("a", str(), nil).
		input("c", str(), nil).
		nodes("copy").
		edge("edge_start", "$start", "copy", nil).
		compile(t, graph.Options{})
	for _, tc := range []struct {
		input map[string]any
		want  []any
	}{
		{map[string]any{"a": "x", "b": "y", "c": "z"}, []any{"a", "b", "c"}},
		{map[string]any{"c": "z", "a": "x"}, []any{"a", "c"}},
		{map[string]any{"b": "y"}, []any{"b"}},
		{map[string]any{}, []any{}},
		{map[string]any{"a": "x", "b": "y", "c": "z"}, []any{"a", "b", "c"}},
	} {
		m, err := superstep.Start(g, superstep.StartParams{RunID: "run_1", Input: tc.input}, superstep.Env{Now: t0})
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"inputs": tc.want}, m.Events[0].Payload)
	}
}
