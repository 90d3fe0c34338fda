package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docketgo/docket/conformance"
	"github.com/docketgo/docket/domain/claim"
	"github.com/docketgo/docket/ports"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestClaimDueExecutesTheLegacyPolicy holds the one-statement admission to
// the pure policy in domain/claim: for random queues (ready, scheduled,
// claimed at various ages, poisoned; attempts near the ceiling; ties in
// time) and random requests, ClaimDue leases and poisons exactly the rows,
// in exactly the order, that claim.Legacy.Select and claim.Decide choose.
func TestClaimDueExecutesTheLegacyPolicy(t *testing.T) {
	t.Parallel()
	// The store clock agrees with the requests (see claim.Request.StoreNow).
	env := newEnv(t, envOptions{clock: conformance.NewManualClock(t0)})
	ctx := context.Background()
	template := env.insertRun(t, ports.Tenantless(), t0, t0.Add(1000*time.Hour))
	runs := env.table("docket_runs")
	n := 0
	rapid.Check(t, func(rt *rapid.T) {
		n++
		_, err := env.pool.Exec(ctx, "DELETE FROM "+runs+" WHERE run_id <> $1", template.ID)
		require.NoError(rt, err)

		// The queue: run i is ready/scheduled (wake), claimed (claimed_at)
		// or poisoned, with some attempts already used. Offsets are whole
		// seconds so ties are common.
		count := rapid.IntRange(0, 12).Draw(rt, "runs")
		ids := make([]string, count)
		wakes := make([]*time.Time, count)
		claims := make([]*time.Time, count)
		poisoned := make([]bool, count)
		attempts := make([]int32, count)
		for i := range count {
			ids[i] = fmt.Sprintf("p%d-%02d", n, i)
			at := t0.Add(time.Duration(rapid.IntRange(-4, 4).Draw(rt, "offset")) * time.Second)
			switch rapid.IntRange(0, 2).Draw(rt, "state") {
			case 0:
				wakes[i] = &at
			case 1:
				claims[i] = &at
			default:
				poisoned[i] = true
			}
			attempts[i] = int32(rapid.IntRange(0, 3).Draw(rt, "attempts"))
		}
		_, err = env.pool.Exec(ctx, `
			INSERT INTO `+runs+` (run_id, graph_id, graph_hash, status, step, state, checkpoint_seq, event_seq,
			    latest_checkpoint_type, wake_at, claim_token, claimed_at, claim_attempts, poisoned_at, poison_reason,
			    inserted_at, started_at, updated_at)
			SELECT x.run_id, t.graph_id, t.graph_hash, 'running', 0, t.state, 1, t.event_seq,
			       t.latest_checkpoint_type, x.wake_at,
			       CASE WHEN x.claimed_at IS NOT NULL THEN gen_random_uuid() END, x.claimed_at, x.attempts,
			       CASE WHEN x.poisoned THEN t.started_at END, CASE WHEN x.poisoned THEN 'test' END,
			       now(), t.started_at, t.updated_at
			FROM `+runs+` AS t,
			     unnest($2::text[], $3::timestamptz[], $4::timestamptz[], $5::integer[], $6::boolean[])
			         WITH ORDINALITY AS x(run_id, wake_at, claimed_at, attempts, poisoned, ord)
			WHERE t.run_id = $1
			ORDER BY x.ord`, template.ID, ids, wakes, claims, attempts, poisoned)
		require.NoError(rt, err)

		req := claim.Request{
			Now:              t0,
			Limit:            rapid.IntRange(1, 6).Draw(rt, "limit"),
			OrphanTTL:        time.Duration(rapid.IntRange(0, 3).Draw(rt, "ttl")) * time.Second,
			MaxClaimAttempts: rapid.IntRange(1, 3).Draw(rt, "max"),
			Preference:       rapid.SampledFrom([]claim.Preference{claim.PreferNone, claim.PreferReady, claim.PreferExpired}).Draw(rt, "preference"),
		}

		// What the pure policy decides for the rows as they are stored.
		rows, err := env.pool.Query(ctx, `SELECT id, run_id, wake_at, claimed_at, claim_attempts FROM `+runs+
			` WHERE status = 'running' AND poisoned_at IS NULL`)
		require.NoError(rt, err)
		var candidates []claim.Candidate
		stored := map[string]int{}
		for rows.Next() {
			var (
				c         claim.Candidate
				wake, cat *time.Time
				att       int
			)
			require.NoError(rt, rows.Scan(&c.Order, &c.RunID, &wake, &cat, &att))
			if wake != nil {
				c.WakeAt = *wake
			}
			if cat != nil {
				c.ClaimedAt, c.Claimed = *cat, true
			}
			candidates = append(candidates, c)
			stored[c.RunID] = att
		}
		require.NoError(rt, rows.Err())
		sel := claim.Legacy.Select(req, candidates)
		var wantLeases, wantPoisoned []string
		for _, p := range sel.Picks {
			d := claim.Decide(stored[p.RunID], req.MaxClaimAttempts)
			entry := fmt.Sprintf("%s/%s/attempt=%d", p.RunID, p.Class, d.Attempt)
			if d.Outcome == claim.OutcomeLease {
				wantLeases = append(wantLeases, entry)
			} else {
				wantPoisoned = append(wantPoisoned, entry)
			}
		}

		batch, err := env.store.ClaimDue(ctx, req)
		require.NoError(rt, err)
		var gotLeases, gotPoisoned []string
		for _, l := range batch.Leases {
			gotLeases = append(gotLeases, fmt.Sprintf("%s/%s/attempt=%d", l.RunID, l.Class, l.Attempt))
			require.Equal(rt, t0, l.ClaimedAt)
		}
		for _, p := range batch.Poisoned {
			// The cloned rows' state names the template run, so read the
			// column directly instead of decoding the row.
			var attemptsNow int
			require.NoError(rt, env.pool.QueryRow(ctx, "SELECT claim_attempts FROM "+runs+" WHERE run_id = $1", p.RunID).Scan(&attemptsNow))
			gotPoisoned = append(gotPoisoned, fmt.Sprintf("%s/%s/attempt=%d", p.RunID, p.Class, attemptsNow))
			require.Equal(rt, claim.ReasonMaxClaimAttempts, p.PoisonReason)
		}
		require.Equal(rt, wantLeases, gotLeases, "leases in admission order")
		require.Equal(rt, wantPoisoned, gotPoisoned, "poison outcomes in admission order")
		require.Equal(rt, sel.ReadyCandidates, batch.ReadyCandidates, "ready candidates")
		require.Equal(rt, sel.ExpiredCandidates, batch.ExpiredCandidates, "expired candidates")
	})
}
