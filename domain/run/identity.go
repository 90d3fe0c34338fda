package run

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/docketgo/docket/domain/value"
)

// TaskID is "<run_id>:<step>:<node_id>", using the committed step. The same
// committed run always yields the same task IDs, so re-planning a superstep
// that never committed reproduces them byte for byte.
func TaskID(runID string, step int, nodeID string) string {
	return runID + ":" + strconv.Itoa(step) + ":" + nodeID
}

// IdempotencyKey is "<task_id>:<attempt>", attempts counting from 1. A retry
// keeps its task ID and gets a new key.
func IdempotencyKey(taskID string, attempt int) string {
	return taskID + ":" + strconv.Itoa(attempt)
}

// InputHash is lowerhex(sha256(canonical JSON of snapshot)): the input
// identity of every activation planned against that state view. A nil
// snapshot hashes like an empty one. A snapshot that is not a portable value
// has no canonical form and yields "", which no valid task carries.
func InputHash(snapshot map[string]any) string {
	scratch := value.GetScratch()
	defer scratch.Release()
	b, err := value.AppendCanonical(scratch.B, snapshot)
	scratch.B = b
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:])
}

// IDFromRandom formats eight random bytes as prefix + 16 lowercase hex
// digits ("run_" or "interrupt_" in production). The domain draws no random
// numbers itself; callers that own a random source share this one format.
func IDFromRandom(prefix string, b [8]byte) string {
	return prefix + hex.EncodeToString(b[:])
}
