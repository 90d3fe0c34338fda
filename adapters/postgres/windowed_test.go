package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketgo/docket/adapters/postgres"
	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/domain/run"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func windowedEnv(t *testing.T) *testEnv {
	t.Helper()
	return newEnv(t, envOptions{policy: claim.WindowedInterleave})
}

// admittedAt reads a run's tenant_admitted_at column (nil: not admitted).
func (e *testEnv) admittedAt(t *testing.T, runID string) *time.Time {
	t.Helper()
	var at *time.Time
	require.NoError(t, e.pool.QueryRow(context.Background(),
		"SELECT tenant_admitted_at FROM "+e.table("docket_runs")+" WHERE run_id = $1", runID).Scan(&at))
	if at != nil {
		utc := at.UTC()
		at = &utc
	}
	return at
}

func leaseIDs(b *ports.ClaimBatch) []string {
	ids := []string{}
	for _, l := range b.Leases {
		ids = append(ids, l.RunID)
	}
	return ids
}

func readyAt(now time.Time, limit int) claim.Request {
	return claim.Request{Now: now, Limit: limit, OrphanTTL: time.Hour, MaxClaimAttempts: 100, Preference: claim.PreferReady}
}

// TestWindowedClaimExamples runs the spec's observed examples (§6.6)
// through the SQL statement.
func TestWindowedClaimExamples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	t.Run("breadth first across scopes", func(t *testing.T) {
		t.Parallel()
		env := windowedEnv(t)
		a1 := env.insertRun(t, ports.Tenant("a"), at(-time.Hour), at(-40*time.Second))
		a2 := env.insertRun(t, ports.Tenant("a"), at(-time.Hour), at(-39*time.Second))
		b1 := env.insertRun(t, ports.Tenant("b"), at(-time.Hour), at(-2*time.Second))
		b2 := env.insertRun(t, ports.Tenant("b"), at(-time.Hour), at(-time.Second))
		batch, err := env.store.ClaimDue(ctx, readyAt(t0, 2))
		require.NoError(t, err)
		assert.Equal(t, []string{a1.ID, b1.ID}, leaseIDs(batch), "each scope's head, in admission order")
		batch, err = env.store.ClaimDue(ctx, readyAt(t0, 2))
		require.NoError(t, err)
		assert.Equal(t, []string{a2.ID, b2.ID}, leaseIDs(batch))
	})

	t.Run("an admitted run beats an older queued run of its scope", func(t *testing.T) {
		t.Parallel()
		env := windowedEnv(t)
		scope := ports.Tenant("t")
		subject := env.insertRun(t, scope, at(-time.Hour), at(-30*time.Second))
		batch, err := env.store.ClaimDue(ctx, readyAt(at(-30*time.Second), 1))
		require.NoError(t, err)
		require.Equal(t, []string{subject.ID}, leaseIDs(batch))
		require.NoError(t, env.store.ReleaseClaim(ctx, subject.ID, batch.Leases[0].Token, at(-30*time.Second)))
		env.insertRun(t, scope, at(-time.Hour), at(-60*time.Second))
		batch, err = env.store.ClaimDue(ctx, readyAt(t0, 1))
		require.NoError(t, err)
		assert.Equal(t, []string{subject.ID}, leaseIDs(batch))
	})

	t.Run("demand one never lands on a scope whose runs all sleep", func(t *testing.T) {
		t.Parallel()
		env := windowedEnv(t)
		for i := range 9 {
			env.insertRun(t, ports.Tenant(fmt.Sprintf("idle-%d", i)), at(-time.Hour), at(time.Hour))
		}
		due := env.insertRun(t, ports.Tenant("busy"), at(-time.Hour), t0)
		for range 10 {
			batch, err := env.store.ClaimDue(ctx, readyAt(t0, 1))
			require.NoError(t, err)
			require.Equal(t, []string{due.ID}, leaseIDs(batch))
			require.NoError(t, env.store.ReleaseClaim(ctx, due.ID, batch.Leases[0].Token, t0))
		}
	})
}

