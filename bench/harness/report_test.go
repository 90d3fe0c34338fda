package harness_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/harness"
)

func cost(scenario, system string, ns, allocs float64, status harness.Status) harness.Result {
	return harness.Result{Scenario: scenario, System: system, Status: status, Summary: harness.Summary{NsPerOp: ns, AllocsPerOp: allocs}}
}

func TestCompareCostNeedsBothRatiosWithinTheGoal(t *testing.T) {
	t.Parallel()
	rep := &harness.Report{Results: []harness.Result{
		cost("a", "ours", 50, 10, harness.StatusMeasured), cost("a", "peer", 100, 20, harness.StatusMeasured),
		cost("b", "ours", 50, 30, harness.StatusMeasured), cost("b", "peer", 100, 20, harness.StatusMeasured),
		cost("c", "ours", 50, 10, harness.StatusMeasured), cost("c", "peer", 100, 20, harness.StatusRecorded),
		cost("d", "ours", 50, 10, harness.StatusMeasured), {Scenario: "d", System: "peer", Status: harness.StatusSkipped},
	}}
	for _, s := range []string{"a", "b", "c", "d"} {
		rep.CompareCost(s, "ours", "peer", 1.0)
	}
	a, b, c, d := rep.Comparisons[0], rep.Comparisons[1], rep.Comparisons[2], rep.Comparisons[3]
	assert.True(t, a.Met)
	assert.InDelta(t, 0.5, a.TimeRatio, 1e-9)
	assert.InDelta(t, 0.5, a.AllocRatio, 1e-9)
	assert.False(t, b.Met, "more allocations than the peer misses the goal")
	assert.True(t, c.Met)
	assert.Contains(t, c.Note, "recorded, not measured in this run")
	assert.False(t, d.Met)
	assert.Contains(t, d.Note, "not compared")
}

func TestThroughputAndLatencyComparisons(t *testing.T) {
	t.Parallel()
	rep := &harness.Report{Results: []harness.Result{
		{Scenario: "drain/c8", System: "ours", Status: harness.StatusMeasured, Throughput: 500},
		{Scenario: "drain/c8", System: "peer", Status: harness.StatusMeasured, Throughput: 1000},
		{Scenario: "drain/c32", System: "ours", Status: harness.StatusMeasured, Throughput: 3000},
		{Scenario: "drain/c32", System: "peer", Status: harness.StatusFailed, Throughput: 9000},
		{Scenario: "drain/c64", System: "peer", Status: harness.StatusMeasured, Throughput: 2000},
		{Scenario: "lat", System: "ours", Status: harness.StatusMeasured, Summary: harness.Summary{P50Ns: 3}},
		{Scenario: "lat", System: "peer", Status: harness.StatusMeasured, Summary: harness.Summary{P50Ns: 2}},
		{Scenario: "probe/c8", System: "limit", Status: harness.StatusMeasured, Throughput: 1000},
	}}
	rep.CompareThroughput("drain/c8", "ours", "peer", 1.0)
	rep.CompareBest("drain/best", "drain/", "ours", "peer", 1.0)
	rep.CompareLatencyP50("lat", "ours", "peer", 2.0)
	rep.CompareMoments("drain/c8", "ours", "probe/c8", "limit", 2, 0.8)
	rep.ReferenceThroughput("drain/c8", "ours", "peer")

	assert.False(t, rep.Comparisons[0].Met)
	assert.InDelta(t, 0.5, rep.Comparisons[0].TimeRatio, 1e-9)
	best := rep.Comparisons[1]
	assert.True(t, best.Met, "a failed scenario's numbers never count")
	assert.InDelta(t, 1.5, best.TimeRatio, 1e-9)
	assert.True(t, rep.Comparisons[2].Met)
	assert.InDelta(t, 1.0, rep.Comparisons[3].TimeRatio, 1e-9, "500 runs/s × 2 commits ÷ 1000 commits/s")
	reference := rep.Comparisons[4]
	assert.InDelta(t, 0.5, reference.TimeRatio, 1e-9)
	assert.Empty(t, reference.Goal)
	assert.False(t, reference.Met, "a comparison without a goal meets none")

	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "| drain/best | ours ÷ peer | 1.50 |")
	assert.Contains(t, md.String(), "| drain/c8 | ours ÷ peer | 0.50 | – | none (for reference) | – |")
}

