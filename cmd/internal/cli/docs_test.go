package cli

import (
	"os"
	"strings"
	"testing"
	"time"

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
				if documented, ok := documentedDefault(text, f.Name); ok {
					assert.True(t, sameDefault(documented, f), "%s --%s: docs/cli.md says the default is %s, the flag's is %q",
						sub.CommandPath(), f.Name, documented, f.DefValue)
				}
			})
			assert.Contains(t, text, "```sh\n", "%s has an example", sub.CommandPath())
		}
	}
	walk(root)
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		if documented, ok := documentedGlobalDefault(doc, f.Name); ok {
			assert.True(t, sameDefault(documented, f), "global --%s: docs/cli.md says the default is %s, the flag's is %q",
				f.Name, documented, f.DefValue)
		}
	})
	for _, code := range []string{"| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 4 |", "| 5 |", "| 130 |"} {
		assert.Contains(t, doc, code, "exit code table")
	}
}

// Without --schema only migrate falls back to public (when the search_path
// finds no docket_runs); every other command needs docket_runs on the
// search_path, and the flag's help says so.
func TestSchemaFlagHelpSaysPublicIsMigratesDefaultOnly(t *testing.T) {
	t.Parallel()
	usage := (&app{}).rootCommand().PersistentFlags().Lookup("schema").Usage
	assert.Contains(t, usage, "migrate: else public")
	assert.NotContains(t, usage, ", else public")
}

// documentedDefault is the default column of the flag's row in a command's
// flag table ("| `--name` | default | meaning |").
func documentedDefault(section, name string) (string, bool) {
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 3 && strings.HasSuffix(cells[0], "`--"+name+"`") {
			return strings.TrimSpace(cells[1]), true
		}
	}
	return "", false
}

// documentedGlobalDefault is the default column of a global flag's row
// ("| `--name` | variables | default | meaning |").
func documentedGlobalDefault(doc, name string) (string, bool) {
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, " | ")
		if len(cells) >= 4 && cells[0] == "| `--"+name+"`" {
			return strings.TrimSpace(cells[2]), true
		}
	}
	return "", false
}

// sameDefault reports whether a documented default names the flag's own.
// A flag without a value of its own (an empty string, zero, false) may be
// documented in words ("none", "newest", "libpq defaults"); one with a
// value must be documented as that value, a duration in any spelling Go
// parses the same.
func sameDefault(documented string, f *pflag.Flag) bool {
	if f.DefValue == "" || f.DefValue == "[]" {
		return true
	}
	documented = strings.Trim(documented, "`")
	if first, _, ok := strings.Cut(documented, " "); ok {
		documented = strings.Trim(first, "`") // "0 (16 × ...)"
	}
	if f.Value.Type() != "duration" {
		return documented == f.DefValue
	}
	want, err := time.ParseDuration(f.DefValue)
	if err != nil {
		return false
	}
	got, err := time.ParseDuration(documented)
	if err != nil {
		return want == 0 // "none"
	}
	return got == want
}
