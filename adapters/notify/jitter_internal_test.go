package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Listeners that lost one server spread their reconnects, the first one
// included, and none comes before the backoff.
func TestJitterSpreadsFromTheBackoffUp(t *testing.T) {
	t.Parallel()
	const d = 100 * time.Millisecond
	seen := map[time.Duration]bool{}
	for range 200 {
		j := jitter(d)
		assert.GreaterOrEqual(t, j, d)
		assert.LessOrEqual(t, j, d+d/2)
		seen[j] = true
	}
	assert.Greater(t, len(seen), 1, "not in lockstep")
}
