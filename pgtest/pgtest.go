package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// EnvURL names the variable holding the URL of a server to use.
	EnvURL = "DOCKET_TEST_DATABASE_URL"
	// EnvSource names the variable that forces a Source.
	EnvSource = "DOCKET_TEST_POSTGRES"
)

// Source says where the test server comes from.
type Source string

const (
	// SourceAuto tries SourceURL, SourceContainer, SourceLocal in turn.
	SourceAuto Source = "auto"
	// SourceURL uses the server named by DOCKET_TEST_DATABASE_URL.
	SourceURL Source = "url"
	// SourceContainer starts a PostgreSQL container with testcontainers-go.
	SourceContainer Source = "container"
	// SourceLocal starts a private cluster from local PostgreSQL binaries.
	SourceLocal Source = "local"
)

// setupTimeout bounds finding or starting a server and creating a database.
const setupTimeout = 2 * time.Minute

// Database is one PostgreSQL database owned by one test (or, from
// SharedDatabase, by one test process).
type Database struct {
	// Name is the database name.
	Name string
	// URL connects to it as a superuser.
	URL string

	srv *server
}

// Source reports which source serves the database.
func (d *Database) Source() Source { return d.srv.source }

// New returns a fresh database on the server chosen by DOCKET_TEST_POSTGRES
// (default: SourceAuto), dropped when the test ends. It fails the test when
// no server can be found.
func New(t testing.TB) *Database {
	t.Helper()
	return NewFrom(t, sourceFromEnv())
}

// NewFrom is New with an explicit source.
func NewFrom(t testing.TB, source Source) *Database {
	t.Helper()
	srv, err := serverFor(source)
	if err != nil {
		t.Fatal(err)
	}
	return srv.newDatabase(t)
}

// Connect opens a connection to the database, closed when the test ends.
func (d *Database) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", d.Name, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// Pool opens a pgxpool on the database, closed when the test ends.
func (d *Database) Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, d.URL)
	if err != nil {
		t.Fatalf("pgtest: open a pool on %s: %v", d.Name, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		t.Fatalf("pgtest: ping %s: %v", d.Name, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewSchema creates a uniquely named, empty schema in the database and
// drops it (CASCADE) when the test ends. The name is a valid Docket schema
// name (^[a-z_][a-z0-9_]*$).
func (d *Database) NewSchema(t testing.TB) string {
	t.Helper()
	name := uniqueName("s", t.Name())
	if err := execOn(d.URL, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create schema %s in %s: %v", name, d.Name, err)
	}
	t.Cleanup(func() {
		if err := execOn(d.URL, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: drop schema %s: %v", name, err)
		}
	})
	return name
}

// execOn runs one statement on a short-lived connection.
func execOn(dsn, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

// mainActive is set by Main: process-lifetime resources are only handed
// out when something will release them.
var mainActive atomic.Bool

// Main runs the package's tests, then drops the shared databases and stops
// every cluster or container this process started, and exits with the
// tests' status. Call it from TestMain.
func Main(m *testing.M) {
	mainActive.Store(true)
	code := m.Run()
	if err := shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// SharedDatabase returns the test process's shared database on the source
// chosen by DOCKET_TEST_POSTGRES, created on first use and dropped by Main.
// Tests isolate themselves in it with NewSchema. It fails the test when the
// package does not run its tests through Main.
func SharedDatabase(t testing.TB) *Database {
	t.Helper()
	if !mainActive.Load() {
		t.Fatal("pgtest: SharedDatabase needs the package's TestMain to call pgtest.Main(m), which drops the database after the tests")
	}
	srv, err := serverFor(sourceFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	db, err := srv.shared()
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// server is one PostgreSQL server the process creates databases on.
type server struct {
	source   Source
	describe string
	// adminURL connects to a maintenance database as a superuser (or a
	// role that may CREATE DATABASE).
	adminURL string
	// versionNum is server_version_num.
	versionNum int
	// stop releases what the source started (nil for SourceURL).
	stop func() error

	sharedOnce sync.Once
	sharedDB   *Database
	sharedErr  error
}

// connectServer checks that adminURL answers and records its version.
func connectServer(ctx context.Context, source Source, describe, adminURL string, stop func() error) (*server, error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close(context.Background()) }()
	var versionNum int
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&versionNum); err != nil {
		return nil, err
	}
	return &server{source: source, describe: describe, adminURL: adminURL, versionNum: versionNum, stop: stop}, nil
}

// newDatabase creates a database named after the test and drops it when
// the test ends.
func (s *server) newDatabase(t testing.TB) *Database {
	t.Helper()
	db, err := s.createDatabase(uniqueName("docket", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pgtest: database %s on %s", db.Name, s.describe)
	t.Cleanup(func() {
		if err := s.dropDatabase(db.Name); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return db
}

func (s *server) createDatabase(name string) (*Database, error) {
	// template0 rather than template1: a session connected to template1
	// (anyone's) makes CREATE DATABASE fail, and template0 is pristine.
	if err := execOn(s.adminURL, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE template0"); err != nil {
		return nil, fmt.Errorf("pgtest: create database %s on %s: %w", name, s.describe, err)
	}
	dbURL, err := withDatabase(s.adminURL, name)
	if err != nil {
		return nil, err
	}
	return &Database{Name: name, URL: dbURL, srv: s}, nil
}

func (s *server) dropDatabase(name string) error {
	drop := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize()
	if s.versionNum >= 130000 {
		drop += " WITH (FORCE)" // ends connections a test leaked
	} else {
		terminate := "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1"
		if err := execOn(s.adminURL, terminate, name); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
	}
	if err := execOn(s.adminURL, drop); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

func (s *server) shared() (*Database, error) {
	s.sharedOnce.Do(func() {
		s.sharedDB, s.sharedErr = s.createDatabase(uniqueName("docket_shared", ""))
	})
	return s.sharedDB, s.sharedErr
}

// close drops the shared database and stops what the source started.
func (s *server) close() error {
	var errs []string
	if s.sharedDB != nil {
		if err := s.dropDatabase(s.sharedDB.Name); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if s.stop != nil {
		if err := s.stop(); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", s.describe, strings.Join(errs, "; "))
	}
	return nil
}

// withDatabase returns dsn (a URL) pointing at database name.
func withDatabase(dsn, name string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("pgtest: %q is not a postgres:// URL", redact(dsn))
	}
	u.Path = "/" + name
	u.RawPath = ""
	return u.String(), nil
}

// redact hides a password in a URL for messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// uniqueName builds a lower-case identifier: prefix, a readable slice of
// the test name, and 8 random hex digits; at most 63 bytes.
func uniqueName(prefix, testName string) string {
	var b strings.Builder
	b.WriteString(prefix)
	if testName != "" {
		b.WriteByte('_')
		for _, r := range strings.ToLower(testName) {
			if b.Len() >= 40 {
				break
			}
			if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
				b.WriteRune(r)
			} else {
				b.WriteByte('_')
			}
		}
	}
	random := make([]byte, 4)
	_, _ = rand.Read(random)
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(random))
	return b.String()
}
