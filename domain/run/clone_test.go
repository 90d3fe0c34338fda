package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func richRun() *Run {
	_, r := retryParkPair()
	w := waitingRun()
	r.Interrupts = w.Interrupts
	r.PendingNodes = w.PendingNodes
	r.Input["list"] = []any{int64(1), map[string]any{"k": "v"}}
	r.Channels.Set(Channel{ID: "state:items", Value: []any{"a", map[string]any{"n": 1.5}}, Version: 2})
	r.Metadata["tags"] = []any{"x"}
	return r
}

func TestCloneIsEqualAndPreservesNilVersusEmpty(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]*Run{"rich": richRun(), "failed": failedRun(), "done": doneRun(), "zero": {}} {
		assert.Equal(t, r, r.Clone(), name)
	}
	var nilRun *Run
	assert.Nil(t, nilRun.Clone())
}

func TestCloneSharesNoMutableState(t *testing.T) {
	t.Parallel()
	r := richRun()
	r.Failure = &Failure{Code: "c", Message: "m", Details: map[string]any{"d": []any{"x"}}}
	want := richRun()
	want.Failure = &Failure{Code: "c", Message: "m", Details: map[string]any{"d": []any{"x"}}}
	require.Equal(t, want, r)

	c := r.Clone()
	c.Input["value"] = "changed"
	c.Input["list"].([]any)[1].(map[string]any)["k"] = "changed"
	c.Failure.Details["d"].([]any)[0] = "changed"
	c.Failure.Code = "changed"
	ch, _ := c.Channels.Get("state:items")
	ch.Value.([]any)[1].(map[string]any)["n"] = 9.0
	c.BarrierSeen["edge:fast_slow_bar"][0] = "changed"
	c.BarrierSeen["new"] = []string{"x"}
	c.Channels.Set(Channel{ID: "new"})
	c.ChangedChannels[0] = "changed"
	c.PendingNodes[0] = "changed"
	task := c.ActiveTasks["r:0:slow"]
	task.Snapshot["value"] = "changed"
	task.SourceVersions["value"] = 9
	task.Failures[0].Reason = "changed"
	task.Metadata["m"] = true
	c.ActiveTasks["r:0:other"] = TaskState{}
	c.PendingWrites[0].Value.(map[string]any)["result"] = "changed"
	c.PendingWrites[0].Attempt = 7
	in := c.Interrupts["interrupt_0123456789abcdef"]
	in.Schema["type"] = "changed"
	in.Metadata["question"] = "changed"
	c.Timers["r:0:slow"] = Timer{Kind: "changed"}
	c.Metadata["tags"].([]any)[0] = "changed"

	assert.Equal(t, want, r, "mutating the clone leaves the original untouched")
}
