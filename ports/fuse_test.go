package ports_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

type anyNode struct{}

func (anyNode) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

// stepAndCompletion returns a one-node run's step moment (continue) and
// the completion that follows it without running a node.
func stepAndCompletion(t testing.TB) (*run.Moment, *run.Moment) {
	t.Helper()
	g, err := graph.New("fuse").State("out", schema.String()).Node("n", "t.n").
		Edge("e_start", graph.Start, "n").Edge("e_finish", "n", graph.Finish).Output("out", "out").Build()
	require.NoError(t, err)
	c, err := graph.Compile(g, anyNode{}, graph.Options{Profile: graph.ProfilePublish})
	require.NoError(t, err)
	env := superstep.Env{Now: t0}
	start, err := superstep.Start(c, superstep.StartParams{RunID: "r"}, env)
	require.NoError(t, err)
	step, err := superstep.Advance(c, start.Run, env)
	require.NoError(t, err)
	first, err := superstep.Settle(c, start.Run, step, []superstep.Result{{Outcome: superstep.OutcomeUpdate, Update: map[string]any{"out": "x"}}}, env)
	require.NoError(t, err)
	next, err := superstep.Advance(c, first.Run, env)
	require.NoError(t, err)
	require.Equal(t, superstep.Commit, next.Kind)
	return first, next.Moment
}

func TestFuseChainWritesTheLastMomentWithEveryEvent(t *testing.T) {
	t.Parallel()
	first, last := stepAndCompletion(t)
	firstEvents := append([]run.Event{}, first.Events...)
	fused, err := ports.FuseChain(ports.CommitParams{Moment: first, Then: []*run.Moment{last}})
	require.NoError(t, err)
	assert.Same(t, last.Run, fused.Run)
	assert.Equal(t, last.CheckpointType, fused.CheckpointType)
	assert.Equal(t, last.Disposition, fused.Disposition)
	assert.Equal(t, append(append([]run.Event{}, first.Events...), last.Events...), fused.Events)
	assert.Equal(t, firstEvents, first.Events, "the first moment's events are not touched")

	alone, err := ports.FuseChain(ports.CommitParams{Moment: first})
	require.NoError(t, err)
	assert.Same(t, first, alone, "without Then the moment itself")
}

func TestFuseChainRefusesABrokenChain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		breakIt func(first, last *run.Moment) (*run.Moment, *run.Moment)
	}{
		{"a skipped checkpoint", func(f, l *run.Moment) (*run.Moment, *run.Moment) {
			l.Run.CheckpointSeq++
			return f, l
		}},
		{"another graph binding", func(f, l *run.Moment) (*run.Moment, *run.Moment) {
			l.Run.GraphHash = "other"
			return f, l
		}},
		{"a first moment that does not continue", func(f, l *run.Moment) (*run.Moment, *run.Moment) {
			f.Disposition = run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget}
			return f, l
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			first, last := tt.breakIt(stepAndCompletion(t))
			_, err := ports.FuseChain(ports.CommitParams{Moment: first, Then: []*run.Moment{last}})
			assert.ErrorIs(t, err, ports.ErrInvalidCommit)
		})
	}
}

// A fused commit's events are checked once, with their moments, and then
// put in order as one list: an invalid event in either moment is refused,
// and so are two different events at one seq across the moments.
func TestCheckClaimedCommitChecksEveryFusedEvent(t *testing.T) {
	t.Parallel()
	token := func(ports.ClaimToken) bool { return true }
	check := func(first, last *run.Moment) error {
		_, err := ports.CheckClaimedCommit(ports.Tenantless(), ports.CommitParams{Moment: first, Then: []*run.Moment{last}}, token)
		return err
	}
	first, last := stepAndCompletion(t)
	got, err := ports.CheckClaimedCommit(ports.Tenantless(), ports.CommitParams{Moment: first, Then: []*run.Moment{last}}, token)
	require.NoError(t, err)
	assert.Equal(t, append(append([]run.Event{}, first.Events...), last.Events...), got.Events)

	for name, breakIt := range map[string]func(first, last *run.Moment){
		"first":     func(f, _ *run.Moment) { f.Events[0].Payload = map[string]any{"$reserved": true} },
		"last":      func(_, l *run.Moment) { l.Events[len(l.Events)-1].Step = -1 },
		"last's id": func(_, l *run.Moment) { l.Events[0].RunID = "other" },
	} {
		first, last := stepAndCompletion(t)
		breakIt(first, last)
		assert.ErrorIs(t, check(first, last), ports.ErrInvalidCommit, name)
	}

	first, last = stepAndCompletion(t)
	last.Events[0].Seq = first.Events[0].Seq
	var conflict *ports.EventConflictError
	assert.ErrorAs(t, check(first, last), &conflict)
}

// BenchmarkCheckClaimedCommit is what a store checks of a one-node run's
// single commit: its step fused with its completion.
func BenchmarkCheckClaimedCommit(b *testing.B) {
	first, last := stepAndCompletion(b)
	p := ports.CommitParams{Moment: first, Then: []*run.Moment{last}}
	token := func(ports.ClaimToken) bool { return true }
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ports.CheckClaimedCommit(ports.Tenantless(), p, token); err != nil {
			b.Fatal(err)
		}
	}
}

// Checking a fused commit allocates the fused moment and its list of
// events, once each: the list is not grown event by event.
func TestCheckClaimedCommitAllocatesTheFusedMomentOnce(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	first, last := stepAndCompletion(t)
	p := ports.CommitParams{Moment: first, Then: []*run.Moment{last}}
	token := func(ports.ClaimToken) bool { return true }
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := ports.CheckClaimedCommit(ports.Tenantless(), p, token); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 2.0)
}
