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

// RunDB runs the database scenarios, each run in its own fresh database;
// the compared systems run p.DB.Pairs times each, in alternating order,
// and are reported as medians. A missing server skips them (reported as
// skipped, with the reason); a scenario that fails is reported as failed
// and its error returned after the others ran.
func RunDB(ctx context.Context, p Profile, rep *harness.Report, logf Logf) error {
	srv, err := dbbench.Open(ctx)
	if err != nil {
		for _, s := range []struct{ scenario, system string }{
			{"db/limit-probe", SystemLimit}, {"db/drain", SystemDocket}, {"db/drain", SystemRiver}, {"db/one-step", SystemDBOS},
			{"db/chain10", SystemDocket}, {"db/chain10", SystemDBOS}, {"db/chain10", SystemRiver}, {"db/fanout8", SystemDocket}, {"db/fanout8", SystemDBOS},
			{"db/history10", SystemDocket}, {"db/history10", SystemDBOS},
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
			r.Status = harness.StatusFailed
			if r.Note != "" {
				r.Note += "; "
			}
			r.Note += err.Error()
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
	pairs := max(1, p.DB.Pairs)
	// compare runs the members of a comparison pairs times each. The order
	// flips on every repeat, and the turn carries on from one comparison
	// to the next, so no system always goes first and a noisy moment of
	// the shared machine cannot decide a ratio alone.
	turn := 0
	compare := func(members ...*series) {
		for r := range pairs {
			order := slices.Clone(members)
			if turn%2 == 1 {
				slices.Reverse(order)
			}
			turn++
			for _, s := range order {
				s.run(r, pairs, logf)
			}
		}
	}

	// The database's own ceiling for a moment-shaped commit.
	for _, clients := range p.DB.Clients {
		scenario := fmt.Sprintf("db/limit-probe/c%d", clients)
		if !p.Runs(scenario) {
			continue
		}
		probe := &series{scenario: scenario, system: SystemLimit, unit: "commits/s", measure: func() (o outcome) {
			o.err = fresh(fmt.Sprintf("probe_c%d", clients), func(db *dbbench.Database) error {
				res, err := dbbench.Probe(ctx, db, clients, p.DB.ProbeDuration)
				o.ops, o.elapsed, o.latencies = res.Commits, res.Elapsed, res.Latencies
				return err
			})
			return o
		}}
		probe.run(0, 1, logf)
		record(probe.result("one fenced run UPDATE + two event INSERTs per transaction"))
	}

	// Draining pre-inserted work: Docket one-step runs and River no-op
	// jobs at each concurrency.
	for _, c := range p.DB.Concurrency {
		scenario := fmt.Sprintf("db/drain/c%d", c)
		if !p.Runs(scenario) {
			continue
		}
		docket := &series{scenario: scenario, system: SystemDocket, unit: "runs/s", measure: func() outcome {
			return docketDrain(ctx, fresh, dbbench.ShapeOneStep, p.DB.Jobs, c, 1)
		}}
		river := peerSeries(fresh, scenario, SystemRiver, "jobs/s", fmt.Sprintf("river_c%d", c), func(db *dbbench.Database) (int, time.Duration, error) {
			res, err := dbbench.RiverDrain(ctx, db, p.DB.Jobs, c, 5*time.Minute)
			return res.Jobs, res.Elapsed, err
		})
		compare(docket, river)
		record(docket.result(fmt.Sprintf("%s%d immediately-due one-step runs (2 checkpoints each, fused into one commit after the claim); gates: %s",
			repeatsNote(pairs), p.DB.Jobs, docket.gatesSummary())))
		record(river.result(fmt.Sprintf("%s%d pre-inserted no-op jobs", repeatsNote(pairs), p.DB.Jobs)))
		rep.CompareThroughput(scenario, SystemDocket, SystemRiver, 1.0)
	}
	if p.Runs("db/drain/") {
		rep.CompareBest("db/drain/best", "db/drain/", SystemDocket, SystemRiver, 1.0)
	}

	// Chain runs against DBOS ten-step workflows, and fan-out runs: step
	// commits per second.
	chainRuns := max(20, p.DB.Jobs/10)
	if p.Runs("db/" + dbbench.ShapeChain10) {
		docket := &series{scenario: "db/chain10", system: SystemDocket, unit: "step commits/s", measure: func() outcome {
			return docketDrain(ctx, fresh, dbbench.ShapeChain10, chainRuns, p.DB.InFlight, chainStepCommits)
		}}
		dbos := dbosSeries(ctx, fresh, "db/chain10", p.DB.Workflows/4, 10, p.DB.InFlight)
		river := peerSeries(fresh, "db/chain10", SystemRiver, "job hand-offs/s", "river_chain10", func(db *dbbench.Database) (int, time.Duration, error) {
			res, err := dbbench.RiverChain(ctx, db, chainRuns, 10, p.DB.InFlight, 5*time.Minute)
			return res.Jobs, res.Elapsed, err
		})
		// Docket and DBOS, the goal's pair, stay adjacent in either order.
		compare(docket, dbos, river)
		record(docket.result(fmt.Sprintf("%s%d runs, %d workers; step commits/s; gates: %s",
			repeatsNote(pairs), chainRuns, p.DB.InFlight, docket.gatesSummary())))
		r, err := dbos.result(fmt.Sprintf("%s%d workflows of 10 no-op steps, %d in flight; step checkpoints/s",
			repeatsNote(pairs), p.DB.Workflows/4, p.DB.InFlight))
		if err == nil {
			r.Note += fmt.Sprintf(" (%.0f workflows/s)", r.Throughput/10)
		}
		record(r, err)
		r, err = river.result(fmt.Sprintf("%s%d chains of 10 jobs, %d workers; each job inserts the next and completes itself in one transaction; job hand-offs/s",
			repeatsNote(pairs), chainRuns, p.DB.InFlight))
		if err == nil {
			r.Note += fmt.Sprintf(" (%.0f chains/s)", r.Throughput/10)
		}
		record(r, err)
		rep.CompareThroughput("db/chain10", SystemDocket, SystemDBOS, 2.0)
		rep.ReferenceThroughput("db/chain10", SystemDocket, SystemRiver)
	}
	if p.Runs("db/" + dbbench.ShapeFanOut8) {
		// Runs per second: one Docket superstep commits all eight branches
		// (three commits a run: fan-out, fan-in, completion), where DBOS
		// checkpoints each of its nine steps.
		docket := &series{scenario: "db/fanout8", system: SystemDocket, unit: "runs/s", measure: func() outcome {
			return docketDrain(ctx, fresh, dbbench.ShapeFanOut8, chainRuns, p.DB.InFlight, 1)
		}}
		dbos := peerSeries(fresh, "db/fanout8", SystemDBOS, "workflows/s", "dbos_fanout8", func(db *dbbench.Database) (int, time.Duration, error) {
			res, err := dbbench.DBOSFanOut(ctx, db, p.DB.Workflows/4, 8, p.DB.InFlight, 5*time.Minute)
			return res.Workflows, res.Elapsed, err
		})
		compare(docket, dbos)
		record(docket.result(fmt.Sprintf("%s%d runs, %d workers; runs/s (2 step commits each, the completion riding on the fan-in's); gates: %s",
			repeatsNote(pairs), chainRuns, p.DB.InFlight, docket.gatesSummary())))
		record(dbos.result(fmt.Sprintf("%s%d workflows of 8 no-op steps run beside each other (dbos.Go) and a join step, %d in flight; workflows/s",
			repeatsNote(pairs), p.DB.Workflows/4, p.DB.InFlight)))
		rep.ReferenceThroughput("db/fanout8", SystemDocket, SystemDBOS)
	}

	// A growing agent history: ten steps that each append an 8 KB message.
	// A Docket commit rewrites the run document, history included; a DBOS
	// step checkpoints its own message once. Step commits per second.
	if p.Runs("db/" + dbbench.ShapeHistory10) {
		historyRuns := max(20, chainRuns/4)
		docket := &series{scenario: "db/history10", system: SystemDocket, unit: "step commits/s", measure: func() outcome {
			return docketDrain(ctx, fresh, dbbench.ShapeHistory10, historyRuns, p.DB.InFlight, chainStepCommits)
		}}
		dbos := peerSeries(fresh, "db/history10", SystemDBOS, "step checkpoints/s", "dbos_history10", func(db *dbbench.Database) (int, time.Duration, error) {
			res, err := dbbench.DBOSHistory(ctx, db, historyRuns, 10, p.DB.InFlight, 5*time.Minute)
			return res.Workflows * res.Steps, res.Elapsed, err
		})
		compare(docket, dbos)
		record(docket.result(fmt.Sprintf("%s%d runs, %d workers; each step appends an %d KB message to a history in the state (80 KB at the end); step commits/s; gates: %s",
			repeatsNote(pairs), historyRuns, p.DB.InFlight, dbbench.MessageBytes>>10, docket.gatesSummary())))
		record(dbos.result(fmt.Sprintf("%s%d workflows of 10 steps each returning an %d KB message, %d in flight; step checkpoints/s",
			repeatsNote(pairs), historyRuns, dbbench.MessageBytes>>10, p.DB.InFlight)))
		rep.ReferenceThroughput("db/history10", SystemDocket, SystemDBOS)
	}

	// DBOS one-step workflows in flight (Docket's counterpart is the drain).
	if p.Runs("db/one-step") {
		dbos := dbosSeries(ctx, fresh, "db/one-step", p.DB.Workflows, 1, p.DB.InFlight)
		dbos.run(0, 1, logf)
		record(dbos.result(fmt.Sprintf("%d workflows of 1 no-op steps, %d in flight", p.DB.Workflows, p.DB.InFlight)))
	}

	// Start→done latency of one one-step run at a time: Docket with
	// LISTEN/NOTIFY against DBOS, and Docket poll-only beside them.
	if p.Runs("db/latency") {
		latencyRuns := max(50, p.DB.Workflows/10)
		docketLatency := func(pollOnly bool) *series {
			system, name := SystemDocket+"-notify", "listen"
			if pollOnly {
				system, name = SystemDocket+"-poll", "poll"
			}
			return &series{scenario: "db/latency", system: system, measure: func() outcome {
				var latencies []time.Duration
				err := fresh("docket_latency_"+name, func(db *dbbench.Database) error {
					d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: dbbench.ShapeOneStep, Concurrency: 8, PollOnly: pollOnly, PollInterval: 50 * time.Millisecond})
					if err != nil {
						return err
					}
					defer d.Close(context.Background())
					latencies, err = d.Latencies(ctx, latencyRuns)
					return err
				})
				o := latencyOutcome(latencies)
				o.err = err
				return o
			}}
		}
		notify, poll := docketLatency(false), docketLatency(true)
		dbos := dbosSeries(ctx, fresh, "db/latency", latencyRuns, 1, 1)
		// The compared pair stays adjacent in either order.
		compare(poll, notify, dbos)
		note := fmt.Sprintf("%s%d runs one at a time, StartRun → done", repeatsNote(pairs), latencyRuns)
		record(notify.result(note + ", LISTEN/NOTIFY"))
		record(poll.result(note + ", poll-only (50 ms poll interval)"))
		record(dbos.result(fmt.Sprintf("%s%d workflows of 1 no-op steps, 1 in flight, started directly and awaited", repeatsNote(pairs), latencyRuns)))
		rep.CompareLatencyP50("db/latency", SystemDocket+"-notify", SystemDBOS, 2.0)
	}
	for _, c := range p.DB.Clients {
		drain, probe := fmt.Sprintf("db/drain/c%d", c), fmt.Sprintf("db/limit-probe/c%d", c)
		// Only client counts both scenarios run at are compared (the probe's
		// single client has no drain beside it).
		if slices.Contains(p.DB.Concurrency, c) && p.Runs(drain) && p.Runs(probe) {
			rep.CompareMoments(drain, SystemDocket, probe, SystemLimit, 2, 0.8)
		}
	}

	// Claim latency against a backlog of immediately-due runs: every size
	// in its own fresh database, the largest compared with the smallest.
	if p.Runs(ScenarioClaimBacklog) && len(p.DB.Backlogs) > 0 {
		largest := slices.Max(p.DB.Backlogs)
		for _, b := range claimBacklogs(ctx, srv, p.DB.Backlogs, p.DB.BacklogClaims, logf) {
			claims := &series{scenario: BacklogScenario(b.n), system: SystemDocket}
			claims.add(latencyOutcome(b.latencies))
			r, _ := claims.result("")
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

// chainStepCommits is what a run of the ten-step shapes counts: one step
// commit per superstep. The run's completion is committed with its last
// step (fused into one write), and a DBOS workflow's completion is a
// write of its own that is no step checkpoint, so neither side counts it.
const chainStepCommits = 10

// docketDrain runs one Docket drain in a fresh database: n runs of shape
// started (untimed), drained by concurrency workers, then the invariant
// gates. A failed gate fails the scenario whatever its speed. Each run
// counts stepsPerRun operations (its step commits).
func docketDrain(ctx context.Context, fresh func(string, func(*dbbench.Database) error) error, shape string, n, concurrency, stepsPerRun int) outcome {
	o := outcome{gates: "not run"}
	o.err = fresh(fmt.Sprintf("docket_%s_c%d", shape, concurrency), func(db *dbbench.Database) error {
		d, err := dbbench.OpenDocket(ctx, db, dbbench.DocketOptions{Shape: shape, Concurrency: concurrency})
		if err != nil {
			return err
		}
		defer d.Close(context.Background())
		if err := d.StartRuns(ctx, n); err != nil {
			return fmt.Errorf("start runs: %w", err)
		}
		res, err := d.Drain(ctx, n, drainLimit)
		o.ops, o.elapsed = res.Jobs*stepsPerRun, res.Elapsed
		if err != nil {
			return err
		}
		if err := dbbench.CheckGates(ctx, d.Pool, dbbench.DocketSchema, n); err != nil {
			o.gates = "FAILED"
			return err
		}
		o.gates = "passed"
		return nil
	})
	return o
}

// peerSeries is a peer's throughput series: each run measures in a fresh
// database named name, and measure reports how many operations it
// completed and in how long.
func peerSeries(fresh func(string, func(*dbbench.Database) error) error, scenario, system, unit, name string,
	measure func(*dbbench.Database) (int, time.Duration, error)) *series {
	return &series{scenario: scenario, system: system, unit: unit, measure: func() (o outcome) {
		o.err = fresh(name, func(db *dbbench.Database) (err error) {
			o.ops, o.elapsed, err = measure(db)
			return err
		})
		return o
	}}
}

// dbosSeries runs DBOS Transact in a fresh database: workflows workflows
// of steps no-op steps, inFlight at a time. Each step checkpoint counts
// as an operation; the latencies are the workflows'. One workflow in
// flight makes a latency scenario.
func dbosSeries(ctx context.Context, fresh func(string, func(*dbbench.Database) error) error, scenario string, workflows, steps, inFlight int) *series {
	unit := "workflows/s"
	switch {
	case inFlight == 1:
		unit = ""
	case steps > 1:
		unit = "step checkpoints/s"
	}
	return &series{scenario: scenario, system: SystemDBOS, unit: unit, measure: func() (o outcome) {
		o.err = fresh("dbos_"+strings.TrimPrefix(scenario, "db/"), func(db *dbbench.Database) error {
			res, err := dbbench.DBOSWorkflows(ctx, db, workflows, steps, inFlight, 5*time.Minute)
			o.ops, o.elapsed, o.latencies = res.Workflows*res.Steps, res.Elapsed, res.Latencies
			return err
		})
		return o
	}}
}

// outcome is what one run of one system measured: ops operations in
// elapsed, each operation's latency where measured, the invariant gates
// of a Docket drain.
type outcome struct {
	ops       int
	elapsed   time.Duration
	latencies []time.Duration
	gates     string
	err       error
}

// latencyOutcome is the outcome of operations timed one at a time.
func latencyOutcome(latencies []time.Duration) outcome {
	o := outcome{ops: len(latencies), latencies: latencies}
	for _, l := range latencies {
		o.elapsed += l
	}
	return o
}

// series is one system in one scenario over its runs: a sample and a
// throughput per run, every run's latencies, and the first error (after
// which the system runs no more: its result has failed).
type series struct {
	scenario, system string
	// unit names the throughput ("runs/s"); none makes a latency
	// scenario, whose percentiles are the figure.
	unit    string
	measure func() outcome

	samples   []harness.Sample
	perSecond []float64
	latencies []time.Duration
	gates     []string
	err       error
}

// run measures run i of n and logs it.
func (s *series) run(i, n int, logf Logf) {
	if s.err != nil {
		return
	}
	o := s.measure()
	if o.err != nil && n > 1 {
		o.err = fmt.Errorf("run %d/%d: %w", i+1, n, o.err)
	}
	s.add(o)
	if o.err != nil {
		return
	}
	prefix := fmt.Sprintf("%s %s", s.scenario, s.system)
	if n > 1 {
		prefix += fmt.Sprintf(", run %d/%d", i+1, n)
	}
	switch {
	case s.unit != "" && o.elapsed > 0:
		logf("%s: %.0f %s", prefix, float64(o.ops)/o.elapsed.Seconds(), s.unit)
	case len(o.latencies) > 0:
		sorted := slices.Sorted(slices.Values(o.latencies))
		logf("%s: p50 %s p95 %s p99 %s", prefix, harness.Percentile(sorted, 50).Round(time.Microsecond),
			harness.Percentile(sorted, 95).Round(time.Microsecond), harness.Percentile(sorted, 99).Round(time.Microsecond))
	}
}

// add records one run's outcome.
func (s *series) add(o outcome) {
	if o.gates != "" {
		s.gates = append(s.gates, o.gates)
	}
	if o.err != nil {
		s.err = o.err
		return
	}
	if o.ops == 0 || o.elapsed <= 0 {
		return
	}
	s.samples = append(s.samples, harness.Sample{Ops: o.ops, NsPerOp: float64(o.elapsed.Nanoseconds()) / float64(o.ops)})
	s.perSecond = append(s.perSecond, float64(o.ops)/o.elapsed.Seconds())
	s.latencies = append(s.latencies, o.latencies...)
}

// result reduces the runs: median time/op and throughput, percentiles
// over the latencies of every run; the error is the first run's that
// failed, with note for the record.
func (s *series) result(note string) (harness.Result, error) {
	r := harness.Result{Scenario: s.scenario, System: s.system, Status: harness.StatusMeasured, Note: note, Samples: s.samples}
	if sum, err := harness.Summarize(s.samples, s.latencies); err == nil {
		r.Summary = sum
		if s.unit != "" {
			r.Throughput = harness.Median(s.perSecond)
		}
	}
	return r, s.err
}

// gatesSummary is "passed" when every run passed its gates, "FAILED" when
// any failed, else "not run".
func (s *series) gatesSummary() string {
	switch {
	case slices.Contains(s.gates, "FAILED"):
		return "FAILED"
	case len(s.gates) == 0 || slices.Contains(s.gates, "not run"):
		return "not run"
	}
	return "passed"
}

// repeatsNote opens the note of a compared result with how many runs its
// figures are the median of.
func repeatsNote(pairs int) string {
	if pairs == 1 {
		return ""
	}
	return fmt.Sprintf("median of %d alternating runs; ", pairs)
}
