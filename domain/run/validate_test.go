package run

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidateAcceptsDurableRuns(t *testing.T) {
	t.Parallel()
	_, park := retryParkPair()
	for name, r := range map[string]*Run{
		"running": runningRun(), "retry park": park, "waiting": waitingRun(),
		"done": doneRun(), "failed": failedRun(),
	} {
		assert.NoError(t, r.Validate(), name)
	}
}

func TestValidateCatchesEachViolation(t *testing.T) {
	t.Parallel()
	park := func() *Run { _, r := retryParkPair(); return r }
	parkBoth := func() *Run { r, _ := retryParkPair(); return r }
	cases := []struct {
		name   string
		base   func() *Run
		break_ func(r *Run)
		want   string
	}{
		{"created is never stored", runningRun, func(r *Run) { r.Status = StatusCreated }, `status "created" is not a durable status`},
		{"unknown status", runningRun, func(r *Run) { r.Status = "paused" }, `status "paused"`},
		{"empty id", runningRun, func(r *Run) { r.ID = "" }, "id is empty"},
		{"empty graph id", runningRun, func(r *Run) { r.GraphID = "" }, "graph_id is empty"},
		{"empty graph hash", runningRun, func(r *Run) { r.GraphHash = "" }, "graph_hash is empty"},
		{"negative step", runningRun, func(r *Run) { r.Step = -1 }, "step -1 is negative"},
		{"negative checkpoint seq", runningRun, func(r *Run) { r.CheckpointSeq = -1 }, "checkpoint_seq -1 is negative"},
		{"negative event seq", runningRun, func(r *Run) { r.EventSeq = -2 }, "event_seq -2 is negative"},
		{"non-portable input", runningRun, func(r *Run) { r.Input["t"] = time.Now() }, "input: non-portable value at t"},
		{"reserved key in metadata", runningRun, func(r *Run) { r.Metadata["$x"] = true }, "metadata: non-portable"},
		{"output on a running run", runningRun, func(r *Run) { r.Output = map[string]any{} }, "output is set on a running run"},
		{"failed without failure", failedRun, func(r *Run) { r.Failure = nil }, "failed run has no failure"},
		{"failure on a done run", doneRun, func(r *Run) { r.Failure = &Failure{Code: "c", Message: "m"} }, "failure is set on a done run"},
		{"failure without code", failedRun, func(r *Run) { r.Failure.Code = "" }, "failure code is empty"},
		{"failure without message", failedRun, func(r *Run) { r.Failure.Message = "" }, "failure message is empty"},
		{"terminal without finished_at", doneRun, func(r *Run) { r.FinishedAt = time.Time{} }, "finished_at must be set exactly on terminal runs"},
		{"finished_at on a running run", runningRun, func(r *Run) { r.FinishedAt = at(9) }, "finished_at must be set exactly on terminal runs"},
		{"missing started_at", runningRun, func(r *Run) { r.StartedAt = time.Time{} }, "started_at is missing"},
		{"non-UTC timestamp", runningRun, func(r *Run) { r.UpdatedAt = t0.In(time.FixedZone("X", 3600)) }, "updated_at is not a UTC timestamp with microsecond precision"},
		{"nanosecond timestamp", runningRun, func(r *Run) { r.UpdatedAt = t0.Add(1) }, "updated_at is not a UTC timestamp with microsecond precision"},
		{"timestamp beyond year 9999", runningRun, func(r *Run) { r.StartedAt = t0.AddDate(8000, 0, 0) }, "started_at is not a UTC timestamp"},
		{"unsorted changed channels", runningRun, func(r *Run) { r.ChangedChannels = []string{"b", "a"} }, "changed_channels is not a sorted set"},
		{"duplicate pending node", runningRun, func(r *Run) { r.PendingNodes = []string{"a", "a"} }, "pending_nodes is not a sorted set"},
		{"negative channel version", runningRun, func(r *Run) { r.Channels.Set(Channel{ID: "input:value", Value: "x", Version: -1}) }, `channel "input:value" has negative version -1`},
		{"non-portable channel value", runningRun, func(r *Run) { r.Channels.Set(Channel{ID: "input:value", Value: 3, Version: 1}) }, `channel "input:value" value: non-portable`},
		{"unsorted channels", runningRun, func(r *Run) {
			r.Channels = Channels{{ID: "state:b", Version: 1}, {ID: "state:a", Version: 1}}
		}, `channel "state:a" is out of order or repeated`},
		{"repeated channel", runningRun, func(r *Run) {
			r.Channels = Channels{{ID: "state:a", Version: 1}, {ID: "state:a", Version: 2}}
		}, `channel "state:a" is out of order or repeated`},
		{"channel without an ID", runningRun, func(r *Run) {
			r.Channels = Channels{{Value: "x", Version: 1}}
		}, "a channel has an empty ID"},
		{"unsorted barrier_seen", runningRun, func(r *Run) {
			r.Channels.Set(Channel{ID: "b"})
			r.BarrierSeen = map[string][]string{"b": {"z", "a"}}
		}, `channel "b" barrier_seen is not a sorted set`},
		{"barrier_seen of no channel", runningRun, func(r *Run) { r.BarrierSeen = map[string][]string{"b": {"a"}} }, `barrier_seen of channel "b", which the run does not hold`},
		{"active superstep on a waiting run", park, func(r *Run) { r.Status = StatusWaiting }, "active superstep state on a waiting run"},
		{"timer without task", runningRun, func(r *Run) { r.Timers["r:0:x"] = Timer{Kind: TimerRetry, FiresAt: at(1)} }, `timer "r:0:x" has no active task`},
		{"task without timer", park, func(r *Run) { delete(r.Timers, "r:0:slow") }, `active task "r:0:slow" has no timer`},
		{"unknown timer kind", park, func(r *Run) { r.Timers["r:0:slow"] = Timer{Kind: "sleep", FiresAt: at(1)} }, `timer "r:0:slow" has kind "sleep"`},
		{"pending writes without tasks", park, func(r *Run) {
			delete(r.ActiveTasks, "r:0:slow")
			delete(r.Timers, "r:0:slow")
		}, "pending writes without active tasks"},
		{"node twice in the superstep", park, func(r *Run) {
			r.PendingWrites = append(r.PendingWrites, PendingWrite{TaskID: "r:0:slow", NodeID: "slow", Attempt: 1, Kind: WriteUpdate, Value: map[string]any{}})
		}, `node "slow" appears 2 times in the active superstep`},
		{"task keyed under another id", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.TaskID = "r:0:other"
			r.ActiveTasks["r:0:slow"] = task
		}, `active task "r:0:slow" has task_id "r:0:other"`},
		{"task id from another step", park, func(r *Run) {
			r.Step = 1
			r.PendingWrites = nil
		}, `active task "r:0:slow": task_id "r:0:slow", want "r:1:slow"`},
		{"task step differs from the run's", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.Step = 3
			r.ActiveTasks["r:0:slow"] = task
		}, `active task "r:0:slow": step 3, want the run's step 0`},
		{"wrong idempotency key", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.IdempotencyKey = "r:0:slow:1"
			r.ActiveTasks["r:0:slow"] = task
		}, `idempotency_key "r:0:slow:1", want "r:0:slow:2"`},
		{"input hash of another snapshot", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.Snapshot = map[string]any{"value": "changed"}
			r.ActiveTasks["r:0:slow"] = task
		}, "input_hash"},
		{"second task sharing a snapshot but not its hash", parkBoth, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.Snapshot = map[string]any{"value": "changed"}
			r.ActiveTasks["r:0:slow"] = task
		}, `active task "r:0:slow": input_hash`},
		{"non-portable snapshot", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.Snapshot = map[string]any{"n": 1}
			r.ActiveTasks["r:0:slow"] = task
		}, `active task "r:0:slow" snapshot: non-portable value at n`},
		{"timer without fires_at", park, func(r *Run) { r.Timers["r:0:slow"] = Timer{Kind: TimerRetry} }, `timer "r:0:slow" fires_at is missing`},
		{"non-portable pending write", park, func(r *Run) { r.PendingWrites[0].Value = map[string]any{"x": []string{"a"}} }, "pending write 0 value: non-portable value at x"},
		{"non-portable failure details", failedRun, func(r *Run) { r.Failure.Details = map[string]any{"x": int32(1)} }, "failure details: non-portable"},
		{"interrupt without created_at", waitingRun, func(r *Run) {
			in := r.Interrupts["asked"]
			in.CreatedAt = time.Time{}
			r.Interrupts["asked"] = in
		}, `interrupt "asked" created_at is missing`},
		{"task not parked", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.Status = TaskRunning
			task.StartedAt = at(1)
			r.ActiveTasks["r:0:slow"] = task
		}, `status "running", want "retry_scheduled"`},
		{"failures do not match the attempt", park, func(r *Run) {
			task := r.ActiveTasks["r:0:slow"]
			task.Failures = nil
			r.ActiveTasks["r:0:slow"] = task
		}, "0 failures for attempt 2, want 1"},
		{"pending write from another step", park, func(r *Run) { r.PendingWrites[0].TaskID = "r:1:fast" }, `pending write 0: task_id "r:1:fast", want "r:0:fast"`},
		{"pending write of unknown kind", park, func(r *Run) { r.PendingWrites[0].Kind = "command" }, `pending write 0: kind "command"`},
		{"pending write value not a map", park, func(r *Run) { r.PendingWrites[0].Value = "x" }, "pending write 0: value is a string, want a map"},
		{"resolved interrupt without resolved_at", waitingRun, func(r *Run) {
			in := r.Interrupts["asked"]
			in.ResolvedAt = time.Time{}
			r.Interrupts["asked"] = in
		}, `interrupt "asked" is resolved but has no resolved_at`},
		{"open interrupt with resolved_at", waitingRun, func(r *Run) {
			in := r.Interrupts["interrupt_0123456789abcdef"]
			in.ResolvedAt = at(3)
			r.Interrupts["interrupt_0123456789abcdef"] = in
		}, `interrupt "interrupt_0123456789abcdef" is open but has resolved_at`},
		{"interrupt keyed under another id", waitingRun, func(r *Run) {
			in := r.Interrupts["asked"]
			in.ID = "other"
			r.Interrupts["asked"] = in
		}, `interrupt "asked" has id "other"`},
		{"interrupt of unknown status", waitingRun, func(r *Run) {
			in := r.Interrupts["asked"]
			in.Status = "closed"
			r.Interrupts["asked"] = in
		}, `interrupt "asked" has status "closed"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := tc.base()
			require.NoError(t, r.Validate(), "the base run is valid")
			tc.break_(r)
			err := r.Validate()
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalidRun)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestValidateReportsEveryViolation(t *testing.T) {
	t.Parallel()
	r := runningRun()
	r.ID = ""
	r.Step = -1
	r.Output = map[string]any{}
	err := r.Validate()
	var verr *ValidationError
	require.True(t, errors.As(err, &verr))
	assert.Len(t, verr.Problems, 3)
	assert.Contains(t, err.Error(), "id is empty")
	assert.Contains(t, err.Error(), "step -1 is negative")
	assert.Contains(t, err.Error(), "output is set on a running run")

	var nilRun *Run
	assert.ErrorIs(t, nilRun.Validate(), ErrInvalidRun)
}

// Text that is not UTF-8 in the run's own fields cannot be stored as it is
// (the document would hold U+FFFD instead), so Validate refuses it rather
// than let a store hand back another run than it was given.
func TestValidateRefusesTextThatIsNotUTF8(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(r *Run){
		"failure message": func(r *Run) { r.Failure.Message = "boom \xff" },
		"failure code":    func(r *Run) { r.Failure.Code = "\xfe" },
		"failure node":    func(r *Run) { r.Failure.NodeID = "a\xff" },
		"changed channel": func(r *Run) { r.ChangedChannels = []string{"state:\xff"} },
		"pending node":    func(r *Run) { r.PendingNodes = []string{"\xff"} },
		"channel id":      func(r *Run) { r.Channels.Set(Channel{ID: "state:\xff", Value: "v", Version: 1}) },
		"barrier source":  func(r *Run) { r.BarrierSeen["edge:fast_slow_bar"] = []string{"\xff"} },
		"graph id":        func(r *Run) { r.GraphID = "g\xff" },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := failedRun()
			mutate(r)
			assert.ErrorIs(t, r.Validate(), ErrInvalidRun)
		})
	}
}

// Invalid interrupts are reported in ID order, the same every time,
// however many valid ones surround them.
func TestValidateReportsInterruptsInIDOrder(t *testing.T) {
	t.Parallel()
	r := runningRun()
	r.Interrupts = map[string]Interrupt{}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, id := range []string{"a", "c", "e", "g", "i", "k"} {
		r.Interrupts[id] = Interrupt{ID: id, NodeID: "n", Status: InterruptResolved, ResumeChannel: "x", CreatedAt: at, ResolvedAt: at}
	}
	for _, id := range []string{"j", "b", "f"} {
		r.Interrupts[id] = Interrupt{ID: id, NodeID: "n", Status: "lost", ResumeChannel: "x", CreatedAt: at}
	}
	want := []string{`interrupt "b" has status "lost"`, `interrupt "f" has status "lost"`, `interrupt "j" has status "lost"`}
	for range 20 {
		var verr *ValidationError
		require.ErrorAs(t, r.Validate(), &verr)
		assert.Equal(t, want, verr.Problems)
	}
}

// Problems read the same every time, whatever order Go's maps visit
// their entries in: within each map, in key order.
func TestValidateReportsProblemsInKeyOrder(t *testing.T) {
	t.Parallel()
	r, _ := retryParkPair()
	for _, id := range []string{"c", "a", "d", "b"} {
		r.Channels.Set(Channel{ID: "state:" + id, Value: "v", Version: -1})
		r.BarrierSeen["state:"+id] = []string{"z", "y"}
	}
	for id, task := range r.ActiveTasks {
		task.Attempt = 0
		r.ActiveTasks[id] = task
		r.Timers[id] = Timer{Kind: "sleep", FiresAt: at(1)}
	}
	r.PendingWrites = []PendingWrite{{TaskID: TaskID(r.ID, r.Step, "slow"), NodeID: "slow", Attempt: 1, Kind: WriteUpdate, Value: map[string]any{}}}
	first := r.Validate().Error()
	for _, want := range []string{
		`channel "state:a" has negative version -1; channel "state:b" has negative version -1; channel "state:c"`,
		`channel "state:a" barrier_seen is not a sorted set of non-empty UTF-8 IDs; channel "state:b" barrier_seen`,
		`timer "r:0:fast" has kind "sleep", want "retry"; timer "r:0:slow" has kind`,
		`active task "r:0:fast": attempt 0 is below 1`,
		`node "slow" appears 2 times in the active superstep`,
	} {
		assert.Contains(t, first, want)
	}
	assert.Less(t, strings.Index(first, `active task "r:0:fast": attempt 0`), strings.Index(first, `active task "r:0:slow": attempt 0`))
	for range 50 {
		require.Equal(t, first, r.Validate().Error())
	}
}
