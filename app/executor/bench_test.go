package executor_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/docketgo/docket/app/executor"
	"github.com/docketgo/docket/app/node"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
)

// BenchmarkExecuteOne is one no-op attempt with an 11-field state view, the
// executor's share of one superstep of a chain.
func BenchmarkExecuteOne(b *testing.B) {
	reg := node.NewRegistry().MustRegister("noop", call(func(_ context.Context, in node.Input) (node.Output, error) {
		return node.Update(map[string]any{"out": "v"}), nil
	}))
	e := &executor.Executor{Nodes: reg}
	act := activation("n", "noop")
	versions := act.SourceVersions.Map()
	for i := range 10 {
		act.Snapshot["f"+strconv.Itoa(i)] = "v"
		versions["f"+strconv.Itoa(i)] = 1
	}
	act.SourceVersions = run.VersionsOf(versions)
	acts := []superstep.Activation{act}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.Execute(ctx, "run_1", acts); err != nil {
			b.Fatal(err)
		}
	}
}
