// Package suite runs the benchmark scenarios of one profile and collects
// them into a harness.Report: the inline shapes against Eino today, and the
// database scenarios as they become runnable.
//
// It is the body of the docketbench command, kept as a package so a test
// can run a miniature profile end to end.
package suite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docketgo/docket/bench/harness"
	"github.com/docketgo/docket/bench/inlinebench"
)

// Profile sizes a run.
type Profile struct {
	Name string
	// Repeats of every measured case; the report takes medians.
	Repeats int
	// RepeatDuration is how long one repeat of an inline case runs.
	RepeatDuration time.Duration
	// MinOps is the least number of operations in one repeat.
	MinOps int
	// DB sizes the database scenarios.
	DB DBProfile
	// Only, when set, runs just the scenarios whose name contains it
	// (docketbench --only); comparisons involving a skipped scenario are
	// left out.
	Only string
}

// Runs reports whether the profile runs the named scenario.
func (p Profile) Runs(scenario string) bool {
	return p.Only == "" || strings.Contains(scenario, p.Only)
}

// DBProfile sizes the database scenarios.
type DBProfile struct {
	// ProbeDuration is how long each pgbench-shaped probe runs per client count.
	ProbeDuration time.Duration
	// Clients are the client counts of the limit probe.
	Clients []int
	// Jobs is the number of pre-inserted jobs or runs a drain scenario
	// empties; Concurrency its worker counts.
	Jobs        int
	Concurrency []int
	// Workflows is the number of workflows per DBOS scenario, InFlight how
	// many run at once.
	Workflows int
	InFlight  int
	// Backlogs are the sizes (ascending) of the claim-backlog scenario's
	// due-run backlogs; its goal compares the largest with the smallest.
	// BacklogClaims is the number of timed claims at each size.
	Backlogs      []int
	BacklogClaims int
	// Pairs is how many times each compared system runs (Docket and River
	// at each drain concurrency; Docket, DBOS and River for chain10; Docket
	// and DBOS for fanout8 and latency), alternating which goes first; the
	// report takes medians. Zero means one.
	Pairs int
}

// Profiles are the named profiles of the command.
var Profiles = map[string]Profile{
	// smoke: every scenario once, small, well under five minutes.
	"smoke": {Name: "smoke", Repeats: 3, RepeatDuration: 300 * time.Millisecond, MinOps: 20,
		DB: DBProfile{ProbeDuration: 2 * time.Second, Clients: []int{1, 8, 32}, Jobs: 2000, Concurrency: []int{8, 32, 64}, Workflows: 200, InFlight: 32,
			Backlogs: []int{10_000, 100_000}, BacklogClaims: 100, Pairs: 1}},
	// local: the figures recorded in docs/benchmarks.md.
	"local": {Name: "local", Repeats: 6, RepeatDuration: time.Second, MinOps: 50,
		DB: DBProfile{ProbeDuration: 10 * time.Second, Clients: []int{1, 8, 32}, Jobs: 20000, Concurrency: []int{8, 32, 64}, Workflows: 2000, InFlight: 32,
			Backlogs: []int{10_000, 100_000, 1_000_000}, BacklogClaims: 200, Pairs: 3}},
	// scale: longer and larger, for a quiet machine.
	"scale": {Name: "scale", Repeats: 10, RepeatDuration: 2 * time.Second, MinOps: 100,
		DB: DBProfile{ProbeDuration: 30 * time.Second, Clients: []int{1, 8, 32, 64}, Jobs: 100000, Concurrency: []int{8, 32, 64}, Workflows: 10000, InFlight: 32,
			Backlogs: []int{10_000, 100_000, 1_000_000}, BacklogClaims: 200, Pairs: 5}},
}

// Logf receives progress lines.
type Logf func(format string, args ...any)

// RunInline measures every inline case of the profile into rep and adds
// the Docket ÷ Eino comparisons. Docket and Eino alternate which runs
// first in each repeat, so a machine that slows down or speeds up during
// the run affects both alike.
func RunInline(ctx context.Context, p Profile, rep *harness.Report, logf Logf) error {
	cases, err := inlinebench.Cases(ctx)
	if err != nil {
		return err
	}
	type acc struct {
		c       inlinebench.Case
		samples []harness.Sample
		lat     []time.Duration
	}
	byShape := map[inlinebench.Shape][]*acc{}
	for _, c := range cases {
		byShape[c.Shape] = append(byShape[c.Shape], &acc{c: c})
	}
	for r := range p.Repeats {
		for _, s := range inlinebench.Shapes {
			if !p.Runs(InlineScenario(s)) {
				continue
			}
			group := byShape[s]
			for i := range group {
				// Rotate the starting case every repeat.
				a := group[(i+r)%len(group)]
				sample, lat, err := harness.Repeat(ctx, a.c.Op, p.RepeatDuration, p.MinOps, a.lat)
				if err != nil {
					return fmt.Errorf("%s: %w", a.c.Name(), err)
				}
				a.samples, a.lat = append(a.samples, sample), lat
				logf("repeat %d/%d %-24s %10.1f µs/op %7.0f allocs/op", r+1, p.Repeats, a.c.Name(), sample.NsPerOp/1e3, sample.AllocsPerOp)
			}
		}
	}
	for _, s := range inlinebench.Shapes {
		if !p.Runs(InlineScenario(s)) {
			continue
		}
		for _, a := range byShape[s] {
			sum, err := harness.Summarize(a.samples, a.lat)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, harness.Result{
				Scenario: InlineScenario(s), System: string(a.c.System), Status: harness.StatusMeasured,
				Summary: sum, Samples: a.samples,
			})
		}
		rep.CompareCost(InlineScenario(s), string(inlinebench.Docket), string(inlinebench.Eino), 1.0)
		rep.CompareCost(InlineScenario(s), string(inlinebench.DocketCaller), string(inlinebench.Eino), 1.0)
	}
	return nil
}

// InlineScenario names the inline scenario of a shape.
func InlineScenario(s inlinebench.Shape) string { return "inline/" + string(s) }
