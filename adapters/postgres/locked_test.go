package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// holdRun keeps runID's row lock the way a signal being decided does.
func holdRun(t *testing.T, store ports.RunStore, runID string) (release func()) {
	t.Helper()
	held, done, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		_, _ = store.MutateRun(context.Background(), ports.System(), runID, func(*run.Run) (*run.Moment, error) {
			close(held)
			<-done
			return nil, errors.New("abandoned by the test")
		})
	}()
	<-held
	return func() { close(done); <-finished }
}

// A row another writer holds is skipped and the next due run of its scope
// takes its place, under either policy.
func TestALockedHeadIsSkippedAndTheNextRunClaimed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, policy := range []claim.Policy{claim.Legacy, claim.WindowedInterleave} {
		t.Run(policy.Name(), func(t *testing.T) {
			t.Parallel()
			env := newEnv(t, envOptions{policy: policy})
			head := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-40*time.Second))
			next := env.insertRun(t, ports.Tenant("a"), t0.Add(-time.Hour), t0.Add(-30*time.Second))
			release := holdRun(t, env.store, head.ID)
			defer release()
			batch, err := env.store.ClaimDue(ctx, readyAt(t0, 1))
			require.NoError(t, err)
			require.Equal(t, []string{next.ID}, leaseIDs(batch))
		})
	}
}
