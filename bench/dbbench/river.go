package dbbench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// noopArgs is River's no-op job.
type noopArgs struct{}

func (noopArgs) Kind() string { return "docket_bench_noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	worked *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.worked.Add(1)
	return nil
}

// DrainResult is one drain's outcome.
type DrainResult struct {
	Jobs    int
	Elapsed time.Duration
}

// PerSecond is jobs per second.
func (r DrainResult) PerSecond() float64 { return float64(r.Jobs) / r.Elapsed.Seconds() }

// chainArgs is one step of a River chain. The job of step Step hands off to
// step Step+1 in the transaction that records its own completion, River's
// durable counterpart of a checkpoint that schedules the next node.
type chainArgs struct {
	Step int `json:"step"`
}

func (chainArgs) Kind() string { return "docket_bench_chain" }

type chainWorker struct {
	river.WorkerDefaults[chainArgs]
	pool   *pgxpool.Pool
	steps  int
	worked *atomic.Int64
}

func (w *chainWorker) Work(ctx context.Context, job *river.Job[chainArgs]) error {
	w.worked.Add(1)
	if job.Args.Step+1 >= w.steps {
		return nil
	}
	tx, err := w.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	client := river.ClientFromContext[pgx.Tx](ctx)
	if _, err := client.InsertTx(ctx, tx, chainArgs{Step: job.Args.Step + 1}, nil); err != nil {
		return err
	}
	if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// RiverDrain times concurrency workers draining jobs pre-inserted no-op
// jobs (see riverRun); limit bounds the whole drain.
func RiverDrain(ctx context.Context, db *Database, jobs, concurrency int, limit time.Duration) (DrainResult, error) {
	return riverRun(ctx, db, concurrency, limit, jobs, jobs, func(workers *river.Workers, _ *pgxpool.Pool, worked *atomic.Int64) {
		river.AddWorker(workers, &noopWorker{worked: worked})
	}, noopArgs{})
}

// RiverChain is the chain counterpart of RiverDrain: chains first-step jobs
// are inserted (untimed), and each job of a step below steps-1 inserts the
// next step's job and completes itself in one transaction. It times until
// chains×steps jobs are recorded completed; the result counts jobs, one
// hand-off per step.
func RiverChain(ctx context.Context, db *Database, chains, steps, concurrency int, limit time.Duration) (DrainResult, error) {
	return riverRun(ctx, db, concurrency, limit, chains, chains*steps, func(workers *river.Workers, pool *pgxpool.Pool, worked *atomic.Int64) {
		river.AddWorker(workers, &chainWorker{pool: pool, steps: steps, worked: worked})
	}, chainArgs{})
}

// riverRun migrates River into db, registers its workers, inserts insert
// jobs of args first (untimed), starts a client with concurrency workers
// and times until want jobs are recorded completed; limit bounds the run.
// River is tuned for throughput (1 ms fetch cooldown, 50 ms poll), as a
// benchmark of its ceiling should be.
func riverRun(ctx context.Context, db *Database, concurrency int, limit time.Duration, insert, want int,
	register func(*river.Workers, *pgxpool.Pool, *atomic.Int64), first river.JobArgs) (DrainResult, error) {
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return DrainResult{}, err
	}
	cfg.MaxConns = int32(min(concurrency, 32) + 4)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return DrainResult{}, err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return DrainResult{}, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return DrainResult{}, fmt.Errorf("river migrate: %w", err)
	}

	var worked atomic.Int64
	workers := river.NewWorkers()
	register(workers, pool, &worked)
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: concurrency}},
		Workers:           workers,
		FetchCooldown:     time.Millisecond,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            discardLogger(),
	})
	if err != nil {
		return DrainResult{}, err
	}
	const batch = 1000
	params := make([]river.InsertManyParams, 0, batch)
	for inserted := 0; inserted < insert; inserted += len(params) {
		params = params[:0]
		for range min(batch, insert-inserted) {
			params = append(params, river.InsertManyParams{Args: first})
		}
		if _, err := client.InsertManyFast(ctx, params); err != nil {
			return DrainResult{}, fmt.Errorf("river insert: %w", err)
		}
	}

	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		return DrainResult{}, err
	}
	defer func() {
		stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = client.Stop(stopCtx)
	}()
	for {
		var completed int
		if worked.Load() >= int64(want) {
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&completed); err != nil {
				return DrainResult{}, err
			}
			if completed >= want {
				return DrainResult{Jobs: want, Elapsed: time.Since(start)}, nil
			}
		}
		select {
		case <-ctx.Done():
			return DrainResult{}, fmt.Errorf("river completed %d of %d jobs (%d worked) before the limit: %w", completed, want, worked.Load(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
