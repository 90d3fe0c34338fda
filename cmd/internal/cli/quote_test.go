package cli

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/app/demo"
)

func TestShellQuoteLeavesPlainWordsAlone(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"run_3f2a9c1d0e4b5a69", "run_3f2a9c1d0e4b5a69"},
		{"2025-03-04T05:06:07.123456Z/run_x", "2025-03-04T05:06:07.123456Z/run_x"},
		{"", "''"},
		{"order 12", "'order 12'"},
		{"it's", `'it'\''s'`},
		{"$HOME;rm *", "'$HOME;rm *'"},
		{"~user", "'~user'"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, shellQuote(tt.in), tt.in)
	}
}

// posixWords splits a command line as a POSIX shell does.
func posixWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -- "+line+`; for w in "$@"; do printf '%s\0' "$w"; done`).Output()
	require.NoError(t, err, "a shell cannot read: %s", line)
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

// TestSuggestedCommandsCanBePastedIntoAShell: the commands docket
// suggests (the next page of runs list, of runs events) quote what a
// shell would split or expand, so a run id with spaces, quotes or $ in
// its cursor is passed on as it is.
func TestSuggestedCommandsCanBePastedIntoAShell(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no POSIX shell")
	}
	c, _, _ := onDatabase(t)
	c.ok("graph", "publish", "--example")
	ids := []string{"run of Bob", "run of Ada's $HOME"} // the newest is the cursor of the first page
	for _, id := range ids {
		c.ok("runs", "start", demo.GraphID, "--input", `{"customer":"Ada","amount":10.0}`, "--run-id", id)
	}
	var page runPageJSON
	c.okJSON(&page, "runs", "list", "--limit", "1")
	require.True(t, page.HasMore)

	hint := regexp.MustCompile(`more runs: docket (.*)\n`).FindStringSubmatch(c.ok("runs", "list", "--limit", "1").stderr)
	require.Len(t, hint, 2)
	args := posixWords(t, hint[1])
	assert.Equal(t, []string{"runs", "list", "--before", page.NextBefore}, args)
	next := c.ok(append(args, "--json")...)
	var rest runPageJSON
	require.NoError(t, jsonUnmarshal(next.stdout, &rest))
	require.Len(t, rest.Runs, 1)
	assert.NotEqual(t, page.Runs[0].RunID, rest.Runs[0].RunID)

	hint = regexp.MustCompile(`more events: docket (.*)\n`).FindStringSubmatch(c.ok("runs", "events", ids[1], "--limit", "1").stderr)
	require.Len(t, hint, 2)
	assert.Equal(t, []string{"runs", "events", ids[1], "--after", "1"}, posixWords(t, hint[1]))
}
