package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/cli.md documents every command and every flag; this keeps it in
// step with the command tree.
func TestDocsCoverEveryCommandAndFlag(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../../docs/cli.md")
	require.NoError(t, err)
	doc := string(raw)
	section := func(path string) (string, bool) {
		heading := "### `" + path + "`"
		i := strings.Index(doc, heading)
		if i < 0 {
			return "", false
		}
		rest := doc[i+len(heading):]
		if j := strings.Index(rest, "\n### "); j >= 0 {
			rest = rest[:j]
		}
		return rest, true
	}
	root := (&app{}).rootCommand()
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		assert.Contains(t, doc, "| `--"+f.Name+"` | `"+envName(f.Name)+"`", "global flag --%s and its variable", f.Name)
	})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			if len(sub.Commands()) > 0 {
				walk(sub)
				continue
			}
			text, ok := section(sub.CommandPath())
			if !assert.True(t, ok, "docs/cli.md has a section for %q", sub.CommandPath()) {
				continue
			}
			sub.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
				assert.Contains(t, text, "`--"+f.Name+"`", "%s documents --%s", sub.CommandPath(), f.Name)
			})
			assert.Contains(t, text, "```sh\n", "%s has an example", sub.CommandPath())
		}
	}
	walk(root)
	for _, code := range []string{"| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 5 |", "| 130 |"} {
		assert.Contains(t, doc, code, "exit code table")
	}
}
