package cli

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
)

// A --target on the other side of the installed version asks for the
// opposite direction: it is refused with the installed version named, not
// reported as already done.
func TestMigrateTargetOnTheOtherSideOfTheInstalledVersionIsRefused(t *testing.T) {
	t.Parallel()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	c := newCLI(t, map[string]string{"DATABASE_URL": db.URL, "DOCKET_SCHEMA": schema})
	c.ok("migrate", "up", "--target", "1")

	refused := c.fails(ExitUsage, "migrate", "down", "--yes", "--target", "2")
	assert.Contains(t, refused.stderr, `schema "`+schema+`" is at version 1`)
	assert.Contains(t, refused.stderr, "migrate up --target 2")

	c.ok("migrate", "up")
	refused = c.fails(ExitUsage, "migrate", "up", "--target", "1")
	assert.Contains(t, refused.stderr, fmt.Sprintf("schema %q is at version %d", schema, migrations.CurrentVersion))
	assert.Contains(t, refused.stderr, "migrate down --target 1 --yes")

	var status migrateStatusJSON
	c.okJSON(&status, "migrate", "status")
	assert.Equal(t, migrations.CurrentVersion, status.Version, "a refused target changes nothing")

	// The target already reached is still nothing to do, either way.
	current := fmt.Sprint(migrations.CurrentVersion)
	assert.Contains(t, c.ok("migrate", "up", "--target", current).stdout, "nothing to do")
	assert.Contains(t, c.ok("migrate", "down", "--yes", "--target", current).stdout, "nothing to do")
}
