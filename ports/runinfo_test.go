package ports_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// A run waits for its first claim only while it is running at its
// initialization checkpoint and no worker has ever claimed it.
func TestRunInfoNeverClaimed(t *testing.T) {
	t.Parallel()
	fresh := func() *ports.RunInfo {
		return &ports.RunInfo{Run: &run.Run{Status: run.StatusRunning}, LatestCheckpointType: run.CheckpointRunInitialized}
	}
	assert.True(t, fresh().NeverClaimed())
	for name, change := range map[string]func(*ports.RunInfo){
		"claimed now":     func(i *ports.RunInfo) { i.ClaimedAt = time.Now() },
		"claimed before":  func(i *ports.RunInfo) { i.ClaimAttempts = 1 },
		"past its start":  func(i *ports.RunInfo) { i.LatestCheckpointType = run.CheckpointStepCommitted },
		"waiting":         func(i *ports.RunInfo) { i.Run.Status = run.StatusWaiting },
		"finished":        func(i *ports.RunInfo) { i.Run.Status = run.StatusDone },
		"no run (pruned)": func(i *ports.RunInfo) { i.Run = nil },
	} {
		info := fresh()
		change(info)
		assert.False(t, info.NeverClaimed(), name)
	}
}
