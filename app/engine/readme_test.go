package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/graph"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/schema"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
)

// TestReadmeQuickstartRunsDurably runs the README's Go quickstart against a
// fresh database, and checks that the README shows exactly this code.
func TestReadmeQuickstartRunsDurably(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	r, err := quickstart(ctx, db.URL)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, r.Status)
	assert.Equal(t, "hello, Ada", r.Output["greeting"])

	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	assert.Contains(t, string(readme), readmeBlock(t, string(src)),
		"README.md's quickstart must match quickstart() in app/engine/readme_test.go")
}

// readmeBlock extracts the lines between the README markers, unindented by
// one tab, as they appear in the README's code block.
func readmeBlock(t *testing.T, src string) string {
	t.Helper()
	_, rest, ok := strings.Cut(src, "\t// README begin\n")
	require.True(t, ok)
	body, _, ok := strings.Cut(rest, "\t// README end\n")
	require.True(t, ok)
	var out strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		out.WriteString(strings.TrimPrefix(line, "\t"))
	}
	return out.String()
}

func quickstart(ctx context.Context, databaseURL string) (*run.Run, error) {
	// README begin
	// A node is a function of the committed state; it returns a state update.
	nodes := node.NewRegistry()
	nodes.MustRegister("example.hello", node.Func(func(ctx context.Context, state map[string]any) (map[string]any, error) {
		return map[string]any{"greeting": "hello, " + state["name"].(string)}, nil
	}))

	g, err := graph.New("greet").
		Input("name", schema.String(), graph.Required()).
		State("greeting", schema.String()).
		Node("hello", "example.hello").
		Edge("start", graph.Start, "hello").
		Edge("done", "hello", graph.Finish).
		Output("greeting", "greeting").
		Build()
	if err != nil {
		return nil, err
	}

	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if _, err := migrations.Up(ctx, pool, migrations.Options{}); err != nil {
		return nil, err
	}
	store, err := postgres.New(ctx, postgres.Config{Pool: pool})
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(engine.Config{Backend: store, Nodes: nodes})
	if err != nil {
		return nil, err
	}
	if err := eng.Start(ctx); err != nil {
		return nil, err
	}
	defer eng.Stop(context.Background())

	ref, err := eng.SaveGraph(ctx, g) // publish an immutable, content-addressed version
	if err != nil {
		return nil, err
	}
	r, err := eng.StartRun(ctx, ref, map[string]any{"name": "Ada"})
	if err != nil {
		return nil, err
	}
	return eng.AwaitRun(ctx, r.ID, 10*time.Second) // the finished run: Output["greeting"] == "hello, Ada"
	// README end
}
