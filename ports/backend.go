package ports

// Capabilities are the optional features a backend offers. Callers and the
// conformance suite branch on them instead of on concrete types.
type Capabilities struct {
	// Listen: Notifier returns a working listener (wake announcements).
	Listen bool
	// TenantFair: the configured claim policy interleaves tenants.
	TenantFair bool
}

// Backend is one storage implementation. Its stores must come from the
// same implementation; they are never mixed.
type Backend interface {
	RunStore
	EventStore
	GraphStore
	// Capabilities probes optional features.
	Capabilities() Capabilities
	// Notifier returns the wake listener, or nil when Capabilities().Listen
	// is false.
	Notifier() Notifier
}
