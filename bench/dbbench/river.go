package dbbench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

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

// RiverDrain migrates River into db, inserts jobs no-op jobs (untimed),
// then starts a client with concurrency workers and times until every job
// is recorded completed in the database. River is tuned for throughput
// (1 ms fetch cooldown, 50 ms poll), as a benchmark of its ceiling should
// be; limit bounds the whole drain.
func RiverDrain(ctx context.Context, db *Database, jobs, concurrency int, limit time.Duration) (DrainResult, error) {
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
	river.AddWorker(workers, &noopWorker{worked: &worked})
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
	for inserted := 0; inserted < jobs; inserted += len(params) {
		params = params[:0]
		for range min(batch, jobs-inserted) {
			params = append(params, river.InsertManyParams{Args: noopArgs{}})
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
		if worked.Load() >= int64(jobs) {
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&completed); err != nil {
				return DrainResult{}, err
			}
			if completed >= jobs {
				return DrainResult{Jobs: jobs, Elapsed: time.Since(start)}, nil
			}
		}
		select {
		case <-ctx.Done():
			return DrainResult{}, fmt.Errorf("river drained %d of %d jobs (%d worked) before the limit: %w", completed, jobs, worked.Load(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}
