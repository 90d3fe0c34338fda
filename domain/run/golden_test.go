package run

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoredDocumentsKeepTheirForm pins the run document as stores hold it.
// Every codec fixture encodes to exactly its file in testdata/documents
// (named after the fixture, spaces as dashes), and each document in
// testdata/documents/earlier, written by the first layout of
// format_version 1 (channels with "barrier_seen" and "value" as null),
// decodes to the same run. Runs already stored are read with this codec:
// a change that fails here strands them, so it needs a new format version
// that still reads these files, not new files.
func TestStoredDocumentsKeepTheirForm(t *testing.T) {
	t.Parallel()
	fixtures := codecFixtures()
	file := func(name string) string { return strings.ReplaceAll(name, " ", "-") + ".json" }
	for name, r := range fixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join("testdata", "documents", file(name)))
			require.NoError(t, err, "every codec fixture has a stored document")
			got, err := Encode(r)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(got), "the document written for the fixture")
			decoded, err := Decode(want)
			require.NoError(t, err)
			assert.Equal(t, r, decoded, "the stored document read back")
		})
	}

	earlier, err := filepath.Glob(filepath.Join("testdata", "documents", "earlier", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, earlier)
	for _, path := range earlier {
		name := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(path), ".json"), "-", " ")
		r, ok := fixtures[name]
		require.True(t, ok, "%s names a codec fixture", path)
		t.Run("earlier "+name, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			got, err := Decode(b)
			require.NoError(t, err)
			assert.Equal(t, r, got)
		})
	}
}
