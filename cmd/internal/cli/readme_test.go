package cli

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadmeCommandsWork runs every `docket` line of the README's CLI
// section, in order, against a fresh schema (DATABASE_URL comes from the
// test's DOCKET_* environment instead of the README's export line).
func TestReadmeCommandsWork(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "## The CLI")
	require.True(t, ok, "README has a CLI section")
	_, block, ok := strings.Cut(section, "```sh\n")
	require.True(t, ok)
	block, _, ok = strings.Cut(block, "```")
	require.True(t, ok)

	c, _, _ := onDatabase(t)
	ran := 0
	for _, line := range strings.Split(block, "\n") {
		line = strings.TrimSpace(stripComment(line))
		if !strings.HasPrefix(line, "docket ") {
			continue
		}
		args := shellWords(t, strings.TrimPrefix(line, "docket "))
		if n := len(args); n > 0 && args[n-1] == "&" {
			require.Equal(t, []string{"worker", "&"}, args, "only the worker runs in the background")
			c.worker()
			ran++
			continue
		}
		c.ok(args...)
		ran++
	}
	require.GreaterOrEqual(t, ran, 6, "the README shows the CLI's main commands")
}

// stripComment drops a trailing "  # comment" outside quotes.
func stripComment(line string) string {
	quoted := false
	for i, r := range line {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '#' && !quoted && i > 0 && line[i-1] == ' ':
			return line[:i]
		}
	}
	return line
}

// shellWords splits a command line on spaces, honouring single quotes (the
// only quoting the README uses).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var word strings.Builder
	quoted, inWord := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quote in %q", line)
	if inWord {
		words = append(words, word.String())
	}
	return words
}
