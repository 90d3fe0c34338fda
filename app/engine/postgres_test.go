package engine_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/adapters/notify"
	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/app/engine"
	"github.com/docketgo/docket/app/prune"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/migrations"
	"github.com/docketgo/docket/pgtest"
	"github.com/docketgo/docket/ports"
)

// TestMain runs the package through pgtest, which drops the shared
// database and stops the server it started after the tests.
func TestMain(m *testing.M) { pgtest.Main(m) }

// pgSchema is one migrated schema in the process's shared test database.
type pgSchema struct {
	db     *pgtest.Database
	schema string
	config *pgxpool.Config
}

func newPGSchema(t *testing.T) *pgSchema {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.SharedDatabase(t)
	schema := db.NewSchema(t)
	_, err := migrations.Up(ctx, db.Connect(t), migrations.Options{Schema: schema})
	require.NoError(t, err, "migrate %s", schema)
	cfg, err := pgxpool.ParseConfig(db.URL)
	require.NoError(t, err)
	cfg.MinConns = 0
	return &pgSchema{db: db, schema: schema, config: cfg}
}

// store opens a Store on the schema with its own pool. A nil clock keeps
// the database clock; listen wires a LISTEN/NOTIFY listener.
func (s *pgSchema) store(t *testing.T, clock *manualClock, listen bool, maxConns int32) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := s.config.Copy()
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	storeCfg := postgres.Config{Pool: pool, Schema: s.schema}
	if clock != nil {
		storeCfg.Clock = clock
	}
	if listen {
		listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: cfg.ConnConfig, Schema: s.schema})
		require.NoError(t, err)
		storeCfg.Notifier = listener
	}
	store, err := postgres.New(ctx, storeCfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// newPostgresHarness is a harness on a fresh PostgreSQL schema whose store
// clock is the harness's manual clock, so timing works exactly as on the
// memory adapter.
func newPostgresHarness(t *testing.T, pollOnly bool) *harness {
	t.Helper()
	clock := newManualClock()
	s := newPGSchema(t)
	return &harness{clock: clock, store: s.store(t, clock, !pollOnly, 8), pollOnly: pollOnly}
}

// Engines sharing a schema prune in turn: a pass that finds another pass
// holding the schema's pruner lock deletes nothing and says so.
func TestEnginePrunerWaitsItsTurnBehindAnotherPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	clock := newManualClock()
	h := &harness{clock: clock, store: s.store(t, clock, false, 8), pollOnly: true}
	k := newKit()
	e := manual(t, h, k)
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	finished, err := e.StartRun(ctx, ref, map[string]any{"value": "old"})
	require.NoError(t, err)
	_, err = e.DrainRuns(ctx, 0)
	require.NoError(t, err)
	clock.Advance(2 * time.Hour)

	other, err := s.db.Connect(t).Begin(ctx) // another instance's pass, mid-way
	require.NoError(t, err)
	defer func() { _ = other.Rollback(ctx) }()
	_, err = other.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", "docket:pruner:"+s.schema)
	require.NoError(t, err)

	log := newTelemetryLog()
	cfg := h.config(k)
	cfg.Telemetry = log
	cfg.Pruner = &prune.Config{Interval: 5 * time.Millisecond, EventRetention: time.Hour, RunRetention: time.Hour, BatchSize: 100}
	startEngine(t, cfg)
	locked := log.waitFact(t, ports.FactPrunerPass, map[string]string{ports.LabelResult: ports.ResultLocked})
	assert.Zero(t, locked.m["runs_deleted"]+locked.m["events_deleted"])
	_, err = e.FetchRun(ctx, finished.ID)
	require.NoError(t, err, "nothing is pruned beside the other pass")

	require.NoError(t, other.Rollback(ctx))
	eventually(t, "the finished run to be pruned once the other pass ends", func() bool {
		_, err := e.FetchRun(ctx, finished.ID)
		return errors.Is(err, engine.ErrNotFound)
	})
}

// An engine whose listener is reconnecting hears nothing the store
// announces meanwhile: its own start makes its dispatcher poll at once, as
// a poll-only engine's does, instead of waiting for the reconnection.
func TestARunStartedWhileTheListenerReconnectsIsClaimedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	cfg := s.config.Copy()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	listenConfig := cfg.ConnConfig.Copy()
	app := fmt.Sprintf("docket-reconnect-%d", time.Now().UnixNano()) // application_name keeps 63 bytes
	listenConfig.RuntimeParams["application_name"] = app
	listener, err := notify.NewListener(notify.ListenerConfig{ConnConfig: listenConfig, Schema: s.schema,
		MinBackoff: time.Minute, MaxBackoff: time.Minute})
	require.NoError(t, err)
	e, ref := hourlyPollingEngine(t, s, pool, listener)

	admin := s.db.Connect(t)
	require.Eventually(t, func() bool {
		var listening int
		err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&listening)
		return err == nil && listening == 1
	}, awaitLimit, 5*time.Millisecond, "the listener's session")
	_, err = admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, app)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !listener.Connected() }, awaitLimit, 5*time.Millisecond)

	requireDoneWithinSeconds(t, e, ref, "the run waited for the listener's reconnection")
}

