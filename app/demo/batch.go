package demo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// DefaultBatchSize is the number of runs a batch drives by default.
const DefaultBatchSize = 20

// DefaultBatchTimeout bounds how long a batch waits for its runs.
const DefaultBatchTimeout = 2 * time.Minute

// Application is one loan application: the input of one demo run.
type Application struct {
	Customer string
	Amount   float64
}

// input is the run input of an application.
func (a Application) input() map[string]any {
	return map[string]any{"customer": a.Customer, "amount": a.Amount}
}

func applicationOf(input map[string]any) Application {
	customer, _ := input["customer"].(string)
	return Application{Customer: customer, Amount: number(input["amount"])}
}

var customers = []string{"Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Radia", "Niklaus"}

var amounts = []float64{450, 1500, 800, 3200, 12500, 250, 950, 7400, 2100, 15800}

// Applications returns n deterministic applications that cover every path
// of the graph: small amounts are approved by policy, larger ones go to a
// manager (who rejects the largest), and odd hundreds make the credit
// check fail once.
func Applications(n int) []Application {
	out := make([]Application, n)
	for i := range out {
		out[i] = Application{
			Customer: customers[i%len(customers)],
			Amount:   amounts[(i+i/len(amounts))%len(amounts)],
		}
	}
	return out
}

// BatchOptions configure Batch. The zero value means the defaults.
type BatchOptions struct {
	// Size is the number of runs the batch drives (default 20), counting
	// runs an interrupted earlier batch left unfinished.
	Size int
	// Timeout bounds the wait for every run (default 2m).
	Timeout time.Duration
	// Progress, when set, is called once per run that finishes, with the
	// number finished so far and the batch size. Calls are serialized.
	Progress func(finished, total int)
}

// BatchRun is one run of a batch.
type BatchRun struct {
	Application Application
	// Resumed marks a run an earlier, interrupted batch started.
	Resumed bool
	// Decision is the manager's answer to the approval interrupt, when
	// the demo gave one.
	Decision string
	// Run is the run as it finished.
	Run *run.Run
}

// BatchResult is a finished batch, its runs in start order (resumed runs
// first).
type BatchResult struct {
	Ref     engine.GraphRef
	Resumed int
	Runs    []BatchRun
}

// Batch publishes the demo graph through c, resumes the runs an earlier
// batch left unfinished (running or waiting), starts new runs up to the
// batch size, answers every approval interrupt with ManagerDecision and
// waits until every run has finished. Driving the runs is the job of a
// started engine sharing c's store. On an error after the first start,
// the result lists the runs started so far.
func Batch(ctx context.Context, c *engine.Client, opts BatchOptions) (*BatchResult, error) {
	if opts.Size <= 0 {
		opts.Size = DefaultBatchSize
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultBatchTimeout
	}
	g, err := Graph()
	if err != nil {
		return nil, err
	}
	ref, err := c.SaveGraph(ctx, g)
	if err != nil {
		return nil, fmt.Errorf("publish the demo graph: %w", err)
	}
	res := &BatchResult{Ref: ref}

	unfinished, err := unfinishedRuns(ctx, c, opts.Size)
	if err != nil {
		return nil, err
	}
	for _, r := range unfinished {
		res.Runs = append(res.Runs, BatchRun{Application: applicationOf(r.Input), Resumed: true, Run: r})
	}
	res.Resumed = len(unfinished)
	for _, app := range Applications(opts.Size - len(unfinished)) {
		r, err := c.StartRun(ctx, ref, app.input(), engine.WithMetadata(map[string]any{"demo": true}))
		if err != nil {
			return res, fmt.Errorf("start a demo run: %w", err)
		}
		res.Runs = append(res.Runs, BatchRun{Application: app, Run: r})
	}

	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		finished int
		errs     = make([]error, len(res.Runs))
	)
	for i := range res.Runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = follow(ctx, c, &res.Runs[i])
			if errs[i] != nil {
				cancel() // no point waiting for the others
				return
			}
			if opts.Progress != nil {
				mu.Lock()
				finished++
				opts.Progress(finished, len(res.Runs))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return res, err
	}
	return res, nil
}

// firstError prefers a real failure over the cancellations it caused.
func firstError(errs []error) error {
	var cancelled error
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, context.Canceled):
			cancelled = err
		default:
			return err
		}
	}
	return cancelled
}

// unfinishedRuns lists up to limit demo runs that are running or waiting,
// oldest first.
func unfinishedRuns(ctx context.Context, c *engine.Client, limit int) ([]*run.Run, error) {
	page, err := c.ListRuns(ctx, ports.ListRunsParams{
		Limit:    limit,
		GraphID:  GraphID,
		Statuses: []run.Status{run.StatusRunning, run.StatusWaiting},
	})
	if err != nil {
		return nil, fmt.Errorf("list unfinished demo runs: %w", err)
	}
	runs := make([]*run.Run, 0, len(page.Runs))
	for _, s := range slices.Backward(page.Runs) {
		r, err := c.FetchRun(ctx, s.RunID)
		if err != nil {
			return nil, fmt.Errorf("fetch unfinished demo run %s: %w", s.RunID, err)
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// follow waits for one run to finish, answering its approval interrupts.
func follow(ctx context.Context, c *engine.Client, br *BatchRun) error {
	for {
		remaining := time.Until(deadlineOf(ctx))
		r, err := c.AwaitRun(ctx, br.Run.ID, max(remaining, 0))
		if err != nil {
			return fmt.Errorf("demo run %s: %w", br.Run.ID, err)
		}
		br.Run = r
		if r.Status.Terminal() {
			return nil
		}
		for _, in := range r.OpenInterrupts() {
			id := in.ID
			decision := ManagerDecision(br.Application.Amount)
			resolved, err := c.ResolveInterrupt(ctx, r.ID, id, decision)
			switch {
			case errors.Is(err, superstep.ErrAlreadyResolved):
				continue // another caller answered first
			case err != nil:
				return fmt.Errorf("demo run %s: resolve %s: %w", r.ID, id, err)
			}
			br.Decision = decision
			br.Run = resolved
		}
	}
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(DefaultBatchTimeout)
}
