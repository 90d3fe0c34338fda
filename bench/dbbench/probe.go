package dbbench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The probe's schema: a run row per (client, slot) and an event log keyed
// like Docket's ({run_id, seq} unique).
const probeSchema = `
CREATE TABLE probe_runs (
	id             bigint PRIMARY KEY,
	claim_token    uuid NOT NULL,
	checkpoint_seq bigint NOT NULL,
	event_seq      bigint NOT NULL,
	document       jsonb NOT NULL,
	updated_at     timestamptz NOT NULL
);
CREATE TABLE probe_events (
	run_id  bigint NOT NULL,
	seq     bigint NOT NULL,
	type    text NOT NULL,
	payload jsonb NOT NULL,
	PRIMARY KEY (run_id, seq)
);`

// The moment shape: one fenced run UPDATE and two event INSERTs in one
// transaction, as a Docket commit writes a run and its events.
const (
	probeUpdate = `UPDATE probe_runs
SET checkpoint_seq = checkpoint_seq + 1, event_seq = event_seq + 2, document = $3, updated_at = now()
WHERE id = $1 AND claim_token = $2 AND checkpoint_seq = $4`
	probeInsertEvent = `INSERT INTO probe_events (run_id, seq, type, payload) VALUES ($1, $2, $3, $4)`
)

// probeRunsPerClient spreads each client's commits over a few rows, as
// a worker advances several runs.
const probeRunsPerClient = 16

// ProbeResult is one client count's outcome.
type ProbeResult struct {
	Clients   int
	Commits   int
	Elapsed   time.Duration
	Latencies []time.Duration
}

// PerSecond is commits per second.
func (r ProbeResult) PerSecond() float64 { return float64(r.Commits) / r.Elapsed.Seconds() }

// Probe runs the moment-shaped commit from clients concurrent connections
// for d against a fresh schema in db, each client on its own rows (no
// contention: the ceiling is the database's, not a lock's). A lost fence
// is an error: nothing else writes these rows.
func Probe(ctx context.Context, db *Database, clients int, d time.Duration) (ProbeResult, error) {
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		return ProbeResult{}, err
	}
	cfg.MaxConns = int32(clients)
	cfg.MinConns = int32(clients)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return ProbeResult{}, err
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS probe_events, probe_runs;"+probeSchema); err != nil {
		return ProbeResult{}, fmt.Errorf("probe schema: %w", err)
	}
	doc := probeDocument()
	rows := clients * probeRunsPerClient
	if _, err := pool.Exec(ctx, `INSERT INTO probe_runs SELECT g, '00000000-0000-0000-0000-000000000001', 0, 0, $1, now() FROM generate_series(0, $2 - 1) g`, doc, rows); err != nil {
		return ProbeResult{}, fmt.Errorf("probe rows: %w", err)
	}

	var (
		mu    sync.Mutex
		total ProbeResult
		errs  []error
		wg    sync.WaitGroup
	)
	total.Clients = clients
	deadline := time.Now().Add(d)
	start := time.Now()
	for c := range clients {
		wg.Go(func() {
			n, lat, err := probeClient(ctx, pool, c, doc, deadline)
			mu.Lock()
			defer mu.Unlock()
			total.Commits += n
			total.Latencies = append(total.Latencies, lat...)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	total.Elapsed = time.Since(start)
	return total, errors.Join(errs...)
}

func probeClient(ctx context.Context, pool *pgxpool.Pool, client int, doc string, deadline time.Time) (int, []time.Duration, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, nil, err
	}
	defer conn.Release()
	seqs := make([]int64, probeRunsPerClient) // checkpoint_seq per row, as a claim holder tracks it
	var lat []time.Duration
	n := 0
	for ; time.Now().Before(deadline); n++ {
		if err := ctx.Err(); err != nil {
			return n, lat, err
		}
		slot := n % probeRunsPerClient
		id := int64(client*probeRunsPerClient + slot)
		t0 := time.Now()
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, probeUpdate, id, "00000000-0000-0000-0000-000000000001", doc, seqs[slot])
			if err != nil {
				return err
			}
			if tag.RowsAffected() != 1 {
				return fmt.Errorf("run %d: fence lost at checkpoint %d", id, seqs[slot])
			}
			base := seqs[slot] * 2
			if _, err := tx.Exec(ctx, probeInsertEvent, id, base+1, "node_completed", `{"attempt":1}`); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, probeInsertEvent, id, base+2, "checkpoint_committed", `{"checkpoint_seq":1}`)
			return err
		})
		if err != nil {
			return n, lat, err
		}
		seqs[slot]++
		lat = append(lat, time.Since(t0))
	}
	return n, lat, nil
}

// probeDocument is a run document of the size a small Docket run stores
// (~1.5 KB of JSON).
func probeDocument() string {
	var b strings.Builder
	b.WriteString(`{"status":"running","step":3,"channels":{`)
	for i := range 12 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"state:field_%02d":{"value":"some value of field %02d","version":%d}`, i, i, i+1)
	}
	b.WriteString(`},"changed_channels":["edge:e_01"],"metadata":{}}`)
	return b.String()
}
