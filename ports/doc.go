// Package ports declares the interfaces between Docket's application layer
// and its adapters: RunStore, EventStore, GraphStore, Notifier, Telemetry and
// Clock, with their value types and typed errors.
package ports
