// Package harness measures benchmark operations outside `go test`: it
// times repeated runs of an operation, counts its allocations, and reduces
// the repeats to medians and latency percentiles for the report.
//
// It is not a statistics library: a Sample is what one timed repeat saw,
// and Summary is the plain median/percentile reduction the report prints.
package harness

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"time"
)

// Op is one measured operation (one whole graph run, one job drained…).
type Op func(context.Context) error

// Sample is one timed repeat of an operation.
type Sample struct {
	Ops         int     `json:"ops"`
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp float64 `json:"allocs_per_op"`
	BytesPerOp  float64 `json:"bytes_per_op"`
}

// Repeat runs op back to back for about d (at least minOps times) and
// returns what it cost per operation, plus each operation's latency in
// latencies (appended). Allocations are counted over the whole repeat with
// runtime.MemStats, as testing.B does; timing one operation at a time
// costs two clock reads, which are not allocations.
func Repeat(ctx context.Context, op Op, d time.Duration, minOps int, latencies []time.Duration) (Sample, []time.Duration, error) {
	if minOps < 1 {
		minOps = 1
	}
	// One untimed call warms caches and per-graph indexes.
	if err := op(ctx); err != nil {
		return Sample{}, latencies, err
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	n := 0
	for ; n < minOps || time.Since(start) < d; n++ {
		if err := ctx.Err(); err != nil {
			return Sample{}, latencies, err
		}
		t0 := time.Now()
		if err := op(ctx); err != nil {
			return Sample{}, latencies, err
		}
		latencies = append(latencies, time.Since(t0))
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return Sample{
		Ops:         n,
		NsPerOp:     float64(elapsed.Nanoseconds()) / float64(n),
		AllocsPerOp: float64(after.Mallocs-before.Mallocs) / float64(n),
		BytesPerOp:  float64(after.TotalAlloc-before.TotalAlloc) / float64(n),
	}, latencies, nil
}

// Summary reduces repeats: medians of the per-repeat figures and
// percentiles over every operation's latency.
type Summary struct {
	Repeats     int     `json:"repeats"`
	Ops         int     `json:"ops"`
	NsPerOp     float64 `json:"ns_per_op_median"`
	AllocsPerOp float64 `json:"allocs_per_op_median"`
	BytesPerOp  float64 `json:"bytes_per_op_median"`
	P50Ns       float64 `json:"p50_ns"`
	P95Ns       float64 `json:"p95_ns"`
	P99Ns       float64 `json:"p99_ns"`
}

// ErrNoSamples is returned by Summarize when nothing was measured.
var ErrNoSamples = errors.New("harness: no samples")

// Summarize reduces samples and latencies to a Summary.
func Summarize(samples []Sample, latencies []time.Duration) (Summary, error) {
	if len(samples) == 0 {
		return Summary{}, ErrNoSamples
	}
	s := Summary{Repeats: len(samples)}
	ns := make([]float64, len(samples))
	allocs := make([]float64, len(samples))
	bytes := make([]float64, len(samples))
	for i, x := range samples {
		s.Ops += x.Ops
		ns[i], allocs[i], bytes[i] = x.NsPerOp, x.AllocsPerOp, x.BytesPerOp
	}
	s.NsPerOp, s.AllocsPerOp, s.BytesPerOp = Median(ns), Median(allocs), Median(bytes)
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	s.P50Ns = float64(Percentile(sorted, 50))
	s.P95Ns = float64(Percentile(sorted, 95))
	s.P99Ns = float64(Percentile(sorted, 99))
	return s, nil
}

// Median is the middle value (the mean of the two middle values for an
// even count); NaN for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return (s[mid-1] + s[mid]) / 2
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of an
// ascending slice; zero for an empty one.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
