package ports_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
)

func TestTypedErrorsMatchTheirSentinels(t *testing.T) {
	t.Parallel()
	decode := errors.New("bad bytes")
	tests := []struct {
		err      error
		sentinel error
	}{
		{&ports.InvalidArgumentError{Field: "Limit", Reason: "must be positive"}, ports.ErrInvalidArgument},
		{&ports.InvalidCommitError{RunID: "r", Reason: "x"}, ports.ErrInvalidCommit},
		{&ports.EventConflictError{RunID: "r", Seq: 3}, ports.ErrEventConflict},
		{&ports.CorruptError{Kind: ports.CorruptRun, ID: "r", Err: decode}, ports.ErrCorruptRun},
		{&ports.CorruptError{Kind: ports.CorruptEvent, ID: "r", Seq: 2}, ports.ErrCorruptEvent},
		{&ports.CorruptError{Kind: ports.CorruptGraph, ID: "g", Hash: "h"}, ports.ErrCorruptGraph},
		{&ports.ClaimPolicyUnavailableError{Reason: ports.UnavailableLockContention}, ports.ErrClaimPolicyUnavailable},
	}
	for _, tt := range tests {
		wrapped := fmt.Errorf("outer: %w", tt.err)
		assert.ErrorIs(t, wrapped, tt.sentinel, tt.err.Error())
	}
	corrupt := &ports.CorruptError{Kind: ports.CorruptRun, ID: "r", Err: decode}
	assert.ErrorIs(t, corrupt, decode, "the decoding cause is kept")
	assert.NotErrorIs(t, corrupt, ports.ErrCorruptEvent)
	assert.Equal(t, `corrupt event row "r" seq 2`, (&ports.CorruptError{Kind: ports.CorruptEvent, ID: "r", Seq: 2}).Error())
}
