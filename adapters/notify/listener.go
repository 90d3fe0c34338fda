package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
)

// Channel is the PostgreSQL notification channel Docket stores announce
// wakes on (pg_notify('docket_wake', <schema>) inside the write).
const Channel = "docket_wake"

// Default reconnect backoff of a Listener.
const (
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = 10 * time.Second
)

// Default liveness check of a Listener's session: after DefaultPingInterval
// without a notification it sends an empty query, which must answer within
// DefaultPingTimeout. A session that stopped answering without being
// closed (a dead route, a frozen proxy, a failed-over server) is thus
// noticed within about 40s instead of after TCP keepalive and
// retransmission give up (tens of minutes), at the cost of one
// negligible statement per idle half minute; an empty query never waits
// for a lock, so 10s is far above any healthy answer.
const (
	DefaultPingInterval = 30 * time.Second
	DefaultPingTimeout  = 10 * time.Second
)

// closeTimeout bounds closing a connection that may already be broken.
const closeTimeout = 2 * time.Second

// ListenerConfig configures a Listener. The zero value of every field but
// ConnConfig means the documented default.
type ListenerConfig struct {
	// ConnConfig is the session the listener opens, one connection per
	// Listen call, never taken from a pool. It must reach PostgreSQL
	// directly or through session pooling: LISTEN does not work behind
	// PgBouncer's transaction or statement pooling (use None there). It is
	// copied; application_name defaults to "docket-wake-listener", and
	// its OnNotification hook and BuildContextWatcherHandler are replaced
	// by the listener's own.
	ConnConfig *pgx.ConnConfig
	// Schema is the Docket schema whose announcements count (required):
	// a notification is a Wake only when its payload equals Schema, which
	// is what the store announces with (postgres.Store.Schema, the name it
	// resolved). Other payloads (other schemas on the same database) are
	// ignored.
	Schema string
	// MinBackoff and MaxBackoff bound the exponential, jittered delay
	// between reconnect attempts (defaults 100ms and 10s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// PingInterval is how long a session may stay silent (no
	// notification) before the listener checks that it still answers
	// (default 30s), and PingTimeout how long that check, an empty query,
	// may take (default 10s). A session that does not answer in time is
	// treated as lost: closed, reported not Connected, and replaced like
	// any lost session. Both bound how long a stalled session goes
	// unnoticed: PingInterval plus PingTimeout at most. PingTimeout also
	// bounds opening a session (connecting, authenticating and LISTEN),
	// so an attempt against a server that never answers fails and is
	// retried; a shorter connect_timeout in ConnConfig still applies.
	PingInterval time.Duration
	PingTimeout  time.Duration
	// Logger receives connection losses and reconnects (default
	// slog.Default()). Notifications themselves are never logged.
	Logger *slog.Logger
	// Telemetry receives one "notification" fact per notification, with
	// result received or ignored (default ports.NopTelemetry).
	Telemetry ports.Telemetry
}

// Listener is the LISTEN/NOTIFY notifier of the PostgreSQL backend. Each
// Listen call holds one dedicated session connection for as long as its
// context lives. A lost connection, or one that does not answer a
// liveness check (see ListenerConfig.PingInterval), is reopened with
// exponential backoff and re-subscribed; announcements sent meanwhile are
// lost, so after a reconnect the listener delivers one Wake to make its
// consumer poll.
type Listener struct {
	connConfig *pgx.ConnConfig
	schema     string
	minBackoff time.Duration
	maxBackoff time.Duration
	// pingInterval and pingTimeout are the liveness check of a session.
	pingInterval time.Duration
	pingTimeout  time.Duration
	logger       *slog.Logger
	telemetry    ports.Telemetry
	// reconnecting counts the subscriptions that lost their connection
	// and have not got a new one yet.
	reconnecting atomic.Int32
	// newTimer times the pause before each reconnect attempt
	// (time.NewTimer; tests record the pauses).
	newTimer func(time.Duration) *time.Timer
}

