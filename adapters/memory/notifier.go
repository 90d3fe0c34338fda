package memory

import (
	"context"
	"sync"

	"github.com/docketgo/docket/ports"
)

// Notifier is the in-process wake listener of a Store. The store announces
// only after a write is visible, so a listener that polls on a Wake always
// sees the write that caused it.
type Notifier struct {
	mu   sync.Mutex
	next int
	subs map[int]chan ports.Wake
}

var _ ports.Notifier = (*Notifier)(nil)

func newNotifier() *Notifier { return &Notifier{subs: map[int]chan ports.Wake{}} }

// Listen subscribes until ctx is done, then closes the channel. The
// channel holds one pending Wake: bursts coalesce, nothing blocks the
// store.
func (n *Notifier) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan ports.Wake, 1)
	n.mu.Lock()
	id := n.next
	n.next++
	n.subs[id] = ch
	n.mu.Unlock()
	context.AfterFunc(ctx, func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		delete(n.subs, id)
		close(ch)
	})
	return ch, nil
}

// announce hands every listener a Wake without blocking.
func (n *Notifier) announce() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.subs {
		select {
		case ch <- ports.Wake{}:
		default:
		}
	}
}
