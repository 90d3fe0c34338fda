package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
	"github.com/docketgo/docket/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// result is one in-process invocation.
type result struct {
	code   int
	stdout string
	stderr string
}

// cli runs docket in-process with its own environment (nothing leaks in
// from the test process) and captured streams.
type cli struct {
	t        *testing.T
	env      map[string]string
	stdin    string
	opts     Options
	terminal bool // pretend stderr is a terminal (progress bars)
}

func newCLI(t *testing.T, env map[string]string) *cli {
	t.Helper()
	if env == nil {
		env = map[string]string{}
	}
	return &cli{t: t, env: env}
}

// onDatabase returns a CLI configured (through DOCKET_* variables) for a
// fresh, migrated schema of the shared test database.
func onDatabase(t *testing.T) (*cli, *pgtest.Database, string) {
	t.Helper()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	c := newCLI(t, map[string]string{"DOCKET_DATABASE_URL": db.URL, "DOCKET_SCHEMA": schema})
	c.ok("migrate", "up")
	return c, db, schema
}

func (c *cli) run(args ...string) result {
	return c.runContext(context.Background(), args...)
}

func (c *cli) runContext(ctx context.Context, args ...string) result {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	opts := c.opts
	opts.Getenv = func(k string) string { return c.env[k] }
	opts.Terminal = func(io.Writer) bool { return c.terminal }
	code := Main(ctx, args, IO{In: strings.NewReader(c.stdin), Out: &stdout, Err: &stderr}, opts)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// runUntilOutput runs a command that goes on until interrupted (a follow)
// and interrupts it, as Ctrl-C would, once it has written its first output:
// by then it is past its start-up, however slow the machine.
func (c *cli) runUntilOutput(args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	opts := c.opts
	opts.Getenv = func(k string) string { return c.env[k] }
	opts.Terminal = func(io.Writer) bool { return c.terminal }
	out := &cancelOnWrite{w: &stdout, cancel: cancel}
	code := Main(ctx, args, IO{In: strings.NewReader(c.stdin), Out: out, Err: &stderr}, opts)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// cancelOnWrite passes writes on and cancels a context after the first.
type cancelOnWrite struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.cancel()
	return n, err
}

// ok runs a command that must succeed.
func (c *cli) ok(args ...string) result {
	c.t.Helper()
	res := c.run(args...)
	require.Equal(c.t, ExitOK, res.code, "docket %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
	return res
}

// okJSON runs a command with --json and decodes its stdout into v.
func (c *cli) okJSON(v any, args ...string) {
	c.t.Helper()
	res := c.ok(append(args, "--json")...)
	require.NoError(c.t, json.Unmarshal([]byte(res.stdout), v), res.stdout)
}

// fails runs a command that must fail with code and one stderr line.
func (c *cli) fails(code int, args ...string) result {
	c.t.Helper()
	res := c.run(args...)
	assert.Equal(c.t, code, res.code, "docket %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.stdout, res.stderr)
	oneLineError(c.t, res.stderr)
	return res
}

// oneLineError checks that stderr is exactly one "docket: ..." line with
// no stack trace.
func oneLineError(t *testing.T, stderr string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	assert.Len(t, lines, 1, "one line: %q", stderr)
	assert.True(t, strings.HasPrefix(lines[0], "docket: "), "prefixed: %q", stderr)
	assert.NotContains(t, stderr, "goroutine ")
	assert.NotContains(t, stderr, ".go:")
}

// worker runs `docket worker` in-process until the test ends.
func (c *cli) worker(extra ...string) {
	c.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var res result
	go func() {
		defer wg.Done()
		res = c.runContext(ctx, append([]string{"worker", "--poll-interval", "50ms"}, extra...)...)
	}()
	c.t.Cleanup(func() {
		cancel()
		wg.Wait()
		assert.Equal(c.t, ExitOK, res.code, "worker stderr: %s", res.stderr)
		assert.Contains(c.t, res.stderr, "docket worker: stopped")
	})
}

// graphFile writes a graph document to a temporary file.
func graphFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "graph.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

// demoGraphFile writes the demo graph's JSON document.
func demoGraphFile(t *testing.T) string {
	t.Helper()
	g, err := demo.Graph()
	require.NoError(t, err)
	b, err := json.Marshal(g)
	require.NoError(t, err)
	return graphFile(t, string(b))
}

// jsonLines decodes one JSON object per line.
func jsonLines[T any](t *testing.T, out string) []T {
	t.Helper()
	var items []T
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var v T
		require.NoError(t, json.Unmarshal([]byte(line), &v), line)
		items = append(items, v)
	}
	return items
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