// TestWindowedAdmissionMarkerFollowsTheOperationTable checks the
// tenant_admitted_at column after every operation of spec §4.
func TestWindowedAdmissionMarkerFollowsTheOperationTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first := t0.Add(-time.Minute)
	later := t0
	tests := []struct {
		name string
		// apply acts on a run leased at first under lease; kept says
		// whether the run's first admission time survives.
		apply func(t *testing.T, env *testEnv, r *run.Run, lease ports.Lease)
		kept  bool
	}{
		{"a lease records the admission", func(*testing.T, *testEnv, *run.Run, ports.Lease) {}, true},
		{"a release keeps it, and a re-claim keeps the first time", func(t *testing.T, env *testEnv, r *run.Run, l ports.Lease) {
			require.NoError(t, env.store.ReleaseClaim(ctx, r.ID, l.Token, first))
			batch, err := env.store.ClaimDue(ctx, readyAt(later, 1))
			require.NoError(t, err)
			require.Equal(t, []string{r.ID}, leaseIDs(batch))
		}, true},
		{"a steal keeps it", func(t *testing.T, env *testEnv, r *run.Run, _ ports.Lease) {
			batch, err := env.store.ClaimDue(ctx, claim.Request{Now: later, Limit: 1, OrphanTTL: time.Second, MaxClaimAttempts: 5})
			require.NoError(t, err)
			require.Len(t, batch.Leases, 1)
			require.Equal(t, claim.ClassExpired, batch.Leases[0].Class)
		}, true},
		{"a retained commit keeps it", func(t *testing.T, env *testEnv, r *run.Run, l ports.Lease) {
			env.commit(t, r, l, continueDisposition)
		}, true},
		{"a claimed immediate release (a yield) keeps it", func(t *testing.T, env *testEnv, r *run.Run, l ports.Lease) {
			env.commit(t, r, l, immediateDisposition)
		}, true},
		{"a park at a time clears it", func(t *testing.T, env *testEnv, r *run.Run, l ports.Lease) {
			env.commit(t, r, l, run.Disposition{Kind: run.DispositionAt, At: later, Reason: run.ReasonRetryBackoff})
		}, false},
		{"a signal commit clears it, even with an immediate wake", func(t *testing.T, env *testEnv, r *run.Run, _ ports.Lease) {
			_, err := env.store.MutateRun(ctx, ports.System(), r.ID, func(current *run.Run) (*run.Moment, error) {
				return nextMoment(current, "signal", immediateDisposition, first), nil
			})
			require.NoError(t, err)
		}, false},
		{"an abandon clears it", func(t *testing.T, env *testEnv, r *run.Run, l ports.Lease) {
			res, err := env.store.AbandonClaim(ctx, r.ID, l.Token, claim.AbandonParams{
				ExpectedSeq: r.CheckpointSeq, Now: first, RetryAt: later, MaxClaimAbandons: 5})
			require.NoError(t, err)
			require.Equal(t, ports.AbandonRescheduled, res)
		}, false},
		{"claim-time poison clears it, and recovery leaves it clear", func(t *testing.T, env *testEnv, r *run.Run, l ports.Lease) {
			require.NoError(t, env.store.ReleaseClaim(ctx, r.ID, l.Token, first))
			batch, err := env.store.ClaimDue(ctx, claim.Request{Now: later, Limit: 1, OrphanTTL: time.Hour, MaxClaimAttempts: 1})
			require.NoError(t, err)
			require.Len(t, batch.Poisoned, 1)
			require.Nil(t, env.admittedAt(t, r.ID), "poison clears the marker")
			_, err = env.store.RetryPoisonedRun(ctx, ports.System(), r.ID, later)
			require.NoError(t, err)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := conformance.NewManualClock(first)
			env := newEnv(t, envOptions{policy: claim.WindowedInterleave, clock: clock})
			r := env.insertRun(t, ports.Tenant("cohort"), first, first)
			require.Nil(t, env.admittedAt(t, r.ID), "a new run is queued, not admitted")
			batch, err := env.store.ClaimDue(ctx, claim.Request{Now: first, Limit: 1, OrphanTTL: time.Second, MaxClaimAttempts: 5})
			require.NoError(t, err)
			require.Len(t, batch.Leases, 1)
			clock.Set(later) // every operation after the lease happens at later
			tt.apply(t, env, r, batch.Leases[0])
			if tt.kept {
				require.NotNil(t, env.admittedAt(t, r.ID))
				assert.Equal(t, first, *env.admittedAt(t, r.ID), "the first admission time is kept")
			} else {
				assert.Nil(t, env.admittedAt(t, r.ID))
			}
		})
	}
}

