package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/ports"
)

// replyCutter dials connections that lose the reply to one armed request:
// the request reaches the server, which executes and commits it, and the
// connection breaks before the client reads the answer. That is the
// ambiguous outcome of a commit whose connection drops mid-flight.
type replyCutter struct {
	mu     sync.Mutex
	marker []byte // armed while non-nil
	fired  atomic.Bool
}

// arm makes the next request whose bytes contain marker lose its reply.
func (c *replyCutter) arm(marker string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.marker = []byte(marker)
}

func (c *replyCutter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, cutter: c}, nil
}

// take reports whether b is the armed request, disarming it.
func (c *replyCutter) take(b []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.marker == nil || !bytes.Contains(b, c.marker) {
		return false
	}
	c.marker = nil
	c.fired.Store(true)
	return true
}

type cutConn struct {
	net.Conn
	cutter *replyCutter
	cut    atomic.Bool
}

func (c *cutConn) Write(b []byte) (int, error) {
	if c.cutter.take(b) {
		c.cut.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *cutConn) Read(b []byte) (int, error) {
	if c.cut.Load() {
		time.Sleep(300 * time.Millisecond) // the server executes and commits meanwhile
		_ = c.Conn.Close()
		return 0, errors.New("test: the connection broke before the reply")
	}
	return c.Conn.Read(b)
}

// An insertion whose statement committed but whose reply was lost is
// retried alone; the retry finds the run its own statement stored and
// reports the insertion as done, not as a conflict with itself.
func TestAnInsertionWhoseReplyWasLostIsNotItsOwnConflict(t *testing.T) {
	t.Parallel()
	cutter := &replyCutter{}
	env := newEnv(t, envOptions{dial: cutter.dial})
	ctx := context.Background()
	owner := ports.Tenant(newRunID("tenant"))
	env.insertRun(t, owner, time.Now(), time.Now()) // the partition is known: the next insertion is batched
	params := startMoment(t, env, owner, newRunID("lost-reply"))
	id := params.Moment.Run.ID

	cutter.arm(id)
	inserted, err := env.store.InsertRun(ctx, owner, params)
	require.True(t, cutter.fired.Load(), "the insertion's reply was lost")
	require.NoError(t, err, "the run this insertion stored is not a conflict")
	assert.Equal(t, id, inserted.ID)

	stored, err := env.store.FetchRun(ctx, owner, id)
	require.NoError(t, err)
	assert.EqualValues(t, 1, stored.CheckpointSeq)
	page, err := env.store.ListEvents(ctx, owner, id, ports.ListEventsParams{Limit: 10})
	require.NoError(t, err)
	assert.Len(t, page.Events, len(params.Moment.Events), "the events were written once")
}

// A shared commit statement that committed but whose reply was lost is
// resolved run by run against each run's own fence: a moment that landed
// is reported committed, not as a fence another writer won, and a moment
// that was stale in the statement stays stale.
func TestABatchedCommitWhoseReplyWasLostIsResolvedPerRun(t *testing.T) {
	t.Parallel()
	cutter := &replyCutter{}
	env := newEnv(t, envOptions{dial: cutter.dial})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 3)
	now := time.Now()
	params := []ports.CommitParams{
		{Moment: nextMoment(runs[0], "retain", continueDisposition, now), ClaimToken: leases[runs[0].ID].Token},
		// A foreign token: the lease of another run.
		{Moment: nextMoment(runs[1], "stale", continueDisposition, now), ClaimToken: leases[runs[2].ID].Token},
		{Moment: nextMoment(runs[2], "immediate", immediateDisposition, now), ClaimToken: leases[runs[2].ID].Token},
	}

	cutter.arm(runs[0].ID)
	errs := env.store.CommitBatchForTest(ctx, ports.Tenantless(), params)
	require.True(t, cutter.fired.Load(), "the shared statement's reply was lost")
	require.NoError(t, errs[0], "the moment landed")
	require.ErrorIs(t, errs[1], ports.ErrStaleFence, "the foreign token lost its fence")
	require.NoError(t, errs[2], "the moment landed")

	for i, p := range params {
		stored, err := env.store.InspectRun(ctx, ports.System(), runs[i].ID)
		require.NoError(t, err)
		page, err := env.store.ListEvents(ctx, ports.System(), runs[i].ID, ports.ListEventsParams{Limit: 100})
		require.NoError(t, err)
		if i == 1 {
			assert.Equal(t, runs[1].CheckpointSeq, stored.Run.CheckpointSeq, "the stale commit wrote nothing")
			assert.Len(t, page.Events, int(runs[1].EventSeq), "and appended no event")
			continue
		}
		assert.Equal(t, p.Moment.Run.CheckpointSeq, stored.Run.CheckpointSeq, "run %d", i)
		assert.Len(t, page.Events, int(p.Moment.Run.EventSeq), "run %d: every event was written once", i)
	}
	first, err := env.store.InspectRun(ctx, ports.System(), runs[0].ID)
	require.NoError(t, err)
	assert.True(t, first.Claimed(), "the continue kept its claim")
	require.NoError(t, env.store.RefreshClaim(ctx, runs[0].ID, leases[runs[0].ID].Token, time.Now()),
		"under the same token")
}

// A commit alone whose reply was lost is resolved the same way: its
// moment landed, so it is reported committed.
func TestACommitWhoseReplyWasLostIsReportedCommitted(t *testing.T) {
	t.Parallel()
	cutter := &replyCutter{}
	env := newEnv(t, envOptions{dial: cutter.dial})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 1)
	m := nextMoment(runs[0], "alone", continueDisposition, time.Now())

	cutter.arm(runs[0].ID)
	_, err := env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: m, ClaimToken: leases[runs[0].ID].Token})
	require.True(t, cutter.fired.Load(), "the commit's reply was lost")
	require.NoError(t, err, "the moment landed")

	stored, err := env.store.FetchRun(ctx, ports.System(), runs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, m.Run.CheckpointSeq, stored.CheckpointSeq)
	// The vehicle goes on from its own proposal under its token.
	next := nextMoment(m.Run, "after", continueDisposition, time.Now())
	_, err = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: next, ClaimToken: leases[runs[0].ID].Token})
	require.NoError(t, err)
}

// A lost reply proves nothing about another writer: when the retry misses
// because another writer moved the run, the commit is still stale.
func TestABatchedCommitWhoseReplyWasLostStaysStaleForAMovedRun(t *testing.T) {
	t.Parallel()
	cutter := &replyCutter{}
	env := newEnv(t, envOptions{dial: cutter.dial})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 2)
	now := time.Now()
	// Run 0's commit is stale in the statement (another writer moved it
	// first); run 1's lands.
	mover := nextMoment(runs[0], "mover", continueDisposition, now)
	_, err := env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: mover, ClaimToken: leases[runs[0].ID].Token})
	require.NoError(t, err)
	params := []ports.CommitParams{
		{Moment: nextMoment(runs[0], "late", continueDisposition, now), ClaimToken: leases[runs[0].ID].Token},
		{Moment: nextMoment(runs[1], "lands", continueDisposition, now), ClaimToken: leases[runs[1].ID].Token},
	}

	cutter.arm(runs[1].ID)
	errs := env.store.CommitBatchForTest(ctx, ports.Tenantless(), params)
	require.True(t, cutter.fired.Load(), "the shared statement's reply was lost")
	require.ErrorIs(t, errs[0], ports.ErrStaleFence, "another writer moved the run first")
	require.NoError(t, errs[1])
	stored, err := env.store.FetchRun(ctx, ports.System(), runs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, mover.Run.Metadata, stored.Metadata, "the first writer's moment stands")
}
