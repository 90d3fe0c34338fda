package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/cmd/wiring"
	"github.com/docketgo/docket/pgtest"
)

func TestMain(m *testing.M) {
	if os.Getenv(signalChildEnv) != "" {
		signalChild()
		return
	}
	pgtest.Main(m)
}

// signalChildEnv makes the test binary act as signalChild instead of
// running tests.
const signalChildEnv = "DOCKET_TEST_SIGNAL_CHILD"

// signalChild waits for its first interrupt, says so, and then stays busy
// for a minute, as a worker whose drain is slow does.
func signalChild() {
	ctx, stop := wiring.InterruptContext()
	defer stop()
	fmt.Println("ready")
	<-ctx.Done()
	fmt.Println("stopping")
	time.Sleep(time.Minute)
	os.Exit(0)
}

// A second Ctrl-C ends a process still busy after the first one.
func TestSecondInterruptEndsTheProcess(t *testing.T) {
	t.Parallel()
	child := exec.Command(os.Args[0], "-test.run", "^$")
	child.Env = append(os.Environ(), signalChildEnv+"=1")
	stdout, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	t.Cleanup(func() { _ = child.Process.Kill() })
	lines := bufio.NewScanner(stdout)

	require.True(t, lines.Scan())
	require.Equal(t, "ready", lines.Text())
	require.NoError(t, child.Process.Signal(os.Interrupt))
	require.True(t, lines.Scan())
	require.Equal(t, "stopping", lines.Text(), "the first interrupt ends the context")
	require.NoError(t, child.Process.Signal(os.Interrupt))

	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "the child exited on its own")
		status := exit.Sys().(syscall.WaitStatus)
		assert.True(t, status.Signaled() && status.Signal() == syscall.SIGINT, "ended by the second interrupt: %v", status)
	case <-time.After(30 * time.Second):
		t.Fatal("the second interrupt did not end the process")
	}
}

// binary is the docket executable TestBinary builds for its subtests.
var binary string

// TestBinary builds docket once and runs it as a user would: separate
// processes, real exit codes and signals.
func TestBinary(t *testing.T) {
	binary = filepath.Join(t.TempDir(), "docket")
	out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
	require.NoError(t, err, "build docket: %s", out)
	t.Run("help lists every command", testHelpListsEveryCommand)
	t.Run("against PostgreSQL", testBinaryAgainstPostgreSQL)
	t.Run("demo on memory", testBinaryDemoOnMemory)
}

// docket runs the binary with env added to a clean environment (no
// DOCKET_*, DATABASE_URL or PG* from the test process).
func docket(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(cleanEnv(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run docket: %v", err)
	}
	return out.String(), errOut.String(), code
}

func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "DOCKET_") || strings.HasPrefix(name, "PG") || name == "DATABASE_URL" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func testHelpListsEveryCommand(t *testing.T) {
	t.Parallel()
	stdout, _, code := docket(t, nil, "--help")
	require.Equal(t, 0, code)
	for _, c := range []string{"migrate", "worker", "demo", "runs", "interrupts", "graph", "events", "prune", "conformance"} {
		assert.Contains(t, stdout, "  "+c+" ")
	}
}

func testBinaryAgainstPostgreSQL(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	env := []string{"DATABASE_URL=" + db.URL}

	stdout, stderr, code := docket(t, env, "migrate", "up", "--json")
	require.Equal(t, 0, code, stderr)
	var migrated struct{ From, To int }
	require.NoError(t, json.Unmarshal([]byte(stdout), &migrated))
	assert.Equal(t, 2, migrated.To)

	_, stderr, code = docket(t, env, "graph", "publish", "--example")
	require.Equal(t, 0, code, stderr)

	stdout, stderr, code = docket(t, env, "runs", "show", "run_missing")
	assert.Equal(t, 3, code)
	assert.Empty(t, stdout)
	assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	assert.True(t, strings.HasPrefix(stderr, "docket: "), stderr)
	assert.Contains(t, stderr, "not found")

	// A worker stops cleanly on SIGTERM, finishing its work.
	worker := exec.Command(binary, "worker", "--poll-interval", "50ms")
	worker.Env = append(cleanEnv(), env...)
	var workerErr bytes.Buffer
	worker.Stderr = &workerErr
	require.NoError(t, worker.Start())
	stdout, stderr, code = docket(t, env, "runs", "start", "loan-review", "--input", `{"customer":"Ada","amount":100.0}`, "--await", "20s")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, ": done")
	require.NoError(t, worker.Process.Signal(syscall.SIGTERM))
	done := make(chan error, 1)
	go func() { done <- worker.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, workerErr.String())
	case <-time.After(20 * time.Second):
		_ = worker.Process.Kill()
		t.Fatal("the worker did not stop on SIGTERM")
	}
	assert.Contains(t, workerErr.String(), "docket worker: stopped")
}

func testBinaryDemoOnMemory(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := docket(t, []string{"DOCKET_MEMORY=true"}, "demo", "--runs", "4")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "Docket demo on the in-memory store")
	assert.Contains(t, stdout, "4 runs finished")
	assert.Contains(t, stdout, "interrupt_requested")
}
