package postgres_test

import (
	"errors"

	"context"
	"fmt"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/domain/superstep"
	"github.com/docketgo/docket/ports"
)

// claimedRuns inserts n due runs and claims all of them.
func claimedRuns(t *testing.T, env *testEnv, n int) ([]*run.Run, map[string]ports.Lease) {
	t.Helper()
	now := time.Now()
	runs := make([]*run.Run, n)
	for i := range runs {
		runs[i] = env.insertRun(t, ports.Tenantless(), now, now.Add(-time.Second))
	}
	batch, err := env.store.ClaimDue(context.Background(), claim.Request{Now: now, Limit: n, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	require.Len(t, batch.Leases, n)
	leases := make(map[string]ports.Lease, n)
	for _, l := range batch.Leases {
		leases[l.RunID] = l
	}
	return runs, leases
}

// One statement carries several runs' moments, and each keeps its own
// fence: a stale commit in the batch loses alone.
func TestABatchOfCommitsKeepsEachRunsFence(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 4)
	now := time.Now()
	done := runs[3].Clone()
	done.Status, done.FinishedAt, done.UpdatedAt = run.StatusDone, ports.Micros(now), ports.Micros(now)
	params := []ports.CommitParams{
		{Moment: nextMoment(runs[0], "retain", continueDisposition, now), ClaimToken: leases[runs[0].ID].Token},
		// A foreign token: the lease of another run.
		{Moment: nextMoment(runs[1], "stale", continueDisposition, now), ClaimToken: leases[runs[2].ID].Token},
		{Moment: nextMoment(runs[2], "immediate", immediateDisposition, now), ClaimToken: leases[runs[2].ID].Token},
		{Moment: run.Propose(runs[3], done, []run.Event{{Type: run.EventRunCompleted, Step: runs[3].Step}}, run.CheckpointRunCompleted,
			run.Disposition{Kind: run.DispositionTerminal}, now), ClaimToken: leases[runs[3].ID].Token},
	}
	errs := env.store.CommitBatchForTest(ctx, ports.Tenantless(), params)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], ports.ErrStaleFence)
	require.NoError(t, errs[2])
	require.NoError(t, errs[3])

	for i, p := range params {
		stored, err := env.store.InspectRun(ctx, ports.System(), runs[i].ID)
		require.NoError(t, err)
		latest, err := env.store.FetchLatestEvent(ctx, ports.System(), runs[i].ID)
		require.NoError(t, err)
		if i == 1 {
			assert.Equal(t, runs[1].CheckpointSeq, stored.Run.CheckpointSeq, "the stale commit wrote nothing")
			assert.Equal(t, runs[1].EventSeq, latest.Seq, "and appended no event")
			assert.True(t, stored.Claimed(), "its claim stays with its holder")
			continue
		}
		assert.Equal(t, p.Moment.Run.CheckpointSeq, stored.Run.CheckpointSeq, "run %d", i)
		assert.Equal(t, p.Moment.Run.EventSeq, latest.Seq, "run %d", i)
	}
	first, err := env.store.InspectRun(ctx, ports.System(), runs[0].ID)
	require.NoError(t, err)
	assert.True(t, first.Claimed(), "a continue keeps the claim")
	third, err := env.store.InspectRun(ctx, ports.System(), runs[2].ID)
	require.NoError(t, err)
	assert.False(t, third.Claimed(), "an immediate wake hands the run back")
	assert.False(t, third.WakeAt.IsZero())
	last, err := env.store.FetchRun(ctx, ports.System(), runs[3].ID)
	require.NoError(t, err)
	assert.Equal(t, run.StatusDone, last.Status)
}

