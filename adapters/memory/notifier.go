package memory

import (
	"context"

	"github.com/docketgo/docket/ports"
)

// Notifier is the in-process wake listener of a Store. The store announces
// only after a write is visible, so a listener that polls on a Wake always
// sees the write that caused it. The fan-out is ports.Broadcaster; Notifier
// keeps announcing to the store alone.
type Notifier struct {
	wakes ports.Broadcaster
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
func (n *Notifier) announce() { n.wakes.Announce() }