// commit commits r's next moment under lease with disposition d.
func (e *testEnv) commit(t *testing.T, r *run.Run, l ports.Lease, d run.Disposition) *run.Run {
	t.Helper()
	stored, err := e.store.Commit(context.Background(), l.Owner, ports.CommitParams{
		Moment: nextMoment(r, string(d.Kind), d, r.UpdatedAt.Add(time.Second)), ClaimToken: l.Token})
	require.NoError(t, err)
	return stored
}

func TestLegacyLeasesKeepButNeverSetTheAdmissionMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newEnv(t, envOptions{})
	fresh := env.insertRun(t, ports.Tenant("x"), t0, t0)
	admitted := env.insertRun(t, ports.Tenant("x"), t0, t0)
	earlier := t0.Add(-time.Hour)
	_, err := env.pool.Exec(ctx, "UPDATE "+env.table("docket_runs")+" SET tenant_admitted_at = $2 WHERE run_id = $1", admitted.ID, earlier)
	require.NoError(t, err)
	batch, err := env.store.ClaimDue(ctx, readyAt(t0, 2))
	require.NoError(t, err)
	require.Len(t, batch.Leases, 2)
	assert.Nil(t, env.admittedAt(t, fresh.ID))
	require.NotNil(t, env.admittedAt(t, admitted.ID))
	assert.Equal(t, earlier, *env.admittedAt(t, admitted.ID))
}

func TestNewMakesTheWindowedEngineTheGateAuthority(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	legacy := newEnv(t, envOptions{})
	assert.False(t, legacy.store.Capabilities().TenantFair)
	legacy.insertRun(t, ports.Tenantless(), t0, t0)

	windowed, err := postgres.New(ctx, postgres.Config{Pool: legacy.pool, Schema: legacy.schema, Policy: claim.WindowedInterleave})
	require.NoError(t, err)
	defer windowed.Close()
	assert.True(t, windowed.Capabilities().TenantFair)
	var mode string
	require.NoError(t, legacy.pool.QueryRow(ctx, "SELECT admission_mode FROM "+legacy.table("docket_claim_policy")).Scan(&mode))
	assert.Equal(t, "windowed", mode, "the last store to start wins")

	_, err = legacy.store.ClaimDue(ctx, readyAt(t0, 1))
	var unavailable *ports.ClaimPolicyUnavailableError
	require.ErrorAs(t, err, &unavailable, "the legacy store lost the gate")
	assert.Equal(t, ports.UnavailableInactiveEngine, unavailable.Reason)
	batch, err := windowed.ClaimDue(ctx, readyAt(t0, 1))
	require.NoError(t, err)
	assert.Len(t, batch.Leases, 1)
}

