package suite

import (
	"context"
	"errors"
	"fmt"
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

// durableHooks are Docket durable scenarios of the issue that are not
// wired yet; they are reported as not implemented, never with numbers.
var durableHooks = []struct{ scenario, note string }{
	{"db/claim-backlog", "hook: claim latency against 10k, 100k and 1M due runs (needs a bulk loader of valid run rows; StartRun is too slow for 1M)"},
}

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
			{"db/latency", SystemDocket}, {"db/latency", SystemDBOS},
		} {
			rep.Results = append(rep.Results, harness.Result{Scenario: s.scenario, System: s.system, Status: harness.StatusSkipped, Note: err.Error()})
		}
		addHooks(rep)
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
		docketFirst := i%2 == 0
		for turn := range 2 {
			if (turn == 0) == docketFirst {
				res, gates, err := docketDrain(ctx, fresh, dbbench.ShapeOneStep, p.DB.Jobs, c)
				r := throughputResult(fmt.Sprintf("db/drain/c%d", c), SystemDocket, res.Jobs, res.Elapsed, nil)
				r.Note = fmt.Sprintf("%d immediately-due one-step runs (2 moment commits each); gates: %s", p.DB.Jobs, gates)
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
	rep.CompareBest("db/drain/best", "db/drain/", SystemDocket, SystemRiver, 1.0)

	// Chain and fan-out runs: step commits per second.
	chainRuns := max(20, p.DB.Jobs/10)
	for _, shape := range []string{dbbench.ShapeChain10, dbbench.ShapeFanOut8} {
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
	rep.CompareThroughput("db/chain10", SystemDocket, SystemDBOS, 2.0)
	rep.CompareLatencyP50("db/latency", SystemDocket+"-notify", SystemDBOS, 2.0)
	for _, c := range p.DB.Clients {
		rep.CompareMoments(fmt.Sprintf("db/drain/c%d", c), SystemDocket, fmt.Sprintf("db/limit-probe/c%d", c), SystemLimit, 2, 0.8)
	}
	addHooks(rep)
	return errors.Join(errs...)
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

func addHooks(rep *harness.Report) {
	for _, h := range durableHooks {
		rep.Results = append(rep.Results, harness.Result{Scenario: h.scenario, System: SystemDocket, Status: harness.StatusNotImplemented, Note: h.note})
	}
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
