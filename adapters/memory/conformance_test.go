package memory_test

import (
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/memory"
	"github.com/docketgo/docket/conformance"
)

// TestConformance holds the in-memory adapter to the shared suite: every
// invariant on a fresh store with a clock the suite controls.
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Features{WakeNotifications: true}, func(conformance.T) conformance.Adapter {
		clock := conformance.NewManualClock(time.Time{})
		return conformance.Adapter{Backend: memory.New(memory.Options{Clock: clock}), Clock: clock}
	})
}
