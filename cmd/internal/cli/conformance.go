package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/adapters/postgres/pgconformance"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/migrations"
)

func (a *app) conformanceCommand() *cobra.Command {
	var sequential bool
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Check a live PostgreSQL deployment against the adapter conformance suite",
		Long: "conformance runs every invariant of Docket's storage contract against the database given by\n" +
			"--database-url (or the usual variables), each in a fresh scratch schema named\n" +
			"docket_conformance_<random>_<n> that is dropped afterwards, even on failure or Ctrl-C. It\n" +
			"needs a role that may CREATE SCHEMA, and it leaves the deployment's own schema untouched.\n" +
			"It prints one line per invariant ID and exits 1 when any invariant fails.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.conformance(cmd.Context(), sequential) },
	}
	cmd.Flags().BoolVar(&sequential, "sequential", false, "run invariants one at a time")
	return cmd
}

// scratchSchemas hands out migrated, empty scratch schemas. A schema an
// invariant is done with is emptied and handed to the next one, so the
// suite pays for DDL only as many times as invariants run at once; all of
// them are dropped at the end.
type scratchSchemas struct {
	pool   *pgxpool.Pool
	prefix string
	n      atomic.Int64

	mu      sync.Mutex
	created map[string]bool
	clean   []string
}

func (s *scratchSchemas) take(ctx context.Context) (string, error) {
	s.mu.Lock()
	if n := len(s.clean); n > 0 {
		name := s.clean[n-1]
		s.clean = s.clean[:n-1]
		s.mu.Unlock()
		return name, nil
	}
	name := fmt.Sprintf("%s_%d", s.prefix, s.n.Add(1))
	s.created[name] = true
	s.mu.Unlock()
	if _, err := migrations.Up(ctx, s.pool, migrations.Options{Schema: name}); err != nil {
		return "", fmt.Errorf("install schema %s: %w", name, err)
	}
	return name, nil
}

// give empties name (DELETE: the schedule's triggers forbid TRUNCATE) and
// makes it available again; a schema that cannot be emptied is dropped.
func (s *scratchSchemas) give(ctx context.Context, name string) {
	q := func(table string) string { return pgx.Identifier{name, table}.Sanitize() }
	reset := "SET LOCAL synchronous_commit = off;" +
		"DELETE FROM " + q("docket_events") + ";" +
		"DELETE FROM " + q("docket_runs") + ";" +
		"DELETE FROM " + q("docket_graph_versions") + ";" +
		"UPDATE " + q("docket_claim_policy") + " SET admission_mode = 'legacy';"
	if err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, reset, pgx.QueryExecModeSimpleProtocol)
		return err
	}); err != nil {
		_ = s.drop(ctx, name)
		return
	}
	s.mu.Lock()
	s.clean = append(s.clean, name)
	s.mu.Unlock()
}

func (s *scratchSchemas) drop(ctx context.Context, name string) error {
	_, err := s.pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE")
	if err == nil {
		s.mu.Lock()
		delete(s.created, name)
		s.mu.Unlock()
	}
	return err
}

