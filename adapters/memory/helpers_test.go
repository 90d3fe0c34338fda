package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t     *testing.T
	ctx   context.Context
	clock *conformance.ManualClock // a store clock the test moves by hand
	store *memory.Store
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	clock := conformance.NewManualClock(t0)
	return &fixture{t: t, ctx: t.Context(), clock: clock, store: memory.New(memory.Options{Clock: clock})}
}

func testGraph(id string, metadata string) *graph.Graph {
	g := &graph.Graph{SchemaVersion: graph.SchemaVersion, ID: id}
	if metadata != "" {
		g.Metadata = map[string]any{"v": metadata}
	}
	return g
}

// saveGraph publishes a graph under owner and returns its hash.
func (f *fixture) saveGraph(owner ports.OwnerScope, g *graph.Graph) string {
	f.t.Helper()
	hash, err := graph.Hash(g)
	require.NoError(f.t, err)
	_, err = f.store.SaveGraph(f.ctx, owner, ports.SaveGraphParams{Graph: g, Hash: hash})
	require.NoError(f.t, err)
	return hash
}

// initMoment builds the run_initialized moment of a fresh run.
func initMoment(runID, graphID, hash string, startedAt time.Time) *run.Moment {
	r := &run.Run{
		ID: runID, GraphID: graphID, GraphHash: hash, Status: run.StatusRunning,
		Input: map[string]any{"n": int64(1)}, StartedAt: startedAt, UpdatedAt: startedAt,
	}
	return run.Propose(nil, r, nil, run.CheckpointRunInitialized,
		run.Disposition{Kind: run.DispositionImmediate}, startedAt)
}

// insertRun publishes a graph (once per owner) and inserts a due run.
func (f *fixture) insertRun(owner ports.OwnerScope, runID string) *run.Run {
	f.t.Helper()
	hash := f.saveGraph(owner, testGraph("g", ""))
	stored, err := f.store.InsertRun(f.ctx, owner, ports.InsertRunParams{Moment: initMoment(runID, "g", hash, t0), WakeAt: t0})
	require.NoError(f.t, err)
	return stored
}

// next proposes the moment after committed with disposition d.
func next(committed *run.Run, status run.Status, ctype run.CheckpointType, d run.Disposition, at time.Time, events ...run.Event) *run.Moment {
	n := committed.Clone()
	n.Status = status
	n.UpdatedAt = at
	if status.Terminal() {
		n.FinishedAt = at
		if status == run.StatusDone {
			n.Output = map[string]any{}
		}
	}
	return run.Propose(committed, n, events, ctype, d, at)
}

func request(now time.Time, limit int) claim.Request {
	return claim.Request{Now: now, Limit: limit, OrphanTTL: time.Second, MaxClaimAttempts: 5}
}

func (f *fixture) claimOne(now time.Time) ports.Lease {
	f.t.Helper()
	batch, err := f.store.ClaimDue(f.ctx, request(now, 1))
	require.NoError(f.t, err)
	require.Len(f.t, batch.Leases, 1)
	return batch.Leases[0]
}

func (f *fixture) inspect(runID string) *ports.RunInfo {
	f.t.Helper()
	info, err := f.store.InspectRun(f.ctx, ports.System(), runID)
	require.NoError(f.t, err)
	return info
}
