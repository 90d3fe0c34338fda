package ports_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
)

func TestPoisonReasonLabelIsBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		stored string
		want   string
	}{
		{claim.ReasonMaxClaimAttempts, ports.PoisonReasonMaxClaimAttempts},
		{claim.ReasonMaxClaimAbandons, ports.PoisonReasonMaxClaimAbandons},
		{"operator_quarantine", ports.ResultOther},
		{"", ports.ResultOther},
	}
	for _, tt := range tests {
		t.Run(tt.stored, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, ports.PoisonReasonLabel(tt.stored))
		})
	}
}

// recorder stands for any telemetry that reads what it is given.
type recorder struct{ ports.NopTelemetry }

func TestDiscardsOnlyTheNopTelemetry(t *testing.T) {
	t.Parallel()
	assert.True(t, ports.Discards(ports.NopTelemetry{}))
	assert.True(t, ports.Discards(&ports.NopTelemetry{}))
	assert.False(t, ports.Discards(recorder{}), "a telemetry embedding the no-op one may read what it overrides")
	assert.False(t, ports.Discards(nil))
}