// An event conflict rolls the whole shared statement back; the batch is
// then retried one commit at a time, so only the conflicting run fails.
func TestAnEventConflictFailsOnlyItsOwnCommitInABatch(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 3)
	now := time.Now()
	params := make([]ports.CommitParams, len(runs))
	for i, r := range runs {
		params[i] = ports.CommitParams{Moment: nextMoment(r, "batch", continueDisposition, now), ClaimToken: leases[r.ID].Token}
	}
	// A different event already sits at the seq run 1's moment appends.
	_, err := env.pool.Exec(ctx, `INSERT INTO `+env.table("docket_events")+`
		(run_id, seq, type, step, payload, metadata, occurred_at, inserted_at)
		VALUES ($1, $2, 'channel_updated', 0, '{"planted":true}', '{}', now(), now())`, runs[1].ID, runs[1].EventSeq+1)
	require.NoError(t, err)

	errs := env.store.CommitBatchForTest(ctx, ports.Tenantless(), params)
	require.NoError(t, errs[0])
	var conflict *ports.EventConflictError
	require.ErrorAs(t, errs[1], &conflict)
	assert.Equal(t, runs[1].EventSeq+1, conflict.Seq)
	require.NoError(t, errs[2])
	assertOnlyTheFailedCommitMissing(t, env, runs, params, 1)
}

// Many vehicles committing at once share statements through the batcher;
// every commit lands exactly once with its own events.
func TestConcurrentCommitsOfManyRunsAllLand(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{maxConns: 3})
	ctx := context.Background()
	const n = 48
	runs, leases := claimedRuns(t, env, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	moments := make([]*run.Moment, n)
	start := make(chan struct{})
	for i, r := range runs {
		moments[i] = nextMoment(r, "many", continueDisposition, time.Now())
		wg.Go(func() {
			<-start
			_, errs[i] = env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: moments[i], ClaimToken: leases[r.ID].Token})
		})
	}
	close(start)
	wg.Wait()
	for i, r := range runs {
		require.NoError(t, errs[i], "run %d", i)
		page, err := env.store.ListEvents(ctx, ports.System(), r.ID, ports.ListEventsParams{Limit: 100})
		require.NoError(t, err)
		require.Len(t, page.Events, int(moments[i].Run.EventSeq), "run %d has its initial events and its moment's, once", i)
	}
}

// A caller that stops waiting before its commit joined a batch withdraws
// it: nothing is written.
func TestACancelledCommitThatNeverLeftIsNotWritten(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	runs, leases := claimedRuns(t, env, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{
		Moment: nextMoment(runs[0], "cancelled", continueDisposition, time.Now()), ClaimToken: leases[runs[0].ID].Token})
	require.ErrorIs(t, err, context.Canceled)
	stored, err := env.store.FetchRun(context.Background(), ports.System(), runs[0].ID)
	require.NoError(t, err)
	assert.Equal(t, runs[0].CheckpointSeq, stored.CheckpointSeq)
}

