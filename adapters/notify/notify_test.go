package notify_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	arrival = 5 * time.Second        // bound on an expected Wake
	quiet   = 300 * time.Millisecond // silence that proves "no Wake"
)

var appCounter atomic.Int64

// listenerEnv is a Listener on the shared test database with a unique
// application_name, so a test can find (and terminate) its session.
type listenerEnv struct {
	db       *pgtest.Database
	appName  string
	listener *notify.Listener
}

func newListenerEnv(t *testing.T, schema string, edits ...func(*notify.ListenerConfig)) *listenerEnv {
	t.Helper()
	db := pgtest.SharedDatabase(t)
	cfg, err := pgx.ParseConfig(db.URL)
	require.NoError(t, err)
	app := fmt.Sprintf("docket-notify-test-%d-%d", time.Now().UnixNano(), appCounter.Add(1))
	cfg.RuntimeParams["application_name"] = app
	config := notify.ListenerConfig{
		ConnConfig: cfg,
		Schema:     schema,
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, edit := range edits {
		edit(&config)
	}
	l, err := notify.NewListener(config)
	require.NoError(t, err)
	return &listenerEnv{db: db, appName: app, listener: l}
}

func (e *listenerEnv) listen(t *testing.T) (<-chan ports.Wake, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	wakes, err := e.listener.Listen(ctx)
	require.NoError(t, err)
	return wakes, cancel
}

// notifyOn announces payload on the wake channel from a separate session.
func (e *listenerEnv) notifyOn(t *testing.T, payload string) {
	t.Helper()
	conn := e.db.Connect(t)
	_, err := conn.Exec(context.Background(), "SELECT pg_notify($1, $2)", notify.Channel, payload)
	require.NoError(t, err)
}

// expectSessions waits until admin sees want sessions of the listener.
func (e *listenerEnv) expectSessions(t *testing.T, admin *pgx.Conn, want int, what string) {
	t.Helper()
	require.Eventually(t, func() bool {
		var sessions int
		err := admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, e.appName).Scan(&sessions)
		return err == nil && sessions == want
	}, arrival, 20*time.Millisecond, what)
}

func expectWake(t *testing.T, wakes <-chan ports.Wake, what string) {
	t.Helper()
	select {
	case _, ok := <-wakes:
		require.True(t, ok, "%s: the channel closed instead", what)
	case <-time.After(arrival):
		t.Fatalf("%s: no Wake arrived", what)
	}
}

func expectSilence(t *testing.T, wakes <-chan ports.Wake, what string) {
	t.Helper()
	select {
	case <-wakes:
		t.Errorf("%s: a Wake arrived", what)
	case <-time.After(quiet):
	}
}

func TestListenerDeliversOnlyItsSchemasAnnouncements(t *testing.T) {
	t.Parallel()
	env := newListenerEnv(t, "tenant_schema")
	wakes, _ := env.listen(t)
	env.notifyOn(t, "another_schema")
	env.notifyOn(t, "")
	expectSilence(t, wakes, "announcements of other schemas")
	env.notifyOn(t, "tenant_schema")
	expectWake(t, wakes, "an announcement of the listener's schema")
}

func TestListenerCoalescesBursts(t *testing.T) {
	t.Parallel()
	env := newListenerEnv(t, "burst")
	wakes, _ := env.listen(t)
	for range 5 {
		env.notifyOn(t, "burst")
	}
	expectWake(t, wakes, "a burst")
	// The burst may arrive as one or two Wakes (one pending while the
	// first is being read), never as five queued ones.
	drained := 0
	for drained < 5 {
		select {
		case <-wakes:
			drained++
			continue
		case <-time.After(quiet):
		}
		break
	}
	assert.LessOrEqual(t, drained, 1, "a burst is coalesced")
}

// terminate ends the listener's session from admin.
func (e *listenerEnv) terminate(t *testing.T, admin *pgx.Conn) {
	t.Helper()
	var terminated int
	err := admin.QueryRow(context.Background(), `
		SELECT count(*) FROM (
			SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1
		) AS t`, e.appName).Scan(&terminated)
	require.NoError(t, err)
	require.Equal(t, 1, terminated, "the listener holds exactly one session")
}

func TestListenerReconnectsAfterItsSessionIsTerminated(t *testing.T) {
	t.Parallel()
	env := newListenerEnv(t, "reconnecting")
	wakes, _ := env.listen(t)
	admin := env.db.Connect(t)
	env.terminate(t, admin)

	// After the loss the listener reconnects and hands out one Wake, since
	// announcements made while it was away are lost.
	expectWake(t, wakes, "the catch-up Wake after reconnecting")
	env.expectSessions(t, admin, 1, "a new session is listening")
	env.notifyOn(t, "reconnecting")
	expectWake(t, wakes, "an announcement after the reconnect")
}

