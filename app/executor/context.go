package executor

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/docketgo/docket/app/node"
)

// attemptContext is the context one attempt runs under: its parent's
// values plus the attempt's Task, the attempt deadline, and a cancellation
// the batch's waiter performs (at the deadline, when the parent ends, and
// when Execute returns). It behaves as context.WithTimeout(parent, d)
// layered with node.WithTask, in one allocation and without a runtime
// timer per attempt: the waiter's one timer serves every attempt of a
// batch, and the Done channel is only made when someone asks for it.
type attemptContext struct {
	parent   context.Context
	deadline time.Time
	task     node.Task

	mu         sync.Mutex
	done       chan struct{} // nil until Done is called or the context ends
	err        error
	afterFuncs []*afterFunc
}

type afterFunc struct{ f func() }

// closedDone is the Done channel of an attempt context that ended before
// anyone asked for it.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

func newAttemptContext(parent context.Context, deadline time.Time, task node.Task) *attemptContext {
	if d, ok := parent.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &attemptContext{parent: parent, deadline: deadline, task: task}
}

func (c *attemptContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *attemptContext) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
	}
	return c.done
}

func (c *attemptContext) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *attemptContext) Value(key any) any {
	if v, ok := node.TaskValue(key, &c.task); ok {
		return v
	}
	return c.parent.Value(key)
}

// AfterFunc lets contexts derived from an attempt context (and
// context.AfterFunc) follow its cancellation without a goroutine each,
// as they do for the standard library's contexts.
func (c *attemptContext) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	a := &afterFunc{f: f}
	c.afterFuncs = append(c.afterFuncs, a)
	c.mu.Unlock()
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		i := slices.Index(c.afterFuncs, a)
		if i < 0 {
			return false
		}
		c.afterFuncs = slices.Delete(c.afterFuncs, i, i+1)
		return true
	}
}

func (c *attemptContext) String() string { return "executor.attemptContext" }

// cancel ends the context with err, once. context.Cause reads the cause
// from the nearest standard cancel context: the parent's when the parent
// ended the attempt, else none, and then it reports err, as for
// context.WithTimeout.
func (c *attemptContext) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	if c.done == nil {
		c.done = closedDone
	} else {
		close(c.done)
	}
	funcs := c.afterFuncs
	c.afterFuncs = nil
	c.mu.Unlock()
	for _, a := range funcs {
		go a.f()
	}
}
