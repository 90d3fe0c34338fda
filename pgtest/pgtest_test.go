package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustServer(t *testing.T, source Source) *server {
	t.Helper()
	srv, err := serverFor(source)
	require.NoError(t, err)
	return srv
}

// databaseExists asks the server's maintenance database about name.
func databaseExists(t *testing.T, srv *server, name string) bool {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, srv.adminURL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists))
	return exists
}

func TestConcurrentlyCreatedDatabasesAreIsolatedAndDropped(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		server func(t *testing.T) *server
	}{
		{"discovered source", func(t *testing.T) *server { return mustServer(t, sourceFromEnv()) }},
		{"local binaries", func(t *testing.T) *server { return mustServer(t, SourceLocal) }},
		{"server URL", func(t *testing.T) *server {
			// The URL source against DOCKET_TEST_DATABASE_URL when set, else
			// against the local cluster's own URL, so the path always runs.
			dsn := os.Getenv(EnvURL)
			if dsn == "" {
				dsn = mustServer(t, SourceLocal).adminURL
			}
			srv, err := openURL(testContext(t), dsn)
			require.NoError(t, err)
			require.Equal(t, SourceURL, srv.source)
			return srv
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := tc.server(t)
			ctx := testContext(t)

			var dbs [2]*Database
			var errs [2]error
			var wg sync.WaitGroup
			for i := range dbs {
				wg.Go(func() { dbs[i], errs[i] = srv.createDatabase(uniqueName("docket", t.Name())) })
			}
			wg.Wait()
			for i := range dbs {
				require.NoError(t, errs[i])
			}
			t.Cleanup(func() {
				for _, db := range dbs {
					_ = srv.dropDatabase(db.Name)
				}
			})
			require.NotEqual(t, dbs[0].Name, dbs[1].Name)

			// Same table name in both; each must see only its own row.
			for i, db := range dbs {
				conn, err := pgx.Connect(ctx, db.URL)
				require.NoError(t, err)
				_, err = conn.Exec(ctx, `CREATE TABLE marker (owner text NOT NULL)`)
				require.NoError(t, err)
				_, err = conn.Exec(ctx, `INSERT INTO marker VALUES ($1)`, fmt.Sprint(i))
				require.NoError(t, err)
				require.NoError(t, conn.Close(ctx))
			}
			for i, db := range dbs {
				conn, err := pgx.Connect(ctx, db.URL)
				require.NoError(t, err)
				var owners []string
				var current string
				require.NoError(t, conn.QueryRow(ctx, `SELECT array_agg(owner), current_database() FROM marker`).Scan(&owners, &current))
				require.NoError(t, conn.Close(ctx))
				assert.Equal(t, []string{fmt.Sprint(i)}, owners)
				assert.Equal(t, db.Name, current)
			}

			for _, db := range dbs {
				require.NoError(t, srv.dropDatabase(db.Name))
				assert.False(t, databaseExists(t, srv, db.Name), "database %s survived its drop", db.Name)
			}
		})
	}
}

func TestNewDropsTheDatabaseWhenTheTestEnds(t *testing.T) {
	t.Parallel()
	var db *Database
	t.Run("owner", func(t *testing.T) {
		db = New(t)
		conn := db.Connect(t)
		pool := db.Pool(t)
		var viaConn, viaPool string
		require.NoError(t, conn.QueryRow(context.Background(), `SELECT current_database()`).Scan(&viaConn))
		require.NoError(t, pool.QueryRow(context.Background(), `SELECT current_database()`).Scan(&viaPool))
		assert.Equal(t, db.Name, viaConn)
		assert.Equal(t, db.Name, viaPool)
	})
	require.NotNil(t, db)
	if forced := sourceFromEnv(); forced != SourceAuto {
		assert.Equal(t, forced, db.Source(), "a forced source is the one used")
	} else {
		assert.Contains(t, []Source{SourceURL, SourceContainer, SourceLocal}, db.Source())
	}
	assert.False(t, databaseExists(t, db.srv, db.Name), "database %s outlived its test", db.Name)
}