// TestClaimDueExecutesTheWindowedPolicy holds the windowed statement to
// the pure policy: for random queues over five scopes (ready, admitted,
// sleeping, claimed at various ages, poisoned; attempts near the ceiling)
// and random requests, ClaimDue's outcome is exactly what
// claim.SelectWindowed and claim.Decide choose for some sample of
// min(limit, due scopes) due scopes: the single possible sample whenever
// no more scopes are due than the limit, so the outcome is then fully
// determined. Leased rows keep their first admission time or take now;
// poisoned rows lose it.
func TestClaimDueExecutesTheWindowedPolicy(t *testing.T) {
	t.Parallel()
	// The store clock agrees with the requests (see claim.Request.StoreNow).
	env := newEnv(t, envOptions{policy: claim.WindowedInterleave, clock: conformance.NewManualClock(t0)})
	ctx := context.Background()
	runs := env.table("docket_runs")
	scopes := []ports.OwnerScope{ports.Tenantless(), ports.Tenant("a"), ports.Tenant("b"), ports.Tenant("c"), ports.Tenant("d")}
	templates := map[string]string{} // scope key -> template run id (sleeping far ahead)
	var templateIDs []string
	for _, s := range scopes {
		r := env.insertRun(t, s, t0, t0.Add(1000*time.Hour))
		templates[s.Key()] = r.ID
		templateIDs = append(templateIDs, r.ID)
	}
	previouslyAdmitted := t0.Add(-time.Hour)
	n, determined := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		_, err := env.pool.Exec(ctx, "DELETE FROM "+runs+" WHERE NOT (run_id = ANY($1))", templateIDs)
		require.NoError(rt, err)

		count := rapid.IntRange(0, 14).Draw(rt, "runs")
		ids := make([]string, count)
		from := make([]string, count)
		wakes := make([]*time.Time, count)
		claims := make([]*time.Time, count)
		admitted := make([]*time.Time, count)
		poisoned := make([]bool, count)
		attempts := make([]int32, count)
		for i := range count {
			ids[i] = fmt.Sprintf("w%d-%02d", n, i)
			from[i] = templates[rapid.SampledFrom(scopes).Draw(rt, "scope").Key()]
			at := t0.Add(time.Duration(rapid.IntRange(-4, 3).Draw(rt, "offset")) * time.Second)
			switch rapid.IntRange(0, 3).Draw(rt, "state") {
			case 0, 1:
				wakes[i] = &at
			case 2:
				claims[i] = &at
			default:
				poisoned[i] = true
			}
			if !poisoned[i] && rapid.Bool().Draw(rt, "admitted") {
				admitted[i] = &previouslyAdmitted
			}
			attempts[i] = int32(rapid.IntRange(0, 3).Draw(rt, "attempts"))
		}
		_, err = env.pool.Exec(ctx, `
			INSERT INTO `+runs+` (run_id, tenant_id, graph_id, graph_hash, status, step, state, checkpoint_seq,
			    event_seq, latest_checkpoint_type, wake_at, claim_token, claimed_at, claim_attempts, poisoned_at,
			    poison_reason, tenant_admitted_at, inserted_at, started_at, updated_at)
			SELECT x.run_id, t.tenant_id, t.graph_id, t.graph_hash, 'running', 0, t.state, 1, t.event_seq,
			       t.latest_checkpoint_type, x.wake_at,
			       CASE WHEN x.claimed_at IS NOT NULL THEN gen_random_uuid() END, x.claimed_at, x.attempts,
			       CASE WHEN x.poisoned THEN t.started_at END, CASE WHEN x.poisoned THEN 'test' END,
			       x.admitted_at, now(), t.started_at, t.updated_at
			FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[], $5::integer[],
			            $6::boolean[], $7::timestamptz[])
			         WITH ORDINALITY AS x(run_id, template, wake_at, claimed_at, attempts, poisoned, admitted_at, ord)
			JOIN `+runs+` AS t ON t.run_id = x.template
			ORDER BY x.ord`, ids, from, wakes, claims, attempts, poisoned, admitted)
		require.NoError(rt, err)

		req := claim.Request{
			Now:              t0,
			Limit:            rapid.IntRange(1, 5).Draw(rt, "limit"),
			OrphanTTL:        time.Duration(rapid.IntRange(0, 3).Draw(rt, "ttl")) * time.Second,
			MaxClaimAttempts: rapid.IntRange(1, 3).Draw(rt, "max"),
			Preference:       rapid.SampledFrom([]claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired}).Draw(rt, "preference"),
		}

		// The rows as the pure policy sees them.
		rows, err := env.pool.Query(ctx, `SELECT id, run_id, scope_key, tenant_admitted_at, wake_at, claimed_at,
			claim_attempts FROM `+runs+` WHERE status = 'running' AND poisoned_at IS NULL`)
		require.NoError(rt, err)
		var candidates []claim.Candidate
		stored := map[string]int{}
		before := map[string]*time.Time{}
		for rows.Next() {
			var (
				c              claim.Candidate
				adm, wake, cat *time.Time
				att            int
			)
			require.NoError(rt, rows.Scan(&c.Order, &c.RunID, &c.ScopeKey, &adm, &wake, &cat, &att))
			c.Admitted = adm != nil
			if wake != nil {
				c.WakeAt = *wake
			}
			if cat != nil {
				c.ClaimedAt, c.Claimed = *cat, true
			}
			candidates = append(candidates, c)
			stored[c.RunID], before[c.RunID] = att, adm
		}
		require.NoError(rt, rows.Err())
		due := claim.DueScopes(req, candidates)

		outcome := func(sel claim.Selection) string {
			var leases, poison []string
			for _, p := range sel.Picks {
				d := claim.Decide(stored[p.RunID], req.MaxClaimAttempts)
				entry := fmt.Sprintf("%s/%s/attempt=%d", p.RunID, p.Class, d.Attempt)
				if d.Outcome == claim.OutcomeLease {
					leases = append(leases, entry)
				} else {
					poison = append(poison, entry)
				}
			}
			return fmt.Sprintf("leases %v, poisoned %v, candidates %d/%d", leases, poison, sel.ReadyCandidates, sel.ExpiredCandidates)
		}
		var allowed []string
		for _, sample := range subsetsOf(due, min(req.Limit, len(due))) {
			allowed = append(allowed, outcome(claim.SelectWindowed(req, candidates, sample)))
		}

		batch, err := env.store.ClaimDue(ctx, req)
		require.NoError(rt, err)
		var leases, poison []string
		for _, l := range batch.Leases {
			leases = append(leases, fmt.Sprintf("%s/%s/attempt=%d", l.RunID, l.Class, l.Attempt))
			require.Equal(rt, t0, l.ClaimedAt)
			var adm *time.Time
			require.NoError(rt, env.pool.QueryRow(ctx, "SELECT tenant_admitted_at FROM "+runs+" WHERE run_id = $1", l.RunID).Scan(&adm))
			want := t0
			if before[l.RunID] != nil {
				want = *before[l.RunID]
			}
			require.NotNil(rt, adm, "a lease admits %s", l.RunID)
			require.True(rt, want.Equal(*adm), "lease of %s: admitted at %s, want %s", l.RunID, adm, want)
		}
		for _, p := range batch.Poisoned {
			var (
				attemptsNow int
				adm         *time.Time
			)
			require.NoError(rt, env.pool.QueryRow(ctx, "SELECT claim_attempts, tenant_admitted_at FROM "+runs+
				" WHERE run_id = $1", p.RunID).Scan(&attemptsNow, &adm))
			poison = append(poison, fmt.Sprintf("%s/%s/attempt=%d", p.RunID, p.Class, attemptsNow))
			require.Nil(rt, adm, "poison clears the admission marker of %s", p.RunID)
		}
		got := fmt.Sprintf("leases %v, poisoned %v, candidates %d/%d", leases, poison, batch.ReadyCandidates, batch.ExpiredCandidates)
		if len(allowed) == 1 {
			determined++
		}
		require.True(rt, slices.Contains(allowed, got), "due scopes %v: got %s, want one of:\n%s", due, got, strings.Join(allowed, "\n"))
	})
	t.Logf("%d of %d cases had a single possible scope sample", determined, n)
}

