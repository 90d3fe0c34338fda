package dbbench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// WorkflowResult is one DBOS run's outcome.
type WorkflowResult struct {
	Workflows int
	Steps     int
	Elapsed   time.Duration
	Latencies []time.Duration // start → result of each workflow
}

// PerSecond is workflows per second.
func (r WorkflowResult) PerSecond() float64 { return float64(r.Workflows) / r.Elapsed.Seconds() }

// StepsPerSecond is step checkpoints per second.
func (r WorkflowResult) StepsPerSecond() float64 {
	return float64(r.Workflows*r.Steps) / r.Elapsed.Seconds()
}

func noopStep(context.Context) (int, error) { return 1, nil }

// benchWorkflow runs n no-op steps; DBOS checkpoints each one.
func benchWorkflow(c dbos.Context, n int) (int, error) {
	sum := 0
	for range n {
		v, err := dbos.RunAsStep(c, noopStep)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// fanOutWorkflow runs branches no-op steps beside each other (dbos.Go),
// waits for every one, then runs a join step over their results; DBOS
// checkpoints each of the branches+1 steps. It returns branches.
func fanOutWorkflow(c dbos.Context, branches int) (int, error) {
	outcomes := make([]<-chan dbos.StepOutcome[int], branches)
	for i := range outcomes {
		ch, err := dbos.Go(c, noopStep)
		if err != nil {
			return 0, err
		}
		outcomes[i] = ch
	}
	sum := 0
	for _, ch := range outcomes {
		o := <-ch
		if o.Err != nil {
			return 0, o.Err
		}
		sum += o.Result
	}
	return dbos.RunAsStep(c, func(context.Context) (int, error) { return sum, nil })
}

// historyWorkflow is history10 as DBOS runs it: n steps that each return
// the next message (checkpointed as the step's output), appended to a
// history the workflow keeps in memory. It returns how many messages it
// gathered, each checked against the message Docket's node appends.
func historyWorkflow(c dbos.Context, n int) (int, error) {
	history := make([]string, 0, n)
	for i := range n {
		m, err := dbos.RunAsStep(c, func(context.Context) (string, error) { return Message(i), nil })
		if err != nil {
			return 0, err
		}
		if m != Message(i) {
			return 0, fmt.Errorf("step %d returned %d bytes, not its message", i, len(m))
		}
		history = append(history, m)
	}
	return len(history), nil
}

// DBOSHistory is DBOSWorkflows for workflows of steps steps that each
// return a MessageBytes message (the history10 shape).
func DBOSHistory(ctx context.Context, db *Database, workflows, steps, inFlight int, limit time.Duration) (WorkflowResult, error) {
	return dbosRun(ctx, db, historyWorkflow, workflows, steps, steps, inFlight, limit)
}

// DBOSWorkflows launches DBOS Transact on db and runs workflows workflows
// of steps no-op steps each, inFlight at a time, each started directly
// (RunWorkflow) and awaited; limit bounds the whole run.
func DBOSWorkflows(ctx context.Context, db *Database, workflows, steps, inFlight int, limit time.Duration) (WorkflowResult, error) {
	return dbosRun(ctx, db, benchWorkflow, workflows, steps, steps, inFlight, limit)
}

// DBOSFanOut is DBOSWorkflows for workflows of branches no-op steps run
// beside each other and a join step after them (branches+1 steps).
func DBOSFanOut(ctx context.Context, db *Database, workflows, branches, inFlight int, limit time.Duration) (WorkflowResult, error) {
	return dbosRun(ctx, db, fanOutWorkflow, workflows, branches, branches+1, inFlight, limit)
}

// dbosRun runs workflows workflows of workflow(param), each of steps
// steps and expected to return param, inFlight at a time.
func dbosRun(ctx context.Context, db *Database, workflow func(dbos.Context, int) (int, error), workflows, param, steps, inFlight int, limit time.Duration) (WorkflowResult, error) {
	dctx, err := dbos.NewContext(ctx, dbos.Config{AppName: "docket-bench", DatabaseURL: db.URL, Logger: discardLogger()})
	if err != nil {
		return WorkflowResult{}, fmt.Errorf("dbos context: %w", err)
	}
	defer dbos.Shutdown(dctx, 10*time.Second)
	dbos.RegisterWorkflow(dctx, workflow)
	if err := dbos.Launch(dctx); err != nil {
		return WorkflowResult{}, fmt.Errorf("dbos launch: %w", err)
	}

	runCtx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var (
		mu   sync.Mutex
		res  = WorkflowResult{Workflows: workflows, Steps: steps}
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan struct{})
	go func() {
		defer close(next)
		for range workflows {
			select {
			case next <- struct{}{}:
			case <-runCtx.Done():
				return
			}
		}
	}()
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for range next {
				t0 := time.Now()
				h, err := dbos.RunWorkflow(dctx, workflow, param)
				if err == nil {
					var got int
					got, err = h.GetResult()
					if err == nil && got != param {
						err = fmt.Errorf("workflow returned %d, want %d", got, param)
					}
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					res.Latencies = append(res.Latencies, time.Since(t0))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	if len(errs) > 0 {
		return res, fmt.Errorf("%d of %d workflows failed; first: %w", len(errs), workflows, errs[0])
	}
	if err := runCtx.Err(); err != nil {
		return res, fmt.Errorf("dbos run did not finish in %s: %w", limit, err)
	}
	return res, nil
}
