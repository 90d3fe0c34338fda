// Package pgproc starts a child process (a private PostgreSQL server) so
// that its parent-death signal is delivered when the parent process dies.
// It depends on the standard library only: the test harness and the CLI's
// embedded demo database both use it.
package pgproc

import (
	"errors"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// Process is a started child process.
type Process struct {
	exited chan struct{}
	err    error
}

// Start starts cmd on an OS thread that stays locked until the process
// exits: the kernel delivers SysProcAttr.Pdeathsig when the launching
// thread, not the parent process, dies, and the Go runtime may end an
// unlocked thread at any time.
func Start(cmd *exec.Cmd) (*Process, error) {
	p := &Process{exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.err = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// Exited is closed once the process has exited and been waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Err is the process's exit error; read it only after Exited is closed.
func (p *Process) Err() error { return p.err }

// User is the unprivileged account a private server runs as when this
// process is root: PostgreSQL refuses to run as root.
type User struct {
	Name string
	Home string
	Cred *syscall.Credential
}

// Unprivileged returns nil when this process is not root, else the first
// of "postgres" and "nobody" that exists, or an error naming both
// attempts.
func Unprivileged() (*User, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	var tried []string
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			tried = append(tried, name+": "+err.Error())
			continue
		}
		uid, errUID := strconv.ParseUint(u.Uid, 10, 32)
		gid, errGID := strconv.ParseUint(u.Gid, 10, 32)
		if errUID != nil || errGID != nil {
			tried = append(tried, name+": non-numeric uid or gid")
			continue
		}
		return &User{Name: name, Home: u.HomeDir,
			Cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}, nil
	}
	return nil, errors.New("running as root, which PostgreSQL refuses, and no unprivileged user to run it as (" +
		strings.Join(tried, "; ") + ")")
}

// Env is the whole environment of initdb and postgres for a cluster in
// dir: the inherited PATH and nothing else of the caller's, so a
// developer's PG* variables or locale cannot change the cluster.
func Env(dir string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LC_ALL=C", "TZ=UTC"}
}
