package engine

import (
	"time"

	"github.com/docketgo/docket/app/dispatch"
)

// Lifecycle states Health reports.
const (
	HealthCreated  = "created"  // built, not started
	HealthRunning  = "running"  // claiming and driving runs
	HealthStopping = "stopping" // Stop is draining running work
	HealthStopped  = "stopped"  // Stop has returned
)

// Health is a read-only snapshot of an engine's lifecycle and claim
// polls, for a health endpoint or a status line. Times are in the
// engine's Clock.
type Health struct {
	// State is HealthCreated, HealthRunning, HealthStopping or
	// HealthStopped.
	State string
	// Listening reports that the dispatcher holds a live, connected
	// subscription to the store's wake announcements. It is false with
	// PollOnly, on a backend without a listener, and while the listener
	// reconnects (the dispatcher then relies on polling).
	Listening bool
	// PollInterval is the dispatcher's longest wait between polls.
	PollInterval time.Duration
	// LastPoll is when the store last answered one of the dispatcher's
	// claim polls (zero: none yet, or not running).
	LastPoll time.Time
	// UnansweredSince is when the oldest claim poll began that the store
	// has not answered since: it failed (and polls since failed too), or
	// it is still waiting. Zero when the latest poll was answered, and
	// while every place is taken (the dispatcher then does not poll).
	UnansweredSince time.Time
	// ClaimPolicyUnavailable is the reason the store refused the latest
	// claim poll under the engine's claim policy (the
	// ports.ClaimPolicyUnavailableError's, one of the ports.Unavailable*
	// reasons): the store answered, and admitted nothing. With
	// ports.UnavailableInactiveEngine ("inactive_engine") another engine
	// made the other claim policy the schema's, and this engine claims no
	// runs until it is restarted with that policy. Empty when the latest
	// poll was answered or failed otherwise (UnansweredSince tells those
	// apart).
	ClaimPolicyUnavailable string
}

// Health reports the engine's state. It never calls the store, never
// waits (not for a Start in progress either: the engine is created until
// Start returns), and is safe for concurrent use at any point of the
// engine's life.
func (e *Engine) Health() Health {
	var state lifecycle // created until Start has finished
	var d *dispatch.Dispatcher
	if v := e.health.Load(); v != nil {
		state, d = v.state, v.dispatcher
	}
	h := Health{PollInterval: e.cfg.Dispatcher.PollInterval}
	switch state {
	case created:
		h.State = HealthCreated
	case running:
		h.State = HealthRunning
	default:
		h.State = HealthStopped
		select {
		case <-e.stopDone:
		default:
			h.State = HealthStopping
		}
	}
	if d != nil {
		h.Listening = d.Listening()
		ps := d.PollStatus()
		h.LastPoll, h.UnansweredSince = ps.LastAnswered, ps.UnansweredSince
		h.ClaimPolicyUnavailable = ps.ClaimPolicyUnavailable
	}
	return h
}
