package notify

import (
	"context"

	"github.com/docketgo/docket/ports"
)

// None is the notifier of poll-only mode: Listen succeeds and never
// delivers a Wake, so the dispatcher's poll interval alone bounds latency.
type None struct{}

var _ ports.Notifier = None{}

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
