package wiring

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// InterruptContext is the context of a worker binary's main: it ends at
// the first SIGINT or SIGTERM (the engine's Stop then drains) and hands
// both signals back to the system, so that a second Ctrl-C during the
// drain ends the process at once instead of being swallowed. The context
// ends only after the hand-back, and a second signal that arrived before
// it is raised again, so no quick second Ctrl-C is lost. The returned
// func releases the signals; call it when main is done.
func InterruptContext() (context.Context, context.CancelFunc) {
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