// subsetsOf returns every k-element subset of items.
func subsetsOf(items []string, k int) [][]string {
	if k == 0 {
		return [][]string{{}}
	}
	if len(items) < k {
		return nil
	}
	var out [][]string
	for _, rest := range subsetsOf(items[1:], k-1) {
		out = append(out, append([]string{items[0]}, rest...))
	}
	return append(out, subsetsOf(items[1:], k)...)
}

func TestAStoreThatKeepsTheAdmissionModeNeverTakesTheGate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fleet := windowedEnv(t)
	fleet.insertRun(t, ports.Tenant("a"), t0, t0)
	mode := func() string {
		var m string
		require.NoError(t, fleet.pool.QueryRow(ctx, "SELECT admission_mode FROM "+fleet.table("docket_claim_policy")).Scan(&m))
		return m
	}

	tool, err := postgres.New(ctx, postgres.Config{Pool: fleet.pool, Schema: fleet.schema, KeepAdmissionMode: true})
	require.NoError(t, err)
	defer tool.Close()
	assert.Equal(t, "windowed", mode(), "a passive legacy store leaves the fleet's mode")
	_, err = tool.ClaimDue(ctx, readyAt(t0, 1))
	var unavailable *ports.ClaimPolicyUnavailableError
	require.ErrorAs(t, err, &unavailable, "and cannot claim under it")
	assert.Equal(t, ports.UnavailableInactiveEngine, unavailable.Reason)
	batch, err := fleet.store.ClaimDue(ctx, readyAt(t0, 1))
	require.NoError(t, err)
	assert.Len(t, batch.Leases, 1, "the fleet keeps claiming")

	same, err := postgres.New(ctx, postgres.Config{Pool: fleet.pool, Schema: fleet.schema, Policy: claim.WindowedInterleave, KeepAdmissionMode: true})
	require.NoError(t, err)
	defer same.Close()
	_, err = same.ClaimDue(ctx, readyAt(t0, 1))
	assert.NoError(t, err, "a passive store of the gate's own mode claims")
}

