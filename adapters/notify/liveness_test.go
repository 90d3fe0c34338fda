package notify_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stallingProxy forwards TCP connections to the test server. Stall makes
// the connections open at that moment stop forwarding without closing
// them, as a dead route or a hung proxy does: bytes sent on them are
// swallowed and neither end sees an error. Connections accepted later are
// forwarded normally, as they would reach a server over a working route.
type stallingProxy struct {
	listener net.Listener
	network  string // of the server
	address  string

	sessions atomic.Int32 // connections opened for a session so far
	cancels  atomic.Int32 // connections opened for a cancel request so far
	stallNew atomic.Bool  // connections accepted meanwhile are stalled from the start
	latency  atomic.Int64 // delay of every forwarded read, a slow route

	mu       sync.Mutex
	closed   bool
	conns    []net.Conn
	stallers []chan struct{} // one per proxied connection, closed to stall it
	done     chan struct{}   // closed when the proxy closes
}

// newStallingProxy proxies to the server of cfg (TCP or unix socket) and
// points cfg at the proxy. Closing the proxy at cleanup closes every
// connection it holds, so the server ends the stalled sessions too.
func newStallingProxy(t *testing.T, cfg *pgx.ConnConfig) *stallingProxy {
	t.Helper()
	p := &stallingProxy{network: "tcp", address: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), done: make(chan struct{})}
	if strings.HasPrefix(cfg.Host, "/") {
		p.network, p.address = "unix", fmt.Sprintf("%s/.s.PGSQL.%d", cfg.Host, cfg.Port)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.listener = ln
	t.Cleanup(p.close)
	go p.accept()
	cfg.Host, cfg.Port = "127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port)
	cfg.Fallbacks = nil
	return p
}

func (p *stallingProxy) accept() {
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			return
		}
		go p.serve(client)
	}
}

// cancelRequestCode opens a CancelRequest packet, which pgconn sends on a
// connection of its own (after its length, in place of a protocol version).
const cancelRequestCode = 80877102

// serve counts what client opens (a session or a cancel request) and
// forwards it, stalled from the start while StallNew is on.
func (p *stallingProxy) serve(client net.Conn) {
	head := make([]byte, 8) // length and protocol version or request code
	if _, err := io.ReadFull(client, head); err != nil {
		return
	}
	if binary.BigEndian.Uint32(head[4:]) == cancelRequestCode {
		p.cancels.Add(1)
	} else {
		p.sessions.Add(1)
	}
	stall := make(chan struct{})
	if p.stallNew.Load() {
		close(stall)
	}
	server, err := net.Dial(p.network, p.address)
	if err != nil || !p.track(server) {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	p.stallers = append(p.stallers, stall)
	p.mu.Unlock()
	select {
	case <-stall:
	default:
		if _, err := server.Write(head); err != nil {
			return
		}
	}
	go p.pump(client, server, stall)
	go p.pump(server, client, stall)
}

// track registers c to be closed with the proxy, or closes it and reports
// false when the proxy is already closed.
func (p *stallingProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns = append(p.conns, c)
	return true
}

// pump copies src to dst until either closes; once stall is closed it
// keeps reading src but forwards nothing.
func (p *stallingProxy) pump(src, dst net.Conn, stall chan struct{}) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			select {
			case <-stall:
				continue
			default:
			}
			time.Sleep(time.Duration(p.latency.Load()))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			// Half-close like a real route would, unless stalled: a stalled
			// connection never tells the other end anything.
			select {
			case <-stall:
				<-p.done
			default:
				_ = dst.Close()
			}
			return
		}
	}
}

// Stall stops forwarding on every connection open now.
func (p *stallingProxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, stall := range p.stallers {
		select {
		case <-stall:
		default:
			close(stall)
		}
	}
}

// StallNew makes the connections accepted from now on stall from the
// start (on) or be forwarded (off), as a server that accepts connections
// and never answers them, or one reached again.
func (p *stallingProxy) StallNew(on bool) { p.stallNew.Store(on) }

func (p *stallingProxy) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	close(p.done)
	_ = p.listener.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
}

// A session that stops answering without being closed (a dead route, a
// hung proxy) is noticed by the liveness check: the listener reports
// itself not connected, reconnects, catches up with one Wake and hears
// announcements again, instead of waiting for TCP to give up.
func TestListenerReplacesASessionThatStopsAnswering(t *testing.T) {
	t.Parallel()
	const backoff = time.Second // long enough to observe the reconnect
	var proxy *stallingProxy
	env := newListenerEnv(t, "stalling", func(c *notify.ListenerConfig) {
		proxy = newStallingProxy(t, c.ConnConfig)
		c.MinBackoff, c.MaxBackoff = backoff, backoff
		c.PingInterval, c.PingTimeout = 50*time.Millisecond, 500*time.Millisecond
	})
	wakes, _ := env.listen(t)
	env.notifyOn(t, "stalling")
	expectWake(t, wakes, "an announcement through the proxy")

	proxy.Stall()
	require.Eventually(t, func() bool { return !env.listener.Connected() }, arrival, 5*time.Millisecond,
		"a session that stopped answering is reported lost")
	expectWake(t, wakes, "the catch-up Wake after reconnecting")
	require.Eventually(t, env.listener.Connected, arrival, 5*time.Millisecond,
		"connected again once a new session listens")
	env.notifyOn(t, "stalling")
	expectWake(t, wakes, "an announcement after the reconnect")
}

