package dispatch_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/app/dispatch"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
)

// hangingClaims stands for a store behind a half-open connection: while
// hang is set, ClaimDue answers only when its context ends. Otherwise the
// memory adapter answers.
type hangingClaims struct {
	ports.RunStore
	hang atomic.Bool
	hung chan struct{} // one send per hung call
}

func (s *hangingClaims) ClaimDue(ctx context.Context, r claim.Request) (*ports.ClaimBatch, error) {
	if s.hang.Load() {
		s.hung <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.RunStore.ClaimDue(ctx, r)
}

// dueRun is a memory store holding one due run, runID.
func dueRun(t *testing.T, runID string) *memory.Store {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Microsecond)
	store := memory.New(memory.Options{})
	g := &graph.Graph{SchemaVersion: graph.SchemaVersion, ID: "g"}
	hash, err := graph.Hash(g)
	require.NoError(t, err)
	_, err = store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: g, Hash: hash})
	require.NoError(t, err)
	r := &run.Run{ID: runID, GraphID: "g", GraphHash: hash, Status: run.StatusRunning, StartedAt: now, UpdatedAt: now}
	m := run.Propose(nil, r, nil, run.CheckpointRunInitialized, run.Disposition{Kind: run.DispositionImmediate}, now)
	_, err = store.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: now})
	require.NoError(t, err)
	return store
}

func TestAHungClaimTimesOutAndTheNextPollClaims(t *testing.T) {
	t.Parallel()
	store := &hangingClaims{RunStore: dueRun(t, "run_1"), hung: make(chan struct{}, 10)}
	store.hang.Store(true)
	phase := &claim.Phase{}
	driven := make(chan string, 1)
	d, err := dispatch.New(dispatch.Config{
		Runs: store, Phase: phase, Concurrency: 1, PollInterval: 10 * time.Millisecond,
		OrphanTTL: time.Minute, MaxClaimAttempts: 5, DrainTimeout: wait,
		StoreTimeout: 30 * time.Millisecond,
		Drive:        func(_ context.Context, l ports.Lease, _ func()) { driven <- l.RunID },
	})
	require.NoError(t, err)
	require.NoError(t, d.Start(context.Background()))

	for call := 1; call <= 2; call++ {
		select {
		case <-store.hung:
		case <-time.After(wait):
			t.Fatalf("hung claim %d never happened: the poll before it did not return", call)
		}
	}
	// The admission phase is free between polls, so a manual admission
	// (DrainRuns) is not blocked behind a hung poll for long.
	admitted := make(chan struct{})
	go func() {
		_, _ = claim.Admit(phase, 1, func(claim.Preference) (struct{}, error) { return struct{}{}, nil })
		close(admitted)
	}()
	select {
	case <-admitted:
	case <-time.After(wait):
		t.Fatal("the admission phase stayed held")
	}

	store.hang.Store(false) // the store answers again
	select {
	case id := <-driven:
		assert.Equal(t, "run_1", id, "the run is claimed once the store answers")
	case <-time.After(wait):
		t.Fatal("the run was never claimed after the store recovered")
	}
	require.NoError(t, d.Stop(context.Background()))
}

func TestStopDoesNotWaitForeverForOnPoisoned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		honoursContext bool
	}{
		{"a callback that ignores its context", false},
		{"a callback that honours its context", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			poison := ports.PoisonOutcome{RunID: "bad", PoisonReason: claim.ReasonMaxClaimAttempts}
			store := newFakeStore(firstThenEmpty(&ports.ClaimBatch{Poisoned: []ports.PoisonOutcome{poison}}))
			called, cancelled, block := make(chan struct{}), make(chan struct{}), make(chan struct{})
			t.Cleanup(func() { close(block) })
			const drain = 50 * time.Millisecond
			d := newDispatcher(t, store, func(c *dispatch.Config) {
				c.DrainTimeout = drain
				c.OnPoisoned = func(ctx context.Context, _ []ports.PoisonOutcome) {
					close(called)
					if tt.honoursContext {
						<-ctx.Done()
						close(cancelled)
						return
					}
					<-block
				}
			})
			require.NoError(t, d.Start(context.Background()))
			recv(t, called, "the poison callback")

			stopped := make(chan error, 1)
			begin := time.Now()
			go func() { stopped <- d.Stop(context.Background()) }()
			select {
			case err := <-stopped:
				assert.ErrorIs(t, err, context.DeadlineExceeded, "Stop says it gave up waiting")
				// The drain timeout plus the one-second grace, with slack for
				// a loaded machine.
				assert.Less(t, time.Since(begin), drain+3*time.Second)
			case <-time.After(wait):
				t.Fatal("Stop hangs on a blocking OnPoisoned callback")
			}
			if tt.honoursContext {
				select {
				case <-cancelled:
				default:
					t.Fatal("the callback's context was not cancelled at the drain deadline")
				}
			}
		})
	}
}

func TestStopWaitsForAShortOnPoisonedCallback(t *testing.T) {
	t.Parallel()
	poison := ports.PoisonOutcome{RunID: "bad", PoisonReason: claim.ReasonMaxClaimAttempts}
	store := newFakeStore(firstThenEmpty(&ports.ClaimBatch{Poisoned: []ports.PoisonOutcome{poison}}))
	called, finished := make(chan struct{}), atomic.Bool{}
	d := newDispatcher(t, store, func(c *dispatch.Config) {
		c.OnPoisoned = func(context.Context, []ports.PoisonOutcome) {
			close(called)
			time.Sleep(20 * time.Millisecond)
			finished.Store(true)
		}
	})
	require.NoError(t, d.Start(context.Background()))
	<-called
	require.NoError(t, d.Stop(context.Background()))
	assert.True(t, finished.Load(), "Stop returned before the callback finished")
}
