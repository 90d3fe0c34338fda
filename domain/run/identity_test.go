package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTaskIdentityFormats(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "run_1:0:fast", TaskID("run_1", 0, "fast"))
	assert.Equal(t, "r:12:node-a", TaskID("r", 12, "node-a"))
	assert.Equal(t, "r:3:n:1", IdempotencyKey(TaskID("r", 3, "n"), 1))
	assert.Equal(t, "r:3:n:10", IdempotencyKey("r:3:n", 10))
}

func TestInputHash(t *testing.T) {
	t.Parallel()
	t.Run("is lowercase hex sha256 of the canonical snapshot", func(t *testing.T) {
		t.Parallel()
		// sha256("{}")
		assert.Equal(t, "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", InputHash(map[string]any{}))
		assert.Equal(t, InputHash(map[string]any{}), InputHash(nil))
	})
	t.Run("ignores map order", func(t *testing.T) {
		t.Parallel()
		a := map[string]any{"a": int64(1), "b": []any{"x", map[string]any{"z": true, "y": nil}}}
		b := map[string]any{"b": []any{"x", map[string]any{"y": nil, "z": true}}, "a": int64(1)}
		assert.Equal(t, InputHash(a), InputHash(b))
	})
	t.Run("tells ints from floats", func(t *testing.T) {
		t.Parallel()
		assert.NotEqual(t, InputHash(map[string]any{"n": int64(1)}), InputHash(map[string]any{"n": 1.0}))
	})
	t.Run("is empty for a non-portable snapshot", func(t *testing.T) {
		t.Parallel()
		assert.Empty(t, InputHash(map[string]any{"c": make(chan int)}))
	})
}

func TestIDFromRandom(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "run_0123456789abcdef", IDFromRandom("run_", [8]byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}))
	assert.Equal(t, "interrupt_ff00000000000000", IDFromRandom("interrupt_", [8]byte{0xff}))
}
