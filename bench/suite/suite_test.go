package suite_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
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

	require.Len(t, rep.Results, 3*len(inlinebench.Shapes))
	for _, r := range rep.Results {
		assert.Equal(t, harness.StatusMeasured, r.Status, r.Scenario+" "+r.System)
		assert.Equal(t, 2, r.Summary.Repeats)
		assert.Positive(t, r.Summary.NsPerOp)
		assert.Positive(t, r.Summary.AllocsPerOp, "every case allocates: it builds a run or a graph state")
	}
	require.Len(t, rep.Comparisons, len(inlinebench.Shapes))
	for _, c := range rep.Comparisons {
		assert.Equal(t, string(inlinebench.Docket), c.Ours)
		assert.Equal(t, string(inlinebench.Eino), c.Peer)
		assert.Positive(t, c.TimeRatio)
		assert.Positive(t, c.AllocRatio)
		assert.Empty(t, c.Note, "both sides were measured in this run")
	}

	var md bytes.Buffer
	require.NoError(t, rep.WriteMarkdown(&md))
	assert.Contains(t, md.String(), "| inline/chain10 | docket-inline ÷ eino |")
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

func TestProfileOnlyMatchesScenarioSubstrings(t *testing.T) {
	t.Parallel()
	assert.True(t, suite.Profile{}.Runs("db/drain/c8"))
	p := suite.Profile{Only: "claim-backlog"}
	assert.True(t, p.Runs("db/claim-backlog/1M"))
	assert.False(t, p.Runs("db/drain/c8"))
}
