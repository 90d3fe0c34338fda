// Command docket operates Docket, the durable graph workflow engine:
// schema migrations, graphs, runs, interrupts, events, pruning, a worker,
// the conformance suite and a zero-setup demo. See docs/cli.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/docketgo/docket/cmd/internal/cli"
)

func main() {
	ctx, stop := interruptContext()
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, cli.Options{})
	stop()
	os.Exit(code)
}

// interruptContext ends at the first SIGINT or SIGTERM and then hands both
// signals back to the system, so that a second Ctrl-C during a worker's
// drain ends the process at once instead of being swallowed.
func interruptContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	context.AfterFunc(ctx, stop)
	return ctx, stop
}
