package prune

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/ports"
)

// countingStore counts the passes, each of which deletes nothing.
type countingStore struct{ passes int }

func (s *countingStore) PruneEvents(context.Context, ports.PruneParams) (int, error) {
	s.passes++
	return 0, nil
}

func (*countingStore) PruneRuns(context.Context, ports.PruneParams) (ports.PruneRunsResult, error) {
	return ports.PruneRunsResult{}, nil
}

func (*countingStore) PruneGraphVersions(context.Context, ports.PruneGraphsParams) (int, error) {
	return 0, nil
}

// Run passes at once, then waits exactly Interval before every later
// pass: no tight loop, no fraction of the interval.
func TestRunWaitsTheIntervalBeforeEachLaterPass(t *testing.T) {
	t.Parallel()
	const passes = 3
	store := &countingStore{}
	p, err := New(store, Config{Interval: time.Hour, EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: 1}, Options{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var waits []time.Duration
	p.newTimer = func(d time.Duration) *time.Timer {
		waits = append(waits, d)
		if len(waits) > passes {
			cancel()
			return time.NewTimer(time.Hour) // Run must return by its context
		}
		return time.NewTimer(0) // the test records the wait, not waits it
	}
	p.Run(ctx)
	assert.Equal(t, []time.Duration{0, time.Hour, time.Hour, time.Hour}, waits)
	assert.Equal(t, passes, store.passes)
}
