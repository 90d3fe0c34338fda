package notify_test

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/notify"
)

// docs/postgres.md documents every ListenerConfig field, with the
// listener's defaults.
func TestPostgresDocsDocumentEveryListenerConfigField(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/postgres.md")
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(raw), "| `notify.ListenerConfig` field |")
	require.True(t, ok, "docs/postgres.md has the listener's table")
	table, _, _ = strings.Cut(table, "\n\n")
	c := reflect.TypeOf(notify.ListenerConfig{})
	for i := range c.NumField() {
		assert.Contains(t, table, "`"+c.Field(i).Name+"`", "ListenerConfig.%s is documented", c.Field(i).Name)
	}
	pair := func(a, b time.Duration) string { return "| `" + a.String() + "` / `" + b.String() + "` |" }
	short := strings.NewReplacer("m0s", "m", "h0m", "h")
	assert.Contains(t, table, short.Replace(pair(notify.DefaultMinBackoff, notify.DefaultMaxBackoff)))
	assert.Contains(t, table, short.Replace(pair(notify.DefaultPingInterval, notify.DefaultPingTimeout)))
}