// Every limit claim.Request accepts is a limit the windowed statement
// can execute: its per-scope pages of twice the limit must not overflow
// the 32-bit limit parameter.
func TestWindowedClaimAcceptsTheLargestLimit(t *testing.T) {
	t.Parallel()
	env := windowedEnv(t)
	r := env.insertRun(t, ports.Tenant("a"), t0, t0)
	batch, err := env.store.ClaimDue(context.Background(), readyAt(t0, math.MaxInt32))
	require.NoError(t, err)
	assert.Equal(t, []string{r.ID}, leaseIDs(batch))
}

// A scope whose runs all finished is not sampled, and is sampled again
// as soon as it has due work.
func TestWindowedClaimSamplesAScopeThatBecameActiveAgain(t *testing.T) {
	t.Parallel()
	scopeBecameActiveAgain(t, windowedEnv(t))
}

func scopeBecameActiveAgain(t *testing.T, env *testEnv) {
	ctx := context.Background()
	a, b := ports.Tenant("a"), ports.Tenant("b")
	unfinished := func(scope string) int64 {
		var n int64
		require.NoError(t, env.pool.QueryRow(ctx, "SELECT unfinished_count FROM "+env.table("docket_claim_schedule")+
			" WHERE scope_key = $1", scope).Scan(&n))
		return n
	}

	first := env.insertRun(t, a, t0.Add(-time.Hour), t0.Add(-time.Minute))
	batch, err := env.store.ClaimDue(ctx, readyAt(t0, 10))
	require.NoError(t, err)
	require.Equal(t, []string{first.ID}, leaseIDs(batch))
	done := first.Clone()
	done.Status, done.FinishedAt, done.UpdatedAt = run.StatusDone, ports.Micros(t0), ports.Micros(t0)
	_, err = env.store.Commit(ctx, a, ports.CommitParams{ClaimToken: batch.Leases[0].Token,
		Moment: run.Propose(first, done, []run.Event{{Type: run.EventRunCompleted, Step: first.Step}},
			run.CheckpointRunCompleted, run.Disposition{Kind: run.DispositionTerminal}, t0)})
	require.NoError(t, err)
	require.Zero(t, unfinished("a"), "a is idle")

	other := env.insertRun(t, b, t0.Add(-time.Hour), t0)
	for range 5 {
		batch, err = env.store.ClaimDue(ctx, readyAt(t0, 1))
		require.NoError(t, err)
		require.Equal(t, []string{other.ID}, leaseIDs(batch))
		require.NoError(t, env.store.ReleaseClaim(ctx, other.ID, batch.Leases[0].Token, t0))
	}

	again := env.insertRun(t, a, t0.Add(-time.Hour), t0)
	later := env.insertRun(t, a, t0.Add(-time.Hour), t0)
	require.EqualValues(t, 2, unfinished("a"), "a is active again")
	batch, err = env.store.ClaimDue(ctx, readyAt(t0, 2))
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{again.ID, other.ID}, leaseIDs(batch), "each scope's head")
	batch, err = env.store.ClaimDue(ctx, readyAt(t0, 2))
	require.NoError(t, err)
	assert.Equal(t, []string{later.ID}, leaseIDs(batch))
}

