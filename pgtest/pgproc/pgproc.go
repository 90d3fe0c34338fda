// Package pgproc starts a child process (a private PostgreSQL server) so
// that its parent-death signal is delivered when the parent process dies.
// It depends on the standard library only: the test harness and the CLI's
// embedded demo database both use it.
package pgproc

import (
	"os/exec"
	"runtime"
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
