package migrations

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEveryEmbeddedScriptBelongsToAStep(t *testing.T) {
	t.Parallel()
	require.Len(t, steps, CurrentVersion, "one step per schema version")
	used := map[string]bool{}
	for _, s := range steps {
		used[s.up.Name()] = true
		used[s.down.Name()] = true
	}
	files, err := fs.Glob(sqlFiles, "sql/*")
	require.NoError(t, err)
	for _, file := range files {
		assert.True(t, used[strings.TrimPrefix(file, "sql/")], "%s is embedded but never run", file)
	}
	assert.Len(t, files, len(used))
}

func TestRenderedScriptsUseOnlyTheQuotedSchema(t *testing.T) {
	t.Parallel()
	for _, s := range steps {
		for _, script := range []string{s.up.Name(), s.down.Name()} {
			tmpl := s.up
			if script == s.down.Name() {
				tmpl = s.down
			}
			sql, err := render(tmpl, `"sentinel_schema"`)
			require.NoError(t, err)
			assert.False(t, strings.Contains(sql, "{{"), "%s has an unrendered placeholder", script)
			assert.False(t, strings.Contains(sql, "public."), "%s must not name a schema of its own", script)
			unqualified := regexp.MustCompile(`(?:ON|TABLE|FROM|INTO|UPDATE|REFERENCES)\s+docket_\w+\b`)
			assert.Empty(t, unqualified.FindAllString(sql, -1), "%s names tables without the schema", script)
		}
	}
}