func TestNewSchemaGivesEachTestItsOwnSchema(t *testing.T) {
	t.Parallel()
	db := New(t)
	var schemas []string
	for _, label := range []string{"first", "second"} {
		t.Run(label, func(t *testing.T) {
			schema := db.NewSchema(t)
			assert.Regexp(t, `^[a-z_][a-z0-9_]*$`, schema)
			assert.LessOrEqual(t, len(schema), 63)
			conn := db.Connect(t)
			table := pgx.Identifier{schema, "marker"}.Sanitize()
			_, err := conn.Exec(context.Background(), `CREATE TABLE `+table+` (owner text)`)
			require.NoError(t, err)
			_, err = conn.Exec(context.Background(), `INSERT INTO `+table+` VALUES ($1)`, label)
			require.NoError(t, err)
			var owners []string
			require.NoError(t, conn.QueryRow(context.Background(), `SELECT array_agg(owner) FROM `+table).Scan(&owners))
			assert.Equal(t, []string{label}, owners)
			schemas = append(schemas, schema)
		})
	}
	require.Len(t, schemas, 2)
	assert.NotEqual(t, schemas[0], schemas[1])
	conn := db.Connect(t)
	var left int
	require.NoError(t, conn.QueryRow(context.Background(),
		`SELECT count(*) FROM pg_namespace WHERE nspname = ANY($1)`, schemas).Scan(&left))
	assert.Zero(t, left, "schemas outlived their tests")
}

func TestSharedDatabaseIsOnePerProcess(t *testing.T) {
	t.Parallel()
	first := SharedDatabase(t)
	second := SharedDatabase(t)
	assert.Same(t, first, second)
	assert.True(t, databaseExists(t, first.srv, first.Name))
}

func TestLocalClusterRunsUnprivilegedOnAPrivateSocket(t *testing.T) {
	t.Parallel()
	srv := mustServer(t, SourceLocal)
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, srv.adminURL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()

	var listen, socketDir, fsync string
	var backend int
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('listen_addresses'),
		current_setting('unix_socket_directories'), current_setting('fsync'), pg_backend_pid()`).
		Scan(&listen, &socketDir, &fsync, &backend))
	assert.Empty(t, listen, "the cluster must not listen on TCP")
	assert.Equal(t, "off", fsync)
	assert.Contains(t, srv.adminURL, url.QueryEscape(socketDir))
	assert.Contains(t, filepath.Base(socketDir), localDirPrefix)

	info, err := os.Stat(fmt.Sprintf("/proc/%d", backend))
	require.NoError(t, err)
	if os.Geteuid() == 0 {
		assert.NotZero(t, info.Sys().(*syscall.Stat_t).Uid, "PostgreSQL must not run as root")
	} else {
		assert.Equal(t, uint32(os.Geteuid()), info.Sys().(*syscall.Stat_t).Uid)
	}
}

func TestConcurrentLocalClustersDoNotCollide(t *testing.T) {
	t.Parallel()
	binDir, err := findBinaries(machine)
	require.NoError(t, err)

	var shared, private *server
	var sharedErr, privateErr error
	var wg sync.WaitGroup
	wg.Go(func() { shared, sharedErr = serverFor(SourceLocal) })
	wg.Go(func() { private, privateErr = startLocal(testContext(t), binDir) })
	wg.Wait()
	require.NoError(t, sharedErr)
	require.NoError(t, privateErr)
	assert.NotEqual(t, shared.adminURL, private.adminURL)

	db, err := private.createDatabase(uniqueName("docket", t.Name()))
	require.NoError(t, err)
	assert.False(t, databaseExists(t, shared, db.Name), "the clusters share a catalog")

	dir := clusterDir(t, private)
	require.NoError(t, private.close())
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the stopped cluster's directory %s remains", dir)
}

// clusterDir extracts the socket directory from a local server's URL.
func clusterDir(t *testing.T, srv *server) string {
	t.Helper()
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, srv.adminURL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(ctx) }()
	var dir string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('unix_socket_directories')`).Scan(&dir))
	return dir
}

func TestClusterStopsAndStartsAgainWithItsData(t *testing.T) {
	t.Parallel()
	cluster := NewCluster(t)
	db := cluster.NewDatabase(t)
	ctx := testContext(t)
	conn, err := pgx.Connect(ctx, db.URL)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(ctx, `CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)`)
	require.NoError(t, err)

	for _, mode := range []Shutdown{ShutdownFast, ShutdownImmediate, ShutdownKill} {
		cluster.Stop(t, mode)
		_, err := pgx.Connect(ctx, db.URL)
		require.Error(t, err, "mode %d: the stopped server accepted a connection", mode)
		_, err = conn.Exec(ctx, `SELECT 1`)
		require.Error(t, err, "mode %d: a session survived", mode)

		cluster.Start(t)
		conn, err = pgx.Connect(ctx, db.URL)
		require.NoError(t, err)
		var n int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n))
		assert.Equal(t, 1, n, "mode %d", mode)
		_, err = conn.Exec(ctx, `INSERT INTO kept VALUES (1)`)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, `DELETE FROM kept WHERE ctid <> (SELECT min(ctid) FROM kept)`)
		require.NoError(t, err)
	}
}
