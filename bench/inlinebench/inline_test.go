package inlinebench_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/inlinebench"
)

// Every case runs its graph to the expected result, so a benchmark never
// times a run that failed early.
func TestEveryCaseCompletesItsGraph(t *testing.T) {
	t.Parallel()
	cases, err := inlinebench.Cases(context.Background())
	require.NoError(t, err)
	require.Len(t, cases, 4*len(inlinebench.Shapes))
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			require.NoError(t, c.Op(context.Background()))
			require.NoError(t, c.Op(context.Background()), "a case is repeatable")
		})
	}
}

func TestUnknownShapeIsRejected(t *testing.T) {
	t.Parallel()
	_, err := inlinebench.DocketGraph("ring")
	require.Error(t, err)
	_, err = inlinebench.EinoCase(context.Background(), "ring")
	require.Error(t, err)
}

func benchmark(b *testing.B, system inlinebench.System) {
	ctx := context.Background()
	cases, err := inlinebench.Cases(ctx)
	require.NoError(b, err)
	for _, c := range cases {
		if c.System != system {
			continue
		}
		b.Run(string(c.Shape), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Op(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDocketInline is inline.RunInline end to end (executor included).
func BenchmarkDocketInline(b *testing.B) { benchmark(b, inlinebench.Docket) }

// BenchmarkDocketInlineCaller is BenchmarkDocketInline with
// inline.OnCallingGoroutine.
func BenchmarkDocketInlineCaller(b *testing.B) { benchmark(b, inlinebench.DocketCaller) }

// BenchmarkEino is the same shapes as Eino compose graphs of no-op lambdas.
func BenchmarkEino(b *testing.B) { benchmark(b, inlinebench.Eino) }

// BenchmarkDomainLoop is superstep Start/Advance/Settle without executor.
func BenchmarkDomainLoop(b *testing.B) { benchmark(b, inlinebench.DomainLoop) }
