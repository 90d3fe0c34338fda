// Package embedpg runs a private PostgreSQL server for `docket demo`: it
// initializes a cluster from the local PostgreSQL binaries in a data
// directory that is kept between runs, starts it on a unix socket in that
// directory only (no TCP listener), and stops it when asked. PostgreSQL
// refuses to run as root, so under root the cluster runs as the
// unprivileged "postgres" user (else "nobody"), which owns the directory.
//
// It is for the demo's zero-setup default, not for production or tests
// (tests use pgtest).
package embedpg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docketgo/docket/pgtest/pgproc"
)

// ErrNoBinaries reports that no directory holds both initdb and postgres.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries found")

// ErrBusy reports that another process holds the data directory.
var ErrBusy = errors.New("the demo database is in use by another process")

const (
	// superuser is the bootstrap role initdb creates.
	superuser = "postgres"
	// port only names the socket file; the server has no TCP listener.
	port = 5432
	// readyTimeout bounds the wait for the server to accept connections
	// (crash recovery after an interrupted demo included).
	readyTimeout = 60 * time.Second
	// stopTimeout bounds a fast shutdown before the server is killed.
	stopTimeout = 30 * time.Second
	// maxSocketPath is the unix socket path limit (sun_path) minus the
	// NUL byte.
	maxSocketPath = 107
)

// DefaultBinGlob is where Debian-style packages install versioned binaries.
const DefaultBinGlob = "/usr/lib/postgresql/*/bin"

// Finder locates the binaries. Its zero value searches PATH (os.Getenv)
// and DefaultBinGlob.
type Finder struct {
	// Path is the PATH to search ("" means os.Getenv("PATH")).
	Path string
	// Glob lists versioned binary directories ("" means DefaultBinGlob).
	Glob string
}

// Find returns a directory holding both initdb and postgres: the directory
// of the initdb on PATH (its symlink target first), else the highest
// version matching the glob.
func (f Finder) Find() (string, error) {
	path, glob := f.Path, f.Glob
	if path == "" {
		path = os.Getenv("PATH")
	}
	if glob == "" {
		glob = DefaultBinGlob
	}
	var dirs []string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		initdb := filepath.Join(dir, "initdb")
		if !executable(initdb) {
			continue
		}
		if real, err := filepath.EvalSymlinks(initdb); err == nil {
			dirs = append(dirs, filepath.Dir(real))
		}
		dirs = append(dirs, dir)
	}
	versioned, _ := filepath.Glob(glob)
	slices.SortStableFunc(versioned, func(a, b string) int {
		return compareVersions(filepath.Base(filepath.Dir(b)), filepath.Base(filepath.Dir(a)))
	})
	dirs = append(dirs, versioned...)
	for _, dir := range dirs {
		if executable(filepath.Join(dir, "initdb")) && executable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w: looked for initdb and postgres on PATH and in %s", ErrNoBinaries, glob)
}

// compareVersions orders "9.6" < "15" < "15.1" numerically, part by part.
func compareVersions(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		switch {
		case errX != nil || errY != nil:
			if c := strings.Compare(as[i], bs[i]); c != 0 {
				return c
			}
		case x != y:
			return x - y
		}
	}
	return len(as) - len(bs)
}

func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}

// Options configure Start.
type Options struct {
	// Dir is the directory holding the cluster (data/, the socket, the
	// log). Empty means DefaultDir.
	Dir string
	// BinDir holds initdb and postgres; empty means Finder.Find().
	BinDir string
	// Finder locates the binaries when BinDir is empty.
	Finder Finder
	// Say, when set, receives one progress line per slow step.
	Say func(format string, args ...any)
}

// Server is a running private cluster.
type Server struct {
	// URL connects as the superuser to the "postgres" database over the
	// private socket.
	URL string
	// Dir is the cluster directory; Initialized reports that this Start
	// created the cluster (false when it reused one).
	Dir         string
	Initialized bool

	cmd  *exec.Cmd
	proc *pgproc.Process
	lock *os.File
}

// DefaultDir is os.UserCacheDir()/docket/demo-pg.
func DefaultDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find the user cache directory: %w", err)
	}
	return filepath.Join(cache, "docket", "demo-pg"), nil
}

