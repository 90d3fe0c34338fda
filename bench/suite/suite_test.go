package suite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/bench/dbbench"
	"github.com/docketgo/docket/bench/harness"
	"github.com/docketgo/docket/bench/inlinebench"
	"github.com/docketgo/docket/bench/suite"
	"github.com/docketgo/docket/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// A miniature profile runs every inline case and compares every shape,
// so `make bench` cannot silently drop a scenario. No timing is asserted.
func TestRunInlineMeasuresEveryCaseAndComparesEveryShape(t *testing.T) {
	p := suite.Profile{Name: "test", Repeats: 2, MinOps: 2}
	rep := &harness.Report{Profile: p.Name}
	require.NoError(t, suite.RunInline(context.Background(), p, rep, t.Logf))

	require.Len(t, rep.Results, 4*len(inlinebench.Shapes))
	for _, r := range rep.Results {
		assert.Equal(t, harness.StatusMeasured, r.Status, r.Scenario+" "+r.System)
		assert.Equal(t, 2, r.Summary.Repeats)
		assert.Positive(t, r.Summary.NsPerOp)
		assert.Positive(t, r.Summary.AllocsPerOp, "every case allocates: it builds a run or a graph state")
	}
	require.Len(t, rep.Comparisons, 2*len(inlinebench.Shapes))
	for i, c := range rep.Comparisons {
		ours := []inlinebench.System{inlinebench.Docket, inlinebench.DocketCaller}[i%2]
		assert.Equal(t, string(ours), c.Ours)
		assert.Equal(t, string(inlinebench.Eino), c.Peer)
		assert.Positive(t, c.TimeRatio)
		assert.Positive(t, c.AllocRatio)
		assert.Empty(t, c.Note, "both sides were measured in this run")
		assert.Len(t, c.RoundRatios, 2, "one time ratio per repeat")
	}

	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "| inline/chain10 | docket-inline ÷ eino |")
	assert.Contains(t, md.String(), "| inline/chain10 | docket-inline-caller ÷ eino |")
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var back harness.Report
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	assert.Equal(t, rep.Comparisons, back.Comparisons)
}

func TestEveryNamedProfileIsUsable(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"smoke", "local", "scale"} {
		p, ok := suite.Profiles[name]
		require.True(t, ok, name)
		assert.Equal(t, name, p.Name)
		assert.Positive(t, p.Repeats, name)
		assert.Positive(t, p.DB.Jobs, name)
		assert.NotEmpty(t, p.DB.Clients, name)
		assert.NotEmpty(t, p.DB.Concurrency, name)
		assert.NotEmpty(t, p.DB.Backlogs, name)
		assert.True(t, slices.IsSorted(p.DB.Backlogs), name)
		assert.Positive(t, p.DB.BacklogClaims, name)
		assert.Positive(t, p.DB.Pairs, name)
	}
}

// The claim-backlog scenario measures every size, records the claim
// plan and compares the largest size with the smallest; --only leaves
// every other scenario out. No timing is asserted.
func TestClaimBacklogScenarioMeasuresEverySizeAndComparesTheExtremes(t *testing.T) {
	pg := pgtest.New(t)
	t.Setenv(dbbench.EnvURL, pg.URL)
	p := suite.Profile{Name: "test", Only: suite.ScenarioClaimBacklog,
		DB: suite.DBProfile{Backlogs: []int{500, 1000}, BacklogClaims: 5}}
	rep := &harness.Report{Profile: p.Name}
	require.NoError(t, suite.RunDB(context.Background(), p, rep, t.Logf))

	require.Len(t, rep.Results, 2, "only the claim-backlog sizes ran")
	for i, scenario := range []string{"db/claim-backlog/500", "db/claim-backlog/1k"} {
		r := rep.Results[i]
		assert.Equal(t, scenario, r.Scenario)
		assert.Equal(t, suite.SystemDocket, r.System)
		assert.Equal(t, harness.StatusMeasured, r.Status, r.Note)
		assert.Positive(t, r.Summary.P50Ns)
		assert.Zero(t, r.Throughput, "a latency scenario")
		assert.Contains(t, r.Plan, "docket_runs")
	}
	require.Len(t, rep.Comparisons, 1)
	c := rep.Comparisons[0]
	assert.Equal(t, suite.ScenarioClaimBacklog, c.Scenario)
	assert.Equal(t, "db/claim-backlog/1k", c.Ours)
	assert.Equal(t, "db/claim-backlog/500", c.Peer)
	assert.Positive(t, c.TimeRatio)
	assert.Empty(t, c.Note)
}

