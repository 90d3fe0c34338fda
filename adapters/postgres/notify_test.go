package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quiet is how long a listener must stay silent to conclude that nothing
// was announced.
const quiet = 300 * time.Millisecond

// pauseAfter is a pgx tracer that, once armed, blocks the goroutine that
// just finished a statement containing marker until released: the
// statement has run (its pg_notify is queued) but its transaction has not
// committed yet.
type pauseAfter struct {
	marker  string
	armed   chan struct{} // closed to arm
	reached chan struct{} // closed when a marked statement finished
	release chan struct{} // closed to let it continue
}

func newPauseAfter(marker string) *pauseAfter {
	return &pauseAfter{marker: marker, armed: make(chan struct{}), reached: make(chan struct{}), release: make(chan struct{})}
}

type sqlKey struct{}

func (p *pauseAfter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, sqlKey{}, data.SQL)
}

func (p *pauseAfter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	sql, _ := ctx.Value(sqlKey{}).(string)
	select {
	case <-p.armed:
	default:
		return
	}
	if data.Err != nil || !strings.Contains(sql, p.marker) {
		return
	}
	close(p.reached)
	<-p.release
}

func listen(t *testing.T, env *testEnv) <-chan ports.Wake {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wakes, err := env.store.Notifier().Listen(ctx)
	require.NoError(t, err)
	return wakes
}

func expectWake(t *testing.T, wakes <-chan ports.Wake, what string) {
	t.Helper()
	select {
	case <-wakes:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no wake announcement arrived", what)
	}
}

func expectSilence(t *testing.T, wakes <-chan ports.Wake, what string) {
	t.Helper()
	select {
	case <-wakes:
		t.Errorf("%s: a wake was announced", what)
	case <-time.After(quiet):
	}
}

func TestWakeIsDeliveredOnlyAfterTheWriteCommits(t *testing.T) {
	t.Parallel()
	pause := newPauseAfter("pg_notify")
	env := newEnv(t, envOptions{listen: true, tracer: pause})
	wakes := listen(t, env)
	ctx := context.Background()
	c := compiledFixture(t)
	_, err := env.store.SaveGraph(ctx, ports.Tenantless(), ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	require.NoError(t, err)
	now := time.Now()
	m, err := superstep.Start(c, superstep.StartParams{RunID: newRunID("paused"), Input: map[string]any{"topic": "x"}}, superstep.Env{Now: now})
	require.NoError(t, err)

	close(pause.armed)
	inserted := make(chan error, 1)
	go func() {
		_, err := env.store.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: now.Add(-time.Second)})
		inserted <- err
	}()
	select {
	case <-pause.reached:
	case <-time.After(5 * time.Second):
		t.Fatal("the insertion statement never ran")
	}
	// pg_notify has run inside the open insertion transaction.
	expectSilence(t, wakes, "while the insertion transaction is open")
	_, err = env.store.FetchRun(ctx, ports.System(), m.Run.ID)
	assert.ErrorIs(t, err, ports.ErrNotFound, "the uncommitted run is invisible")

	close(pause.release)
	require.NoError(t, <-inserted)
	expectWake(t, wakes, "after the insertion committed")
	_, err = env.store.FetchRun(ctx, ports.System(), m.Run.ID)
	assert.NoError(t, err, "the announced run is visible")
}

func TestRolledBackWritesAnnounceNothing(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{listen: true})
	wakes := listen(t, env)
	ctx := context.Background()
	c := compiledFixture(t)
	now := time.Now()

	// The graph is not published: the run's foreign key fails at the end
	// of the statement that already called pg_notify.
	m, err := superstep.Start(c, superstep.StartParams{RunID: newRunID("orphan"), Input: map[string]any{"topic": "x"}}, superstep.Env{Now: now})
	require.NoError(t, err)
	_, err = env.store.InsertRun(ctx, ports.Tenantless(), ports.InsertRunParams{Moment: m, WakeAt: now.Add(-time.Second)})
	require.ErrorIs(t, err, ports.ErrNotFound)
	expectSilence(t, wakes, "a rolled-back insertion")

	// A claimed immediate commit whose event conflicts with a stored one
	// trips the tripwire and rolls back, announcement included.
	r := env.insertRun(t, ports.Tenantless(), now, now.Add(time.Hour)) // future wake: silent
	expectSilence(t, wakes, "a future first wake")
	_, err = env.store.RetryPoisonedRun(ctx, ports.Tenantless(), r.ID, now) // healthy: silent
	require.NoError(t, err)
	expectSilence(t, wakes, "retrying a healthy run")

	r2 := env.insertRun(t, ports.Tenantless(), now, now.Add(-time.Second))
	expectWake(t, wakes, "a due insertion")
	batch, err := env.store.ClaimDue(ctx, claimNow(now, r2))
	require.NoError(t, err)
	require.Len(t, batch.Leases, 1)
	conflicting := nextMoment(r2, "conflict", immediateDisposition, now)
	conflicting.Events[0].Seq = 1 // the stored run_initialized event's seq
	_, err = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: conflicting, ClaimToken: batch.Leases[0].Token})
	var conflict *ports.EventConflictError
	require.ErrorAs(t, err, &conflict)
	assert.Equal(t, int64(1), conflict.Seq)
	expectSilence(t, wakes, "a commit rolled back by an event conflict")

	ok := nextMoment(r2, "ok", immediateDisposition, now)
	_, err = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: ok, ClaimToken: batch.Leases[0].Token})
	require.NoError(t, err)
	expectWake(t, wakes, "the same immediate commit without the conflict")
}
