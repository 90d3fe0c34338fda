package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every relative link of README.md and docs/*.md names a file of the
// repository and, with a #fragment, a heading of that file.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := "../../.."
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	pages = append(pages, filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{}
	texts := map[string]string{}
	for _, p := range pages {
		raw, err := os.ReadFile(p)
		require.NoError(t, err)
		texts[p] = withoutCodeBlocks(string(raw))
		anchors[p] = headingAnchors(texts[p])
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, p := range pages {
		for _, m := range link.FindAllStringSubmatch(texts[p], -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			dest := p
			if file != "" {
				dest = filepath.Join(filepath.Dir(p), file)
				_, err := os.Stat(dest)
				if !assert.NoError(t, err, "%s links to %s", p, target) {
					continue
				}
			}
			checked++
			if fragment == "" {
				continue
			}
			a, ok := anchors[dest]
			if assert.True(t, ok, "%s links to a fragment of %s, which is not a checked page", p, target) {
				assert.True(t, a[fragment], "%s links to %s: no such heading", p, target)
			}
		}
	}
	assert.Greater(t, checked, 50, "the pages link to each other")
}

// withoutCodeBlocks drops fenced code blocks, whose lines are neither
// headings nor links.
func withoutCodeBlocks(s string) string {
	var out strings.Builder
	fenced := false
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out.WriteString(line)
		}
	}
	return out.String()
}

// headingAnchors are the fragments GitHub gives a page's headings: lower
// case, punctuation dropped, spaces as dashes, repeats numbered.
func headingAnchors(s string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				slug.WriteRune(r)
			}
		}
		a := slug.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}
