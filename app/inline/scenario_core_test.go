package inline_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

// Spec §12 cases 1–15: linear, fan-out, barriers, isolation, guards,
// cycles, inputs and invalid graphs.
func TestScenariosCore(t *testing.T) { inBothModes(t, scenariosCore) }

func scenariosCore(t *testing.T, newKit func(*testing.T) *kit) {
	t.Parallel()
	ctx := context.Background()

	t.Run("case 01/minimal linear completes with its output and well-formed checkpoints", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, minimalLinear()), map[string]any{"value": "hello"}, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, 1, r.Step)
		assert.Equal(t, map[string]any{"result": "hello"}, r.Output)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, types(cps))
		assert.Equal(t, []int64{1, 2, 3}, []int64{cps[0].Seq, cps[1].Seq, cps[2].Seq})
		assert.Equal(t, int64(1), cps[0].Events[0].Seq, "event seqs start at 1")
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusRunning, cps[0].Run.Status, "initialization commits before any node runs")
		assert.Equal(t, run.EventRunInitialized, cps[0].Events[0].Type)
		assert.Equal(t, "hello", r.Channels.Value("input:value"))
		assert.Equal(t, int64(1), r.Channels.Version("input:value"))
		assert.False(t, cps[2].Run.FinishedAt.IsZero())
	})

	t.Run("case 01/a compiled graph runs the same as its document", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		c := k.compile(build(t, minimalLinear()))
		r, _, err := inline.RunInline(ctx, c, map[string]any{"value": "hi"}, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"result": "hi"}, r.Output)
		assert.Equal(t, c.Hash, r.GraphHash)
	})

	t.Run("case 02/init moment metadata with a frozen clock", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, minimalLinear()), map[string]any{"value": "hello"},
			k.options(inline.WithRunID("run_fixed"), inline.WithMetadata(map[string]any{"tenant": "acme"}), inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		require.Len(t, cps, 1)
		init := cps[0]
		assert.Equal(t, portable(t, map[string]any{
			"checkpoint_seq": 1, "checkpoint_type": "run_initialized", "graph_step": 0,
			"park_reason": nil, "wake_disposition": "continue", "active_superstep": nil, "node_attempts": []any{},
		}), init.Metadata.Map())
		assert.Equal(t, frozenNow, init.CreatedAt)
		assert.Equal(t, frozenNow, r.StartedAt)
		assert.Equal(t, frozenNow, r.UpdatedAt)
		for _, e := range init.Events {
			assert.Equal(t, frozenNow, e.Timestamp)
		}
		assert.Equal(t, "run_fixed", r.ID)
		assert.Equal(t, map[string]any{"tenant": "acme"}, r.Metadata)
		assert.Equal(t, []run.EventType{run.EventRunInitialized, run.EventChannelUpdated, run.EventEdgeTriggered, run.EventCheckpointCommitted},
			eventTypes(init.Events))
		assert.Equal(t, portable(t, map[string]any{"inputs": []string{"value"}}), init.Events[0].Payload)
		assert.Equal(t, map[string]any{"edge_id": "edge_start_copy"}, init.Events[2].Payload)
	})

	t.Run("case 03/simple edge runs two supersteps and projects unwritten outputs as null", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, simpleEdge()), map[string]any{"topic": "graphs"}, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, 2, r.Step)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted,
			run.CheckpointStepCommitted, run.CheckpointRunCompleted}, types(cps))
		assert.Equal(t, []string{"writer"}, completedNodes(one(cps[1])))
		assert.Equal(t, []string{"reviewer"}, completedNodes(one(cps[2])))
		assert.Equal(t, map[string]any{"draft": nil}, r.Output)
	})

	t.Run("case 04/fan-out activates both targets in one superstep and ends without a finish edge", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, fanOut("fanout")), map[string]any{"value": "x"}, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, 2, r.Step)
		require.Len(t, cps, 4)
		assert.Equal(t, []string{"left", "right"}, completedNodes(one(cps[2])))
		assert.Equal(t, map[string]any{}, r.Output)
	})

	t.Run("case 05/a multi-source edge waits for every source", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, multiSource()), map[string]any{"value": "x"}, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, 3, r.Step)
		require.Len(t, cps, 5)
		assert.Contains(t, triggeredEdges(one(cps[2])), "edge_combine_ready")
		assert.NotContains(t, triggeredEdges(one(cps[1])), "edge_combine_ready")
		assert.Equal(t, []string{"combine"}, completedNodes(one(cps[3])))
		assert.Empty(t, r.BarrierSeen["edge:edge_combine_ready"], "a fired barrier resets")
	})

	t.Run("case 06/barrier completions are sticky across supersteps", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("sticky-barrier").
			Node("a", refEcho).Node("b0", refEcho).Node("b", refEcho).Node("join", refEcho).
			Edge("edge_start_a", graph.Start, "a").
			Edge("edge_start_b0", graph.Start, "b0").
			Edge("edge_b0_b", "b0", "b").
			Join("edge_join", []string{"a", "b"}, "join").
			Edge("edge_join_finish", "join", graph.Finish))
		opts := k.options()

		r, _, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxSteps(1))...)
		require.NoError(t, err)
		assert.Equal(t, []string{"a"}, r.BarrierSeen["edge:edge_join"])

		r, cps, err := inline.StepInline(ctx, g, r, opts...)
		require.NoError(t, err)
		assert.Empty(t, r.BarrierSeen["edge:edge_join"])
		assert.Contains(t, triggeredEdges(cps), "edge_join")

		r, cps, err = inline.StepInline(ctx, g, r, opts...)
		require.NoError(t, err)
		assert.Equal(t, []string{"join"}, completedNodes(cps))

		r, _, err = inline.StepInline(ctx, g, r, opts...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
	})

	isolation := func() *graph.Builder {
		return graph.New("same-step-isolation").
			State("x", schema.String(), graph.Default("old")).
			State("y", schema.String()).
			Node("writer", refWriteValue, cfg("field", "x", "value", "new")).
			Node("reader", refCopyInput, cfg("from", "x", "to", "y")).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_start_reader", graph.Start, "reader")
	}

	t.Run("case 07/a write is invisible to other nodes of the same superstep", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, _, err := inline.RunInline(ctx, build(t, isolation()), nil, k.options()...)
		require.NoError(t, err)
		x, _ := fieldValue(r, "x")
		y, _ := fieldValue(r, "y")
		assert.Equal(t, "new", x)
		assert.Equal(t, "old", y)
	})

	t.Run("case 08/same-step last_value writes resolve to the last node ID", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, graph.New("write-conflict").
			State("out", schema.String()).
			Node("a_writer", refWriteValue, cfg("field", "out", "value", "from_a")).
			Node("b_writer", refWriteValue, cfg("field", "out", "value", "from_b")).
			Edge("edge_start_a", graph.Start, "a_writer").
			Edge("edge_start_b", graph.Start, "b_writer").
			Output("out", ""))
		r, _, err := inline.RunInline(ctx, g, nil, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, map[string]any{"out": "from_b"}, r.Output)
	})

	t.Run("case 09/change tracking is write-based", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, _, err := inline.RunInline(ctx, build(t, isolation()), nil, k.options(inline.WithMaxSteps(1))...)
		require.NoError(t, err)
		assert.Equal(t, int64(1), r.Channels.Version("state:x"))
		assert.Contains(t, r.ChangedChannels, "state:x")
	})

	t.Run("case 10/guards choose a branch from committed input", func(t *testing.T) {
		t.Parallel()
		premium := graph.Equals(graph.Path("user", "premium_user"), true)
		g := build(t, graph.New("guarded-edge").
			Input("user", schema.Map(), graph.Required()).
			State("plan", schema.String()).
			Node("fetch", refEcho).Node("premium_step", refEcho).Node("standard_step", refEcho).
			Edge("edge_start_fetch", graph.Start, "fetch").
			Edge("edge_premium", "fetch", "premium_step", graph.When(premium)).
			Edge("edge_standard", "fetch", "standard_step", graph.When(graph.Not(premium))))
		cases := []struct {
			name     string
			user     map[string]any
			ran, not string
		}{
			{"premium user", map[string]any{"premium_user": true}, "premium_step", "standard_step"},
			{"standard user", map[string]any{"premium_user": false}, "standard_step", "premium_step"},
			{"missing path makes the guard false", map[string]any{}, "standard_step", "premium_step"},
		}
		for _, tc := range cases {
			k := newKit(t)
			r, cps, err := inline.RunInline(ctx, g, map[string]any{"user": tc.user}, k.options()...)
			require.NoError(t, err, tc.name)
			assert.Equal(t, run.StatusDone, r.Status, tc.name)
			assert.Contains(t, completedNodes(cps), tc.ran, tc.name)
			assert.NotContains(t, completedNodes(cps), tc.not, tc.name)
		}
	})

	t.Run("case 11/a guarded cycle counts to ten and completes", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, build(t, cycleCounter(true, 50)), nil, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, r.Status)
		count, _ := fieldValue(r, "count")
		assert.Equal(t, 10.0, count)
	})

	limitCases := []struct {
		name string
		g    func(t *testing.T) *graph.Graph
		opts []inline.Option
	}{
		{"case 12/the graph's superstep limit fails the run", func(t *testing.T) *graph.Graph { return build(t, cycleCounter(true, 3)) }, nil},
		{"case 13/a runtime superstep limit bounds a graph without one", func(t *testing.T) *graph.Graph { return build(t, cycleCounter(false, 0)) },
			[]inline.Option{inline.WithMaxSupersteps(3)}},
	}
	for _, tc := range limitCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			r, cps, err := inline.RunInline(ctx, tc.g(t), nil, k.options(tc.opts...)...)
			require.NoError(t, err)
			requireWellFormed(t, cps)
			assertFailedWith(t, r, "max_supersteps_exceeded")
			assert.Equal(t, 3, r.Step)
			assert.Equal(t, portable(t, map[string]any{"limit": 3}), any(r.Failure.Details))
			assert.Equal(t, "run exceeded the superstep limit of 3", r.Failure.Message)
			last := cps[len(cps)-1]
			assert.Equal(t, run.CheckpointRunFailed, last.Type)
			failed := eventsOf(one(last), run.EventRunFailed)
			require.Len(t, failed, 1)
			assert.Equal(t, "max_supersteps_exceeded", failed[0].Payload["reason"])
			assert.Equal(t, r.Failure.Message, failed[0].Payload["message"])
			assert.Equal(t, int64(3), failed[0].Payload["limit"])
		})
	}

	t.Run("case 14/invalid inputs fail before any checkpoint", func(t *testing.T) {
		t.Parallel()
		g := build(t, minimalLinear())
		k := newKit(t)
		r, cps, err := inline.RunInline(ctx, g, map[string]any{}, k.options()...)
		require.ErrorIs(t, err, superstep.ErrInvalidInput)
		assert.Nil(t, r)
		assert.Empty(t, cps)
		var domainErr *superstep.Error
		require.ErrorAs(t, err, &domainErr)
		assert.Equal(t, []any{`required input "value" is missing`}, domainErr.Details["reasons"])

		for name, input := range map[string]map[string]any{
			"an unknown key":            {"value": "x", "bogus": 1},
			"a non-portable value":      {"value": make(chan int)},
			"a value of the wrong type": {"value": 42},
		} {
			r, cps, err := inline.RunInline(ctx, g, input, k.options()...)
			assert.ErrorIs(t, err, superstep.ErrInvalidInput, name)
			assert.Nil(t, r, name)
			assert.Empty(t, cps, name)
		}
		assert.Empty(t, k.allAttempts(), "no node ran")
	})

	t.Run("case 15/an edge to an unknown node is an invalid graph with diagnostics", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, minimalLinear().Edge("edge_copy_ghost", "copy", "ghost"))
		r, cps, err := inline.RunInline(ctx, g, map[string]any{"value": "x"}, k.options()...)
		require.ErrorIs(t, err, graph.ErrInvalidGraph)
		assert.Nil(t, r)
		assert.Empty(t, cps)
		var compileErr *graph.CompileError
		require.True(t, errors.As(err, &compileErr))
		assert.Contains(t, diagnosticCodes(compileErr.Diagnostics), "unknown_edge_target")
	})
}

func eventTypes(events []run.Event) []run.EventType {
	out := make([]run.EventType, len(events))
	for i, e := range events {
		out[i] = e.Type
	}
	return out
}

func triggeredEdges(cps []run.Checkpoint) []string {
	var out []string
	for _, e := range eventsOf(cps, run.EventEdgeTriggered) {
		out = append(out, e.Payload["edge_id"].(string))
	}
	return out
}

func diagnosticCodes(ds []graph.Diagnostic) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Code
	}
	return out
}
