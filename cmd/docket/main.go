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
// drain ends the process at once instead of being swallowed. The context
// ends only after the hand-back, and a second signal that arrived before
// it is raised again, so no quick second Ctrl-C is lost.
func interruptContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-signals:
		case <-ctx.Done():
			signal.Stop(signals)
			return
		}
		signal.Stop(signals)
		cancel()
		select {
		case again := <-signals:
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Signal(again)
			}
		default:
		}
	}()
	return ctx, cancel
}
