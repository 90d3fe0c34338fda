package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/ports"
)

func TestRestedRunsAnswerOnlyNewerCommitsAndStayBounded(t *testing.T) {
	t.Parallel()
	var c restedRuns
	owner := ports.Tenant("t")
	started := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	c.await(owner, "a")
	c.put(owner, &run.Run{ID: "a", CheckpointSeq: 3, Status: run.StatusWaiting, StartedAt: started})

	got := c.newer(owner, "a", 2, started)
	require.NotNil(t, got)
	assert.Equal(t, int64(3), got.CheckpointSeq)
	got.CheckpointSeq = 99
	assert.Equal(t, int64(3), c.newer(owner, "a", 2, started).CheckpointSeq, "callers get their own copy")
	assert.Nil(t, c.newer(owner, "a", 3, started), "nothing newer than what was read")
	assert.Nil(t, c.newer(ports.Tenant("other"), "a", 0, started), "another owner's run is not this one")
	assert.Nil(t, c.newer(owner, "a", 1, started.Add(time.Hour)), "a later run under the same id is not this one")

	for i := range recentCapacity {
		c.await(owner, fmt.Sprintf("r%d", i))
		c.put(owner, &run.Run{ID: fmt.Sprintf("r%d", i), CheckpointSeq: 1})
	}
	assert.Nil(t, c.newer(owner, "a", 0, started), "the oldest entry left the ring")
	assert.LessOrEqual(t, len(c.runs), recentCapacity)
}

// A run this engine rests while no AwaitRun of it is in flight here is not
// kept: a document can be many MB, and a thousand of them held for
// callers that never come would pin their memory for the engine's life.
func TestRestedRunsKeepOnlyRunsAnAwaitIsWaitingFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	nodes := node.NewRegistry()
	nodes.MustRegister("test.big", node.Func(func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"out": strings.Repeat("x", 1<<20)}, nil
	}))
	e, err := New(Config{Backend: memory.New(memory.Options{}), Nodes: nodes, Mode: ModeManual})
	require.NoError(t, err)
	g, err := graph.New("big").
		State("out", schema.String()).
		Node("big", "test.big").
		Edge("start", graph.Start, "big").
		Edge("done", "big", graph.Finish).
		Build()
	require.NoError(t, err)
	ref, err := e.SaveGraph(ctx, g)
	require.NoError(t, err)
	var ids []string
	for range 8 {
		r, err := e.StartRun(ctx, ref, nil)
		require.NoError(t, err)
		ids = append(ids, r.ID)
	}
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	for _, id := range ids {
		r, err := e.AwaitRun(ctx, id, time.Second)
		require.NoError(t, err)
		require.Equal(t, run.StatusDone, r.Status)
	}
	e.rested.mu.Lock()
	kept := len(e.rested.runs)
	e.rested.mu.Unlock()
	assert.Zero(t, kept, "finished runs nobody awaits are kept in memory")
}

// The rested runs hold a committed run only while an AwaitRun of it is in
// flight: one committed with no awaiter is not kept, and the last awaiter
// to leave drops the one it was kept for.
func TestRestedRunsAreKeptOnlyWhileAwaited(t *testing.T) {
	t.Parallel()
	var c restedRuns
	owner := ports.Tenant("t")
	c.put(owner, &run.Run{ID: "unawaited", CheckpointSeq: 2, Status: run.StatusDone})
	assert.Nil(t, c.newer(owner, "unawaited", 1, time.Time{}), "nobody awaited it")

	first, second := c.await(owner, "a"), c.await(owner, "a")
	c.put(owner, &run.Run{ID: "a", CheckpointSeq: 2, Status: run.StatusDone})
	first()
	assert.NotNil(t, c.newer(owner, "a", 1, time.Time{}), "an awaiter is still in flight")
	second()
	assert.Nil(t, c.newer(owner, "a", 1, time.Time{}), "the last awaiter left")
	assert.Empty(t, c.runs)
}

// An insertion stands in for an AwaitRun's first read only within its
// window: after it, another engine may have moved the run, and the await
// must read it rather than wait a poll interval on a stale checkpoint.
func TestAnInsertionStandsInForAReadOnlyWithinItsWindow(t *testing.T) {
	t.Parallel()
	var c startedRuns
	owner := ports.Tenant("t")
	at := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	c.put(owner, "a", startedRun{seq: 1, startedAt: at, at: at})
	seq, _, ok := c.since(owner, "a", at.Add(time.Second-1), time.Second)
	assert.True(t, ok)
	assert.Equal(t, int64(1), seq)
	_, _, ok = c.since(owner, "a", at.Add(time.Second), time.Second)
	assert.False(t, ok, "the window has passed")
}
