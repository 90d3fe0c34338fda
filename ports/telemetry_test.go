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
