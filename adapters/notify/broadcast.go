package notify

import "github.com/docketgo/docket/ports"

// Broadcaster is the in-process notifier: Announce hands every current
// listener a Wake. It is ports.Broadcaster, defined there so that stores
// in other adapters (the memory store) share the same fan-out without
// importing this one.
type Broadcaster = ports.Broadcaster
