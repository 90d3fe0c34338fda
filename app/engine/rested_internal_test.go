package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

func TestRestedRunsAnswerOnlyNewerCommitsAndStayBounded(t *testing.T) {
	t.Parallel()
	var c restedRuns
	owner := ports.Tenant("t")
	started := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	c.put(owner, &run.Run{ID: "a", CheckpointSeq: 3, Status: run.StatusWaiting, StartedAt: started})

	got := c.newer(owner, "a", 2, started)
	require.NotNil(t, got)
	assert.Equal(t, int64(3), got.CheckpointSeq)
	got.CheckpointSeq = 99
	assert.Equal(t, int64(3), c.newer(owner, "a", 2, started).CheckpointSeq, "callers get their own copy")
	assert.Nil(t, c.newer(owner, "a", 3, started), "nothing newer than what was read")
	assert.Nil(t, c.newer(ports.Tenant("other"), "a", 0, started), "another owner's run is not this one")
	assert.Nil(t, c.newer(owner, "a", 1, started.Add(time.Hour)), "a later run under the same id is not this one")

	for i := range recentCapacity {
		c.put(owner, &run.Run{ID: fmt.Sprintf("r%d", i), CheckpointSeq: 1})
	}
	assert.Nil(t, c.newer(owner, "a", 0, started), "the oldest entry left the ring")
	assert.LessOrEqual(t, len(c.runs), recentCapacity)
}
