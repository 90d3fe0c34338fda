package suite

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docketgo/docket/bench/dbbench"
	"github.com/docketgo/docket/bench/harness"
)

// Systems of the database scenarios.
const (
	SystemLimit  = "postgres-limit"
	SystemRiver  = "river"
	SystemDBOS   = "dbos"
	SystemDocket = "docket-durable"
)

// ScenarioClaimBacklog is the claim-latency-against-a-backlog scenario;
// each backlog size is reported as its own result (BacklogScenario).
const ScenarioClaimBacklog = "db/claim-backlog"

// BacklogScenario names the claim-backlog result of one backlog size.
func BacklogScenario(n int) string { return ScenarioClaimBacklog + "/" + sizeLabel(n) }

// sizeLabel writes 10000 as 10k and 1000000 as 1M.
func sizeLabel(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dM", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprint(n)
}

// Claim-backlog goal: p50 claim latency at the largest backlog at most
// this many times the p50 at the smallest (O(batch), not O(backlog)).
const (
	backlogClaimBatch  = 32
	backlogWarmup      = 5
	backlogGrowthLimit = 1.5
)

// RunDB runs the database scenarios, each in its own fresh database. A
// missing server skips them (reported as skipped, with the reason); a
// scenario that fails is reported as failed and its error returned after
// the others ran.
func RunDB(ctx context.Context, p Profile, rep *harness.Report, logf Logf) error {
	srv, err := dbbench.Open(ctx)
	if err != nil {
		for _, s := range []struct{ scenario, system string }{
			{"db/limit-probe", SystemLimit}, {"db/drain", SystemDocket}, {"db/drain", SystemRiver}, {"db/one-step", SystemDBOS},
			{"db/chain10", SystemDocket}, {"db/chain10", SystemDBOS}, {"db/fanout8", SystemDocket},
			{"db/latency", SystemDocket}, {"db/latency", SystemDBOS}, {ScenarioClaimBacklog, SystemDocket},
		} {
			if p.Runs(s.scenario) {
				rep.Results = append(rep.Results, harness.Result{Scenario: s.scenario, System: s.system, Status: harness.StatusSkipped, Note: err.Error()})
			}
		}
		return nil
	}
	rep.Machine.Database = srv.Describe(ctx)
	var errs []error
	record := func(r harness.Result, err error) {
		if err != nil {
			r.Status, r.Note = harness.StatusFailed, err.Error()
			errs = append(errs, fmt.Errorf("%s %s: %w", r.Scenario, r.System, err))
		}
		rep.Results = append(rep.Results, r)
	}
	fresh := func(name string, fn func(*dbbench.Database) error) error {
		db, err := srv.Fresh(ctx, name)
		if err != nil {
			return err
		}
		defer func() {
			dropCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_ = db.Drop(dropCtx)
		}()
		return fn(db)
	}

	// The database's own ceiling for a moment-shaped commit.
	for _, clients := range p.DB.Clients {
		if !p.Runs(fmt.Sprintf("db/limit-probe/c%d", clients)) {
			continue
		}
		var res dbbench.ProbeResult
		err := fresh(fmt.Sprintf("probe_c%d", clients), func(db *dbbench.Database) (err error) {
			res, err = dbbench.Probe(ctx, db, clients, p.DB.ProbeDuration)
			return err
		})
		r := throughputResult(fmt.Sprintf("db/limit-probe/c%d", clients), SystemLimit, res.Commits, res.Elapsed, res.Latencies)
		r.Note = "one fenced run UPDATE + two event INSERTs per transaction"
		record(r, err)
		if err == nil {
			logf("limit probe, %d clients: %.0f commits/s", clients, res.PerSecond())
		}
	}

	// Draining pre-inserted work: Docket one-step runs and River no-op
	// jobs at each concurrency, alternating which goes first.
	for i, c := range p.DB.Concurrency {
		if !p.Runs(fmt.Sprintf("db/drain/c%d", c)) {
			continue
		}
		docketFirst := i%2 == 0
		for turn := range 2 {
			if (turn == 0) == docketFirst {
				res, gates, err := docketDrain(ctx, fresh, dbbench.ShapeOneStep, p.DB.Jobs, c)
				r := throughputResult(fmt.Sprintf("db/drain/c%d", c), SystemDocket, res.Jobs, res.Elapsed, nil)
				r.Note = fmt.Sprintf("%d immediately-due one-step runs (2 checkpoints each, fused into one commit after the claim); gates: %s", p.DB.Jobs, gates)
				record(r, err)
				if err == nil {
					logf("docket drain, %d workers: %.0f runs/s", c, res.PerSecond())
				}
				continue
			}
			var res dbbench.DrainResult
			err := fresh(fmt.Sprintf("river_c%d", c), func(db *dbbench.Database) (err error) {
				res, err = dbbench.RiverDrain(ctx, db, p.DB.Jobs, c, 5*time.Minute)
				return err
			})
			r := throughputResult(fmt.Sprintf("db/drain/c%d", c), SystemRiver, res.Jobs, res.Elapsed, nil)
			r.Note = fmt.Sprintf("%d pre-inserted no-op jobs", p.DB.Jobs)
			record(r, err)
			if err == nil {
				logf("river drain, %d workers: %.0f jobs/s", c, res.PerSecond())
			}
		}
		rep.CompareThroughput(fmt.Sprintf("db/drain/c%d", c), SystemDocket, SystemRiver, 1.0)
	}
	if p.Runs("db/drain/") {
		rep.CompareBest("db/drain/best", "db/drain/", SystemDocket, SystemRiver, 1.0)
	}

	// Chain and fan-out runs: step commits per second.
	chainRuns := max(20, p.DB.Jobs/10)
	for _, shape := range []string{dbbench.ShapeChain10, dbbench.ShapeFanOut8} {
		if !p.Runs("db/" + shape) {
			continue
		}
		res, gates, err := docketDrain(ctx, fresh, shape, chainRuns, p.DB.InFlight)
		steps := 11 // ten supersteps and the completion
		if shape == dbbench.ShapeFanOut8 {
			steps = 3
		}
		r := throughputResult("db/"+shape, SystemDocket, res.Jobs*steps, res.Elapsed, nil)
		r.Note = fmt.Sprintf("%d runs, %d workers; step commits/s; gates: %s", chainRuns, p.DB.InFlight, gates)
		record(r, err)
		if err == nil {
			logf("docket %s: %.0f step commits/s", shape, r.Throughput)
		}
	}

	// Start→done latency of one one-step run at a time.
	latencyRuns := max(50, p.DB.Workflows/10)
	for _, pollOnly := range []bool{false, true} {
		if !p.Runs("db/latency") {
			break
		}
		system, name := SystemDocket+"-notify", "listen"
		if pollOnly {
			system, name = SystemDocket+"-poll", "poll"
		}
		var lat []time.Duration
		err := fresh("docket_latency_"+name, func(db *dbbench.Database) error {
			d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: dbbench.ShapeOneStep, Concurrency: 8, PollOnly: pollOnly, PollInterval: 50 * time.Millisecond})
			if err != nil {
				return err
			}
			defer d.Close(context.Background())
			lat, err = d.Latencies(ctx, latencyRuns)
			return err
		})
		var elapsed time.Duration
		for _, l := range lat {
			elapsed += l
		}
		r := throughputResult("db/latency", system, len(lat), elapsed, lat)
		r.Throughput = 0 // a latency scenario: percentiles are the figure
		r.Note = fmt.Sprintf("%d runs one at a time, StartRun → done", latencyRuns)
		if pollOnly {
			r.Note += ", poll-only (50 ms poll interval)"
		} else {
			r.Note += ", LISTEN/NOTIFY"
		}
		record(r, err)
	}

	// DBOS Transact: one-step and ten-step workflows in flight, and the
	// latency of one workflow at a time.
	for _, w := range []struct {
		scenario string
		steps    int
		inFlight int
		count    int
	}{
		{"db/one-step", 1, p.DB.InFlight, p.DB.Workflows},
		{"db/chain10", 10, p.DB.InFlight, p.DB.Workflows / 4},
		{"db/latency", 1, 1, max(50, p.DB.Workflows/10)},
	} {
		if !p.Runs(w.scenario) {
			continue
		}
		var res dbbench.WorkflowResult
		err := fresh("dbos_"+w.scenario[3:], func(db *dbbench.Database) (err error) {
			res, err = dbbench.DBOSWorkflows(ctx, db, w.count, w.steps, w.inFlight, 5*time.Minute)
			return err
		})
		r := throughputResult(w.scenario, SystemDBOS, res.Workflows, res.Elapsed, res.Latencies)
		r.Note = fmt.Sprintf("%d workflows of %d no-op steps, %d in flight", w.count, w.steps, w.inFlight)
		switch {
		case err != nil:
		case w.steps > 1:
			r.Throughput = res.StepsPerSecond()
			r.Note += fmt.Sprintf("; step checkpoints/s (%.0f workflows/s)", res.PerSecond())
		case w.inFlight == 1:
			r.Throughput = 0 // a latency scenario
			r.Note += ", started directly and awaited"
		}
		record(r, err)
		if err == nil {
			logf("dbos %s: %.0f workflows/s, p50 %s", w.scenario, res.PerSecond(), time.Duration(r.Summary.P50Ns))
		}
	}
	if p.Runs("db/chain10") {
		rep.CompareThroughput("db/chain10", SystemDocket, SystemDBOS, 2.0)
	}
	if p.Runs("db/latency") {
		rep.CompareLatencyP50("db/latency", SystemDocket+"-notify", SystemDBOS, 2.0)
	}
	for _, c := range p.DB.Clients {
		drain, probe := fmt.Sprintf("db/drain/c%d", c), fmt.Sprintf("db/limit-probe/c%d", c)
		if p.Runs(drain) && p.Runs(probe) {
			rep.CompareMoments(drain, SystemDocket, probe, SystemLimit, 2, 0.8)
		}
	}

	// Claim latency against a backlog of immediately-due runs: every size
	// in its own fresh database, the largest compared with the smallest.
	if p.Runs(ScenarioClaimBacklog) && len(p.DB.Backlogs) > 0 {
		largest := slices.Max(p.DB.Backlogs)
		for _, b := range claimBacklogs(ctx, srv, p.DB.Backlogs, p.DB.BacklogClaims, logf) {
			var elapsed time.Duration
			for _, l := range b.latencies {
				elapsed += l
			}
			r := throughputResult(BacklogScenario(b.n), SystemDocket, len(b.latencies), elapsed, b.latencies)
			r.Throughput = 0 // a latency scenario: percentiles are the figure
			r.Plan = b.plan
			r.Note = fmt.Sprintf("%d immediately-due one-step runs (copied in %s, vacuumed in %s); %d ClaimDue of %d, each batch released again, sizes interleaved",
				b.n, b.load.Copy.Round(100*time.Millisecond), b.load.Vacuum.Round(100*time.Millisecond), len(b.latencies), backlogClaimBatch)
			record(r, b.err)
			if b.err == nil {
				logf("docket claim-backlog %s: ClaimDue(%d) p50 %s p95 %s p99 %s", sizeLabel(b.n), backlogClaimBatch,
					time.Duration(r.Summary.P50Ns), time.Duration(r.Summary.P95Ns), time.Duration(r.Summary.P99Ns))
				if b.n == largest {
					logf("claim statement plan at %s (the full EXPLAIN ANALYZE is in the JSON report):\n%s", sizeLabel(b.n), planDigest(b.plan))
				}
			}
		}
		rep.CompareLatencyGrowth(ScenarioClaimBacklog, SystemDocket,
			BacklogScenario(slices.Min(p.DB.Backlogs)), BacklogScenario(largest), backlogGrowthLimit)
	}
	return errors.Join(errs...)
}

