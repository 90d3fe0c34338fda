package run_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/run"
)

// benchSnapshot is an 11-value state view, the size of a 10-node chain's.
func benchSnapshot() map[string]any {
	s := map[string]any{"in": "x"}
	for i := range 10 {
		s["n0"+strconv.Itoa(i)] = "v"
	}
	return s
}

func BenchmarkInputHash(b *testing.B) {
	s := benchSnapshot()
	b.ReportAllocs()
	for b.Loop() {
		if run.InputHash(s) == "" {
			b.Fatal("no hash")
		}
	}
}

// BenchmarkProposeStep is the moment of one chain superstep: three runtime
// events (node completed, channel updated, edge triggered) and its
// checkpoint metadata.
func BenchmarkProposeStep(b *testing.B) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	committed := &run.Run{ID: "run_b", GraphID: "g", GraphHash: "h", Status: run.StatusRunning, Step: 3, CheckpointSeq: 4, EventSeq: 20}
	b.ReportAllocs()
	for b.Loop() {
		next := *committed
		next.Step = 4
		events := make([]run.Event, 0, 4)
		events = append(events,
			run.Event{Type: run.EventNodeCompleted, Step: 3, NodeID: "n03", TaskID: "run_b:3:n03", Payload: map[string]any{"attempt": int64(1)}},
			run.Event{Type: run.EventChannelUpdated, Step: 3, ChannelID: "state:n03", Payload: map[string]any{"writers": []any{"n03"}}},
			run.Event{Type: run.EventEdgeTriggered, Step: 3, ChannelID: "edge:e_n04", Payload: map[string]any{"edge_id": "e_n04", "to": "n04"}},
		)
		m := run.Propose(committed, &next, events, run.CheckpointStepCommitted, run.Disposition{Kind: run.DispositionContinue}, now)
		if len(m.Events) != 4 {
			b.Fatal("events")
		}
	}
}
