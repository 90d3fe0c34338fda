package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/app/demo"
)

// An idempotency key starts one run per tenant; the id it derives cannot
// be chosen with --run-id by any tenant, so none can take another's key
// first or learn from a conflict that the other used it.
func TestIdempotencyKeysAreScopedAndTheirRunIDsReserved(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	input := `{"customer":"Ada","amount":1500.0}`
	for _, tenant := range []string{"acme", "mallory"} {
		c.ok("graph", "publish", "--example", "--tenant", tenant)
	}
	var first, again, theirs runJSON
	c.okJSON(&first, "runs", "start", demo.GraphID, "--tenant", "acme", "--input", input, "--idempotency-key", "order-1")
	c.okJSON(&again, "runs", "start", demo.GraphID, "--tenant", "acme", "--input", input, "--idempotency-key", "order-1")
	assert.Equal(t, first.RunID, again.RunID, "a repeat returns the first run")
	c.fails(ExitConflict, "runs", "start", demo.GraphID, "--tenant", "acme",
		"--input", `{"customer":"Bob","amount":1500.0}`, "--idempotency-key", "order-1")
	c.okJSON(&theirs, "runs", "start", demo.GraphID, "--tenant", "mallory", "--input", input, "--idempotency-key", "order-1")
	assert.NotEqual(t, first.RunID, theirs.RunID, "keys are scoped to their tenant")

	c.fails(ExitUsage, "runs", "start", demo.GraphID, "--tenant", "mallory", "--input", input, "--run-id", first.RunID)
	c.fails(ExitUsage, "runs", "start", demo.GraphID, "--tenant", "acme", "--input", input, "--run-id", first.RunID)
	c.fails(ExitNotFound, "runs", "show", first.RunID, "--tenant", "mallory")
	c.ok("runs", "show", first.RunID, "--tenant", "acme")
}

// An explicitly empty --idempotency-key, as a script passes from an unset
// variable, is a usage error rather than a start without deduplication.
func TestAnEmptyIdempotencyKeyIsRefused(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	input := `{"customer":"Ada","amount":1500.0}`
	c.fails(ExitUsage, "runs", "start", demo.GraphID, "--input", input, "--idempotency-key", "")
	c.fails(ExitUsage, "runs", "start", demo.GraphID, "--input", input, "--idempotency-key=")
	var page runPageJSON
	c.okJSON(&page, "runs", "list")
	assert.Empty(t, page.Runs, "no run was started")
}