// planRowsRead sums, over an EXPLAIN (ANALYZE, FORMAT JSON) plan, the
// rows the nodes reading relation returned or filtered out, and the
// pairs every join's filter turned down: the rows a statement went
// through, which no timing or cache state changes.
func planRowsRead(t *testing.T, plan []byte, relation string) float64 {
	t.Helper()
	var doc []struct {
		Plan map[string]any `json:"Plan"`
	}
	require.NoError(t, json.Unmarshal(plan, &doc))
	require.Len(t, doc, 1)
	num := func(node map[string]any, key string) float64 {
		v, _ := node[key].(float64)
		return v
	}
	var read float64
	var walk func(node map[string]any)
	walk = func(node map[string]any) {
		loops := num(node, "Actual Loops")
		if node["Relation Name"] == relation {
			read += loops * (num(node, "Actual Rows") + num(node, "Rows Removed by Filter") +
				num(node, "Rows Removed by Index Recheck"))
		}
		read += loops * num(node, "Rows Removed by Join Filter")
		children, _ := node["Plans"].([]any)
		for _, child := range children {
			if c, ok := child.(map[string]any); ok {
				walk(c)
			}
		}
	}
	walk(doc[0].Plan)
	return read
}

// A tenant-fair claim behind a backlog leases its runs going through
// about the rows it leases, not through the backlog, on tables never
// analysed as on others: it probes each scope for due work, reads the
// first ranks of the sampled scopes' pages and locks candidates by id.
// (Sampling through a hashed read of the ready index, and matching the
// pool against every due run, went through the whole backlog at every
// claim, and on tables without statistics sometimes through backlog ×
// pool pairs.) Its lease update finds the rows it locked by tuple, not
// by a join that could read every running run.
func TestWindowedClaimBehindABacklogReadsAboutItsLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := windowedEnv(t)
	const scopes, perScope = 8, 120
	for i := range scopes * perScope {
		env.insertRun(t, ports.Tenant(fmt.Sprintf("tenant-%d", i%scopes)), t0.Add(-time.Hour), t0.Add(-time.Duration(i)*time.Second))
	}
	for _, limit := range []int{1, 4, 8} {
		plan, err := env.store.ExplainAnalyzeClaimForTest(ctx, readyAt(t0, limit))
		require.NoError(t, err)
		read := planRowsRead(t, plan, "docket_runs")
		assert.Less(t, read, float64(scopes*perScope/4), "limit %d: rows read", limit)
		batch, err := env.store.ClaimDue(ctx, readyAt(t0, limit))
		require.NoError(t, err)
		assert.Len(t, batch.Leases, limit)
		for _, l := range batch.Leases {
			require.NoError(t, env.store.ReleaseClaim(ctx, l.RunID, l.Token, t0))
		}
	}
}

