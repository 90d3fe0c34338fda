package run

import (
	"time"
)

// t0 is the base instant of hand-built fixtures (UTC, microseconds).
var t0 = time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// parkedTask builds a valid parked task of run runID at step for node, whose
// next attempt is attempt.
func parkedTask(runID string, step int, node string, attempt int, snapshot map[string]any) TaskState {
	id := TaskID(runID, step, node)
	failures := []AttemptFailure{}
	for a := 1; a < attempt; a++ {
		failures = append(failures, AttemptFailure{Attempt: a, Reason: "boom"})
	}
	return TaskState{
		TaskID:         id,
		NodeID:         node,
		Step:           step,
		Attempt:        attempt,
		Status:         TaskRetryScheduled,
		InputHash:      InputHash(snapshot),
		IdempotencyKey: IdempotencyKey(id, attempt),
		Snapshot:       snapshot,
		SourceVersions: map[string]int64{"value": 1},
		Failures:       failures,
		Metadata:       map[string]any{},
	}
}

// runningRun is an initialized running run "r" at step 0 with a few
// channels and no active superstep.
func runningRun() *Run {
	return &Run{
		ID:        "r",
		GraphID:   "g",
		GraphHash: "h",
		Status:    StatusRunning,
		Input:     map[string]any{"value": "hello"},
		StartedAt: t0,
		UpdatedAt: t0,
		Channels: ChannelsOf(map[string]Channel{
			"input:value":        {Value: "hello", Version: 1},
			"edge:start_fast":    {Value: true, Version: 1},
			"edge:fast_slow_bar": {Value: nil, Version: 0},
		}),
		BarrierSeen:     map[string][]string{"edge:fast_slow_bar": {"fast"}},
		ChangedChannels: []string{"edge:start_fast", "input:value"},
		PendingNodes:    []string{},
		ActiveTasks:     map[string]TaskState{},
		PendingWrites:   []PendingWrite{},
		Interrupts:      map[string]Interrupt{},
		Timers:          map[string]Timer{},
		CheckpointSeq:   1,
		EventSeq:        4,
		Metadata:        map[string]any{},
	}
}

// retryParkPair is the §8 example: committed holds fast and slow parked at
// attempt 2 (checkpoint 3); in next, fast's second attempt succeeded and is
// held as a pending update while slow is still backing off.
func retryParkPair() (committed, next *Run) {
	snapshot := map[string]any{"value": "hello", "count": int64(1), "ratio": 1.0}
	committed = runningRun()
	committed.CheckpointSeq, committed.EventSeq = 3, 9
	committed.ActiveTasks = map[string]TaskState{
		"r:0:fast": parkedTask("r", 0, "fast", 2, snapshot),
		"r:0:slow": parkedTask("r", 0, "slow", 2, snapshot),
	}
	committed.Timers = map[string]Timer{
		"r:0:fast": {Kind: TimerRetry, FiresAt: at(10)},
		"r:0:slow": {Kind: TimerRetry, FiresAt: at(50)},
	}

	next = committed.Clone()
	delete(next.ActiveTasks, "r:0:fast")
	delete(next.Timers, "r:0:fast")
	next.PendingWrites = append(next.PendingWrites, PendingWrite{
		TaskID: "r:0:fast", NodeID: "fast", Attempt: 2, Kind: WriteUpdate,
		Value: map[string]any{"result": "fast done"},
	})
	next.UpdatedAt = at(10)
	return committed, next
}

// waitingRun has an open and a resolved interrupt.
func waitingRun() *Run {
	r := runningRun()
	r.Status = StatusWaiting
	r.Step = 2
	r.PendingNodes = []string{"gate", "other"}
	r.Interrupts = map[string]Interrupt{
		"interrupt_0123456789abcdef": {
			ID: "interrupt_0123456789abcdef", NodeID: "gate", Status: InterruptOpen,
			ResumeChannel: "decision", Schema: map[string]any{"type": "string"},
			CreatedAt: at(1), Metadata: map[string]any{"question": "ok?"},
		},
		"asked": {
			ID: "asked", NodeID: "other", Status: InterruptResolved, ResumeChannel: "answer",
			CreatedAt: at(1), ResolvedAt: at(2), Metadata: map[string]any{},
		},
	}
	return r
}

func doneRun() *Run {
	r := runningRun()
	r.Status = StatusDone
	r.Step = 1
	r.Output = map[string]any{}
	r.FinishedAt = at(5)
	r.UpdatedAt = at(5)
	return r
}

func failedRun() *Run {
	r := runningRun()
	r.Status = StatusFailed
	r.Failure = &Failure{
		Code: "node_failed", Message: "node(s) a failed permanently", NodeID: "a",
		Details: map[string]any{"nodes": []any{"a"}, "errors": map[string]any{"a": "always_fails"}},
	}
	r.FinishedAt = at(5)
	r.UpdatedAt = at(5)
	return r
}
