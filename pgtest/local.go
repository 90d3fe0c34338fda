package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docketgo/docket/pgtest/pgproc"
)

const (
	// localDirPrefix names every cluster directory, so later processes can
	// find and remove the ones whose owner died.
	localDirPrefix = "docket-pgtest-"
	// ownerLockName is flock-ed by the owning process for its lifetime.
	ownerLockName = "owner.lock"
	// staleUnlockedAge is how old a cluster directory without a lock file
	// must be before a sweep removes it (it may still be being set up).
	staleUnlockedAge = 10 * time.Minute
	// localSuperuser is the bootstrap superuser initdb creates.
	localSuperuser = "postgres"
	// localPort only names the socket file; the cluster has no TCP listener.
	localPort = 5432
)

// localCluster is a throwaway cluster in a private temporary directory,
// reachable only through the unix socket in that directory.
type localCluster struct {
	dir  string
	lock *os.File
	cmd  *exec.Cmd
	proc *pgproc.Process
	// binDir, data and cred start the server again after a Cluster
	// stopped it.
	binDir string
	data   string
	cred   *syscall.Credential
	// durable keeps synchronous_commit on: a server that is crashed on
	// purpose must not lose the commits it acknowledged.
	durable bool
}

// startLocal creates and starts a private cluster from the binaries in
// binDir and returns it as a server.
func startLocal(ctx context.Context, binDir string) (*server, error) {
	return startLocalWith(ctx, binDir, false, nil)
}

// startLocalWith is startLocal that hands the started cluster to started;
// durable keeps synchronous_commit on.
func startLocalWith(ctx context.Context, binDir string, durable bool, started func(*localCluster)) (srv *server, err error) {
	base := tempBase()
	sweepStale(base)

	dir, err := os.MkdirTemp(base, localDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("create a cluster directory: %w", err)
	}
	cluster := &localCluster{dir: dir, binDir: binDir, durable: durable}
	defer func() {
		if err != nil {
			cluster.release()
		}
	}()
	if cluster.lock, err = lockOwner(dir); err != nil {
		return nil, err
	}

	cred, err := clusterCredential()
	if err != nil {
		return nil, err
	}
	if cred != nil {
		// PostgreSQL refuses to run as root: the cluster's user owns the
		// directory instead.
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("hand %s to uid %d: %w", dir, cred.Uid, err)
		}
	}

	data := filepath.Join(dir, "data")
	initdb := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", data, "-U", localSuperuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.Env = pgproc.Env(dir)
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb in %s: %w\n%s", dir, err, tail(string(out)))
	}

	cluster.data, cluster.cred = data, cred
	if err := cluster.start(); err != nil {
		return nil, err
	}
	adminURL := (&url.URL{
		Scheme:   "postgres",
		User:     url.User(localSuperuser),
		Path:     "/postgres",
		RawQuery: url.Values{"host": {dir}, "port": {strconv.Itoa(localPort)}, "sslmode": {"disable"}}.Encode(),
	}).String()
	if err := cluster.waitReady(ctx, adminURL); err != nil {
		_ = cluster.stop()
		return nil, err
	}
	srv, err = connectServer(ctx, SourceLocal, "local cluster "+dir+" ("+binDir+")", adminURL, cluster.stop)
	if err != nil {
		_ = cluster.stop()
		return nil, err
	}
	if started != nil {
		started(cluster)
	}
	return srv, nil
}

// start launches postgres in the background through pgproc, so that the
// server dies with the test process (SIGQUIT).
func (c *localCluster) start() error {
	binDir, data, cred := c.binDir, c.data, c.cred
	// Appended to, so a restarted server's log follows the first one's.
	logFile, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("create the cluster log: %w", err)
	}
	defer func() { _ = logFile.Close() }()

	synchronous := "off"
	if c.durable {
		synchronous = "on"
	}
	c.cmd = exec.Command(filepath.Join(binDir, "postgres"),
		"-D", data,
		"-p", strconv.Itoa(localPort),
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories="+c.dir,
		"-c", "fsync=off", // the operating system never crashes under a test
		"-c", "synchronous_commit="+synchronous,
		"-c", "full_page_writes=off",
		"-c", "max_connections=200",
	)
	c.cmd.Dir = c.dir
	c.cmd.Env = pgproc.Env(c.dir)
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	c.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		Setpgid:    true,            // a terminal's ^C reaches the tests, not the server
		Pdeathsig:  syscall.SIGQUIT, // immediate shutdown when the test process dies
	}
	proc, err := pgproc.Start(c.cmd)
	if err != nil {
		return fmt.Errorf("start postgres in %s: %w", c.dir, err)
	}
	c.proc = proc

	return nil
}

// waitReady polls the socket until the server accepts connections.
func (c *localCluster) waitReady(ctx context.Context, adminURL string) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(attempt, adminURL)
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		select {
		case <-c.proc.Exited():
			return fmt.Errorf("postgres in %s exited during startup (%v):\n%s", c.dir, c.proc.Err(), c.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres in %s not ready: %v (last error: %v):\n%s", c.dir, ctx.Err(), err, c.logTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop shuts the server down (fast shutdown, then SIGKILL) and removes
// its directory.
func (c *localCluster) stop() error {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-c.proc.Exited():
		case <-time.After(30 * time.Second):
			_ = c.cmd.Process.Kill()
			<-c.proc.Exited()
		}
	}
	return c.release()
}

// release drops the owner lock and removes the directory.
func (c *localCluster) release() error {
	if c.lock != nil {
		_ = c.lock.Close()
	}
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("remove cluster directory: %w", err)
	}
	return nil
}

func (c *localCluster) logTail() string {
	out, _ := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	return tail(string(out))
}

// lockOwner creates dir's owner lock. It locks a temporary file and only
// then renames it into place, so a sweep never sees an unlocked lock file
// of a live cluster.
func lockOwner(dir string) (*os.File, error) {
	pending := filepath.Join(dir, ownerLockName+".pending")
	f, err := os.OpenFile(pending, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create the owner lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock the owner lock: %w", err)
	}
	if err := os.Rename(pending, filepath.Join(dir, ownerLockName)); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("publish the owner lock: %w", err)
	}
	return f, nil
}

// sweepStale removes cluster directories left by test processes that died
// without stopping their cluster: their owner lock is no longer held. (An
// orphaned postmaster, if any, shuts itself down within a minute once its
// data directory is gone.)
func sweepStale(base string) {
	dirs, _ := filepath.Glob(filepath.Join(base, localDirPrefix+"*"))
	for _, dir := range dirs {
		f, err := os.Open(filepath.Join(dir, ownerLockName))
		if err != nil {
			if info, statErr := os.Stat(dir); statErr == nil && time.Since(info.ModTime()) > staleUnlockedAge {
				_ = os.RemoveAll(dir)
			}
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(dir)
		}
		_ = f.Close()
	}
}

// clusterCredential returns the unprivileged user to run PostgreSQL as
// when the tests run as root, and nil otherwise.
func clusterCredential() (*syscall.Credential, error) {
	u, err := pgproc.Unprivileged()
	if u == nil || err != nil {
		return nil, err
	}
	return u.Cred, nil
}

// tempBase is the parent of cluster directories: the system temporary
// directory unless its path would push the socket path past the unix limit.
func tempBase() string {
	if base := os.TempDir(); len(base) <= 60 {
		return base
	}
	return "/tmp"
}

// tail returns the last lines of a log for an error message.
func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
