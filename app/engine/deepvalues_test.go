package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/value"
)

// A node may write any portable value, as deep as value.MaxDepth: the run
// document and the events that store it below their own levels must read
// back, or the run could never be claimed, read or listed again.
func TestValuesAsDeepAsPortableSurviveThePostgresStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	store := s.store(t, nil, false, 8)
	var deep any = map[string]any{}
	for range value.MaxDepth - 1 {
		deep = map[string]any{"a": deep}
	}
	nodes := node.NewRegistry().MustRegister("test.deep", node.Func(func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"deep": deep}, nil
	}))
	g, err := graph.New("deep").State("deep", schema.Map()).Node("n", "test.deep").
		Edge("in", graph.Start, "n").Edge("out", "n", graph.Finish).Output("deep", "deep").Build()
	require.NoError(t, err)
	e := startEngine(t, engine.Config{Backend: store, Nodes: nodes, Dispatcher: fastDispatch()})
	ref, err := e.SaveGraph(ctx, g)
	require.NoError(t, err)
	r, err := e.StartRun(ctx, ref, nil)
	require.NoError(t, err)
	done, err := e.AwaitRun(ctx, r.ID, 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, done.Status)
	stored, err := e.FetchRun(ctx, r.ID)
	require.NoError(t, err, "the stored run reads back")
	assert.Equal(t, done.CheckpointSeq, stored.CheckpointSeq)
	events := allEvents(t, e.Client, r.ID)
	requireHistory(t, done, events)
}
