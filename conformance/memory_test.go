package conformance_test

import (
	"testing"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
)

// memoryFactory builds a fresh in-memory store per invariant, driven by
// the suite's clock.
func memoryFactory(t conformance.T) conformance.Adapter {
	clock := conformance.NewManualClock(conformance.ReferenceTime)
	return conformance.Adapter{Backend: memory.New(memory.Options{Clock: clock}), Clock: clock}
}

func TestMemoryAdapterPassesTheSuite(t *testing.T) {
	report := conformance.Run(t, conformance.Features{WakeNotifications: true}, memoryFactory)
	if !report.Passed() {
		t.Errorf("failed invariants: %v; not run: %v", report.Failed(), report.NotRun())
	}
}