// Start initializes the cluster in opts.Dir when it has none yet and
// starts it. Under root, an explicit Dir must be reachable by the
// unprivileged user; the default falls back to that user's own cache
// directory when root's is not (root's home is usually private).
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	say := opts.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	binDir := opts.BinDir
	if binDir == "" {
		if binDir, err = opts.Finder.Find(); err != nil {
			return nil, err
		}
	} else if !executable(filepath.Join(binDir, "initdb")) || !executable(filepath.Join(binDir, "postgres")) {
		return nil, fmt.Errorf("%w in %s", ErrNoBinaries, binDir)
	}
	owner, err := clusterOwner()
	if err != nil {
		return nil, err
	}
	dir, err := chooseDir(opts.Dir, owner)
	if err != nil {
		return nil, err
	}
	if len(filepath.Join(dir, ".s.PGSQL."+strconv.Itoa(port))) > maxSocketPath {
		return nil, fmt.Errorf("the demo database directory %s is too long for a unix socket path; choose a shorter one", dir)
	}

	s := &Server{Dir: dir}
	if s.lock, err = lockDir(dir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = s.lock.Close()
		}
	}()
	data := filepath.Join(dir, "data")
	if !exists(filepath.Join(data, "PG_VERSION")) {
		say("initializing a private PostgreSQL cluster in %s", data)
		if err := initdb(ctx, binDir, dir, owner); err != nil {
			return nil, err
		}
		s.Initialized = true
	} else if err := checkVersion(ctx, binDir, data); err != nil {
		return nil, err
	}
	waitForOldServer(ctx, data)
	if err := s.start(binDir, data, owner); err != nil {
		return nil, err
	}
	s.URL = (&url.URL{
		Scheme:   "postgres",
		User:     url.User(superuser),
		Path:     "/postgres",
		RawQuery: url.Values{"host": {dir}, "port": {strconv.Itoa(port)}, "sslmode": {"disable"}}.Encode(),
	}).String()
	if err := s.waitReady(ctx); err != nil {
		_ = s.stop()
		return nil, err
	}
	return s, nil
}

// owner is the account the cluster runs as; nil credential means "as
// this process".
type owner struct {
	name string
	cred *syscall.Credential
	home string
}

// clusterOwner returns the unprivileged user to run PostgreSQL as when
// this process is root.
func clusterOwner() (owner, error) {
	u, err := pgproc.Unprivileged()
	if u == nil || err != nil {
		return owner{}, err
	}
	return owner{name: u.Name, home: u.Home, cred: u.Cred}, nil
}

// chooseDir returns the cluster directory, created and owned by the
// cluster's user.
func chooseDir(explicit string, o owner) (string, error) {
	if explicit != "" {
		dir, err := filepath.Abs(explicit)
		if err != nil {
			return "", err
		}
		return dir, prepareDir(dir, o)
	}
	dir, err := DefaultDir()
	if err != nil {
		return "", err
	}
	if o.cred == nil || reachable(filepath.Dir(dir), o.cred) {
		return dir, prepareDir(dir, o)
	}
	// Root's cache directory lives in a private home: use the cluster
	// user's own cache directory instead.
	if o.home != "" && reachable(o.home, o.cred) {
		dir = filepath.Join(o.home, ".cache", "docket", "demo-pg")
		if err := prepareDir(dir, o); err != nil {
			return "", err
		}
		// The directories made inside the user's home belong to the user.
		for d := filepath.Dir(dir); d != o.home && strings.HasPrefix(d, o.home); d = filepath.Dir(d) {
			_ = os.Lchown(d, int(o.cred.Uid), int(o.cred.Gid))
		}
		return dir, nil
	}
	dir = filepath.Join(os.TempDir(), "docket-demo-pg")
	return dir, prepareDir(dir, o)
}

// prepareDir creates dir (and its parents) and hands dir to the cluster
// user, refusing a directory that user cannot reach or that holds other
// files than a cluster's.
func prepareDir(dir string, o owner) error {
	if err := checkOwnDir(dir); err != nil {
		return err
	}
	// Parents stay traversable (0755) so the cluster user can reach dir;
	// dir itself is private to that user.
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create the demo database directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("protect the demo database directory: %w", err)
	}
	if o.cred == nil {
		return nil
	}
	if !reachable(filepath.Dir(dir), o.cred) {
		return fmt.Errorf("the demo database directory %s is inside a directory the %q user cannot enter; "+
			"PostgreSQL runs as %q because it refuses root: choose a directory it can reach", dir, o.name, o.name)
	}
	return filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(o.cred.Uid), int(o.cred.Gid))
	})
}