// startMoment is a fresh run's initial moment under the fixture graph.
func startMoment(t *testing.T, env *testEnv, owner ports.OwnerScope, id string) ports.InsertRunParams {
	t.Helper()
	c := compiledFixture(t)
	_, err := env.store.SaveGraph(context.Background(), owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
	require.NoError(t, err)
	m, err := superstep.Start(c, superstep.StartParams{RunID: id, Input: map[string]any{"topic": id}}, superstep.Env{Now: time.Now()})
	require.NoError(t, err)
	return ports.InsertRunParams{Moment: m, WakeAt: time.Now()}
}

// A duplicate run id in a batch of insertions fails alone; the others land
// in submission order.
func TestABatchOfInsertionsFailsOnlyTheDuplicate(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	owner := ports.Tenant(newRunID("tenant"))
	existing := env.insertRun(t, owner, time.Now(), time.Now())
	params := []ports.InsertRunParams{
		startMoment(t, env, owner, newRunID("first")),
		startMoment(t, env, owner, existing.ID),
		startMoment(t, env, owner, newRunID("third")),
	}
	errs := env.store.InsertBatchForTest(ctx, owner, params)
	require.NoError(t, errs[0])
	require.ErrorIs(t, errs[1], ports.ErrConflict)
	require.NoError(t, errs[2])
	for _, i := range []int{0, 2} {
		page, err := env.store.ListEvents(ctx, owner, params[i].Moment.Run.ID, ports.ListEventsParams{Limit: 10})
		require.NoError(t, err)
		assert.Len(t, page.Events, len(params[i].Moment.Events))
	}
	stored, err := env.store.FetchRun(ctx, owner, existing.ID)
	require.NoError(t, err)
	assert.Equal(t, existing.Input, stored.Input, "the existing run is untouched")
}

// The store remembers partitions it has seen; one removed behind its back
// is ensured again on the next insertion.
func TestAnInsertionRecreatesAPartitionRemovedBehindTheStoresBack(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	owner := ports.Tenant(newRunID("tenant"))
	first := env.insertRun(t, owner, time.Now(), time.Now())
	_, err := env.pool.Exec(ctx, `DELETE FROM `+env.table("docket_runs")+` WHERE run_id = $1`, first.ID)
	require.NoError(t, err)
	_, err = env.pool.Exec(ctx, `DELETE FROM `+env.table("docket_claim_partitions")+` WHERE scope_key = $1`, owner.Key())
	require.NoError(t, err)

	second := env.insertRun(t, owner, time.Now(), time.Now())
	var unfinished int64
	require.NoError(t, env.pool.QueryRow(ctx, `SELECT unfinished_count FROM `+env.table("docket_claim_schedule")+
		` WHERE scope_key = $1`, owner.Key()).Scan(&unfinished))
	assert.Equal(t, int64(1), unfinished)
	_, err = env.store.FetchRun(ctx, owner, second.ID)
	require.NoError(t, err)
}

// Concurrent insertions share statements; every run lands once, in a
// claimable state, with its events.
func TestConcurrentInsertionsAllLand(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{maxConns: 3})
	ctx := context.Background()
	const n = 40
	owner := ports.Tenant(newRunID("tenant"))
	params := make([]ports.InsertRunParams, n)
	for i := range params {
		params[i] = startMoment(t, env, owner, newRunID("concurrent"))
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range params {
		wg.Go(func() { _, errs[i] = env.store.InsertRun(ctx, owner, params[i]) })
	}
	wg.Wait()
	for i := range params {
		require.NoError(t, errs[i])
	}
	batch, err := env.store.ClaimDue(ctx, claim.Request{Now: time.Now(), Limit: n, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
	require.NoError(t, err)
	assert.Len(t, batch.Leases, n)
	var unfinished int64
	require.NoError(t, env.pool.QueryRow(ctx, `SELECT unfinished_count FROM `+env.table("docket_claim_schedule")+
		` WHERE scope_key = $1`, owner.Key()).Scan(&unfinished))
	assert.Equal(t, int64(n), unfinished)
}

// Claimed commits write their documents from pooled buffers that their
// batch returns once the statement has been answered: under concurrent
// batches of large, distinct documents every run still stores exactly the
// document it proposed, moment after moment.
func TestConcurrentCommitsStoreEachRunsOwnDocument(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{maxConns: 4})
	ctx := context.Background()
	const n, moments = 24, 3
	runs, leases := claimedRuns(t, env, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, r := range runs {
		wg.Go(func() {
			committed := r
			for m := range moments {
				// A distinct document per run and moment, some kilobytes
				// long, so a buffer handed back too early would show as
				// another run's bytes.
				variant := strings.Repeat(fmt.Sprintf("run %d moment %d;", i, m), 200+100*(i%5))
				moment := nextMoment(committed, variant, continueDisposition, time.Now())
				stored, err := env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: moment, ClaimToken: leases[r.ID].Token})
				if err != nil {
					errs[i] = err
					return
				}
				committed = stored
			}
		})
	}
	wg.Wait()
	for i, r := range runs {
		require.NoError(t, errs[i], "run %d", i)
		stored, err := env.store.FetchRun(ctx, ports.Tenantless(), r.ID)
		require.NoError(t, err)
		want := strings.Repeat(fmt.Sprintf("run %d moment %d;", i, moments-1), 200+100*(i%5))
		assert.Equal(t, want, stored.Metadata["variant"], "run %d stores its own last document", i)
		assert.Equal(t, r.CheckpointSeq+moments, stored.CheckpointSeq, "run %d", i)
	}
}

// deadlockTraces records the statements PostgreSQL failed as deadlocked.
type deadlockTraces struct {
	mu        sync.Mutex
	deadlocks int
}

func (d *deadlockTraces) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (d *deadlockTraces) TraceQueryEnd(_ context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	var pgErr *pgconn.PgError
	if errors.As(data.Err, &pgErr) && pgErr.Code == "40P01" {
		d.mu.Lock()
		d.deadlocks++
		d.mu.Unlock()
	}
}

func (d *deadlockTraces) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.deadlocks
}

