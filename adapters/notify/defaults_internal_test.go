package notify

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Zero durations mean the documented defaults (docs/postgres.md holds the
// constants to the table): a 30s liveness check is too slow to observe.
func TestNewListenerAppliesTheDefaultDurations(t *testing.T) {
	t.Parallel()
	cfg, err := pgx.ParseConfig("postgres://x@127.0.0.1/x")
	require.NoError(t, err)
	l, err := NewListener(ListenerConfig{ConnConfig: cfg, Schema: "x"})
	require.NoError(t, err)
	assert.Equal(t, DefaultMinBackoff, l.minBackoff)
	assert.Equal(t, DefaultMaxBackoff, l.maxBackoff)
	assert.Equal(t, DefaultPingInterval, l.pingInterval)
	assert.Equal(t, DefaultPingTimeout, l.pingTimeout)
}