// checkOwnDir refuses an existing directory that holds anything but the
// files of a demo cluster: the directory is made private and, under root,
// handed with all its content to the cluster's user, which must never
// befall a directory of other files (--data-dir . in a project, say).
func checkOwnDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read the demo database directory: %w", err)
	}
	socket := ".s.PGSQL." + strconv.Itoa(port)
	for _, e := range entries {
		switch e.Name() {
		case "data", "data.init", "demo.lock", "postgres.log", socket, socket + ".lock":
		default:
			return fmt.Errorf("the demo database directory %s holds %q, which is no part of a demo database; "+
				"choose a new or empty directory", dir, e.Name())
		}
	}
	return nil
}

// reachable reports whether uid/gid may traverse dir and every ancestor.
func reachable(dir string, cred *syscall.Credential) bool {
	for {
		info, err := os.Stat(dir)
		if err != nil {
			return false
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return false
		}
		mode := info.Mode().Perm()
		switch {
		case st.Uid == cred.Uid:
			if mode&0o100 == 0 {
				return false
			}
		case st.Gid == cred.Gid:
			if mode&0o010 == 0 {
				return false
			}
		case mode&0o001 == 0:
			return false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return true
		}
		dir = parent
	}
}

// lockDir takes the directory's lock for this process's lifetime, so two
// demos never share a cluster. The lock file belongs to the directory's
// owner, so that a demo run as that user (the cluster's user, after a demo
// as root made the directory) can open it too.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "demo.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open the demo database lock: %w", err)
	}
	if info, err := os.Stat(dir); err == nil && os.Geteuid() == 0 {
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			_ = f.Chown(int(st.Uid), int(st.Gid))
		}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%w (%s); wait for the other `docket demo` to finish", ErrBusy, dir)
	}
	return f, nil
}

// initdb creates the cluster in a scratch directory and renames it into
// place, so an interrupted initdb never leaves a half-made data directory.
func initdb(ctx context.Context, binDir, dir string, o owner) error {
	data := filepath.Join(dir, "data")
	scratch := data + ".init"
	for _, stale := range []string{scratch, data} {
		if err := os.RemoveAll(stale); err != nil {
			return fmt.Errorf("remove %s: %w", stale, err)
		}
	}
	// --no-sync skips initdb's fsync of every file, which is slow on a
	// busy disk; one sync(2) before the rename makes the cluster durable.
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "initdb"),
		"-D", scratch, "-U", superuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync")
	cmd.Dir = dir
	cmd.Env = pgproc.Env(dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred, Setpgid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(scratch)
		return fmt.Errorf("initdb in %s failed: %w: %s", scratch, err, lastLine(string(out)))
	}
	syscall.Sync()
	if err := os.Rename(scratch, data); err != nil {
		return fmt.Errorf("move the new cluster into place: %w", err)
	}
	return nil
}

// checkVersion refuses a data directory of another major version than the
// binaries, with an actionable message instead of postgres's own.
func checkVersion(ctx context.Context, binDir, data string) error {
	raw, err := os.ReadFile(filepath.Join(data, "PG_VERSION"))
	if err != nil {
		return fmt.Errorf("read the demo cluster's version: %w", err)
	}
	have := strings.TrimSpace(string(raw))
	out, err := exec.CommandContext(ctx, filepath.Join(binDir, "postgres"), "--version").Output()
	if err != nil {
		return fmt.Errorf("run postgres --version: %w", err)
	}
	// "postgres (PostgreSQL) 15.8 (Debian ...)" -> "15"; 9.x majors keep
	// two parts.
	fields := strings.Fields(string(out))
	if len(fields) < 3 {
		return nil
	}
	version := strings.Split(fields[2], ".")
	want := version[0]
	if want == "9" && len(version) > 1 {
		want += "." + version[1]
	}
	if have != want {
		return fmt.Errorf("the demo cluster in %s was made by PostgreSQL %s but the binaries in %s are version %s; "+
			"run `docket demo --reset` to start over", data, have, binDir, want)
	}
	return nil
}

