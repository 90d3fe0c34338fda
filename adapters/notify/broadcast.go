package notify

import (
	"context"
	"sync"

	"github.com/docketgo/docket/ports"
)

// Broadcaster is an in-process notifier: Announce hands every current
// listener a Wake. Callers announce only after their write is visible, so
// a listener that polls on a Wake sees the write that caused it. The zero
// value is ready to use and safe for concurrent use.
type Broadcaster struct {
	mu   sync.Mutex
	next int
	subs map[int]chan ports.Wake
}

var _ ports.Notifier = (*Broadcaster)(nil)

// Listen subscribes until ctx is done, then closes the channel. The
// channel holds one pending Wake: bursts coalesce and Announce never
// blocks.
func (b *Broadcaster) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan ports.Wake, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[int]chan ports.Wake{}
	}
	id := b.next
	b.next++
	b.subs[id] = ch
	b.mu.Unlock()
	context.AfterFunc(ctx, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
		close(ch)
	})
	return ch, nil
}

// Announce hands every listener a Wake without blocking; a listener that
// already has one pending keeps just that one.
func (b *Broadcaster) Announce() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.subs {
		offer(ch)
	}
}

// offer delivers a Wake unless one is already pending.
func offer(ch chan ports.Wake) {
	select {
	case ch <- ports.Wake{}:
	default:
	}
}