func TestLatencyGrowthComparesOneSystemAtTwoSizes(t *testing.T) {
	t.Parallel()
	p50 := func(scenario string, ns float64, status harness.Status) harness.Result {
		return harness.Result{Scenario: scenario, System: "ours", Status: status, Summary: harness.Summary{P50Ns: ns}}
	}
	rep := &harness.Report{Results: []harness.Result{
		p50("claim/10k", 2e6, harness.StatusMeasured), p50("claim/1M", 2.6e6, harness.StatusMeasured),
		p50("claim/100k", 4e6, harness.StatusMeasured), p50("claim/big", 1e6, harness.StatusFailed),
	}}
	rep.CompareLatencyGrowth("claim", "ours", "claim/10k", "claim/1M", 1.5)
	rep.CompareLatencyGrowth("claim", "ours", "claim/10k", "claim/100k", 1.5)
	rep.CompareLatencyGrowth("claim", "ours", "claim/10k", "claim/big", 1.5)

	assert.True(t, rep.Comparisons[0].Met)
	assert.InDelta(t, 1.3, rep.Comparisons[0].TimeRatio, 1e-9)
	assert.Equal(t, "claim/1M", rep.Comparisons[0].Ours)
	assert.Equal(t, "claim/10k", rep.Comparisons[0].Peer)
	assert.False(t, rep.Comparisons[1].Met)
	assert.InDelta(t, 2.0, rep.Comparisons[1].TimeRatio, 1e-9)
	assert.False(t, rep.Comparisons[2].Met)
	assert.Contains(t, rep.Comparisons[2].Note, "not compared", "a failed size's numbers never count")
}

// measured is a result whose repeats took these times per operation.
func measured(scenario, system string, nsPerOp ...float64) harness.Result {
	r := harness.Result{Scenario: scenario, System: system, Status: harness.StatusMeasured}
	for _, ns := range nsPerOp {
		r.Samples = append(r.Samples, harness.Sample{Ops: 100, NsPerOp: ns})
	}
	r.Summary.NsPerOp = harness.Median(nsPerOp)
	r.Throughput = 1e9 / r.Summary.NsPerOp
	return r
}

func TestComparisonsReportEachAlternatingRoundsRatio(t *testing.T) {
	t.Parallel()
	rep := &harness.Report{Results: []harness.Result{
		// Ours does 2, 1 and 4 times the peer's operations per second.
		measured("chain", "ours", 100, 300, 50), measured("chain", "peer", 200, 300, 200),
		measured("inline", "ours", 10, 30), measured("inline", "peer", 20, 20),
		// A side that lost a repeat cannot be paired round by round.
		measured("short", "ours", 100, 100, 100), measured("short", "peer", 100, 100),
		measured("once", "ours", 100), measured("once", "peer", 100),
	}}
	rep.CompareThroughput("chain", "ours", "peer", 2.0)
	rep.CompareCost("inline", "ours", "peer", 1.0)
	rep.CompareThroughput("short", "ours", "peer", 1.0)
	rep.CompareThroughput("once", "ours", "peer", 1.0)
	// Each side's best here is a different scenario, whose rounds never
	// ran side by side.
	rep.Results = append(rep.Results, measured("drain/c8", "ours", 10, 10), measured("drain/c64", "peer", 10, 20))
	rep.CompareBest("drain/best", "drain/", "ours", "peer", 1.0)

	chain := rep.Comparisons[0]
	assert.InDelta(t, 2.0, chain.TimeRatio, 1e-9, "the verdict stays on the medians")
	assert.True(t, chain.Met)
	assert.InDeltaSlice(t, []float64{2, 1, 4}, chain.RoundRatios, 1e-9, "in repeat order")
	assert.InDeltaSlice(t, []float64{0.5, 1.5}, rep.Comparisons[1].RoundRatios, 1e-9, "cost ratios are time ÷ time")
	assert.Nil(t, rep.Comparisons[2].RoundRatios)
	assert.Nil(t, rep.Comparisons[3].RoundRatios, "a single run has no spread to show")
	assert.Equal(t, "drain/best", rep.Comparisons[4].Scenario)
	assert.Nil(t, rep.Comparisons[4].RoundRatios)

	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "| chain | ours ÷ peer | 2.00 | – | throughput ≥ 2.0× peer | yes (per round 2.00 / 1.00 / 4.00) |")
	assert.NotContains(t, md.String(), "| short | ours ÷ peer | 1.00 | – | throughput ≥ 1.0× peer | yes (per round")
}
