package pgtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Shutdown is how Cluster.Stop takes its server down.
type Shutdown int

const (
	// ShutdownFast is PostgreSQL's fast shutdown (SIGINT): sessions are
	// terminated, transactions rolled back, and a checkpoint written.
	ShutdownFast Shutdown = iota
	// ShutdownImmediate is PostgreSQL's immediate shutdown (SIGQUIT): the
	// server quits without a checkpoint and recovers on the next start.
	ShutdownImmediate
	// ShutdownKill SIGKILLs the postmaster and every backend at once, as
	// a machine crash or the OOM killer would.
	ShutdownKill
)

// Cluster is a private local cluster owned by one test, which may stop
// (or crash) it and start it again to see how code copes with a database
// that goes away and comes back. Unlike the shared cluster, it loses no
// acknowledged commit when crashed. Other tests never share it. It needs the
// local PostgreSQL binaries (see the package documentation) whatever
// DOCKET_TEST_POSTGRES says, and is removed when the test ends.
type Cluster struct {
	srv     *server
	cluster *localCluster
}

// NewCluster starts a private cluster for t.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	binDir, err := findBinaries(machine)
	if err != nil {
		t.Fatalf("pgtest: a private cluster needs the local PostgreSQL binaries: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	srv, cluster, err := startLocalCluster(ctx, binDir)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		if err := cluster.stop(); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return &Cluster{srv: srv, cluster: cluster}
}

// NewDatabase creates a database on the cluster. It is not dropped: the
// cluster goes away with the test.
func (c *Cluster) NewDatabase(t testing.TB) *Database {
	t.Helper()
	db, err := c.srv.createDatabase(uniqueName("docket", t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// Stop takes the server down as mode says and waits until it has exited;
// connections fail and new ones are refused until Start.
func (c *Cluster) Stop(t testing.TB, mode Shutdown) {
	t.Helper()
	cmd := c.cluster.cmd
	var err error
	switch mode {
	case ShutdownFast:
		err = cmd.Process.Signal(syscall.SIGINT)
	case ShutdownImmediate:
		err = cmd.Process.Signal(syscall.SIGQUIT)
	case ShutdownKill:
		// Every backend dies at once, without the postmaster's help.
		err = c.signalAll(syscall.SIGKILL)
	default:
		t.Fatalf("pgtest: unknown shutdown mode %d", mode)
	}
	if err != nil {
		t.Fatalf("pgtest: signal postgres in %s: %v", c.cluster.dir, err)
	}
	select {
	case <-c.cluster.proc.Exited():
	case <-time.After(30 * time.Second):
		t.Fatalf("pgtest: postgres in %s did not stop:\n%s", c.cluster.dir, c.cluster.logTail())
	}
}

// signalAll sends sig to the postmaster and its children. Each child is a
// session leader of its own, so the postmaster's process group does not
// reach them.
func (c *Cluster) signalAll(sig syscall.Signal) error {
	pid := c.cluster.cmd.Process.Pid
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, stat := range stats {
		b, err := os.ReadFile(stat)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, not ')'.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(stat)))
			_ = syscall.Kill(child, sig)
		}
	}
	return syscall.Kill(pid, sig)
}

// Start starts the stopped server again on the same data directory and
// socket, and waits until it accepts connections (after crash recovery,
// when it was not shut down cleanly).
func (c *Cluster) Start(t testing.TB) {
	t.Helper()
	if err := c.cluster.start(); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := c.cluster.waitReady(ctx, c.srv.adminURL); err != nil {
		t.Fatalf("pgtest: restart: %v", err)
	}
}

// startLocalCluster is startLocal that also returns the cluster.
func startLocalCluster(ctx context.Context, binDir string) (*server, *localCluster, error) {
	var cluster *localCluster
	srv, err := startLocalWith(ctx, binDir, true, func(c *localCluster) { cluster = c })
	if err != nil {
		return nil, nil, fmt.Errorf("start a private cluster: %w", err)
	}
	return srv, cluster, nil
}