// hourlyPollingEngine starts an engine on s whose store announces through
// notifier and whose dispatcher polls once an hour, on the database's
// clock, and saves the minimal linear graph.
func hourlyPollingEngine(t *testing.T, s *pgSchema, pool *pgxpool.Pool, notifier ports.Notifier) (*engine.Engine, engine.GraphRef) {
	t.Helper()
	store, err := postgres.New(context.Background(), postgres.Config{Pool: pool, Schema: s.schema, Notifier: notifier})
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	h := &harness{clock: newManualClock(), store: store}
	ecfg := h.config(newKit())
	ecfg.Clock = nil // the store's clock: the database's
	ecfg.Dispatcher.PollInterval = time.Hour
	e := startEngine(t, ecfg)
	ref, err := e.SaveGraph(context.Background(), build(t, minimalLinear()))
	require.NoError(t, err)
	return e, ref
}

// requireDoneWithinSeconds starts a run of ref and requires it done long
// before the hourly poll: only a wake or a nudge can have claimed it.
func requireDoneWithinSeconds(t *testing.T, e *engine.Engine, ref engine.GraphRef, why string) {
	t.Helper()
	ctx := context.Background()
	r, err := e.StartRun(ctx, ref, map[string]any{"value": "hi"})
	require.NoError(t, err)
	done, err := e.AwaitRun(ctx, r.ID, 5*time.Second)
	require.NoError(t, err, why)
	assert.Equal(t, run.StatusDone, done.Status)
}

// notify.None is the explicit poll-only notifier: an engine whose store
// carries it hears no announcement, so its own start makes its dispatcher
// poll at once, as it does with no notifier at all, instead of waiting for
// the poll interval.
func TestARunStartedWithTheNoneNotifierIsClaimedAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	pool, err := pgxpool.NewWithConfig(ctx, s.config.Copy())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	e, ref := hourlyPollingEngine(t, s, pool, notify.None{})
	requireDoneWithinSeconds(t, e, ref, "the run waited for the next poll")
}

// A run row whose document disagrees with its columns is reported as
// corrupt before any of its nodes run, and only it is affected: the other
// runs of the same polls finish, and the corrupt one is discarded (told as
// corrupt_run) until admission poisons it, never driven into a commit the
// store must refuse.
func TestACorruptRunRowIsDiscardedBeforeItsNodesRunAndSparesTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newPGSchema(t)
	h := &harness{clock: newManualClock(), store: s.store(t, nil, false, 8), pollOnly: true}
	k := newKit()
	ecfg := h.config(k)
	ecfg.Clock = nil // the database's
	telemetry := newTelemetryLog()
	ecfg.Telemetry = telemetry
	e, err := engine.New(ecfg)
	require.NoError(t, err)
	ref, err := e.SaveGraph(ctx, build(t, minimalLinear()))
	require.NoError(t, err)
	ids := make([]string, 3)
	for i := range ids {
		r, err := e.StartRun(ctx, ref, map[string]any{"value": fmt.Sprint(i)})
		require.NoError(t, err)
		ids[i] = r.ID
	}
	corrupt := ids[1]
	admin := s.db.Connect(t)
	_, err = admin.Exec(ctx, `UPDATE "`+s.schema+`".docket_runs SET started_at = started_at - interval '1 hour' WHERE run_id = $1`, corrupt)
	require.NoError(t, err)

	require.NoError(t, e.Start(ctx))
	t.Cleanup(func() { _ = e.Stop(context.Background()) })
	for _, id := range []string{ids[0], ids[2]} {
		done, err := e.AwaitRun(ctx, id, awaitLimit)
		require.NoError(t, err)
		assert.Equal(t, run.StatusDone, done.Status)
	}
	require.Eventually(t, func() bool {
		var reason *string
		err := admin.QueryRow(ctx, `SELECT poison_reason FROM "`+s.schema+`".docket_runs WHERE run_id = $1`, corrupt).Scan(&reason)
		return err == nil && reason != nil
	}, awaitLimit, 10*time.Millisecond, "admission poisons the corrupt run")
	_, err = e.FetchRun(ctx, corrupt)
	assert.ErrorIs(t, err, ports.ErrCorruptRun)
	for _, in := range k.attemptsOf("copy") {
		assert.NotEqual(t, corrupt, in.RunID, "no node of the corrupt run ran")
	}
	assert.Empty(t, telemetry.matching(ports.FactVehicleCrash, nil))
	assert.NotEmpty(t, telemetry.matching(ports.FactVehicleDiscard, map[string]string{"result": "corrupt_run"}))
}