// Opening a session is bounded too: a server that accepts the connection
// and never answers fails Listen instead of holding it until TCP gives up.
func TestListenerGivesUpOnAServerThatNeverAnswers(t *testing.T) {
	t.Parallel()
	var proxy *stallingProxy
	env := newListenerEnv(t, "unanswered", func(c *notify.ListenerConfig) {
		proxy = newStallingProxy(t, c.ConnConfig)
		c.PingTimeout = 300 * time.Millisecond
	})
	proxy.StallNew(true)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	failed := make(chan error, 1)
	go func() {
		_, err := env.listener.Listen(ctx)
		failed <- err
	}()
	select {
	case err := <-failed:
		assert.Error(t, err, "the unanswered subscription is reported")
	case <-time.After(arrival):
		t.Fatal("Listen waits for a server that never answers")
	}
}

// A reconnect attempt that the server accepts and never answers is given
// up and retried, so the listener recovers once the server answers again.
func TestListenerRetriesAReconnectThatGetsNoAnswer(t *testing.T) {
	t.Parallel()
	var proxy *stallingProxy
	env := newListenerEnv(t, "retrying", func(c *notify.ListenerConfig) {
		proxy = newStallingProxy(t, c.ConnConfig)
		c.PingInterval, c.PingTimeout = 50*time.Millisecond, 300*time.Millisecond
	})
	wakes, _ := env.listen(t)
	proxy.StallNew(true)
	proxy.Stall()
	require.Eventually(t, func() bool { return !env.listener.Connected() }, arrival, 5*time.Millisecond,
		"a session that stopped answering is reported lost")
	require.Eventually(t, func() bool { return proxy.sessions.Load() >= 2 }, arrival, 5*time.Millisecond,
		"a reconnect attempt reaches the unanswering server")
	proxy.StallNew(false)
	expectWake(t, wakes, "the catch-up Wake once a later attempt is answered")
	require.Eventually(t, env.listener.Connected, arrival, 5*time.Millisecond, "connected again")
	env.notifyOn(t, "retrying")
	expectWake(t, wakes, "an announcement after the reconnect")
}

// The liveness check keeps a healthy idle session: no reconnect (which
// would hand out a catch-up Wake), and announcements still arrive.
func TestListenerKeepsAnIdleSessionThatAnswers(t *testing.T) {
	t.Parallel()
	env := newListenerEnv(t, "idle", func(c *notify.ListenerConfig) {
		c.PingInterval, c.PingTimeout = 10*time.Millisecond, 5*time.Second
	})
	wakes, _ := env.listen(t)
	expectSilence(t, wakes, "dozens of liveness checks of an idle session")
	assert.True(t, env.listener.Connected())
	env.expectSessions(t, env.db.Connect(t), 1, "one session listens")
	env.notifyOn(t, "idle")
	expectWake(t, wakes, "an announcement after the checks")
}

// The idle wait ends by a deadline, never by a cancel request: a pool's
// config carrying pgconn's cancel-request handler must not make the
// listener open a connection to the server at every liveness check.
func TestListenerChecksLivenessWithoutCancelRequests(t *testing.T) {
	t.Parallel()
	var proxy *stallingProxy
	env := newListenerEnv(t, "uncancelled", func(c *notify.ListenerConfig) {
		proxy = newStallingProxy(t, c.ConnConfig)
		c.ConnConfig.BuildContextWatcherHandler = func(pgConn *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: pgConn, DeadlineDelay: time.Millisecond}
		}
		c.PingInterval, c.PingTimeout = 10*time.Millisecond, 5*time.Second
	})
	wakes, _ := env.listen(t)
	expectSilence(t, wakes, "liveness checks of an idle session")
	assert.Zero(t, proxy.cancels.Load(), "no cancel request")
	assert.EqualValues(t, 1, proxy.sessions.Load(), "no other session either")
	env.notifyOn(t, "uncancelled")
	expectWake(t, wakes, "an announcement after the checks")
}

// PingTimeout, not PingInterval, bounds the answer to a liveness check: a
// session behind a slow route that answers within PingTimeout is kept,
// however short the interval between checks.
func TestListenerGivesALivenessCheckPingTimeoutToAnswer(t *testing.T) {
	t.Parallel()
	var proxy *stallingProxy
	env := newListenerEnv(t, "slow", func(c *notify.ListenerConfig) {
		proxy = newStallingProxy(t, c.ConnConfig)
		c.PingInterval, c.PingTimeout = time.Millisecond, 5*time.Second
	})
	wakes, _ := env.listen(t)
	proxy.latency.Store(int64(50 * time.Millisecond)) // far above PingInterval, far below PingTimeout
	expectSilence(t, wakes, "liveness checks answered slowly")
	assert.True(t, env.listener.Connected())
	assert.EqualValues(t, 1, proxy.sessions.Load(), "the session was kept")
}