// While a subscription reconnects its announcements are lost, so the
// listener says it is not connected: a dispatcher then polls after its own
// engine's writes instead of waiting for a wake that cannot come.
func TestListenerIsNotConnectedWhileItReconnects(t *testing.T) {
	t.Parallel()
	const backoff = 2 * time.Second
	env := newListenerEnv(t, "reporting", func(c *notify.ListenerConfig) { c.MinBackoff, c.MaxBackoff = backoff, backoff })
	assert.True(t, env.listener.Connected(), "no subscription is down")
	wakes, _ := env.listen(t)
	assert.True(t, env.listener.Connected())
	env.terminate(t, env.db.Connect(t))
	require.Eventually(t, func() bool { return !env.listener.Connected() }, arrival, 5*time.Millisecond,
		"a lost connection is reported")
	expectWake(t, wakes, "the catch-up Wake after reconnecting")
	assert.True(t, env.listener.Connected(), "connected again once the new session listens")
}

func TestListenerWaitsAtLeastMinBackoffBeforeReconnecting(t *testing.T) {
	t.Parallel()
	const backoff = 300 * time.Millisecond
	env := newListenerEnv(t, "patient", func(c *notify.ListenerConfig) { c.MinBackoff, c.MaxBackoff = backoff, backoff })
	wakes, _ := env.listen(t)
	env.terminate(t, env.db.Connect(t))
	lost := time.Now()
	expectWake(t, wakes, "the catch-up Wake after reconnecting")
	assert.GreaterOrEqual(t, time.Since(lost), backoff, "MinBackoff bounds the delay from below, jitter included")
}

// A pool's connection config may carry its own notification hook; pgx
// would then hand every notification to it and none to the listener.
func TestListenerIgnoresTheConnConfigsNotificationHook(t *testing.T) {
	t.Parallel()
	hooked := 0
	env := newListenerEnv(t, "hooked", func(c *notify.ListenerConfig) {
		c.ConnConfig.OnNotification = func(*pgconn.PgConn, *pgconn.Notification) { hooked++ }
	})
	wakes, _ := env.listen(t)
	env.notifyOn(t, "hooked")
	expectWake(t, wakes, "an announcement despite the hook")
	assert.Zero(t, hooked)
}

func TestListenerStopsAndClosesOnCancel(t *testing.T) {
	t.Parallel()
	env := newListenerEnv(t, "closing")
	wakes, cancel := env.listen(t)
	cancel()
	select {
	case _, ok := <-wakes:
		require.False(t, ok, "no Wake is delivered after cancel")
	case <-time.After(arrival):
		t.Fatal("the channel was not closed after cancel")
	}
	env.expectSessions(t, env.db.Connect(t), 0, "the dedicated session is closed")
}

func TestListenerReportsAnUnreachableServer(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig("postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	l, err := notify.NewListener(notify.ListenerConfig{ConnConfig: cfg, Schema: "x"})
	require.NoError(t, err)
	_, err = l.Listen(context.Background())
	assert.Error(t, err, "the first connection's failure is returned")
}

// MaxBackoff left zero follows a MinBackoff above its 10s default rather
// than rejecting it.
func TestNewListenerAcceptsAMinBackoffAboveTheDefaultMaxBackoff(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig("postgres://x@127.0.0.1/x")
	require.NoError(t, err)
	_, err = notify.NewListener(notify.ListenerConfig{ConnConfig: cfg, Schema: "x", MinBackoff: time.Minute})
	assert.NoError(t, err)
}

func TestNewListenerValidatesItsConfig(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig("postgres://x@127.0.0.1/x")
	require.NoError(t, err)
	tests := []struct {
		name string
		cfg  notify.ListenerConfig
	}{
		{"missing connection config", notify.ListenerConfig{Schema: "x"}},
		{"missing schema: no store announces with an empty payload", notify.ListenerConfig{ConnConfig: cfg}},
		{"negative backoff", notify.ListenerConfig{ConnConfig: cfg, Schema: "x", MinBackoff: -time.Second}},
		{"max below min", notify.ListenerConfig{ConnConfig: cfg, Schema: "x", MinBackoff: time.Second, MaxBackoff: time.Millisecond}},
		{"negative ping interval", notify.ListenerConfig{ConnConfig: cfg, Schema: "x", PingInterval: -time.Second}},
		{"negative ping timeout", notify.ListenerConfig{ConnConfig: cfg, Schema: "x", PingTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := notify.NewListener(tt.cfg)
			assert.Error(t, err)
		})
	}
}

func TestBroadcasterAnnouncesToEveryListenerUntilCancel(t *testing.T) {
	t.Parallel()
	var b notify.Broadcaster
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	w1, err := b.Listen(ctx1)
	require.NoError(t, err)
	w2, err := b.Listen(ctx2)
	require.NoError(t, err)

	b.Announce()
	b.Announce() // coalesced with the first
	expectWake(t, w1, "listener 1")
	expectWake(t, w2, "listener 2")
	expectSilence(t, w1, "a coalesced burst")

	cancel1()
	_, ok := <-w1
	assert.False(t, ok, "a cancelled listener's channel closes")
	b.Announce()
	expectWake(t, w2, "the remaining listener")

	_, err = b.Listen(ctx1)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestNoneNeverDeliversAndClosesOnCancel(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	wakes, err := notify.None{}.Listen(ctx)
	require.NoError(t, err)
	assert.False(t, notify.None{}.Connected(), "a dispatcher behind it does not count as listening")
	expectSilence(t, wakes, "poll-only mode")
	cancel()
	_, ok := <-wakes
	assert.False(t, ok)

	_, err = notify.None{}.Listen(ctx)
	assert.ErrorIs(t, err, context.Canceled, "an ended context subscribes to nothing, as with the other notifiers")
}

// notificationLog counts the listener's notification facts by result.
type notificationLog struct {
	ports.NopTelemetry
	mu      sync.Mutex
	results map[string]float64
}

func (l *notificationLog) Emit(_ context.Context, name string, m ports.Measurements, labels ...ports.Label) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, lb := range labels {
		if name == "notification" && lb.Key == "result" {
			l.results[lb.Value] += m["count"]
		}
	}
}

func (l *notificationLog) count(result string) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.results[result]
}