// With Pairs = 2 every system of a comparison runs twice, the pair in
// alternating order, and reports the median of its runs with every run's
// sample kept; scenarios without a peer run once. No timing is asserted.
func TestComparedScenariosReportTheMedianOfAlternatingRuns(t *testing.T) {
	pg := pgtest.New(t)
	t.Setenv(dbbench.EnvURL, pg.URL)
	p := suite.Profile{Name: "test", DB: suite.DBProfile{Jobs: 40, Concurrency: []int{4}, Workflows: 20, InFlight: 4, Pairs: 2}}
	var lines []string
	logf := func(format string, args ...any) {
		lines = append(lines, fmt.Sprintf(format, args...))
		t.Logf(format, args...)
	}
	rep := &harness.Report{Profile: p.Name}
	require.NoError(t, suite.RunDB(context.Background(), p, rep, logf))

	for _, c := range []struct {
		scenario, system string
		throughput       bool
	}{
		{"db/drain/c4", suite.SystemDocket, true},
		{"db/drain/c4", suite.SystemRiver, true},
		{"db/chain10", suite.SystemDocket, true},
		{"db/chain10", suite.SystemDBOS, true},
		{"db/chain10", suite.SystemRiver, true},
		{"db/fanout8", suite.SystemDocket, true},
		{"db/fanout8", suite.SystemDBOS, true},
		{"db/history10", suite.SystemDocket, true},
		{"db/history10", suite.SystemDBOS, true},
		{"db/latency", suite.SystemDocket + "-notify", false},
		{"db/latency", suite.SystemDocket + "-poll", false},
		{"db/latency", suite.SystemDBOS, false},
	} {
		name := c.scenario + " " + c.system
		r, ok := rep.Find(c.scenario, c.system)
		require.True(t, ok, name)
		assert.Equal(t, harness.StatusMeasured, r.Status, name+": "+r.Note)
		assert.Contains(t, r.Note, "median of 2 alternating runs", name)
		require.Len(t, r.Samples, 2, name)
		assert.Equal(t, 2, r.Summary.Repeats, name)
		perSecond, nsPerOp := make([]float64, 2), make([]float64, 2)
		for i, s := range r.Samples {
			perSecond[i], nsPerOp[i] = 1e9/s.NsPerOp, s.NsPerOp
		}
		assert.InEpsilon(t, harness.Median(nsPerOp), r.Summary.NsPerOp, 1e-9, name)
		assert.Equal(t, r.Samples[0].Ops+r.Samples[1].Ops, r.Summary.Ops, name)
		if c.throughput {
			assert.InEpsilon(t, harness.Median(perSecond), r.Throughput, 1e-9, name)
		} else {
			assert.Zero(t, r.Throughput, name+": a latency scenario")
			assert.Positive(t, r.Summary.P50Ns, name)
		}
	}
	// A run of the 10-node chain counts ten step commits, as a ten-step
	// DBOS workflow counts ten step checkpoints: the profile's 20 runs and
	// 5 workflows a run.
	for _, c := range []struct {
		system string
		ops    int
	}{{suite.SystemDocket, 20 * 10}, {suite.SystemDBOS, 5 * 10}, {suite.SystemRiver, 20 * 10}} {
		r, _ := rep.Find("db/chain10", c.system)
		for _, s := range r.Samples {
			assert.Equal(t, c.ops, s.Ops, "db/chain10 "+c.system)
		}
	}
	for _, c := range [][2]string{{"db/one-step", suite.SystemDBOS}} {
		r, ok := rep.Find(c[0], c[1])
		require.True(t, ok, c[0])
		assert.Equal(t, harness.StatusMeasured, r.Status, r.Note)
		assert.Len(t, r.Samples, 1, c[0])
		assert.Positive(t, r.Throughput, c[0])
	}

	compared := map[[2]string]harness.Comparison{}
	for _, c := range rep.Comparisons {
		compared[[2]string{c.Scenario, c.Peer}] = c
	}
	for _, key := range [][2]string{{"db/drain/c4", suite.SystemRiver}, {"db/drain/best", suite.SystemRiver},
		{"db/chain10", suite.SystemDBOS}, {"db/chain10", suite.SystemRiver}, {"db/fanout8", suite.SystemDBOS},
		{"db/history10", suite.SystemDBOS}, {"db/latency", suite.SystemDBOS}} {
		c, ok := compared[key]
		require.True(t, ok, key)
		assert.Positive(t, c.TimeRatio, key)
		if key[0] != "db/drain/best" {
			assert.Empty(t, c.Note, key)
		}
		if key[0] == "db/latency" {
			assert.Nil(t, c.RoundRatios, "a p50 comparison has no per-round figure")
			continue
		}
		// Each alternating round's own ratio, from its two samples.
		require.Len(t, c.RoundRatios, 2, key)
		scenario := key[0]
		if scenario == "db/drain/best" {
			scenario = "db/drain/c4" // the profile's only concurrency
		}
		ours, _ := rep.Find(scenario, c.Ours)
		peer, _ := rep.Find(scenario, c.Peer)
		for i, r := range c.RoundRatios {
			assert.InEpsilon(t, peer.Samples[i].NsPerOp/ours.Samples[i].NsPerOp, r, 1e-9, key)
		}
	}
	assert.Empty(t, compared[[2]string{"db/chain10", suite.SystemRiver}].Goal, "the River chain is for reference")
	assert.Empty(t, compared[[2]string{"db/history10", suite.SystemDBOS}].Goal, "the history is for reference")

	// The progress lines show the order: the system that went first in
	// the first run goes second in the second.
	for _, scenario := range []string{"db/drain/c4", "db/chain10", "db/fanout8", "db/history10", "db/latency"} {
		var order [2][]string
		for _, line := range lines {
			system, run, ok := parseRunLine(line, scenario)
			if ok {
				order[run-1] = append(order[run-1], system)
			}
		}
		require.NotEmpty(t, order[0], scenario)
		second := slices.Clone(order[1])
		slices.Reverse(second)
		assert.Equal(t, order[0], second, scenario)
	}
}

// parseRunLine reads "<scenario> <system>, run <i>/2: …".
func parseRunLine(line, scenario string) (system string, run int, ok bool) {
	rest, ok := strings.CutPrefix(line, scenario+" ")
	if !ok {
		return "", 0, false
	}
	system, rest, ok = strings.Cut(rest, ", run ")
	if !ok {
		return "", 0, false
	}
	if _, err := fmt.Sscanf(rest, "%d/2:", &run); err != nil {
		return "", 0, false
	}
	return system, run, true
}

func TestProfileOnlyMatchesScenarioSubstrings(t *testing.T) {
	t.Parallel()
	assert.True(t, suite.Profile{}.Runs("db/drain/c8"))
	p := suite.Profile{Only: "claim-backlog"}
	assert.True(t, p.Runs("db/claim-backlog/1M"))
	assert.False(t, p.Runs("db/drain/c8"))
}