var _ ports.ConnectedNotifier = (*Listener)(nil)

// Connected reports whether every open subscription of the listener holds
// a connection: false from a lost connection until its replacement
// listens again (announcements in between are lost).
func (l *Listener) Connected() bool { return l.reconnecting.Load() == 0 }

// Schema is the Docket schema whose announcements this listener hears
// (ListenerConfig.Schema); a store checks it against its own.
func (l *Listener) Schema() string { return l.schema }

// NewListener validates cfg and returns a Listener. It does not connect;
// Listen does.
func NewListener(cfg ListenerConfig) (*Listener, error) {
	if cfg.ConnConfig == nil {
		return nil, errors.New("notify: ListenerConfig.ConnConfig is required")
	}
	if cfg.Schema == "" {
		// No store announces with an empty payload: a listener without a
		// schema would never wake anyone.
		return nil, errors.New("notify: ListenerConfig.Schema is required: the schema the store announces with (postgres.Store.Schema)")
	}
	if cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 {
		return nil, errors.New("notify: ListenerConfig.MinBackoff and MaxBackoff must not be negative")
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.MaxBackoff < cfg.MinBackoff {
		return nil, fmt.Errorf("notify: ListenerConfig.MaxBackoff %v is below MinBackoff %v", cfg.MaxBackoff, cfg.MinBackoff)
	}
	if cfg.PingInterval < 0 || cfg.PingTimeout < 0 {
		return nil, errors.New("notify: ListenerConfig.PingInterval and PingTimeout must not be negative")
	}
	if cfg.PingInterval == 0 {
		cfg.PingInterval = DefaultPingInterval
	}
	if cfg.PingTimeout == 0 {
		cfg.PingTimeout = DefaultPingTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Telemetry == nil {
		cfg.Telemetry = ports.NopTelemetry{}
	}
	connConfig := cfg.ConnConfig.Copy()
	// With a hook of its own, pgx hands notifications to the hook and
	// WaitForNotification returns none (a pool's config may carry one).
	connConfig.OnNotification = nil
	// The listener ends every silent PingInterval by its context's
	// deadline, which must only interrupt the read: a cancel request per
	// interval (pgconn.CancelRequestContextWatcherHandler, which a pool's
	// config may carry) would open a connection to the server each time.
	connConfig.BuildContextWatcherHandler = func(pgConn *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pgConn.Conn()}
	}
	if connConfig.RuntimeParams == nil {
		connConfig.RuntimeParams = map[string]string{}
	}
	if connConfig.RuntimeParams["application_name"] == "" {
		connConfig.RuntimeParams["application_name"] = "docket-wake-listener"
	}
	return &Listener{
		connConfig:   connConfig,
		schema:       cfg.Schema,
		minBackoff:   cfg.MinBackoff,
		maxBackoff:   cfg.MaxBackoff,
		pingInterval: cfg.PingInterval,
		pingTimeout:  cfg.PingTimeout,
		logger:       cfg.Logger,
		telemetry:    cfg.Telemetry,
		newTimer:     time.NewTimer,
	}, nil
}

// Listen opens a dedicated connection, subscribes to Channel and returns
// once the subscription is active, so every announcement committed after
// Listen returns is delivered (unless the connection is lost). The channel
// holds one pending Wake (bursts coalesce) and is closed after ctx is done
// and the connection is closed. A failure of the first connection is
// returned; later losses are retried in the background.
func (l *Listener) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	conn, err := l.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: listen on %s: %w", Channel, err)
	}
	out := make(chan ports.Wake, 1)
	go l.run(ctx, conn, out)
	return out, nil
}

