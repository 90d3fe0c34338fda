package run_test

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

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

// longSession is a run deep into an agent session: step steps committed,
// one question asked every ten steps and answered (the resolved
// interrupts stay in the document for the run's life, schema and
// metadata included), one small state field rewritten every step.
func longSession(steps int) *run.Run {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &run.Run{ID: "run_0123456789abcdef", GraphID: "agent", GraphHash: "9417b435aa", Status: run.StatusRunning,
		Input: map[string]any{}, StartedAt: at, UpdatedAt: at, Step: steps,
		CheckpointSeq: int64(steps + steps/10 + 1), EventSeq: int64(steps*5 + 3),
		Channels: run.ChannelsOf(map[string]run.Channel{
			"state:turn":   {Value: int64(steps), Version: int64(steps)},
			"state:answer": {Value: "ok", Version: int64(steps / 10)},
			"edge:loop":    {Value: true, Version: int64(steps)},
		}),
		ChangedChannels: []string{"edge:loop", "state:turn"},
		Interrupts:      map[string]run.Interrupt{},
		Metadata:        map[string]any{},
	}
	for i := 1; i <= steps/10; i++ {
		id := "q-" + strconv.Itoa(i)
		r.Interrupts[id] = run.Interrupt{ID: id, NodeID: "llm", Status: run.InterruptResolved, ResumeChannel: "answer",
			Schema:    map[string]any{"type": "string", "required": true},
			Metadata:  map[string]any{"turn": int64(i * 10)},
			CreatedAt: at, ResolvedAt: at}
	}
	return r
}

// BenchmarkLongSession is what one commit costs the engine in a long
// session at 100, 1,000 and 5,000 steps (10, 100 and 500 answered
// interrupts): a store validates and encodes the whole document at every
// commit (PostgreSQL; the memory store copies it instead) and decodes it
// at every claim. Only the answered interrupts grow with the run's
// history, so these costs grow with them and with nothing else.
func BenchmarkLongSession(b *testing.B) {
	for _, steps := range []int{100, 1000, 5000} {
		r := longSession(steps)
		doc, err := run.Encode(r)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("steps=%d/encode", steps), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := run.Encode(r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("steps=%d/decode", steps), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := run.Decode(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("steps=%d/clone", steps), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Clone()
			}
		})
	}
}

// Encoding the document at every commit allocates no more deep into a
// long session than early in it: the answered interrupts it carries cost
// the encoder bytes, not an allocation each.
func TestEncodingAllocatesTheSameAtAnyDepth(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	// Into a buffer with room for the document: its growth (and whether
	// the race detector's sync.Pool kept the pooled buffer) is not the
	// encoder's allocation per interrupt.
	buf := make([]byte, 0, 1<<20)
	allocs := func(r *run.Run) float64 {
		return testing.AllocsPerRun(20, func() {
			if _, err := run.AppendValidated(buf[:0], r); err != nil {
				t.Fatal(err)
			}
		})
	}
	early, deep := allocs(longSession(100)), allocs(longSession(5000))
	assert.LessOrEqual(t, deep, early+4, "%.0f allocations at 10 answered interrupts, %.0f at 500", early, deep)
}

// Decoding the document at every claim costs a few allocations per
// answered interrupt it carries: its ID and its schema and metadata maps
// (two allocations each, and a boxed number), not a map and a string per
// field of the interrupt.
func TestDecodingAllocatesLittlePerAnsweredInterrupt(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	allocs := func(steps int) float64 {
		doc, err := run.Encode(longSession(steps))
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(10, func() {
			if _, err := run.Decode(doc); err != nil {
				t.Fatal(err)
			}
		})
	}
	early, deep := allocs(1000), allocs(5000) // 100 and 500 answered interrupts
	perInterrupt := (deep - early) / 400
	assert.LessOrEqual(t, perInterrupt, 7.0, "%.0f allocations at 100 answered interrupts, %.0f at 500", early, deep)
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

// Validating the document at every commit neither gathers nor sorts the
// answered interrupts it carries when they are valid: deep into a long
// session it allocates what it does early on.
func TestValidationAllocatesTheSameAtAnyDepth(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	validate := func(r *run.Run) uint64 {
		return allocatedBytes(50, func() {
			if err := r.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
	early, deep := validate(longSession(100)), validate(longSession(5000))
	assert.Less(t, deep, early+1024, "%d bytes at 10 answered interrupts, %d at 500", early, deep)
}

// chainRun is a 10-node chain's run between two steps, as a store
// validates it at every commit: the input's and every node's state
// channel, the edges' channels, one node pending.
func chainRun() *run.Run {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &run.Run{ID: "run_0123456789abcdef", GraphID: "bench-chain10", GraphHash: "9417b435aa", Status: run.StatusRunning,
		Input: map[string]any{"in": "x"}, StartedAt: at, UpdatedAt: at, Step: 5, CheckpointSeq: 6, EventSeq: 23,
		Channels:        run.Channels{{ID: "input:in", Value: "x", Version: 1}},
		ChangedChannels: []string{"edge:e_n05", "state:n04"},
		PendingNodes:    []string{"n05"},
		Metadata:        map[string]any{},
	}
	for i := range 10 {
		id := "n0" + strconv.Itoa(i)
		r.Channels.Set(run.Channel{ID: "state:" + id, Value: "v", Version: 1})
		r.Channels.Set(run.Channel{ID: "edge:e_" + id, Value: true, Version: 1})
	}
	return r
}

func BenchmarkValidateChain(b *testing.B) {
	r := chainRun()
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

// Validating a valid run at every commit allocates nothing: its channels
// are checked where the map holds them, not gathered and sorted first
// (only a run with a problem is visited again in key order, so that its
// problems read the same every time).
func TestValidatingAValidRunAllocatesNothing(t *testing.T) {
	// Not parallel: it counts the process's allocations.
	r := chainRun()
	allocs := testing.AllocsPerRun(20, func() {
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	assert.Zero(t, allocs)
}
