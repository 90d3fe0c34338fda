package cli

import (
	"os"
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
