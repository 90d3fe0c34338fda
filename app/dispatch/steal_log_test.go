package dispatch_test

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

// lockedBuffer is a log destination safe for the dispatcher's goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A run taken over from a claim past its orphan TTL is logged with its id:
// it tells an operator that some worker died or stalled holding it.
func TestARecoveredRunIsLogged(t *testing.T) {
	t.Parallel()
	batch := &ports.ClaimBatch{Leases: []ports.Lease{
		{RunID: "fresh", Attempt: 1, Class: claim.ClassReady},
		{RunID: "orphan", Attempt: 2, Class: claim.ClassExpired},
	}}
	store := newFakeStore(firstThenEmpty(batch))
	var logs lockedBuffer
	driven := make(chan string, 2)
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.Drive = func(_ context.Context, l ports.Lease, _ func()) { driven <- l.RunID }
	})
	require.NoError(t, d.Start(context.Background()))
	for range 2 {
		select {
		case <-driven:
		case <-time.After(wait):
			t.Fatal("the leases were not driven")
		}
	}
	require.NoError(t, d.Stop(context.Background()))
	assert.Contains(t, logs.String(), "run_id=orphan")
	assert.NotContains(t, logs.String(), "run_id=fresh")
}
