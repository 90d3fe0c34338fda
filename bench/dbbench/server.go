// Package dbbench holds the database-facing benchmark scenarios: the
// pgbench-shaped limit probe (the database's own ceiling for a commit
// shaped like one Docket moment), River draining pre-inserted no-op jobs,
// and DBOS Transact workflows. Each scenario runs in its own fresh
// database on the server named by DOCKET_BENCH_DATABASE_URL.
//
// It is not a load generator for other hosts: the URL must point at a
// server on this machine (the default is 127.0.0.1), and every loop is
// bounded in count and time.
package dbbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the server URL; its role must be
// allowed to CREATE DATABASE.
const EnvURL = "DOCKET_BENCH_DATABASE_URL"

// DefaultURL is used when EnvURL is unset: the machine's own PostgreSQL.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// Server is a PostgreSQL server on which scenarios create their databases.
type Server struct {
	url *url.URL
}

// ErrNoServer is returned by Open when no server answers.
var ErrNoServer = errors.New("dbbench: no PostgreSQL server")

// Open finds the server of EnvURL (else DefaultURL) and checks that it
// answers within a few seconds.
func Open(ctx context.Context) (*Server, error) {
	raw := os.Getenv(EnvURL)
	if raw == "" {
		raw = DefaultURL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is not a URL: %v", ErrNoServer, EnvURL, err)
	}
	s := &Server{url: u}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.urlFor(adminDatabase(u)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
	}
	return s, conn.Close(ctx)
}

// adminDatabase is the database Open connects to for CREATE/DROP: the
// URL's own, else "postgres".
func adminDatabase(u *url.URL) string {
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		return db
	}
	return "postgres"
}

func (s *Server) urlFor(database string) string {
	u := *s.url
	u.Path = "/" + database
	return u.String()
}

// Describe is the server's version and durability settings, for the report.
func (s *Server) Describe(ctx context.Context) string {
	conn, err := pgx.Connect(ctx, s.urlFor(adminDatabase(s.url)))
	if err != nil {
		return ""
	}
	defer conn.Close(ctx)
	var version, fsync, syncCommit string
	if err := conn.QueryRow(ctx, "select current_setting('server_version'), current_setting('fsync'), current_setting('synchronous_commit')").
		Scan(&version, &fsync, &syncCommit); err != nil {
		return ""
	}
	return fmt.Sprintf("PostgreSQL %s (fsync %s, synchronous_commit %s)", version, fsync, syncCommit)
}

// Database is one fresh database owned by one scenario.
type Database struct {
	Name string
	URL  string
	srv  *Server
}

// Fresh creates an empty database named after the scenario.
func (s *Server) Fresh(ctx context.Context, scenario string) (*Database, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "docket_bench_" + sanitize(scenario) + "_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, s.urlFor(adminDatabase(s.url)))
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	return &Database{Name: name, URL: s.urlFor(name), srv: s}, nil
}

// Drop removes the database, ending any connection still open on it.
func (d *Database) Drop(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, d.srv.urlFor(adminDatabase(d.srv.url)))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{d.Name}.Sanitize()+" WITH (FORCE)")
	return err
}

// sanitize keeps [a-z0-9_] so a scenario name makes a plain identifier.
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