// A tenant-fair claim's cost does not grow with the tenants that have no
// due work: with a few due runs it finds their tenants from the runs
// themselves, reading nothing of the tenants whose runs all finished (the
// claim schedule keeps a row for each forever) or wait for input, on
// tables never analysed as on others. (Sampling the schedule read every
// tenant's row, and probed each tenant with unfinished runs for due
// work, at every claim.)
func TestAWindowedClaimReadsNothingOfIdleTenants(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := windowedEnv(t)
	const busy, perBusy, idle = 10, 3, 1000
	for i := range busy * perBusy {
		env.insertRun(t, ports.Tenant(fmt.Sprintf("busy-%02d", i%busy)), t0.Add(-time.Hour), t0.Add(-time.Duration(i)*time.Second))
	}
	// idle tenants whose runs were pruned (their partition and schedule
	// rows stay), and as many whose only run waits for input.
	_, err := env.pool.Exec(ctx, "INSERT INTO "+env.table("docket_claim_partitions")+
		" (scope_key) SELECT 'idle-' || g FROM generate_series(1, $1::integer) AS g", 2*idle)
	require.NoError(t, err)
	_, err = env.pool.Exec(ctx, "INSERT INTO "+env.table("docket_graph_versions")+
		" (tenant_id, graph_id, graph_hash, graph, inserted_at)"+
		" SELECT 'idle-' || g, v.graph_id, v.graph_hash, v.graph, v.inserted_at"+
		" FROM (SELECT * FROM "+env.table("docket_graph_versions")+" WHERE tenant_id = 'busy-00') AS v"+
		" CROSS JOIN generate_series(1, $1::integer) AS g", idle)
	require.NoError(t, err)
	_, err = env.pool.Exec(ctx, "INSERT INTO "+env.table("docket_runs")+
		" (run_id, tenant_id, graph_id, graph_hash, status, step, state, checkpoint_seq, event_seq,"+
		" latest_checkpoint_type, inserted_at, started_at, updated_at)"+
		" SELECT 'waiting-' || g, 'idle-' || g, r.graph_id, r.graph_hash, 'waiting', r.step, r.state, r.checkpoint_seq,"+
		" r.event_seq, r.latest_checkpoint_type, r.inserted_at, r.started_at, r.updated_at"+
		" FROM (SELECT * FROM "+env.table("docket_runs")+" WHERE tenant_id = 'busy-00' LIMIT 1) AS r"+
		" CROSS JOIN generate_series(1, $1::integer) AS g", idle)
	require.NoError(t, err)

	for _, analysed := range []bool{false, true} {
		if analysed {
			_, err := env.pool.Exec(ctx, "ANALYZE "+env.table("docket_runs")+"; ANALYZE "+env.table("docket_claim_schedule"))
			require.NoError(t, err)
		}
		for _, limit := range []int{1, 10} {
			plan, err := env.store.ExplainAnalyzeClaimForTest(ctx, readyAt(t0, limit))
			require.NoError(t, err)
			read := planRowsRead(t, plan, "docket_runs") + planRowsRead(t, plan, "docket_claim_schedule")
			assert.Less(t, read, float64(idle/2), "analysed %v, limit %d: rows read", analysed, limit)
			batch, err := env.store.ClaimDue(ctx, readyAt(t0, limit))
			require.NoError(t, err)
			require.Len(t, batch.Leases, limit)
			tenants := map[string]bool{}
			for _, l := range batch.Leases {
				tenants[l.Owner.TenantID()] = true
				require.NoError(t, env.store.ReleaseClaim(ctx, l.RunID, l.Token, t0))
			}
			assert.Len(t, tenants, limit, "analysed %v, limit %d: one run of each sampled tenant", analysed, limit)
		}
	}
}
