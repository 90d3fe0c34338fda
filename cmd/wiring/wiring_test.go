package wiring_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestNewPoolNeverEchoesTheDatabaseURL(t *testing.T) {
	t.Parallel()
	_, _, err := wiring.NewPool(context.Background(), "postgres://u:hunter2@host:notaport/db")
	require.Error(t, err)
	assert.True(t, errors.Is(err, wiring.ErrDatabaseURL))
	assert.NotContains(t, err.Error(), "hunter2")
	assert.Contains(t, err.Error(), "invalid port", "what is wrong is said")

	for _, url := range []string{
		"postgres://u:hunter2 x@host/db",         // the reason speaks of the password
		"host=db port=nope password='hunter2 x'", // keyword/value
		"postgres://u:invalid port@host:nope/db", // the reason would repeat the password
		"password=port host=db port=nope",        // likewise, as a keyword
	} {
		_, _, err := wiring.NewPool(context.Background(), wiring.DatabaseURL(url))
		require.ErrorIs(t, err, wiring.ErrDatabaseURL, url)
		for _, secret := range []string{"hunter2", "invalid port@", "password=port"} {
			assert.NotContains(t, err.Error(), secret, url)
		}
	}
	_, _, err = wiring.NewPool(context.Background(), "postgres://u:port@host:nope/db")
	assert.Equal(t, "invalid database URL: the database URL does not parse (check its syntax)", err.Error(),
		"a reason that holds the password (invalid port) is not said")
}

// Without a connection string the PG* variables configure the pool, and
// the error says that they are what does not parse, and why.
func TestNewPoolSaysWhichPGVariablesDoNotParse(t *testing.T) {
	t.Setenv("PGHOST", "127.0.0.1") // over TCP: a unix socket ignores sslmode
	t.Setenv("PGSSLMODE", "sometimes")
	t.Setenv("PGPASSWORD", "hunter2")
	_, _, err := wiring.NewPool(context.Background(), "")
	require.ErrorIs(t, err, wiring.ErrDatabaseURL)
	assert.Equal(t, "invalid database URL: the PG* variables do not parse (failed to configure TLS (sslmode is invalid))", err.Error())

	// A reason that would repeat PGPASSWORD is not said.
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGCONNECT_TIMEOUT", "hunter2")
	_, _, err = wiring.NewPool(context.Background(), "")
	require.ErrorIs(t, err, wiring.ErrDatabaseURL)
	assert.NotContains(t, err.Error(), "hunter2")
}

// The notifier slot decides whether the store offers a listener, and so
// whether dispatchers wake on NOTIFY or only poll.
func TestNotifierSetsDecideTheListenCapability(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	pool, cleanup, err := wiring.NewPool(ctx, wiring.DatabaseURL(db.URL))
	require.NoError(t, err)
	t.Cleanup(cleanup)
	_, err = migrations.Up(ctx, pool, migrations.Options{Schema: schema})
	require.NoError(t, err)
	resolved, err := wiring.ResolveSchema(ctx, pool, wiring.SchemaName(schema))
	require.NoError(t, err)

	listener, err := wiring.NewListener(pool, resolved, nil, wiring.NoTelemetry())
	require.NoError(t, err)
	for name, tc := range map[string]struct {
		notifier ports.Notifier
		listen   bool
	}{
		"listen":    {listener, true},
		"poll only": {wiring.PollOnly(), false},
	} {
		store, closeStore, err := wiring.NewPostgresStore(ctx, pool, resolved, tc.notifier, wiring.NoTelemetry())
		require.NoError(t, err, name)
		assert.Equal(t, tc.listen, store.Capabilities().Listen, name)
		e, err := wiring.NewEngine(engine.Config{}, store, demo.Registry(), wiring.NoTelemetry(), nil)
		require.NoError(t, err, name)
		rt := wiring.NewPostgresRuntime(e, store, pool, resolved)
		assert.Equal(t, wiring.Schema(schema), rt.Schema)
		closeStore()
	}
}

func TestAStoreRefusesAnUnmigratedSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.SharedDatabase(t)
	pool, cleanup, err := wiring.NewPool(ctx, wiring.DatabaseURL(db.URL))
	require.NoError(t, err)
	t.Cleanup(cleanup)
	_, _, err = wiring.NewPostgresStore(ctx, pool, wiring.Schema(db.NewSchema(t)), wiring.PollOnly(), wiring.NoTelemetry())
	assert.True(t, errors.Is(err, migrations.ErrSchemaVersion), "%v", err)
}

// Without pool_max_conns the pool leaves room for the engine's batched
// writes beside its claims and signals; a size the connection string
// sets is kept.
func TestNewPoolSizesThePoolForTheEngineUnlessTheURLSetsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := pgtest.SharedDatabase(t)
	for name, tc := range map[string]struct {
		url  string
		want int32
	}{
		"unset": {db.URL, wiring.DefaultPoolSize},
		"set":   {db.URL + sep(db.URL) + "pool_max_conns=3", 3},
	} {
		pool, cleanup, err := wiring.NewPool(ctx, wiring.DatabaseURL(tc.url))
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, pool.Config().MaxConns, name)
		cleanup()
	}
}

// sep is what joins one more query parameter to a database URL.
func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

// The listener's session is told apart from the pool's in
// pg_stat_activity: it carries the pool's application_name with
// "-wake-listener" appended.
func TestTheListenerSessionIsNamedApartFromThePool(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	app := "wiring" + schema[len(schema)-9:] // the schema's random suffix
	pool, cleanup, err := wiring.NewPool(ctx, wiring.DatabaseURL(db.URL+sep(db.URL)+"application_name="+app))
	require.NoError(t, err)
	t.Cleanup(cleanup)
	_, err = migrations.Up(ctx, pool, migrations.Options{Schema: schema})
	require.NoError(t, err)
	listener, err := wiring.NewListener(pool, wiring.Schema(schema), nil, wiring.NoTelemetry())
	require.NoError(t, err)
	_, err = listener.Listen(ctx)
	require.NoError(t, err)

	var names []string
	rows, err := pool.Query(ctx, `SELECT application_name FROM pg_stat_activity WHERE application_name LIKE $1 || '%' AND query LIKE 'LISTEN%'`, app)
	require.NoError(t, err)
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		names = append(names, name)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{app + "-wake-listener"}, names)
}
