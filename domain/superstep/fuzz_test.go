package superstep_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/domain/value"
)

// FuzzBarrierRevalidatesStoredPendingWrites feeds arbitrary stored pending
// write values (as a corrupted or hand-edited store would hold them) to the
// barrier: it must either commit a valid run or fail the run through the
// typed node_failed path, never panic.
func FuzzBarrierRevalidatesStoredPendingWrites(f *testing.F) {
	f.Add([]byte(`{"steady_out":"steady done"}`), false)
	f.Add([]byte(`{"ghost":"x"}`), false)
	f.Add([]byte(`{"steady_out":42}`), false)
	f.Add([]byte(`[1,2]`), false)
	f.Add([]byte(`null`), false)
	f.Add([]byte(`{"resume_channel":"steady_out","metadata":{}}`), true)
	f.Add([]byte(`{"resume_channel":"steady_out","id":"q","schema":{"type":"string"}}`), true)
	f.Add([]byte(`{"resume_channel":"nope"}`), true)
	f.Add([]byte(`{"resume_channel":"steady_out","schema":{"type":"list"}}`), true)
	f.Add([]byte(`{"resume_channel":7,"extra":true}`), true)

	g := parallelRetryDoc(3, 0).compile(f, graph.Options{})
	h := newHarness(f, g, parallelRetryNodes(1))
	r := h.start(nil)
	_, m := h.advance(r)
	parked := h.accept(r, m)
	require.Len(f, parked.PendingWrites, 1)

	f.Fuzz(func(t *testing.T, data []byte, interrupt bool) {
		v, err := value.DecodeJSON(data)
		if err != nil {
			return
		}
		corrupted := *parked
		corrupted.PendingWrites = []run.PendingWrite{parked.PendingWrites[0]}
		corrupted.PendingWrites[0].Value = v
		if interrupt {
			corrupted.PendingWrites[0].Kind = run.WriteInterrupt
		}
		env := superstep.Env{Now: t0, NewInterruptID: func() string { return "interrupt_f" }}
		step, err := superstep.Advance(g, &corrupted, env)
		require.NoError(t, err)
		require.Equal(t, superstep.Execute, step.Kind)
		results := []superstep.Result{update(map[string]any{"flaky_out": "flaky done"})}
		m, err := superstep.Settle(g, &corrupted, step, results, env)
		require.NoError(t, err)
		checkMoment(t, &corrupted, m)
		if m.Run.Status == run.StatusFailed {
			require.Equal(t, "node_failed", m.Run.Failure.Code)
			require.Equal(t, "steady", m.Run.Failure.NodeID)
		}
	})
}
