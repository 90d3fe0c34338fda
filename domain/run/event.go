package run

import "time"

// EventType names a retained event.
type EventType string

// Event types.
const (
	EventRunInitialized      EventType = "run_initialized"
	EventRunCompleted        EventType = "run_completed"
	EventRunFailed           EventType = "run_failed"
	EventRunCancelled        EventType = "run_cancelled"
	EventCheckpointCommitted EventType = "checkpoint_committed"
	EventNodeCompleted       EventType = "node_completed"
	EventNodeFailed          EventType = "node_failed"
	EventChannelUpdated      EventType = "channel_updated"
	EventEdgeTriggered       EventType = "edge_triggered"
	EventInterruptRequested  EventType = "interrupt_requested"
	EventInterruptResolved   EventType = "interrupt_resolved"
)

// Event is one retained fact of a committed transition. Seq is contiguous
// per run across all moments. Payloads never carry channel values.
//
// Metadata is nil for every event but checkpoint_committed, whose metadata
// is its checkpoint's (the wire form of a nil Metadata is the empty map).
//
// Payload and Metadata are read-only. The runtime shares them among the
// values that carry equal ones: a checkpoint_committed event shares its
// metadata with its moment and checkpoint, every event proposed without a
// payload shares one empty map with all others, whatever their run, and
// the payloads that depend on the graph alone (an edge's edge_triggered, a
// first attempt's node_completed, a sole writer's channel_updated, ...)
// are built once per compiled graph and shared by all its runs. Copy
// before changing. Stores copy events in and out, so only the events a
// caller receives straight from the runtime (the inline runner's
// checkpoints, say) are shared.
type Event struct {
	RunID     string
	Seq       int64
	Type      EventType
	Step      int
	NodeID    string
	ChannelID string
	TaskID    string
	Timestamp time.Time
	Payload   map[string]any
	Metadata  *CheckpointMetadata
}

// CheckpointType names the kind of durable transition a moment commits.
type CheckpointType string

// Checkpoint types.
const (
	CheckpointRunInitialized     CheckpointType = "run_initialized"
	CheckpointStepCommitted      CheckpointType = "step_committed"
	CheckpointRetryScheduled     CheckpointType = "retry_scheduled"
	CheckpointInterruptRequested CheckpointType = "interrupt_requested"
	CheckpointInterruptResolved  CheckpointType = "interrupt_resolved"
	CheckpointRunCompleted       CheckpointType = "run_completed"
	CheckpointRunFailed          CheckpointType = "run_failed"
	CheckpointRunCancelled       CheckpointType = "run_cancelled"
)

// Checkpoint is one accepted moment as the inline runner reports it.
type Checkpoint struct {
	Type      CheckpointType
	Seq       int64
	Run       *Run
	Events    []Event
	CreatedAt time.Time
	Metadata  *CheckpointMetadata // also on the final event
}
