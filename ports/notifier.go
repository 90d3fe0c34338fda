package ports

import "context"

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
