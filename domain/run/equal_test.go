package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEventEqual(t *testing.T) {
	t.Parallel()
	base := func() Event {
		return Event{RunID: "r", Seq: 3, Type: EventNodeCompleted, Step: 1, NodeID: "n", ChannelID: "", TaskID: "r:1:n",
			Timestamp: t0, Payload: map[string]any{"attempt": int64(1)}}
	}
	assert.True(t, base().Equal(base()))

	same := base()
	same.Payload = map[string]any{"attempt": int64(1)}
	same.Timestamp = t0.In(t0.Location())
	assert.True(t, base().Equal(same), "equal payloads and instants are the same fact")

	differ := map[string]func(e *Event){
		"run":       func(e *Event) { e.RunID = "x" },
		"seq":       func(e *Event) { e.Seq++ },
		"type":      func(e *Event) { e.Type = EventNodeFailed },
		"step":      func(e *Event) { e.Step++ },
		"node":      func(e *Event) { e.NodeID = "m" },
		"channel":   func(e *Event) { e.ChannelID = "c" },
		"task":      func(e *Event) { e.TaskID = "t" },
		"timestamp": func(e *Event) { e.Timestamp = at(1) },
		"payload":   func(e *Event) { e.Payload = map[string]any{"attempt": 1.0} },
		"metadata":  func(e *Event) { e.Metadata = &CheckpointMetadata{Seq: 1} },
	}
	for name, change := range differ {
		e := base()
		change(&e)
		assert.False(t, base().Equal(e), name)
		assert.False(t, e.Equal(base()), name)
	}
}
