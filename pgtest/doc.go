// Package pgtest gives tests a real, isolated PostgreSQL database. It is
// the shared harness of every module whose tests touch PostgreSQL; it is
// not for production code.
//
// Each test asks for its own database (New) or its own schema in a
// database shared by the test process (SharedDatabase, then NewSchema), so
// test packages run in parallel processes and the suite can run twice in a
// row. Databases and schemas are dropped in t.Cleanup.
//
// # Where the server comes from
//
// Once per test process, the first call finds a server, in this order:
//
//  1. DOCKET_TEST_DATABASE_URL, when set: a postgres:// URL whose role may
//     CREATE DATABASE (e.g. postgres://postgres@127.0.0.1:5432/postgres);
//     keyword/value connection strings are not accepted.
//  2. testcontainers-go's PostgreSQL module, only when a Docker engine
//     answers its socket (DOCKER_HOST, else the usual socket paths); the
//     probe gives up within about a second, so machines without Docker are
//     not slowed down.
//  3. A throwaway cluster started from the local PostgreSQL binaries
//     (initdb and postgres next to the initdb found on PATH, else the
//     highest version under /usr/lib/postgresql/*/bin) in a fresh temporary
//     directory, listening only on a unix socket in that directory, with
//     fsync off. Each test process starts its own, so parallel processes
//     never collide. When the tests run as root, initdb and postgres run as
//     the "postgres" user (else "nobody"), because PostgreSQL refuses root.
//  4. Otherwise every test fails with a message naming the three options.
//
// DOCKET_TEST_POSTGRES=url|container|local forces one source (auto, the
// default, is the order above); NewFrom does the same from code.
//
// # A database that goes away
//
// NewCluster starts a private cluster for one test from the local binaries,
// which the test may stop (a fast or immediate shutdown, or a SIGKILL of
// every server process) and start again, to check how code copes with a
// database restart or crash.
//
// # TestMain
//
// A package using pgtest should run its tests through Main, which stops the
// cluster or container and drops the shared database after the tests:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Without Main a local cluster is still stopped when the test process
// exits (it gets SIGQUIT when its parent dies), and its directory is
// removed by the next process that starts a cluster; SharedDatabase
// requires Main.
package pgtest
