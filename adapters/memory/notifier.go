package memory

import (
	"context"

	"github.com/docketgo/docket/ports"
)

// Notifier is the in-process wake listener of a Store. The store announces
// only after a write is visible and its row lock is released, so a
// listener that polls on a Wake sees the write that caused it (and claims
// it unless another writer holds the run by then; polling covers that).
// The fan-out is ports.Broadcaster; Notifier
// keeps announcing to the store alone.
type Notifier struct {
	wakes ports.Broadcaster
	// announced, when set (tests only, before any write), runs
	// synchronously after each announcement, in the announcing writer's
	// goroutine: it stands for a listener that claims the moment it is
	// woken.
	announced func()
}

var _ ports.Notifier = (*Notifier)(nil)

func newNotifier() *Notifier { return &Notifier{} }

// Listen subscribes until ctx is done, then closes the channel. The
// channel holds one pending Wake: bursts coalesce, nothing blocks the
// store.
func (n *Notifier) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	return n.wakes.Listen(ctx)
}

// announce hands every listener a Wake without blocking.
func (n *Notifier) announce() {
	n.wakes.Announce()
	if n.announced != nil {
		n.announced()
	}
}
