// Command docket operates Docket, the durable graph workflow engine:
// schema migrations, graphs, runs, interrupts, events, pruning, a worker,
// the conformance suite and a zero-setup demo. See docs/cli.md.
package main

import (
	"os"

	"github.com/docketgo/docket/cmd/internal/cli"
	"github.com/docketgo/docket/cmd/wiring"
)

func main() {
	ctx, stop := wiring.InterruptContext()
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, cli.Options{})
	stop()
	os.Exit(code)
}
