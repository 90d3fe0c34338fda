package memory_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// answeredInterrupts returns n resolved interrupts shaped like a long
// session's questions: a schema and a little metadata each.
func answeredInterrupts(n int, at time.Time) map[string]run.Interrupt {
	ins := make(map[string]run.Interrupt, n)
	for i := range n {
		id := fmt.Sprintf("q-%04d", i)
		ins[id] = run.Interrupt{
			ID: id, NodeID: "agent", Status: run.InterruptResolved, ResumeChannel: "answer",
			Schema:    map[string]any{"type": "string", "required": true},
			Metadata:  map[string]any{"turn": int64(i)},
			CreatedAt: at, ResolvedAt: at,
		}
	}
	return ins
}

// insertLongRun inserts a run that has already answered n interrupts.
func (f *fixture) insertLongRun(runID string, n int) *run.Run {
	f.t.Helper()
	hash := f.saveGraph(ports.Tenantless(), testGraph("g", ""))
	m := initMoment(runID, "g", hash, t0)
	m.Run.Interrupts = answeredInterrupts(n, t0)
	stored, err := f.store.InsertRun(f.ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: t0})
	require.NoError(f.t, err)
	return stored
}

// A claimed commit that asks for no result copies the run document once,
// to keep it, not a second time for a result nobody reads: the copy is
// the part of a commit that grows with a run's history (every answered
// interrupt stays in the document).
func TestCommitWithoutResultCopiesTheDocumentOnce(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	f := newFixture(t)
	r := f.insertLongRun("run_long", 300)
	lease := f.claimOne(t0)
	at := t0.Add(time.Second)
	first := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, at)
	second := next(first.Run, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, at)
	moments := []*run.Moment{first, second}

	oneCopy := testing.AllocsPerRun(5, func() { _ = r.Clone() })
	var errs []error
	commit := testing.AllocsPerRun(1, func() { // one warm-up commit, one measured
		m := moments[0]
		moments = moments[1:]
		_, err := f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token, NoResult: true})
		errs = append(errs, err)
	})
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Less(t, commit, oneCopy*1.5, "a commit without result allocated %.0f times; one copy of the document allocates %.0f", commit, oneCopy)
	stored, err := f.store.FetchRun(f.ctx, ports.Tenantless(), r.ID)
	require.NoError(t, err)
	assert.Equal(t, second.Run, stored, "the store keeps the proposed run")
}

// allocatedBytes is how many bytes f allocates a call, on average over n
// calls.
func allocatedBytes(n int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

// Reading a page of events costs the same at any depth of a run's
// history: the store neither gathers nor sorts every retained event to
// answer.
func TestEventPagesDoNotWalkTheHistory(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	f := newFixture(t)
	r := f.insertRun(ports.Tenantless(), "run_deep")
	lease := f.claimOne(t0)
	const steps, perStep = 2000, 10
	for i := range steps {
		events := make([]run.Event, perStep)
		for j := range events {
			events[j] = run.Event{Type: run.EventChannelUpdated, Step: i, ChannelID: "state:turn", Payload: map[string]any{"writers": []any{"llm"}}}
		}
		m := next(r, run.StatusRunning, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, t0, events...)
		_, err := f.store.Commit(f.ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: lease.Token, NoResult: true})
		require.NoError(t, err)
		r = m.Run
	}
	retained := r.EventSeq
	require.Greater(t, retained, int64(steps*perStep))

	// A page of ten events copies a few kilobytes; the history's seqs
	// alone are 8 bytes each.
	bound := uint64(retained) * 8 / 4
	page := allocatedBytes(20, func() {
		p, err := f.store.ListEvents(f.ctx, ports.Tenantless(), r.ID, ports.ListEventsParams{AfterSeq: retained / 2, Limit: 10})
		require.NoError(t, err)
		require.Len(t, p.Events, 10)
	})
	assert.Less(t, page, bound, "a page of 10 events allocated %d bytes in a history of %d events", page, retained)
}
