package harness_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/harness"
)

func TestMedianOfOddAndEvenCounts(t *testing.T) {
	t.Parallel()
	assert.Equal(t, 2.0, harness.Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, harness.Median([]float64{4, 1, 3, 2}))
	assert.True(t, math.IsNaN(harness.Median(nil)))
	xs := []float64{3, 1, 2}
	harness.Median(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs, "the input is not reordered")
}

func TestPercentileIsNearestRank(t *testing.T) {
	t.Parallel()
	sorted := make([]time.Duration, 100)
	for i := range sorted {
		sorted[i] = time.Duration(i + 1)
	}
	assert.Equal(t, time.Duration(50), harness.Percentile(sorted, 50))
	assert.Equal(t, time.Duration(95), harness.Percentile(sorted, 95))
	assert.Equal(t, time.Duration(99), harness.Percentile(sorted, 99))
	assert.Equal(t, time.Duration(100), harness.Percentile(sorted, 100))
	assert.Equal(t, time.Duration(7), harness.Percentile([]time.Duration{7}, 99))
	assert.Zero(t, harness.Percentile(nil, 50))
}

func TestRepeatRunsAtLeastMinOpsAndRecordsEachLatency(t *testing.T) {
	t.Parallel()
	calls := 0
	s, lat, err := harness.Repeat(context.Background(), func(context.Context) error { calls++; return nil }, 0, 5, nil)
	require.NoError(t, err)
	assert.Equal(t, 5, s.Ops)
	assert.Len(t, lat, 5)
	assert.Equal(t, 6, calls, "one untimed warm-up call precedes the timed ones")
}

func TestRepeatCountsAllocationsPerOperation(t *testing.T) {
	t.Parallel()
	var sink [][]byte
	s, _, err := harness.Repeat(context.Background(), func(context.Context) error {
		sink = append(sink[:0], make([]byte, 1<<16)) // one large allocation per call
		return nil
	}, 0, 50, nil)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, s.AllocsPerOp, 1.0)
	assert.GreaterOrEqual(t, s.BytesPerOp, float64(1<<16))
}

func TestRepeatStopsAtTheFirstError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	_, _, err := harness.Repeat(context.Background(), func(context.Context) error { return boom }, time.Second, 10, nil)
	require.ErrorIs(t, err, boom)
}

func TestSummarizeTakesMediansAndPercentiles(t *testing.T) {
	t.Parallel()
	samples := []harness.Sample{
		{Ops: 10, NsPerOp: 300, AllocsPerOp: 5, BytesPerOp: 100},
		{Ops: 10, NsPerOp: 100, AllocsPerOp: 5, BytesPerOp: 100},
		{Ops: 10, NsPerOp: 200, AllocsPerOp: 7, BytesPerOp: 300},
	}
	lat := []time.Duration{5, 1, 4, 2, 3}
	s, err := harness.Summarize(samples, lat)
	require.NoError(t, err)
	assert.Equal(t, 3, s.Repeats)
	assert.Equal(t, 30, s.Ops)
	assert.Equal(t, 200.0, s.NsPerOp)
	assert.Equal(t, 5.0, s.AllocsPerOp)
	assert.Equal(t, 100.0, s.BytesPerOp)
	assert.Equal(t, 3.0, s.P50Ns)
	assert.Equal(t, 5.0, s.P99Ns)
	assert.Equal(t, []time.Duration{5, 1, 4, 2, 3}, lat, "latencies are not reordered")

	_, err = harness.Summarize(nil, nil)
	assert.ErrorIs(t, err, harness.ErrNoSamples)
}