// backlog is one size of the claim-backlog scenario.
type backlog struct {
	n         int
	db        *dbbench.Database
	claimer   *dbbench.Claimer
	load      dbbench.BacklogLoad
	latencies []time.Duration
	plan      string
	err       error
}

// backlogRounds is how many rounds the timed claims of all sizes are
// spread over, each size taking its share in turn (the first size
// rotating), so a machine that slows down or speeds up affects every size
// alike.
const backlogRounds = 10

// claimBacklogs loads every size into its own fresh database first, then
// times claims round by round across the sizes, records each size's
// claim plan, and drops the databases.
func claimBacklogs(ctx context.Context, srv *dbbench.Server, sizes []int, claims int, logf Logf) []*backlog {
	all := make([]*backlog, len(sizes))
	defer func() {
		dropCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, b := range all {
			if b.claimer != nil {
				b.claimer.Close()
			}
			if b.db != nil {
				_ = b.db.Drop(dropCtx)
			}
		}
	}()
	for i, n := range sizes {
		b := &backlog{n: n}
		all[i] = b
		if b.err = b.open(ctx, srv); b.err == nil {
			logf("docket claim-backlog %s: copied in %s, vacuumed in %s", sizeLabel(n),
				b.load.Copy.Round(time.Millisecond), b.load.Vacuum.Round(time.Millisecond))
		}
	}
	rounds := max(1, min(claims, backlogRounds))
	for r := range rounds {
		share := claims / rounds
		if r < claims%rounds {
			share++
		}
		for i := range all {
			b := all[(i+r)%len(all)]
			for range share {
				if b.err != nil {
					break
				}
				elapsed, leases, err := b.claimer.Claim(ctx)
				if err == nil && leases != backlogClaimBatch {
					err = fmt.Errorf("a claim leased %d of %d runs", leases, backlogClaimBatch)
				}
				if err != nil {
					b.err = err
					break
				}
				b.latencies = append(b.latencies, elapsed)
			}
		}
	}
	for _, b := range all {
		if b.err == nil {
			b.plan, b.err = b.claimer.Explain(ctx)
		}
	}
	return all
}