// dropAll removes whatever a failed or interrupted check left behind.
func (s *scratchSchemas) dropAll(ctx context.Context) error {
	s.mu.Lock()
	names := sortedKeys(s.created)
	s.mu.Unlock()
	var failed []string
	for _, name := range names {
		if err := s.drop(ctx, name); err != nil {
			failed = append(failed, name+": "+err.Error())
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("could not drop scratch schemas: %s", strings.Join(failed, "; "))
	}
	return nil
}

type conformanceJSON struct {
	Passed       bool                    `json:"passed"`
	SchemaPrefix string                  `json:"schema_prefix"`
	Counts       map[string]int          `json:"counts"`
	Invariants   []conformanceResultJSON `json:"invariants"`
}

type conformanceResultJSON struct {
	ID        string   `json:"id"`
	Area      string   `json:"area"`
	Behaviour string   `json:"behaviour"`
	Status    string   `json:"status"`
	Messages  []string `json:"messages,omitempty"`
	ElapsedMS int64    `json:"elapsed_ms"`
}

func (a *app) conformance(ctx context.Context, sequential bool) error {
	// The wired pool checks the server first, with the usual errors; the
	// suite then gives every invariant a pool of its own.
	probe, cleanupProbe, err := a.openPool(ctx)
	if err != nil {
		return err
	}
	defer cleanupProbe()
	base := probe.Config()

	random := make([]byte, 4)
	_, _ = rand.Read(random)
	schemas := &scratchSchemas{pool: probe, prefix: "docket_conformance_" + hex.EncodeToString(random), created: map[string]bool{}}
	defer func() {
		cleanupCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := schemas.dropAll(cleanupCtx); err != nil {
			a.say("docket: %v", err)
		}
	}()

	// Every invariant needs a scratch schema: a role that cannot create
	// one is told so once, instead of by a failure of every invariant.
	first, err := schemas.take(ctx)
	if err != nil {
		return failuref("conformance needs a role that may CREATE SCHEMA in this database (the owner's, not the application role's): %v", err)
	}
	schemas.give(ctx, first)

	total := len(conformance.Invariants())
	b := a.progress(total, "checking invariants")
	var started atomic.Int64
	factory := func(t conformance.T) conformance.Adapter {
		if n := started.Add(1); n <= int64(total) {
			b.set(int(n))
		}
		env, err := openScratch(t.Context(), base, schemas)
		if err != nil {
			t.Fatalf("%v", err)
		}
		t.Cleanup(env.close)
		return conformance.Adapter{
			Backend:       env.store,
			Clock:         env.clock,
			AdmissionGate: pgconformance.Gate(env.pool, env.schema, claim.AdmissionModeLegacy, env.session.Set),
			SchemaProbe:   pgconformance.Probe(env.pool, env.schema),
		}
	}
	features := conformance.Features{WakeNotifications: true, AdmissionGate: true, SchemaGuards: true, Sequential: sequential}
	report := conformance.RunStandalone(ctx, features, factory)
	b.finish()
	if err := ctx.Err(); err != nil {
		return err
	}

	res := conformanceJSON{Passed: report.Passed(), SchemaPrefix: schemas.prefix, Counts: map[string]int{}}
	for _, r := range report.Results() {
		res.Counts[string(r.Status)]++
		res.Invariants = append(res.Invariants, conformanceResultJSON{
			ID: r.Invariant.ID, Area: string(r.Invariant.Area), Behaviour: r.Invariant.Behaviour,
			Status: string(r.Status), Messages: r.Messages, ElapsedMS: r.Elapsed.Milliseconds(),
		})
	}
	if a.json {
		if err := printJSON(a.io.Out, res); err != nil {
			return err
		}
	} else {
		fmt.Fprint(a.io.Out, report.String())
	}
	if !res.Passed {
		failed := report.Failed()
		if notRun := report.IDs(conformance.StatusNotRun); len(notRun) > 0 {
			failed = append(failed, notRun...)
		}
		return failuref("%d invariant(s) did not pass: %s", len(failed), strings.Join(failed, ", "))
	}
	return nil
}

// scratchEnv is one invariant's store: a fresh schema, a small pool of its
// own (so closing its admission gate affects no other invariant), a wake
// listener and a store clock the suite drives.
type scratchEnv struct {
	schema  string
	pool    *pgxpool.Pool
	store   *postgres.Store
	clock   *conformance.ManualClock
	session *pgconformance.SessionMode
	release func()
}

func openScratch(ctx context.Context, base *pgxpool.Config, schemas *scratchSchemas) (_ *scratchEnv, err error) {
	name, err := schemas.take(ctx)
	if err != nil {
		return nil, err
	}
	env := &scratchEnv{schema: name, clock: conformance.NewManualClock(conformance.ReferenceTime), session: &pgconformance.SessionMode{}}
	env.release = func() { schemas.give(context.Background(), name) }
	defer func() {
		if err != nil {
			env.close()
		}
	}()
	cfg := base.Copy()
	cfg.MaxConns, cfg.MinConns = 4, 0
	// Scratch data needs no durability; skipping the WAL flush keeps the
	// suite quick on a production server.
	cfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	cfg.PrepareConn = env.session.Prepare
	if env.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, err
	}
	listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: base.ConnConfig, Schema: name})
	if err != nil {
		return nil, err
	}
	env.store, err = postgres.New(ctx, postgres.Config{Pool: env.pool, Schema: name, Clock: env.clock, Notifier: listener})
	if err != nil {
		return nil, fmt.Errorf("open the store on %s: %w", name, err)
	}
	return env, nil
}

func (e *scratchEnv) close() {
	if e.store != nil {
		_ = e.store.Close()
	}
	if e.pool != nil {
		e.pool.Close()
	}
	e.release()
}
