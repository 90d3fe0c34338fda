package superstep_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// walkGraph has fan-out, a barrier, a guarded cycle, retry policies and an
// interrupt-capable resume field.
func walkGraph(t testing.TB) *graph.Compiled {
	return newDoc("walk").
		field("x", str(), nil).
		field("log", listOf(str()), map[string]any{"reducer": map[string]any{"type": "append"}}).
		field("n", integer(), map[string]any{"reducer": map[string]any{"type": "sum"}}).
		field("answer", str(), nil).
		node("a", map[string]any{"retry": map[string]any{"max_attempts": int64(3), "backoff_ms": int64(0)}}).
		node("b", map[string]any{"retry": map[string]any{"max_attempts": int64(2), "backoff_ms": int64(30)}}).
		nodes("c", "d").
		edge("edge_a", "$start", "a", nil).
		edge("edge_b", "$start", "b", nil).
		edge("edge_ac", "a", "c", nil).
		edge("edge_join", []any{"b", "c"}, "d", nil).
		edge("edge_loop", "d", "a", guardOp("not", guardOp("version_at_least", "n", int64(3)))).
		edge("edge_done", "d", "$finish", guardOp("version_at_least", "n", int64(3))).
		output("x", "x").
		output("log", "log").
		compile(t, graph.Options{MaxSupersteps: 12})
}

func drawResult(t *rapid.T, a superstep.Activation) superstep.Result {
	switch rapid.IntRange(0, 9).Draw(t, "outcome") {
	case 0, 1:
		return failure("transient "+a.NodeID, true)
	case 2:
		if rapid.IntRange(0, 3).Draw(t, "permanent") == 0 {
			return failure("fatal "+a.NodeID, false)
		}
		return update(map[string]any{})
	case 3:
		req := &superstep.InterruptRequest{ResumeChannel: "answer"}
		if rapid.Bool().Draw(t, "with id") {
			req.ID = fmt.Sprintf("ask-%s-%d-%d", a.NodeID, a.Step, a.Attempt)
		}
		return superstep.Result{Outcome: superstep.OutcomeInterrupt, Interrupt: req}
	default:
		upd := map[string]any{}
		if rapid.Bool().Draw(t, "write x") {
			upd["x"] = a.NodeID
		}
		if rapid.Bool().Draw(t, "write log") {
			upd["log"] = a.NodeID
		}
		upd["n"] = int64(1)
		return update(upd)
	}
}

func TestPropertyRandomWalksKeepMomentInvariants(t *testing.T) {
	t.Parallel()
	g := walkGraph(t)
	rapid.Check(t, func(rt *rapid.T) {
		now := t0
		var floor time.Time
		ids := 0
		env := func() superstep.Env {
			return superstep.Env{Now: now, ResumeFloor: floor, NewInterruptID: func() string {
				ids++
				return fmt.Sprintf("interrupt_%d", ids)
			}}
		}
		m, err := superstep.Start(g, superstep.StartParams{RunID: "run_p"}, env())
		require.NoError(rt, err)
		checkMoment(rt, nil, m)
		r := m.Run

		// commit checks a proposed moment and that producing it left the
		// committed run untouched.
		commit := func(before []byte, m *run.Moment) {
			after, err := run.Encode(r)
			require.NoError(rt, err)
			require.Equal(rt, string(before), string(after), "the committed run was mutated")
			checkMoment(rt, r, m)
			r = m.Run
		}

		for range 60 {
			if r.Status.Terminal() {
				break
			}
			now = now.Add(time.Duration(rapid.IntRange(0, 40).Draw(rt, "tick")) * time.Millisecond)
			before, err := run.Encode(r)
			require.NoError(rt, err)

			switch rapid.IntRange(0, 29).Draw(rt, "action") {
			case 0:
				m, err := superstep.Cancel(r, env())
				require.NoError(rt, err)
				commit(before, m)
				continue
			case 1, 2, 3, 4, 5:
				var open []string
				for id, in := range r.Interrupts {
					if in.Status == run.InterruptOpen {
						open = append(open, id)
					}
				}
				if len(open) == 0 {
					break
				}
				id := rapid.SampledFrom(open).Draw(rt, "interrupt")
				var v any = "yes"
				if rapid.IntRange(0, 4).Draw(rt, "bad value") == 0 {
					v = int64(42)
				}
				m, err := superstep.ResolveInterrupt(g, r, id, v, env())
				if v == int64(42) {
					require.ErrorIs(rt, err, superstep.ErrInvalidInput)
					continue
				}
				require.NoError(rt, err)
				commit(before, m)
				continue
			}

			step, err := superstep.Advance(g, r, env())
			require.NoError(rt, err)
			switch step.Kind {
			case superstep.Terminal:
				rt.Fatalf("a non-terminal run planned as terminal")
			case superstep.Wait, superstep.Park:
				if step.Kind == superstep.Park {
					require.True(rt, step.ResumeAt.After(now) || step.ResumeAt.After(floor))
					floor = step.ResumeAt
				}
				after, err := run.Encode(r)
				require.NoError(rt, err)
				require.Equal(rt, string(before), string(after))
			case superstep.Commit:
				commit(before, step.Moment)
			case superstep.Execute:
				require.NotEmpty(rt, step.Activations)
				// Re-planning the same committed run reproduces the identity.
				again, err := superstep.Advance(g, r, env())
				require.NoError(rt, err)
				require.Equal(rt, step, again)
				results := make([]superstep.Result, len(step.Activations))
				for i, a := range step.Activations {
					results[i] = drawResult(rt, a)
				}
				m, err := superstep.Settle(g, r, step, results, env())
				require.NoError(rt, err)
				commit(before, m)
				if m.Disposition.Kind == run.DispositionAt {
					floor = m.Disposition.At
				}
			}
		}
	})
}