// A subscriber that does not read never holds the listener up: every
// notification is still taken off the session and counted (received for
// its schema, ignored otherwise), and the subscriber finds one Wake
// waiting when it reads.
func TestListenerCountsEveryNotificationWhileItsSubscriberIsBusy(t *testing.T) {
	t.Parallel()
	log := &notificationLog{results: map[string]float64{}}
	env := newListenerEnv(t, "counted", func(c *notify.ListenerConfig) { c.Telemetry = log })
	wakes, _ := env.listen(t)
	env.notifyOn(t, "another_schema")
	for range 3 {
		env.notifyOn(t, "counted")
	}
	env.notifyOn(t, "yet_another_schema")
	// Other tests announce on the same database: only this schema's count
	// is exact.
	require.Eventually(t, func() bool { return log.count("received") == 3 && log.count("ignored") >= 2 }, arrival, 5*time.Millisecond,
		"every notification is counted")
	select {
	case <-wakes:
	default:
		t.Fatal("no Wake is waiting for the subscriber")
	}
	select {
	case <-wakes:
		t.Error("the announcements were not coalesced into one waiting Wake")
	default:
	}
	assert.Equal(t, 3.0, log.count("received"), "no notification of this schema is counted twice")
}

// Cancelling a subscription while it waits to reconnect ends it at once:
// the channel closes without waiting out the backoff, and the listener no
// longer counts the ended subscription as one that is down.
func TestListenerStopsWhileItWaitsToReconnect(t *testing.T) {
	t.Parallel()
	const backoff = time.Hour // the channel must close long before
	env := newListenerEnv(t, "abandoned", func(c *notify.ListenerConfig) { c.MinBackoff, c.MaxBackoff = backoff, backoff })
	wakes, cancel := env.listen(t)
	env.terminate(t, env.db.Connect(t))
	require.Eventually(t, func() bool { return !env.listener.Connected() }, arrival, 5*time.Millisecond,
		"the lost connection is reported")
	cancel()
	select {
	case _, ok := <-wakes:
		require.False(t, ok, "no Wake is delivered after cancel")
	case <-time.After(arrival):
		t.Fatal("the channel was not closed after cancel")
	}
	assert.True(t, env.listener.Connected(), "no open subscription is down")
}

// Without an application_name of its own the listener's session is named
// docket-wake-listener, so operators can tell it apart in pg_stat_activity.
func TestListenerNamesItsSessionByDefault(t *testing.T) {
	t.Parallel()
	db := pgtest.SharedDatabase(t)
	cfg, err := pgx.ParseConfig(db.URL)
	require.NoError(t, err)
	delete(cfg.RuntimeParams, "application_name")
	l, err := notify.NewListener(notify.ListenerConfig{ConnConfig: cfg, Schema: "unnamed"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, err = l.Listen(ctx)
	require.NoError(t, err)
	// The other tests of this package name their sessions themselves.
	var sessions int
	require.NoError(t, db.Connect(t).QueryRow(context.Background(), `
		SELECT count(*) FROM pg_stat_activity
		WHERE application_name = 'docket-wake-listener' AND datname = current_database()`).Scan(&sessions))
	assert.Equal(t, 1, sessions)
}

// lockedBuffer is a log a running listener writes while the test reads it.
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

// The logger hears of a lost session and of its replacement, and nothing
// when the subscription is cancelled: stopping is no connection loss.
func TestListenerLogsLossAndReconnectButNotCancel(t *testing.T) {
	t.Parallel()
	var logs lockedBuffer
	env := newListenerEnv(t, "logged", func(c *notify.ListenerConfig) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	wakes, cancel := env.listen(t)
	env.terminate(t, env.db.Connect(t))
	expectWake(t, wakes, "the catch-up Wake after reconnecting")
	logged := logs.String()
	assert.Contains(t, logged, `level=WARN msg="docket wake listener lost its connection; reconnecting"`)
	assert.Contains(t, logged, `level=INFO msg="docket wake listener reconnected" attempts=1`)

	cancel()
	for range wakes {
	}
	assert.Equal(t, logged, logs.String(), "nothing is logged for a cancelled subscription")
}