// connect opens one session and subscribes it within pingTimeout: a
// server that accepts the connection and then never answers (a frozen
// proxy) would otherwise hold Listen, or a reconnect, until TCP gives up.
func (l *Listener) connect(ctx context.Context) (*pgx.Conn, error) {
	bounded, cancel := context.WithTimeout(ctx, l.pingTimeout)
	defer cancel()
	conn, err := l.subscribe(bounded)
	if err != nil && ctx.Err() == nil && bounded.Err() != nil {
		return nil, fmt.Errorf("no answer within PingTimeout %v: %w", l.pingTimeout, err)
	}
	return conn, err
}

func (l *Listener) subscribe(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, l.connConfig.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		closeQuietly(conn)
		return nil, err
	}
	return conn, nil
}

// run owns conn (and its successors) until ctx is done.
func (l *Listener) run(ctx context.Context, conn *pgx.Conn, out chan ports.Wake) {
	defer close(out)
	for {
		n, err := l.wait(ctx, conn)
		if err == nil {
			if n != nil {
				l.handle(ctx, n, out)
			}
			continue
		}
		closeQuietly(conn)
		if ctx.Err() != nil {
			return
		}
		l.logger.Warn("docket wake listener lost its connection; reconnecting", slog.String("error", err.Error()))
		l.reconnecting.Add(1)
		conn = l.reconnect(ctx)
		l.reconnecting.Add(-1)
		if conn == nil {
			return
		}
		// Announcements sent while disconnected are lost: one poll
		// catches up with all of them.
		offer(out)
	}
}

// wait returns the next notification of conn, or nil when conn stayed
// silent for pingInterval and answered a ping within pingTimeout. A
// session that does not answer the ping is reported as an error, like a
// closed one: otherwise a half-open connection would keep the listener
// waiting, and Connected true, until TCP gives up.
func (l *Listener) wait(ctx context.Context, conn *pgx.Conn) (*pgconn.Notification, error) {
	silent, cancel := context.WithTimeout(ctx, l.pingInterval)
	n, err := conn.WaitForNotification(silent)
	cancel()
	if err == nil || ctx.Err() != nil || !pgconn.Timeout(err) || conn.IsClosed() {
		return n, err
	}
	ping, cancel := context.WithTimeout(ctx, l.pingTimeout)
	defer cancel()
	if err := conn.Ping(ping); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, fmt.Errorf("liveness check (timeout %v): %w", l.pingTimeout, err)
	}
	return nil, nil
}

func (l *Listener) handle(ctx context.Context, n *pgconn.Notification, out chan ports.Wake) {
	result := "ignored"
	if n.Channel == Channel && n.Payload == l.schema {
		result = "received"
		offer(out)
	}
	l.telemetry.Emit(ctx, "notification", ports.Measurements{"count": 1}, ports.Label{Key: "result", Value: result})
}

// reconnect retries connect with exponential, jittered backoff until it
// succeeds (returning the subscribed connection) or ctx is done (nil).
func (l *Listener) reconnect(ctx context.Context) *pgx.Conn {
	delay := l.minBackoff
	for attempt := 1; ; attempt++ {
		timer := l.newTimer(min(jitter(delay), l.maxBackoff))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		conn, err := l.connect(ctx)
		if err == nil {
			l.logger.Info("docket wake listener reconnected", slog.Int("attempts", attempt))
			return conn
		}
		if ctx.Err() != nil {
			return nil
		}
		l.logger.Warn("docket wake listener could not reconnect", slog.Int("attempt", attempt), slog.String("error", err.Error()))
		if delay < l.maxBackoff/2 { // doubled, without overflowing near the cap
			delay *= 2
		} else {
			delay = l.maxBackoff
		}
	}
}

// jitter spreads d over [d, 1.5·d] so many listeners that lost one server
// do not reconnect in lockstep, the first attempt included, and none
// sooner than the backoff.
func jitter(d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return d + rand.N(half+1)
}

func closeQuietly(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = conn.Close(ctx)
}

// offer delivers a Wake unless one is already pending.
func offer(ch chan ports.Wake) {
	select {
	case ch <- ports.Wake{}:
	default:
	}
}
