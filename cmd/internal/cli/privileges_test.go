package cli

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
)

// An application role with only the grants docs/postgres.md lists (Roles
// and privileges) runs everything but the migrations' DDL: a worker that
// claims and commits, starts, answers, cancels, retries and prunes; a
// role with SELECT alone reads.
func TestAnApplicationRoleWithTheDocumentedGrantsRunsEngines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db, schema := onDatabase(t) // migrated by the database's owner
	admin := db.Pool(t)
	quotedSchema := pgx.Identifier{schema}.Sanitize()
	roleURL := func(grants ...string) string {
		t.Helper()
		role := schema + "_" + string(rune('a'+len(grants))) // unique on the server, like the schema
		quotedRole := pgx.Identifier{role}.Sanitize()
		u, err := url.Parse(db.URL)
		require.NoError(t, err)
		password, _ := u.User.Password()
		// The server's password for the test role, if it asks for one.
		_, err = admin.Exec(ctx, `CREATE ROLE `+quotedRole+` LOGIN PASSWORD '`+strings.ReplaceAll(password, "'", "''")+`'`)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = admin.Exec(context.Background(), `DROP OWNED BY `+quotedRole)
			_, _ = admin.Exec(context.Background(), `DROP ROLE `+quotedRole)
		})
		for _, grant := range grants {
			_, err := admin.Exec(ctx, strings.NewReplacer("docket_app", quotedRole, "docket", quotedSchema).Replace(grant))
			require.NoError(t, err, grant)
		}
		u.User = url.UserPassword(role, password)
		return u.String()
	}
	app := newCLI(t, map[string]string{"DOCKET_SCHEMA": schema, "DOCKET_DATABASE_URL": roleURL(
		// docs/postgres.md, word for word.
		`GRANT USAGE ON SCHEMA docket TO docket_app`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA docket TO docket_app`,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA docket TO docket_app`,
	)})

	app.ok("migrate", "up") // at the current version: nothing to do
	app.ok("migrate", "status")
	app.ok("graph", "publish", "--example")
	var poisoned runJSON
	app.okJSON(&poisoned, "runs", "start", demo.GraphID, "--input", `{"customer":"Di","amount":8000.0}`)
	poisonAll(t, admin, schema)
	app.ok("runs", "retry", poisoned.RunID)
	app.worker()
	var done, waiting, cancelled runJSON
	app.okJSON(&done, "runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--await", "30s")
	require.Equal(t, "done", string(done.Status))
	app.okJSON(&waiting, "runs", "start", demo.GraphID, "--input", `{"customer":"Bob","amount":5000.0}`, "--await", "30s")
	require.Equal(t, "waiting", string(waiting.Status))
	app.ok("interrupts", "resolve", waiting.RunID, demo.ApprovalInterruptID, "--string", "approved")
	app.okJSON(&waiting, "runs", "await", waiting.RunID, "--timeout", "30s")
	assert.Equal(t, "done", string(waiting.Status))
	app.okJSON(&cancelled, "runs", "start", demo.GraphID, "--input", `{"customer":"Cy","amount":7000.0}`, "--await", "30s")
	require.Equal(t, "waiting", string(cancelled.Status))
	app.ok("runs", "cancel", cancelled.RunID)
	var pruned pruneJSON
	app.okJSON(&pruned, "prune", "--event-retention", "0s", "--run-retention", "0s")
	assert.Equal(t, 3, pruned.RunsDeleted, "the done, answered and cancelled runs")

	reader := newCLI(t, map[string]string{"DOCKET_SCHEMA": schema, "DOCKET_DATABASE_URL": roleURL(
		`GRANT USAGE ON SCHEMA docket TO docket_app`,
		`GRANT SELECT ON ALL TABLES IN SCHEMA docket TO docket_app`,
	)})
	assert.Contains(t, reader.ok("runs", "list").stdout, poisoned.RunID)
	reader.ok("runs", "show", poisoned.RunID)
	assert.Contains(t, reader.fails(ExitFailure, "runs", "cancel", poisoned.RunID).stderr, "permission denied")

	// Conformance needs CREATE SCHEMA, which the application role lacks: it
	// says so once instead of failing every invariant.
	res := app.fails(ExitFailure, "conformance", "--no-progress")
	assert.Contains(t, res.stderr, "CREATE SCHEMA")
	assert.NotContains(t, res.stdout, "FAIL", "no invariant ran")
}
