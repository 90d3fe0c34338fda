package notify

import (
	"context"

	"github.com/docketgo/docket/ports"
)

// None is the notifier of poll-only mode: Listen succeeds and never
// delivers a Wake, so the dispatcher's poll interval alone bounds the
// latency of other instances' writes. It reports itself never connected,
// so a dispatcher behind it counts as not listening and polls at once
// after its own engine's writes, as it does with no notifier at all.
type None struct{}

var _ ports.ConnectedNotifier = None{}

// Listen returns a channel that never delivers and is closed when ctx is
// done.
func (None) Listen(ctx context.Context) (<-chan ports.Wake, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := make(chan ports.Wake)
	context.AfterFunc(ctx, func() { close(ch) })
	return ch, nil
}

// Connected reports false: no announcement ever reaches a subscription.
func (None) Connected() bool { return false }
