package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The default demo starts a private PostgreSQL from the local binaries in
// a data directory that survives the demo: a second demo reuses it.
func TestDemoOnAPrivatePostgreSQL(t *testing.T) {
	t.Parallel()
	// The cluster may run as another user (PostgreSQL refuses root), who
	// must reach the directory: not t.TempDir, whose parent is private.
	dir, err := os.MkdirTemp("", "docket-demo-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })

	c := newCLI(t, nil)
	var first demoJSON
	res := c.ok("demo", "--runs", "5", "--data-dir", dir, "--json")
	require.NoError(t, jsonUnmarshal(res.stdout, &first))
	assert.Equal(t, "postgres", first.Backend)
	assert.Equal(t, "embedded", first.Database)
	assert.Contains(t, res.stderr, "initializing a private PostgreSQL cluster in "+dir)
	checkDemo(t, first, 5)

	res = c.ok("demo", "--runs", "3", "--data-dir", dir)
	assert.NotContains(t, res.stderr, "initializing", "the cluster is kept between demos")
	assert.Contains(t, res.stderr, "a private PostgreSQL in "+dir+" (kept between demos)")
	assert.Contains(t, res.stdout, "3 runs finished")

	assert.NoFileExists(t, dir+"/data/postmaster.pid", "the server is stopped at the end")
}

// A private PostgreSQL asked for with --data-dir or --pg-bin-dir that
// cannot start is an error: the demo does not fall back to memory, where
// the user would think the runs kept. Without them, a machine without
// binaries still runs the demo in memory.
func TestDemoRefusesAnExplicitPrivatePostgreSQLItCannotStart(t *testing.T) {
	t.Parallel()
	notACluster := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notACluster, "notes.txt"), []byte("mine"), 0o600))
	// Binaries are found (never run: the directory is refused first),
	// whatever this machine has installed.
	binaries := t.TempDir()
	for _, name := range []string{"initdb", "postgres"} {
		require.NoError(t, os.WriteFile(filepath.Join(binaries, name), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
	c := newCLI(t, nil)
	c.opts.PostgresBinaries.Path = binaries
	res := c.fails(ExitFailure, "demo", "--runs", "1", "--data-dir", notACluster)
	assert.Contains(t, res.stderr, "the private PostgreSQL of --data-dir "+notACluster+" did not start")
	assert.Contains(t, res.stderr, `holds "notes.txt"`)
	assert.Contains(t, res.stderr, "--memory")
	assert.Empty(t, res.stdout)
	assert.FileExists(t, filepath.Join(notACluster, "notes.txt"))

	noBinaries := t.TempDir()
	res = c.fails(ExitFailure, "demo", "--runs", "1", "--pg-bin-dir", noBinaries)
	assert.Contains(t, res.stderr, "the private PostgreSQL of --pg-bin-dir "+noBinaries+" did not start: no PostgreSQL server binaries found")
	assert.Empty(t, res.stdout)
}
