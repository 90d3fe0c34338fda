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
