package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// t0 is the reference time of tests that drive the caller clock.
var t0 = time.Date(2031, time.March, 4, 5, 6, 7, 0, time.UTC)

// anyImplementation accepts every node implementation.
type anyImplementation struct{}

func (anyImplementation) ConfigSchema(string) (*schema.Schema, bool) { return nil, true }

// fixtureGraph is a one-node graph; its node never runs in these tests.
var fixtureGraph = sync.OnceValues(func() (*graph.Compiled, error) {
	g, err := graph.New("pg-fixture").
		Input("topic", schema.String()).
		State("answer", schema.String()).
		Node("ask", "fixture.ask").
		Edge("start_to_ask", graph.Start, "ask").
		Edge("ask_to_finish", "ask", graph.Finish).
		Output("answer", "answer").
		Build()
	if err != nil {
		return nil, err
	}
	return graph.Compile(g, anyImplementation{}, graph.Options{Profile: graph.ProfilePublish})
})

func compiledFixture(t testing.TB) *graph.Compiled {
	t.Helper()
	c, err := fixtureGraph()
	if err != nil {
		t.Fatalf("compile the fixture graph: %v", err)
	}
	return c
}

var runCounter atomic.Int64

// newRunID returns an id unique within the test process.
func newRunID(label string) string {
	return fmt.Sprintf("%s-%d", label, runCounter.Add(1))
}

// insertRun publishes the fixture graph in owner and inserts a fresh run
// started at startedAt with its first wake at wakeAt.
func (e *testEnv) insertRun(t testing.TB, owner ports.OwnerScope, startedAt, wakeAt time.Time) *run.Run {
	t.Helper()
	ctx := context.Background()
	c := compiledFixture(t)
	if _, err := e.store.SaveGraph(ctx, owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash}); err != nil {
		t.Fatalf("SaveGraph: %v", err)
	}
	id := newRunID("run")
	m, err := superstep.Start(c, superstep.StartParams{RunID: id, Input: map[string]any{"topic": id}}, superstep.Env{Now: startedAt})
	if err != nil {
		t.Fatalf("superstep.Start: %v", err)
	}
	r, err := e.store.InsertRun(ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: wakeAt})
	if err != nil {
		t.Fatalf("InsertRun(%s): %v", id, err)
	}
	return r
}

// finishedRun inserts a tenantless run as insertRun does and cancels it at
// endedAt: a terminal run for the pruner to consider.
func (e *testEnv) finishedRun(t testing.TB, startedAt, wakeAt, endedAt time.Time) *run.Run {
	t.Helper()
	r := e.insertRun(t, ports.Tenantless(), startedAt, wakeAt)
	_, err := e.store.MutateRun(context.Background(), ports.Tenantless(), r.ID, func(r *run.Run) (*run.Moment, error) {
		return superstep.Cancel(r, superstep.Env{Now: endedAt})
	})
	if err != nil {
		t.Fatalf("cancel run %s: %v", r.ID, err)
	}
	return r
}

// nextMoment proposes r's next transition by hand: same status, a
// metadata marker and one channel_updated event carrying variant.
func nextMoment(r *run.Run, variant string, d run.Disposition, now time.Time) *run.Moment {
	next := r.Clone()
	next.UpdatedAt = ports.Micros(now)
	next.Metadata = map[string]any{"variant": variant}
	events := []run.Event{{
		Type:      run.EventChannelUpdated,
		Step:      r.Step,
		ChannelID: graph.StatePrefix + "answer",
		Payload:   map[string]any{"variant": variant},
	}}
	return run.Propose(r, next, events, run.CheckpointStepCommitted, d, now)
}

var (
	continueDisposition  = run.Disposition{Kind: run.DispositionContinue}
	immediateDisposition = run.Disposition{Kind: run.DispositionImmediate, Reason: run.ReasonDrainBudget}
)

// claimNow is a demand-1 request at now that no claim expires under.
func claimNow(now time.Time, _ *run.Run) claim.Request {
	return claim.Request{Now: now, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 5}
}
