package inline_test

import (
	"context"
	"errors"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/inline"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/reducer"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
)

// Spec §12 cases 39–44: reducers, attempt timeouts, resume, StepInline,
// and the compiler and wire behaviour as the runner sees it.
func TestScenariosReducersTimeoutsResume(t *testing.T) {
	inBothModes(t, scenariosReducersTimeoutsResume)
}

func scenariosReducersTimeoutsResume(t *testing.T, newKit func(*testing.T) *kit) {
	t.Parallel()
	ctx := context.Background()
	strings := schema.List(schema.String())

	t.Run("case 39/reducers fold writes end to end", func(t *testing.T) {
		t.Parallel()
		cases := []struct {
			name  string
			graph *graph.Builder
			want  map[string]any
		}{
			{"append accumulates across supersteps and concatenates list writes", graph.New("append-chain").
				State("messages", strings, graph.Reducer(reducer.Append, nil)).
				Node("first", refWriteValue, cfg("field", "messages", "value", "one")).
				Node("second", refWriteValue, cfg("field", "messages", "value", []string{"two", "three"})).
				Edge("edge_start_first", graph.Start, "first").
				Edge("edge_first_second", "first", "second").
				Edge("edge_second_finish", "second", graph.Finish).
				Output("messages", ""),
				map[string]any{"messages": []any{"one", "two", "three"}}},
			{"same-step appends fold in node order after the default", graph.New("append-conflict").
				State("log", strings, graph.Default([]string{"seed"}), graph.Reducer(reducer.Append, nil)).
				Node("b_writer", refWriteValue, cfg("field", "log", "value", "from_b")).
				Node("a_writer", refWriteValue, cfg("field", "log", "value", "from_a")).
				Edge("edge_start_a", graph.Start, "a_writer").
				Edge("edge_start_b", graph.Start, "b_writer").
				Output("log", ""),
				map[string]any{"log": []any{"seed", "from_a", "from_b"}}},
			{"an unwritten append field reads as its zero", graph.New("zero-snapshot").
				State("messages", strings, graph.Reducer(reducer.Append, nil)).
				State("copy", strings).
				Node("reader", refCopyInput, cfg("from", "messages", "to", "copy")).
				Edge("edge_start_reader", graph.Start, "reader").
				Edge("edge_reader_finish", "reader", graph.Finish).
				Output("copy", ""),
				map[string]any{"copy": []any{}}},
			{"sum adds and merge folds maps", graph.New("sum-merge").
				State("total", schema.Integer(), graph.Reducer(reducer.Sum, nil)).
				State("meta", schema.Map(), graph.Reducer(reducer.Merge, nil)).
				Node("a_step", refWriteValue, cfg("field", "total", "value", 2)).
				Node("b_step", refWriteValue, cfg("field", "total", "value", 3)).
				Node("meta_a", refWriteValue, cfg("field", "meta", "value", map[string]any{"a": 1})).
				Node("meta_b", refWriteValue, cfg("field", "meta", "value", map[string]any{"b": 2})).
				Edge("edge_start_a", graph.Start, "a_step").
				Edge("edge_start_b", graph.Start, "b_step").
				Edge("edge_start_ma", graph.Start, "meta_a").
				Edge("edge_start_mb", graph.Start, "meta_b").
				Output("total", "").
				Output("meta", ""),
				map[string]any{"total": int64(5), "meta": map[string]any{"a": int64(1), "b": int64(2)}}},
			{"first_value keeps the first committed write", graph.New("first-value").
				State("winner", schema.String(), graph.Reducer(reducer.FirstValue, nil)).
				Node("early", refWriteValue, cfg("field", "winner", "value", "first")).
				Node("late", refWriteValue, cfg("field", "winner", "value", "second")).
				Edge("edge_start_early", graph.Start, "early").
				Edge("edge_early_late", "early", "late").
				Edge("edge_late_finish", "late", graph.Finish).
				Output("winner", ""),
				map[string]any{"winner": "first"}},
		}
		for _, tc := range cases {
			k := newKit(t)
			r, cps, err := inline.RunInline(ctx, build(t, tc.graph), nil, k.options()...)
			require.NoError(t, err, tc.name)
			requireWellFormed(t, cps)
			assert.Equal(t, run.StatusDone, r.Status, tc.name)
			assert.Equal(t, tc.want, r.Output, tc.name)
		}

		k := newKit(t)
		r, _, err := inline.RunInline(ctx, build(t, graph.New("append-invalid-item").
			State("messages", strings, graph.Reducer(reducer.Append, nil)).
			Node("writer", refWriteValue, cfg("field", "messages", "value", 42)).
			Edge("edge_start_writer", graph.Start, "writer").
			Edge("edge_writer_finish", "writer", graph.Finish)), nil, k.options()...)
		require.NoError(t, err)
		assertFailedWith(t, r, "node_failed")
		assert.False(t, r.Channels.Has("state:messages"), "an invalid append item creates no channel")

		g := build(t, graph.New("append-interrupt").
			State("answers", strings, graph.Reducer(reducer.Append, nil)).
			State("applied", strings).
			Node("gate", refInterruptWhileEmp, cfg("resume_field", "answers", "write_field", "applied")).
			Edge("edge_start_gate", graph.Start, "gate").
			Edge("edge_gate_finish", "gate", graph.Finish).
			Output("applied", ""))
		waiting, _, id := waitingRun(t, k, g)
		done, _, err := inline.ResolveInterruptInline(ctx, g, waiting, id, "yes", k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)
		assert.Equal(t, map[string]any{"applied": []any{"yes"}}, done.Output)
		assert.Equal(t, []any{"yes"}, done.Channels.Value("state:answers"), "the resolution folds through append")
	})

	blocking := func(policies ...graph.RecordOption) *graph.Graph {
		return build(t, graph.New("blocking-timeout").
			State("out", schema.String()).
			Node("slow", refBlocking, policies...).
			Edge("start", graph.Start, "slow").
			Edge("finish", "slow", graph.Finish))
	}

	t.Run("case 40/attempt deadlines", func(t *testing.T) {
		t.Parallel()
		t.Run("the host maximum bounds a node without timeout_ms", func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			r, _, err := inline.RunInline(ctx, blocking(), nil, k.options(inline.WithMaxAttemptElapsed(20*time.Millisecond))...)
			require.NoError(t, err)
			assertFailedWith(t, r, "node_failed")
			assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["slow"], "timeout")
		})
		t.Run("an explicit timeout below the maximum wins", func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			start := time.Now()
			r, _, err := inline.RunInline(ctx, blocking(graph.Timeout(15)), nil, k.options(inline.WithMaxAttemptElapsed(time.Minute))...)
			require.NoError(t, err)
			assertFailedWith(t, r, "node_failed")
			assert.Contains(t, r.Failure.Details["errors"].(map[string]any)["slow"], "timeout")
			assert.Less(t, time.Since(start), 30*time.Second, "the one-minute maximum did not apply")
		})
		t.Run("a timeout above the maximum rejects the graph before any node runs", func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			g := build(t, graph.New("incompatible-timeout").
				Node("first", refBlocking).
				Node("dormant", refBlocking, graph.Timeout(101)).
				Edge("start", graph.Start, "first").
				Edge("dormant_start", graph.Start, "dormant").
				Join("finish", []string{"dormant", "first"}, graph.Finish))
			r, cps, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxAttemptElapsed(100*time.Millisecond))...)
			require.ErrorIs(t, err, superstep.ErrIncompatibleExecutionPolicy)
			assert.Nil(t, r)
			assert.Empty(t, cps)
			assert.Empty(t, k.allAttempts())
			var domainErr *superstep.Error
			require.ErrorAs(t, err, &domainErr)
			assert.Equal(t, int64(101), domainErr.Details["timeout_ms"])
			assert.Equal(t, int64(100), domainErr.Details["max_attempt_elapsed_ms"])
		})
		t.Run("a self-killing node fails and its sibling barrier still settles", func(t *testing.T) {
			t.Parallel()
			k := newKit(t)
			g := build(t, graph.New("self-kill").
				Node("ok", refEcho).
				Node("kill", refExits).
				Node("slow", refBlocking, graph.Timeout(15)).
				Edge("ok_start", graph.Start, "ok").
				Edge("kill_start", graph.Start, "kill").
				Edge("slow_start", graph.Start, "slow").
				Join("finish", []string{"kill", "ok", "slow"}, graph.Finish))
			r, cps, err := inline.RunInline(ctx, g, nil, k.options(inline.WithMaxAttemptElapsed(100*time.Millisecond))...)
			require.NoError(t, err)
			assertFailedWith(t, r, "node_failed")
			errs := r.Failure.Details["errors"].(map[string]any)
			assert.Contains(t, errs["kill"], "killed")
			assert.Contains(t, errs["slow"], "timeout")
			assert.Equal(t, []any{"kill", "slow"}, r.Failure.Details["nodes"])
			assert.Len(t, eventsOf(cps, run.EventNodeFailed), 2)
		})
	})

	t.Run("case 41/resume", func(t *testing.T) {
		t.Parallel()
		g := build(t, simpleEdge())
		input := map[string]any{"topic": "graphs"}

		k := newKit(t)
		mid, _, err := inline.RunInline(ctx, g, input, k.options(inline.WithMaxSteps(1))...)
		require.NoError(t, err)
		require.Equal(t, 1, mid.Step)
		resumed, cps, err := inline.ResumeInline(ctx, g, mid, k.options()...)
		require.NoError(t, err)
		requireWellFormed(t, cps)
		assert.Equal(t, run.StatusDone, resumed.Status)
		assert.Equal(t, 2, resumed.Step)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized, run.CheckpointStepCommitted, run.CheckpointRunCompleted}, types(cps))
		assert.Equal(t, map[string]any{"resumed": true}, cps[0].Events[0].Payload)
		assert.Equal(t, mid.CheckpointSeq+1, cps[0].Seq, "resuming continues the run's sequences")

		// A checkpoint's run resumes from there: the uncommitted step re-runs.
		_, all, err := inline.RunInline(ctx, g, input, k.options()...)
		require.NoError(t, err)
		stepOne := findCheckpoints(all, run.CheckpointStepCommitted)[0]
		again, _, err := inline.ResumeInline(ctx, g, stepOne.Run, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, again.Status)
		assert.Equal(t, 2, again.Step)

		_, cps, err = inline.ResumeInline(ctx, build(t, minimalLinear()), mid, k.options()...)
		assert.ErrorIs(t, err, superstep.ErrGraphMismatch, "another graph")
		assert.Empty(t, cps)
		_, _, err = inline.ResumeInline(ctx, build(t, simpleEdge().State("extra", schema.String())), mid, k.options()...)
		assert.ErrorIs(t, err, superstep.ErrGraphMismatch, "the same graph with a field added")

		same, cps, err := inline.ResumeInline(ctx, g, resumed, k.options()...)
		require.NoError(t, err)
		assert.Same(t, resumed, same, "a terminal run is returned unchanged")
		assert.Empty(t, cps)

		untouched, cps, err := inline.ResumeInline(ctx, g, mid, k.options(inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized}, types(cps))
		assert.Equal(t, mid.Status, untouched.Status)
		assert.Equal(t, mid.Step, untouched.Step)
		assert.Equal(t, mid.Channels, untouched.Channels)
		assert.Equal(t, mid.ChangedChannels, untouched.ChangedChannels)

		waiting, _, _ := waitingRun(t, k, build(t, interruptReview()))
		stillWaiting, cps, err := inline.ResumeInline(ctx, build(t, interruptReview()), waiting, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusWaiting, stillWaiting.Status)
		assert.Equal(t, "external", cps[0].Metadata.Map()["wake_disposition"])
	})

	t.Run("case 42/StepInline commits exactly one transition", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		g := build(t, simpleEdge())
		created, err := inline.NewRun(g, map[string]any{"topic": "graphs"}, k.options(inline.WithRunID("run_step"))...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusCreated, created.Status)

		r, cps, err := inline.StepInline(ctx, g, created, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunInitialized}, types(cps), "a created run is only initialized")
		assert.Equal(t, 0, r.Step)
		assert.Equal(t, "run_step", r.ID)

		r, cps, err = inline.StepInline(ctx, g, r, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, 1, r.Step)
		assert.Equal(t, []run.CheckpointType{run.CheckpointStepCommitted}, types(cps))

		r, _, err = inline.StepInline(ctx, g, r, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, 2, r.Step)

		r, cps, err = inline.StepInline(ctx, g, r, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, r.Status)
		assert.Equal(t, []run.CheckpointType{run.CheckpointRunCompleted}, types(cps))

		same, cps, err := inline.StepInline(ctx, g, r, k.options()...)
		require.NoError(t, err)
		assert.Same(t, r, same)
		assert.Empty(t, cps)

		_, cps, err = inline.StepInline(ctx, (*graph.Graph)(nil), r, k.options()...)
		assert.ErrorIs(t, err, graph.ErrInvalidGraph, "the graph is required")
		assert.Empty(t, cps)
	})

	t.Run("case 43/compiler behaviour through the runner", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		var schemaCalls atomic.Int32
		counted := countingNode{calls: &schemaCalls}
		reg := node.NewRegistry().MustRegister("test.counted", counted).MustRegister(refEcho, node.Func(func(context.Context, map[string]any) (map[string]any, error) { return nil, nil }))
		g := build(t, graph.New("counted").
			Node("a", "test.counted").Node("b", "test.counted").Node("c", refEcho).
			Edge("s_a", graph.Start, "a").Edge("s_b", graph.Start, "b").Edge("s_c", graph.Start, "c"))
		_, cps, err := inline.RunInline(ctx, g, nil, k.options(inline.WithRegistry(reg), inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		assert.Equal(t, int32(1), schemaCalls.Load(), "a config schema is fetched once per compile")
		hash := cps[0].Run.GraphHash
		assert.Regexp(t, regexp.MustCompile(`^[0-9a-f]{64}$`), hash)

		relabelled := build(t, graph.New("counted").
			Node("a", "test.counted", graph.Label("A")).Node("b", "test.counted").Node("c", refEcho).
			Edge("s_a", graph.Start, "a").Edge("s_b", graph.Start, "b").Edge("s_c", graph.Start, "c"))
		r, _, err := inline.RunInline(ctx, relabelled, nil, k.options(inline.WithRegistry(reg), inline.WithMaxSteps(0))...)
		require.NoError(t, err)
		assert.NotEqual(t, hash, r.GraphHash, "a label change changes the version")

		bad := build(t, singleNode("bad-policies", refEcho, graph.Timeout(-1), graph.Policy("retry", map[string]any{"max_attempts": 0}), graph.Policy("on_error", "route")))
		_, _, err = inline.RunInline(ctx, bad, nil, k.options()...)
		var compileErr *graph.CompileError
		require.True(t, errors.As(err, &compileErr))
		var policyPaths []string
		for _, d := range compileErr.Diagnostics {
			if d.Code == "invalid_policy" {
				policyPaths = append(policyPaths, d.Path[len(d.Path)-1].(string))
			}
		}
		assert.ElementsMatch(t, []string{"timeout_ms", "retry", "on_error"}, policyPaths, "one invalid_policy per bad key")
	})

	t.Run("case 44/a graph read from its JSON wire form runs like the built one", func(t *testing.T) {
		t.Parallel()
		k := newKit(t)
		built := build(t, minimalLinear())
		wire, err := built.MarshalJSON()
		require.NoError(t, err)
		parsed, err := graph.Parse(wire)
		require.NoError(t, err)

		fromBuilt, _, err := inline.RunInline(ctx, built, map[string]any{"value": "hello"}, k.options()...)
		require.NoError(t, err)
		fromWire, _, err := inline.RunInline(ctx, parsed, map[string]any{"value": "hello"}, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, fromBuilt.GraphHash, fromWire.GraphHash)
		assert.Equal(t, fromBuilt.Output, fromWire.Output)

		doc := `{"schema_version": 1, "id": "wire-guard",
		  "inputs": {"review": {"kind": "input", "schema": {"type": "map"}}},
		  "fields": {"out": {"kind": "state", "schema": {"type": "string"}}},
		  "outputs": {"out": {}},
		  "nodes": {"ok": {"implementation": {"type": "module", "implementation": "test.write_value"},
		                   "config": {"field": "out", "value": "approved"}}},
		  "edges": {"start": {"from": "$start", "to": "ok", "guard": {"op": "equals",
		              "args": [{"$guard": {"op": "path", "args": ["review", ["status"]]}}, "approved"]}},
		            "done": {"from": "ok", "to": "$finish"}}}`
		g, err := graph.Parse([]byte(doc))
		require.NoError(t, err)
		r, _, err := inline.RunInline(ctx, g, map[string]any{"review": map[string]any{"status": "approved"}}, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"out": "approved"}, r.Output)
		r, _, err = inline.RunInline(ctx, g, map[string]any{"review": map[string]any{"status": "rejected"}}, k.options()...)
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"out": nil}, r.Output, "the guard blocked the node")
	})
}

// countingNode counts ConfigSchema calls.
type countingNode struct{ calls *atomic.Int32 }

func (n countingNode) ConfigSchema() *schema.Schema {
	n.calls.Add(1)
	return schema.Object(nil)
}

func (countingNode) Call(context.Context, node.Input) (node.Output, error) {
	return node.Update(nil), nil
}
