package cli

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/cmd/wiring"
)

// docket worker's engine flags are wiring.WorkerFlags: a worker binary of
// one's own that registers them offers the same flags, with the same
// types, defaults and help.
func TestDocketWorkerTakesTheEngineFlagsOfWiring(t *testing.T) {
	t.Parallel()
	var f wiring.WorkerFlags
	fs := pflag.NewFlagSet("custom-worker", pflag.ContinueOnError)
	f.AddFlags(fs)
	worker := (&app{}).workerCommand().Flags()
	n := 0
	fs.VisitAll(func(want *pflag.Flag) {
		n++
		got := worker.Lookup(want.Name)
		require.NotNil(t, got, want.Name)
		assert.Equal(t, want.Value.Type(), got.Value.Type(), want.Name)
		assert.Equal(t, want.DefValue, got.DefValue, want.Name)
		assert.Equal(t, want.Usage, got.Usage, want.Name)
	})
	assert.Equal(t, 14, n, "every engine flag of the worker")
}