// start launches postgres through pgproc, so that a demo that is killed
// outright takes its server down with it (SIGINT: a fast shutdown,
// committed work stays).
func (s *Server) start(binDir, data string, o owner) error {
	logPath := filepath.Join(s.Dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("create the server log: %w", err)
	}
	defer func() { _ = logFile.Close() }()
	if o.cred != nil {
		_ = os.Chown(logPath, int(o.cred.Uid), int(o.cred.Gid))
	}
	s.cmd = exec.Command(filepath.Join(binDir, "postgres"),
		"-D", data,
		"-p", strconv.Itoa(port),
		"-c", "listen_addresses=",
		"-c", "unix_socket_directories="+s.Dir,
		"-c", "max_connections=100",
	)
	s.cmd.Dir = s.Dir
	s.cmd.Env = pgproc.Env(s.Dir)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	s.cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: o.cred,
		Setpgid:    true,           // a terminal's ^C reaches docket, which stops the server in order
		Pdeathsig:  syscall.SIGINT, // fast, clean shutdown when docket dies
	}
	proc, err := pgproc.Start(s.cmd)
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.proc = proc

	return nil
}

func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		attempt, stop := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(attempt, s.URL)
		stop()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		select {
		case <-s.proc.Exited():
			return fmt.Errorf("postgres exited during startup (%v): %s (log: %s)", s.proc.Err(),
				lastLine(s.logTail()), filepath.Join(s.Dir, "postgres.log"))
		case <-ctx.Done():
			return fmt.Errorf("postgres was not ready in time: %w (log: %s)", ctx.Err(), filepath.Join(s.Dir, "postgres.log"))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop shuts the server down (fast shutdown: open transactions roll back,
// committed work stays) and releases the directory.
func (s *Server) Stop() error {
	defer func() { _ = s.lock.Close() }()
	return s.stop()
}

func (s *Server) stop() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.proc.Exited():
		return nil
	case <-time.After(stopTimeout):
	}
	// Immediate shutdown, then the whole process group: a postmaster
	// killed alone leaves backends holding its shared memory, which makes
	// the next start fail.
	pgid := s.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGQUIT)
	select {
	case <-s.proc.Exited():
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-s.proc.Exited()
	}
	return fmt.Errorf("postgres did not stop within %s and was killed", stopTimeout)
}

// waitForOldServer gives a server a dead demo left behind (its parent-death
// signal makes it shut down) time to exit before a new one starts on the
// same data directory. A postmaster.pid naming a live process that is no
// server of this directory is stale (the server was killed outright, and
// its PID reused since, as after a reboot): postgres would refuse to start
// beside it, so it is removed. The directory's lock rules out another
// demo's server.
func waitForOldServer(ctx context.Context, data string) {
	pidFile := filepath.Join(data, "postmaster.pid")
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(raw), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil {
		if servesOtherDir(pid, data) {
			_ = os.Remove(pidFile)
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// servesOtherDir reports whether process pid is known to work in another
// directory than data: a postmaster works in its data directory. It is
// false when that cannot be told (no /proc, another user's process).
func servesOtherDir(pid int, data string) bool {
	cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
	if err != nil {
		return false
	}
	if real, err := filepath.EvalSymlinks(data); err == nil {
		data = real
	}
	return filepath.Clean(cwd) != filepath.Clean(data)
}

// Reset removes the cluster in dir (default DefaultDir) so the next Start
// begins afresh. It refuses while another process uses it.
func Reset(dir string) (string, error) {
	if dir == "" {
		o, err := clusterOwner()
		if err != nil {
			return "", err
		}
		if dir, err = chooseDir("", o); err != nil {
			return "", err
		}
	}
	if !exists(dir) {
		return dir, nil
	}
	lock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer func() { _ = lock.Close() }()
	for _, sub := range []string{"data", "data.init", "postgres.log"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (s *Server) logTail() string {
	out, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	return string(out)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// lastLine is the last non-empty line of a tool's output, for one-line
// errors.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
