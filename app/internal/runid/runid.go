// Package runid holds the rules for run ids that callers choose, shared by
// the durable engine and the inline runner so both accept the same ids: an
// id must be able to name a row in every store, and the form of the ids
// the engine derives from idempotency keys is reserved for them. It does
// not generate random ids (run.IDFromRandom does).
package runid

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/docketgo/docket/ports"
)

// keyedHexDigits is the length of the hex part of a key's run id.
const keyedHexDigits = 32

// FromKey derives the run id of an idempotency key from the owner scope
// and the key, length-prefixed so no two (scope, key) pairs share an
// encoding: "run_" and 32 lowercase hex digits. Runs already stored under
// derived ids are found by their keys only as long as this derivation does
// not change.
func FromKey(owner ports.OwnerScope, key string) string {
	kind := "tenantless"
	if !owner.IsTenantless() {
		kind = "tenant"
	}
	h := sha256.New()
	for _, part := range []string{"docket.start.v1", kind, owner.Key(), key} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	return "run_" + hex.EncodeToString(h.Sum(nil))[:keyedHexDigits]
}

// Keyed reports whether id has the form FromKey gives.
func Keyed(id string) bool {
	digits, ok := strings.CutPrefix(id, "run_")
	if !ok || len(digits) != keyedHexDigits {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if c := digits[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Check reports why a caller may not choose id for a new run: it is not
// ports.TextID, or it has the form reserved for idempotency keys (so no
// caller can take a key's id, in its scope or another, before the key is
// used). The empty id, which asks for a generated one, is valid. The
// error names no sentinel; callers wrap it in their own.
func Check(id string) error {
	switch {
	case !ports.TextID(id):
		return fmt.Errorf("a run id must be UTF-8 text without NUL of at most %d bytes", ports.MaxIDBytes)
	case Keyed(id):
		return fmt.Errorf("%q has the form of an idempotency key's run id (run_ and %d lowercase hex digits), reserved for engine.WithIdempotencyKey",
			id, keyedHexDigits)
	}
	return nil
}
