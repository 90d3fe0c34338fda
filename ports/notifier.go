package ports

import (
	"context"
	"sync"
)

// Wake is one announcement that work became due. Announcements are best
// effort and carry no identity: a listener's only correct reaction is to
// poll ClaimDue. Polling remains the correctness path.
type Wake struct{}

// Notifier is the listening side of wake announcements. A store announces
// from inside its own write, so listeners see an announcement only after
// the write is visible and never for a rolled-back write. Announcing
// writes: run insertion with a wake at or before the store clock, a commit
// or mutation whose schedule is immediate or an at-wake at or before the
// store clock, and a poison recovery that actually recovered. Releases,
// abandons, claims, refreshes, poisoning, retained claims, external and
// terminal parks, future wakes, pruning and graph saves announce nothing.
type Notifier interface {
	// Listen subscribes until ctx is done, then closes the channel.
	// Announcements are coalesced: a burst while the listener is busy
	// arrives as at least one Wake. Announcements made while nobody
	// listens are lost.
	Listen(ctx context.Context) (<-chan Wake, error)
}

// ConnectedNotifier is a Notifier whose subscriptions can be down while
// their channels stay open (a listener reconnecting to its server). A
// dispatcher whose notifier reports false counts as not listening, so the
// writes of its own engine make it poll at once, as a poll-only one does.
type ConnectedNotifier interface {
	Notifier
	// Connected reports whether every open subscription is connected.
	Connected() bool
}

// Broadcaster is the in-process Notifier: Announce hands every current
// listener a Wake. Stores and runners that live in the same process as
// their dispatcher announce through it only after their write is visible,
// so a listener that polls on a Wake sees the write that caused it. The
// zero value is ready to use and safe for concurrent use.
type Broadcaster struct {
	mu   sync.Mutex
	next int
	subs map[int]chan Wake
}

var _ Notifier = (*Broadcaster)(nil)

// Listen subscribes until ctx is done, then closes the channel. The
// channel holds one pending Wake: bursts coalesce and Announce never
// blocks.
func (b *Broadcaster) Listen(ctx context.Context) (<-chan Wake, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan Wake, 1)
	b.mu.Lock()
	if b.subs == nil {
		b.subs = map[int]chan Wake{}
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
		select {
		case ch <- Wake{}:
		default:
		}
	}
}