// Finishing commits and insertions change their scopes' schedule rows,
// and each kind goes out in several statements at once under load. Many of
// them together, across several scopes, all land, no statement deadlocks
// (the schedule trigger takes the rows in scope order) and every scope's
// count holds its unfinished runs.
func TestFinishingCommitsAndInsertionsOfManyScopesAllLandSideBySide(t *testing.T) {
	t.Parallel()
	traces := &deadlockTraces{}
	env := newEnv(t, envOptions{maxConns: 8, tracer: traces})
	ctx := context.Background()
	const scopes, closings, insertions, rounds = 4, 256, 160, 3
	owners := make([]ports.OwnerScope, scopes)
	for i := range owners {
		owners[i] = ports.Tenant(fmt.Sprintf("tenant-%d", i))
	}
	c := compiledFixture(t)
	for _, owner := range owners {
		_, err := env.store.SaveGraph(ctx, owner, ports.SaveGraphParams{Graph: c.Effective, Hash: c.Hash})
		require.NoError(t, err)
	}
	insert := func(owner ports.OwnerScope, now, wake time.Time) (*run.Run, error) {
		id := newRunID("scoped")
		m, err := superstep.Start(c, superstep.StartParams{RunID: id, Input: map[string]any{"topic": id}}, superstep.Env{Now: now})
		if err != nil {
			return nil, err
		}
		return env.store.InsertRun(ctx, owner, ports.InsertRunParams{Moment: m, WakeAt: wake})
	}
	for round := range rounds {
		now := time.Now()
		runs := make(map[string]*run.Run, closings)
		for i := range closings {
			r, err := insert(owners[(i*7+round)%scopes], now, now.Add(-time.Second))
			require.NoError(t, err)
			runs[r.ID] = r
		}
		batch, err := env.store.ClaimDue(ctx, claim.Request{Now: now, Limit: closings, OrphanTTL: time.Hour, MaxClaimAttempts: 5})
		require.NoError(t, err)
		require.Len(t, batch.Leases, closings)

		var wg sync.WaitGroup
		errs := make(chan error, closings+insertions)
		start := make(chan struct{})
		for _, l := range batch.Leases {
			r := runs[l.RunID]
			done := r.Clone()
			done.Status, done.FinishedAt, done.UpdatedAt = run.StatusDone, ports.Micros(now), ports.Micros(now)
			m := run.Propose(r, done, []run.Event{{Type: run.EventRunCompleted, Step: r.Step}}, run.CheckpointRunCompleted,
				run.Disposition{Kind: run.DispositionTerminal}, now)
			wg.Go(func() {
				<-start
				_, err := env.store.Commit(ctx, l.Owner, ports.CommitParams{Moment: m, ClaimToken: l.Token, NoResult: true})
				errs <- err
			})
		}
		for i := range insertions {
			wg.Go(func() {
				<-start
				// Not due, so no later round claims it.
				_, err := insert(owners[(i*5+round)%scopes], now, now.Add(time.Hour))
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
	}
	assert.Zero(t, traces.count(), "statements failed as deadlocked")
	var unfinished int64
	require.NoError(t, env.pool.QueryRow(ctx, fmt.Sprintf(
		`SELECT COALESCE(sum(unfinished_count), 0) FROM %s.docket_claim_schedule`, pgx.Identifier{env.schema}.Sanitize())).Scan(&unfinished))
	assert.Equal(t, int64(rounds*insertions), unfinished, "every scope's count holds its unfinished runs")
}

// A server error that only one commit of a shared statement causes (here
// a trigger refusing one run's update) rolls the statement back; the
// batch is retried one commit at a time, so the error is that run's alone
// and the others land.
func TestAServerErrorOfOneCommitFailsOnlyItsOwnCommitInABatch(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 3)
	fn, runsTable := env.schema+`.refuse_one_run`, env.table("docket_runs")
	_, err := env.pool.Exec(ctx, `CREATE FUNCTION `+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.run_id = '`+runs[1].ID+`' AND NEW.checkpoint_seq <> OLD.checkpoint_seq THEN
				RAISE EXCEPTION 'refused by the test';
			END IF;
			RETURN NEW;
		END $$`)
	require.NoError(t, err)
	_, err = env.pool.Exec(ctx, `CREATE TRIGGER refuse_one_run BEFORE UPDATE ON `+runsTable+
		` FOR EACH ROW EXECUTE FUNCTION `+fn+`()`)
	require.NoError(t, err)
	t.Cleanup(func() { // the schema serves later tests
		_, _ = env.pool.Exec(context.Background(), `DROP TRIGGER refuse_one_run ON `+runsTable+`; DROP FUNCTION `+fn+`()`)
	})

	now := time.Now()
	params := make([]ports.CommitParams, len(runs))
	for i, r := range runs {
		params[i] = ports.CommitParams{Moment: nextMoment(r, "batch", continueDisposition, now), ClaimToken: leases[r.ID].Token}
	}
	errs := env.store.CommitBatchForTest(ctx, ports.Tenantless(), params)
	require.NoError(t, errs[0])
	require.Error(t, errs[1])
	require.NoError(t, errs[2])
	assertOnlyTheFailedCommitMissing(t, env, runs, params, 1)
}

// An event's absent node, channel and task ids are stored as NULL, as
// docs/postgres.md documents for SQL readers of docket_events, whichever
// way the write went (an insertion's or a commit's event arrays).
func TestAbsentEventIDsAreStoredAsNull(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 2)
	now := time.Now()
	params := make([]ports.CommitParams, len(runs))
	for i, r := range runs {
		params[i] = ports.CommitParams{Moment: nextMoment(r, "ids", continueDisposition, now), ClaimToken: leases[r.ID].Token}
	}
	for _, err := range env.store.CommitBatchForTest(ctx, ports.Tenantless(), params) {
		require.NoError(t, err)
	}
	rows, err := env.pool.Query(ctx, `SELECT run_id, seq, node_id IS NULL, channel_id IS NULL, task_id IS NULL, node_id, channel_id, task_id
		FROM `+env.table("docket_events")+` WHERE run_id = ANY($1) ORDER BY run_id, seq`, []string{runs[0].ID, runs[1].ID})
	require.NoError(t, err)
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var (
			runID                       string
			seq                         int64
			nodeNull, chanNull, taskNul bool
			node, channel, task         *string
		)
		require.NoError(t, rows.Scan(&runID, &seq, &nodeNull, &chanNull, &taskNul, &node, &channel, &task))
		e, err := env.store.FetchEvent(ctx, ports.System(), runID, seq)
		require.NoError(t, err)
		assert.Equal(t, e.NodeID == "", nodeNull, "%s#%d node_id %v", runID, seq, node)
		assert.Equal(t, e.ChannelID == "", chanNull, "%s#%d channel_id %v", runID, seq, channel)
		assert.Equal(t, e.TaskID == "", taskNul, "%s#%d task_id %v", runID, seq, task)
		seen++
	}
	require.NoError(t, rows.Err())
	require.Greater(t, seen, len(runs), "the start events and the committed ones")
}

// Each commit of a batch parks its run until its own wake time.
func TestABatchOfCommitsKeepsEachRunsWakeTime(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	runs, leases := claimedRuns(t, env, 2)
	now := time.Now()
	wakes := []time.Time{ports.Micros(now.Add(time.Hour)), ports.Micros(now.Add(2 * time.Hour))}
	params := make([]ports.CommitParams, len(runs))
	for i, r := range runs {
		d := run.Disposition{Kind: run.DispositionAt, At: wakes[i], Reason: run.ReasonDrainBudget}
		params[i] = ports.CommitParams{Moment: nextMoment(r, "at", d, now), ClaimToken: leases[r.ID].Token}
	}
	for i, err := range env.store.CommitBatchForTest(ctx, ports.Tenantless(), params) {
		require.NoError(t, err, "commit %d", i)
	}
	for i, r := range runs {
		info, err := env.store.InspectRun(ctx, ports.System(), r.ID)
		require.NoError(t, err)
		assert.True(t, wakes[i].Equal(info.WakeAt), "run %d wakes at %v, not %v", i, info.WakeAt, wakes[i])
	}
}

// A batch of insertions stores each run's start events under that run:
// each event is its own insertion's, at its seq (the run_started payload
// carries each run's own input).
func TestABatchOfInsertionsStoresEachRunsOwnEvents(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	owner := ports.Tenant(newRunID("tenant"))
	env.insertRun(t, owner, time.Now(), time.Now()) // the owner's partition exists, so the batch goes as one statement
	params := []ports.InsertRunParams{
		startMoment(t, env, owner, newRunID("first")),
		startMoment(t, env, owner, newRunID("second")),
		startMoment(t, env, owner, newRunID("third")),
	}
	for i, err := range env.store.InsertBatchForTest(ctx, owner, params) {
		require.NoError(t, err, "insertion %d", i)
	}
	for _, p := range params {
		m := p.Moment
		page, err := env.store.ListEvents(ctx, owner, m.Run.ID, ports.ListEventsParams{Limit: 100})
		require.NoError(t, err)
		require.Len(t, page.Events, len(m.Events), "run %s", m.Run.ID)
		for j, e := range page.Events {
			want := m.Events[j]
			want.RunID, want.Timestamp = m.Run.ID, ports.Micros(want.Timestamp)
			assert.True(t, want.Equal(e), "run %s event %d: stored %+v, proposed %+v", m.Run.ID, e.Seq, e, want)
		}
	}
}

// assertOnlyTheFailedCommitMissing checks that every run of a batch
// stands at its commit's checkpoint but run failed, which stands where it
// was: one write's failure cost no other write of the batch.
func assertOnlyTheFailedCommitMissing(t *testing.T, env *testEnv, runs []*run.Run, params []ports.CommitParams, failed int) {
	t.Helper()
	for i, r := range runs {
		stored, err := env.store.FetchRun(context.Background(), ports.System(), r.ID)
		require.NoError(t, err)
		want := params[i].Moment.Run.CheckpointSeq
		if i == failed {
			want = r.CheckpointSeq
		}
		assert.Equal(t, want, stored.CheckpointSeq, "run %d", i)
	}
}

// A batch of commits of runs at different sequences writes each moment's
// events under its own run only, whichever comes first in the batch: the
// runs' seqs do not collide, so no unique violation would reveal an event
// written to another run.
func TestABatchOfCommitsAtDifferentSeqsWritesEachRunOnlyItsOwnEvents(t *testing.T) {
	t.Parallel()
	env := newEnv(t, envOptions{})
	ctx := context.Background()
	for _, aheadFirst := range []bool{false, true} {
		runs, leases := claimedRuns(t, env, 2)
		behind, ahead := runs[0], runs[1]
		now := time.Now()
		moved := nextMoment(ahead, "ahead", continueDisposition, now)
		_, err := env.store.Commit(ctx, ports.Tenantless(), ports.CommitParams{Moment: moved, ClaimToken: leases[ahead.ID].Token})
		require.NoError(t, err)
		moments := []*run.Moment{
			nextMoment(behind, "behind", continueDisposition, now),
			nextMoment(moved.Run, "ahead-next", continueDisposition, now),
		}
		if aheadFirst {
			moments[0], moments[1] = moments[1], moments[0]
		}
		params := make([]ports.CommitParams, len(moments))
		for i, m := range moments {
			params[i] = ports.CommitParams{Moment: m, ClaimToken: leases[m.Run.ID].Token}
		}
		for i, err := range env.store.CommitBatchForTest(ctx, ports.Tenantless(), params) {
			require.NoError(t, err, "ahead first %t: commit %d", aheadFirst, i)
		}
		for _, m := range moments {
			page, err := env.store.ListEvents(ctx, ports.System(), m.Run.ID, ports.ListEventsParams{Limit: 100})
			require.NoError(t, err)
			require.NotEmpty(t, page.Events)
			assert.Equal(t, m.Run.EventSeq, page.Events[len(page.Events)-1].Seq,
				"ahead first %t: run %s ends at its own commit's last event", aheadFirst, m.Run.ID)
			other := "ahead-next"
			if m.Run.ID == ahead.ID {
				other = "behind"
			}
			for _, e := range page.Events {
				assert.NotEqual(t, other, e.Payload["variant"], "ahead first %t: run %s event %d is the other run's", aheadFirst, m.Run.ID, e.Seq)
			}
		}
	}
}
