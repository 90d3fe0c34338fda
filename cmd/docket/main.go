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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, cli.Options{})
	stop()
	os.Exit(code)
}
