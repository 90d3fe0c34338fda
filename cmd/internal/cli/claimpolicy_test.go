package cli

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
)

// Only a worker sets the schema's claim policy; one-off commands, with or
// without a tenant, leave it as the fleet has it.
func TestOnlyWorkersSetTheSchemasClaimPolicy(t *testing.T) {
	t.Parallel()
	c, db, schema := onDatabase(t)
	mode := func() string {
		t.Helper()
		var m string
		err := db.Connect(t).QueryRow(context.Background(),
			"SELECT admission_mode FROM "+pgx.Identifier{schema, "docket_claim_policy"}.Sanitize()).Scan(&m)
		require.NoError(t, err)
		return m
	}
	c.fails(ExitUsage, "worker", "--claim-policy", "round-robin", "--for", "10ms")

	c.ok("worker", "--claim-policy", "tenant-fair", "--for", "10ms")
	assert.Equal(t, "windowed", mode())
	c.ok("runs", "list")
	c.ok("runs", "list", "--tenant", "acme")
	assert.Equal(t, "windowed", mode(), "other commands leave the policy alone")
	c.ok("worker", "--for", "10ms")
	assert.Equal(t, "legacy", mode(), "the last worker started sets the policy")
}

// A worker with --tenant claims only tenant-fair: asking it for legacy is
// a usage error that names the flag value to use instead.
func TestATenantWorkerRefusesTheLegacyPolicyByItsFlagName(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	res := c.fails(ExitUsage, "worker", "--tenant", "acme", "--claim-policy", "legacy", "--for", "10ms")
	assert.Contains(t, res.stderr, "--claim-policy tenant-fair")
	assert.NotContains(t, res.stderr, "tenant_fair", "the engine's spelling is not a value of the flag")
}

func TestATenantFairWorkerDrivesTenantRuns(t *testing.T) {
	t.Parallel()
	c, _, _ := onDatabase(t)
	c.worker("--claim-policy", "tenant-fair")
	c.ok("graph", "publish", "--example", "--tenant", "acme")
	var started runJSON
	c.okJSON(&started, "runs", "start", demo.GraphID, "--tenant", "acme",
		"--input", `{"customer":"Ada","amount":1500.0}`, "--await", "15s")
	assert.Equal(t, "waiting", string(started.Status), "driven to the manager's approval")
}
