package migrations

import (
	"embed"
	"fmt"
	"strings"
	"text/template"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

// step is one schema version: the script that installs it on top of the
// previous version and the one that removes it again.
type step struct {
	up, down *template.Template
}

// steps[v-1] installs and removes version v.
var steps = []step{
	loadStep("sql/0001_core"),
	loadStep("sql/0002_admission"),
}

func loadStep(base string) step {
	return step{up: loadScript(base + ".up.sql"), down: loadScript(base + ".down.sql")}
}

// loadScript parses an embedded file at init; a broken file is a build
// defect, so it panics rather than failing at migration time.
func loadScript(path string) *template.Template {
	text, err := sqlFiles.ReadFile(path)
	if err != nil {
		panic(fmt.Sprintf("docket migrations: embedded %s: %v", path, err))
	}
	return template.Must(template.New(strings.TrimPrefix(path, "sql/")).Option("missingkey=error").Parse(string(text)))
}

// render fills a script with the already quoted schema identifier.
func render(script *template.Template, quotedSchema string) (string, error) {
	var out strings.Builder
	if err := script.Execute(&out, struct{ Schema string }{quotedSchema}); err != nil {
		return "", fmt.Errorf("docket migrations: render %s: %w", script.Name(), err)
	}
	return out.String(), nil
}
