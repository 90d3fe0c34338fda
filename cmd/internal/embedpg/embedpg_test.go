package embedpg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBinaries creates executable initdb and postgres (or only the named
// ones) in dir.
func fakeBinaries(t *testing.T, dir string, names ...string) string {
	t.Helper()
	if len(names) == 0 {
		names = []string{"initdb", "postgres"}
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, n := range names {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte("#!/bin/sh\n"), 0o755))
	}
	return dir
}

func TestFinderPrefersPATHThenTheHighestVersion(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	glob := filepath.Join(root, "lib", "*", "bin")
	v9 := fakeBinaries(t, filepath.Join(root, "lib", "9.6", "bin"))
	v15 := fakeBinaries(t, filepath.Join(root, "lib", "15", "bin"))
	fakeBinaries(t, filepath.Join(root, "lib", "16", "bin"), "initdb") // no postgres: unusable
	onPath := fakeBinaries(t, filepath.Join(root, "path"))
	_ = v9

	dir, err := Finder{Path: filepath.Join(root, "empty") + ":" + onPath, Glob: glob}.Find()
	require.NoError(t, err)
	assert.Equal(t, onPath, dir)

	dir, err = Finder{Path: filepath.Join(root, "empty"), Glob: glob}.Find()
	require.NoError(t, err)
	assert.Equal(t, v15, dir, "15 beats 9.6; 16 lacks postgres")

	_, err = Finder{Path: filepath.Join(root, "empty"), Glob: filepath.Join(root, "none", "*")}.Find()
	assert.True(t, errors.Is(err, ErrNoBinaries))
	assert.Contains(t, err.Error(), "initdb and postgres")
}

func TestFinderFollowsASymlinkedInitdb(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	real := fakeBinaries(t, filepath.Join(root, "real"))
	link := filepath.Join(root, "bin")
	require.NoError(t, os.MkdirAll(link, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(real, "initdb"), filepath.Join(link, "initdb")))
	dir, err := Finder{Path: link, Glob: filepath.Join(root, "none")}.Find()
	require.NoError(t, err)
	assert.Equal(t, real, dir, "postgres lives next to the real initdb")
}

func TestCompareVersions(t *testing.T) {
	t.Parallel()
	assert.Negative(t, compareVersions("9.6", "15"))
	assert.Negative(t, compareVersions("15", "15.1"))
	assert.Positive(t, compareVersions("16", "15.4"))
	assert.Zero(t, compareVersions("14", "14"))
}

func TestReachableChecksEveryAncestor(t *testing.T) {
	t.Parallel()
	// Not t.TempDir: its parent is private to the test's user.
	root, err := os.MkdirTemp("", "docket-reachable-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	private := filepath.Join(root, "private")
	open := filepath.Join(root, "open")
	require.NoError(t, os.Mkdir(private, 0o700))
	require.NoError(t, os.Mkdir(open, 0o755))
	require.NoError(t, os.Mkdir(filepath.Join(private, "inside"), 0o755))

	stranger := &syscall.Credential{Uid: 54321, Gid: 54321} // only the "others" bits apply
	require.True(t, reachable(root, stranger), "precondition: the temporary directory is traversable")
	assert.True(t, reachable(open, stranger))
	assert.False(t, reachable(filepath.Join(private, "inside"), stranger), "a private ancestor blocks the way")

	st, err := os.Stat(private)
	require.NoError(t, err)
	owner := st.Sys().(*syscall.Stat_t)
	assert.True(t, reachable(filepath.Join(private, "inside"), &syscall.Credential{Uid: owner.Uid, Gid: owner.Gid}),
		"the owner enters its private directory")
}

func TestADataDirectoryOfAnotherVersionIsRefusedWithAHint(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	script := "#!/bin/sh\necho 'postgres (PostgreSQL) 15.8 (Debian 15.8-1)'\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "postgres"), []byte(script), 0o755))
	data := t.TempDir()

	require.NoError(t, os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("15\n"), 0o600))
	assert.NoError(t, checkVersion(context.Background(), bin, data))

	require.NoError(t, os.WriteFile(filepath.Join(data, "PG_VERSION"), []byte("9.4\n"), 0o600))
	err := checkVersion(context.Background(), bin, data)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "made by PostgreSQL 9.4 but the binaries")
	assert.Contains(t, err.Error(), "docket demo --reset")
}

func TestLastLine(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "FATAL: boom", lastLine("starting\nFATAL: boom\n\n"))
}

func TestResetRemovesTheClusterButKeepsTheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "data", "base"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "postgres.log"), []byte("log"), 0o600))
	got, err := Reset(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, got)
	assert.NoDirExists(t, filepath.Join(dir, "data"))
	assert.NoFileExists(t, filepath.Join(dir, "postgres.log"))
	assert.DirExists(t, dir)
}

func TestResetRefusesADirectoryInUse(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock, err := lockDir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Close() })
	_, err = Reset(dir)
	assert.True(t, errors.Is(err, ErrBusy), "%v", err)
}

// A demo run as root hands the directory to the cluster's user; the lock
// file it creates there belongs to that user too, who may then run the
// demo on the same directory (the default one of both).
func TestTheLockFileBelongsToTheDirectorysOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to hand the directory to another user")
	}
	dir := t.TempDir()
	const uid, gid = 54321, 54322
	require.NoError(t, os.Chown(dir, uid, gid))
	lock, err := lockDir(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = lock.Close() })
	info, err := os.Stat(filepath.Join(dir, "demo.lock"))
	require.NoError(t, err)
	st := info.Sys().(*syscall.Stat_t)
	assert.Equal(t, uint32(uid), st.Uid)
	assert.Equal(t, uint32(gid), st.Gid)
}

// A server killed outright leaves its postmaster.pid behind; once its PID
// belongs to another process of the cluster's user (after a reboot, say),
// the next demo still starts its server.
func TestAStalePostmasterPidWhosePIDWasReusedDoesNotBlockTheStart(t *testing.T) {
	t.Parallel()
	// The cluster may run as another user (PostgreSQL refuses root), who
	// must reach the directory: not t.TempDir, whose parent is private.
	dir, err := os.MkdirTemp("", "docket-embedpg-test-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(dir, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	ctx := context.Background()

	srv, err := Start(ctx, Options{Dir: dir})
	require.NoError(t, err)
	require.NoError(t, srv.Stop())

	// A live process of the cluster's user, working elsewhere, holds the
	// PID the stale file names.
	o, err := clusterOwner()
	require.NoError(t, err)
	other := exec.Command("sleep", "60")
	other.Dir = "/"
	other.SysProcAttr = &syscall.SysProcAttr{Credential: o.cred}
	require.NoError(t, other.Start())
	t.Cleanup(func() { _ = other.Process.Kill(); _ = other.Wait() })
	pidFile := filepath.Join(dir, "data", "postmaster.pid")
	stale := fmt.Sprintf("%d\n%s\n1700000000\n5432\n%s\n\n  5432001         0\nready   \n",
		other.Process.Pid, filepath.Join(dir, "data"), dir)
	require.NoError(t, os.WriteFile(pidFile, []byte(stale), 0o600))
	if o.cred != nil {
		require.NoError(t, os.Chown(pidFile, int(o.cred.Uid), int(o.cred.Gid)))
	}

	srv, err = Start(ctx, Options{Dir: dir})
	require.NoError(t, err, "the stale postmaster.pid is not the running server's")
	require.NoError(t, srv.Stop())
}

// The demo's directory is made private and, under root, handed with its
// content to the cluster's user: a directory of other files is refused
// and left as it was.
func TestADirectoryOfOtherFilesIsNotTakenOver(t *testing.T) {
	t.Parallel()
	// Not t.TempDir: its parent is private to the test's user, who may
	// not be the cluster's.
	root, err := os.MkdirTemp("", "docket-embedpg-dir-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	require.NoError(t, os.Chmod(root, 0o755))
	o, err := clusterOwner()
	require.NoError(t, err)

	dir := filepath.Join(root, "project")
	require.NoError(t, os.Mkdir(dir, 0o755))
	notes := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("mine"), 0o644))
	before, err := os.Stat(notes)
	require.NoError(t, err)
	_, err = chooseDir(dir, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `holds "notes.txt"`)
	info, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "the directory stays as it was")
	after, err := os.Stat(notes)
	require.NoError(t, err)
	assert.Equal(t, before.Sys().(*syscall.Stat_t).Uid, after.Sys().(*syscall.Stat_t).Uid, "its files keep their owner")

	// A directory an earlier demo made is taken again, and so is a new one.
	ours := filepath.Join(root, "ours")
	require.NoError(t, os.Mkdir(ours, 0o755))
	for _, name := range []string{"data", "demo.lock", "postgres.log", ".s.PGSQL.5432.lock"} {
		require.NoError(t, os.WriteFile(filepath.Join(ours, name), nil, 0o600))
	}
	_, err = chooseDir(ours, o)
	assert.NoError(t, err)
	_, err = chooseDir(filepath.Join(root, "new"), o)
	assert.NoError(t, err)
}
