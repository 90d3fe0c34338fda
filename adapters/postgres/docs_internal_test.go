package postgres

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/postgres.md documents every Config field, with the defaults the
// store applies.
func TestPostgresDocumentsEveryConfigFieldAndItsDefault(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/postgres.md")
	require.NoError(t, err)
	rows := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 3 && strings.HasPrefix(cells[0], "| `") {
			rows[strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")] = strings.TrimSpace(cells[1])
		}
	}
	c := reflect.TypeOf(Config{})
	for i := range c.NumField() {
		_, ok := rows[c.Field(i).Name]
		assert.True(t, ok, "docs/postgres.md has a row for Config.%s", c.Field(i).Name)
	}
	assert.Equal(t, strconv.Itoa(defaultMaxCommitBatch), rows["MaxCommitBatch"])
	assert.Equal(t, strconv.Itoa(defaultMaxCommitFlushes), rows["MaxCommitFlushes"])
}
