package notify

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pause before each reconnect attempt starts at MinBackoff, doubles
// after every failed attempt and stays at MaxBackoff once there; jitter
// only ever lengthens a pause, up to half of it, and never beyond
// MaxBackoff.
func TestReconnectBacksOffExponentiallyUpToMaxBackoff(t *testing.T) {
	t.Parallel()
	const attempts = 8
	cfg, err := pgx.ParseConfig("postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2")
	require.NoError(t, err)
	l, err := NewListener(ListenerConfig{ConnConfig: cfg, Schema: "x", MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pauses []time.Duration
	l.newTimer = func(d time.Duration) *time.Timer {
		pauses = append(pauses, d)
		if len(pauses) == attempts {
			cancel()
		}
		return time.NewTimer(0) // the attempt at once: the test records the pause, not waits it
	}
	require.Nil(t, l.reconnect(ctx), "no attempt reaches the closed port")
	require.Len(t, pauses, attempts)
	floor := []time.Duration{100, 200, 400, 800, 1000, 1000, 1000, 1000}
	for i, pause := range pauses {
		low := floor[i] * time.Millisecond
		assert.GreaterOrEqual(t, pause, low, "pause %d", i+1)
		assert.LessOrEqual(t, pause, min(low+low/2, time.Second), "pause %d", i+1)
	}
}