// open creates the size's database, loads the backlog (the engine is
// closed afterwards: only the claimer stays) and warms the claimer up.
func (b *backlog) open(ctx context.Context, srv *dbbench.Server) error {
	var err error
	if b.db, err = srv.Fresh(ctx, "docket_backlog_"+sizeLabel(b.n)); err != nil {
		return err
	}
	d, err := dbbench.OpenDocket(ctx, b.db, dbbench.DocketOptions{Shape: dbbench.ShapeOneStep, Concurrency: 1, PollOnly: true})
	if err != nil {
		return err
	}
	b.load, err = d.LoadBacklog(ctx, b.n)
	d.Close(context.Background())
	if err != nil {
		return fmt.Errorf("load backlog: %w", err)
	}
	if b.claimer, err = dbbench.NewClaimer(ctx, b.db, backlogClaimBatch); err != nil {
		return err
	}
	for range backlogWarmup {
		if _, _, err := b.claimer.Claim(ctx); err != nil {
			return fmt.Errorf("warm-up claim: %w", err)
		}
	}
	return nil
}

// planDigest keeps the lines of an EXPLAIN output a reader scans first:
// the plan headings, every table access and the timings.
func planDigest(plan string) string {
	var keep []string
	for _, line := range strings.Split(plan, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--") || strings.Contains(t, "Scan using") || strings.Contains(t, "Seq Scan") ||
			strings.Contains(t, "Bitmap") || strings.HasPrefix(t, "Execution Time") || strings.HasPrefix(t, "CTE ") ||
			strings.HasPrefix(t, "->  Hash Join") || strings.HasPrefix(t, "->  Nested Loop") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// drainLimit bounds one drain; a drain that needs longer fails with its
// partial throughput in the note.
const drainLimit = 15 * time.Minute

// docketDrain runs one Docket drain in a fresh database: n runs of shape
// started (untimed), drained by concurrency workers, then the invariant
// gates. A failed gate fails the scenario whatever its speed.
func docketDrain(ctx context.Context, fresh func(string, func(*dbbench.Database) error) error, shape string, n, concurrency int) (dbbench.DrainResult, string, error) {
	var res dbbench.DrainResult
	gates := "not run"
	err := fresh(fmt.Sprintf("docket_%s_c%d", shape, concurrency), func(db *dbbench.Database) error {
		d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: shape, Concurrency: concurrency})
		if err != nil {
			return err
		}
		defer d.Close(context.Background())
		if err := d.StartRuns(ctx, n); err != nil {
			return fmt.Errorf("start runs: %w", err)
		}
		if res, err = d.Drain(ctx, n, drainLimit); err != nil {
			return err
		}
		if err := dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, n); err != nil {
			gates = "FAILED"
			return err
		}
		gates = "passed"
		return nil
	})
	return res, gates, err
}

// throughputResult summarizes a throughput run: ops over elapsed, with the
// per-operation latencies (when measured) as percentiles. time/op is the
// wall time per operation across all workers.
func throughputResult(scenario, system string, ops int, elapsed time.Duration, latencies []time.Duration) harness.Result {
	r := harness.Result{Scenario: scenario, System: system, Status: harness.StatusMeasured}
	if ops == 0 || elapsed <= 0 {
		return r
	}
	r.Throughput = float64(ops) / elapsed.Seconds()
	s := harness.Sample{Ops: ops, NsPerOp: float64(elapsed.Nanoseconds()) / float64(ops)}
	if sum, err := harness.Summarize([]harness.Sample{s}, latencies); err == nil {
		r.Summary = sum
	}
	return r
}
