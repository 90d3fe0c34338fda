package postgres

import (
	"strconv"
	"strings"

	"github.com/docketgo/docket/domain/claim"
	"github.com/jackc/pgx/v5"
)

// This file holds every statement of the hot paths and of the writes, as
// named constants with the invariant each one enforces. "{schema}" stands
// for the configured schema, quoted with pgx.Identifier.Sanitize when the
// Store is built; nothing else is ever formatted into SQL.
//
// Clocks (spec §2.5): a caller clock arrives as a parameter. The store clock
// is PostgreSQL's (CURRENT_TIMESTAMP for claim/wake stamps, clock_timestamp()
// for announcement checks and insertion times) unless Config.Clock overrides
// it; the override arrives as a nullable parameter, so every store-clock
// expression reads COALESCE($n, <database clock>).

// wakeChannel is the notification channel of wake announcements. The
// listener (adapters/notify) subscribes to the same name.
const wakeChannel = "docket_wake"

// Constraint names the adapter maps to port errors (migrations/sql).
const (
	constraintRunID       = "docket_runs_run_id_index"
	constraintGraphFK     = "docket_runs_graph_scope_fkey"
	constraintEventUnique = "docket_events_run_id_seq_index"
)

// statements are the SQL texts of one Store, rendered for its schema.
type statements struct {
	claimDue         string
	claimDueWindowed string
	commitClaimed    string
	commitReplayable string
	commitUnclaimed  string
	ensurePartition  string
	insertRuns       string
	fetchRun         string
	lockRun          string
	classifyMiss     string
	storedEvents     string
	refreshClaim     string
	releaseClaim     string
	abandonClaim     string
	recoverPoisoned  string
	listEvents       string
	fetchEvent       string
	fetchLatestEvent string
	pruneEvents      string
	pruneRuns        string
	pruneGraphs      string
	deleteGraphs     string
	pruneLock        string
	pruneNow         string
	gateMode         string
	normalizeGate    string
	saveGraph        string
	readGraph        string
	fetchGraph       string
	graphPublished   string
	// Tables for the bun read models.
	runsTable   string
	graphsTable string
}

func renderStatements(schema string) statements {
	quoted := pgx.Identifier{schema}.Sanitize()
	r := func(sql string) string { return strings.ReplaceAll(sql, "{schema}", quoted) }
	return statements{
		claimDue:         r(claimClocks.Replace(strings.ReplaceAll(sqlClaimDueLegacy, "{mode}", claim.AdmissionModeLegacy))),
		claimDueWindowed: r(claimClocks.Replace(strings.ReplaceAll(sqlClaimDueWindowed, "{mode}", claim.AdmissionModeWindowed))),
		commitClaimed:    bindEventCTEs(r(sqlCommitClaimed+freshEventCTEs), commitClaimedFirstEventParam),
		commitReplayable: bindEventCTEs(r(sqlCommitClaimed+eventCTEs), commitClaimedFirstEventParam),
		commitUnclaimed:  bindEventCTEs(r(sqlCommitUnclaimed+eventCTEs), commitUnclaimedFirstEventParam),
		ensurePartition:  r(sqlEnsurePartition),
		insertRuns:       bindEventCTEs(r(sqlInsertRuns+freshEventCTEs), insertRunsFirstEventParam),
		fetchRun:         r(sqlFetchRun),
		lockRun:          r(sqlLockRun),
		classifyMiss:     r(sqlClassifyMiss),
		storedEvents:     r(sqlStoredEvents),
		refreshClaim:     r(sqlRefreshClaim),
		releaseClaim:     r(sqlReleaseClaim),
		abandonClaim:     r(sqlAbandonClaim),
		recoverPoisoned:  r(sqlRecoverPoisoned),
		listEvents:       r(sqlListEvents),
		fetchEvent:       r(sqlFetchEvent),
		fetchLatestEvent: r(sqlFetchLatestEvent),
		pruneEvents:      r(sqlPruneEvents),
		pruneRuns:        r(sqlPruneRuns),
		pruneGraphs:      r(sqlPruneGraphs),
		deleteGraphs:     r(sqlDeleteGraphs),
		pruneLock:        sqlPruneLock,
		pruneNow:         sqlPruneNow,
		gateMode:         r(sqlGateMode),
		normalizeGate:    r(sqlNormalizeGate),
		saveGraph:        r(sqlSaveGraph),
		readGraph:        r(sqlReadGraph),
		fetchGraph:       r(sqlFetchGraph),
		graphPublished:   r(sqlGraphPublished),
		runsTable:        quoted + ".docket_runs",
		graphsTable:      quoted + ".docket_graph_versions",
	}
}

// claimClocks renders claimNow and claimCutoff into a claim statement.
var claimClocks = strings.NewReplacer("{now}", claimNow, "{cutoff}", claimCutoff)

// Where the eventCTEs parameters start in each commit statement.
const (
	commitClaimedFirstEventParam   = 19
	commitUnclaimedFirstEventParam = 13
	insertRunsFirstEventParam      = 16
)

// bindEventCTEs numbers the named parameters of eventCTEs (and of the
// commit statement that embeds it) from first on.
func bindEventCTEs(sql string, first int) string {
	names := []string{"@now", "@payload", "@evord",
		"@ev0", "@ev1", "@ev2", "@ev3", "@ev4", "@ev5", "@ev6", "@ev7", "@ev8"}
	pairs := make([]string, 0, 2*len(names))
	for i, name := range names {
		pairs = append(pairs, name, "$"+strconv.Itoa(first+i))
	}
	return strings.NewReplacer(pairs...).Replace(sql)
}

// The parts both claim statements share: the isolation probe, the gate
// and the authority of the policy's admission mode ({mode}, rendered per
// statement); the expired class; and, after each statement's own outcome
// assignments, the join with the picked rows, the returned lease columns
// and the sentinel row of a closed gate.
// claimNow and claimCutoff are the two clocks of an admission
// (claim.Request.DueBy and ExpiryCutoff), rendered into both claim
// statements for {now} and {cutoff}: the store clock ($6, the override,
// else CURRENT_TIMESTAMP) bounds the caller's ($1, and $3 = the caller's
// now - orphan TTL) so that a run due by either clock is ready, a claim
// expires only once expired by both, and a lease is never stamped before
// the store clock. Engines' clocks disagree; the database's is the one
// they share, so no engine whose clock runs ahead can steal a claim its
// owner keeps alive (retained commits and refreshes stamp the store
// clock), and none whose clock lags misses what the store finds due.
// $7 is the orphan TTL in whole microseconds: store clock - $7 µs is the
// strict cutoff rounded up, like the caller's.
const (
	claimNow    = `GREATEST($1::timestamptz, COALESCE($6::timestamptz, CURRENT_TIMESTAMP))`
	claimCutoff = `LEAST($3::timestamptz, COALESCE($6::timestamptz, CURRENT_TIMESTAMP) - $7::bigint * interval '1 microsecond')`
)

const claimGateCTEs = `
WITH probe AS MATERIALIZED (
    SELECT current_setting('transaction_isolation') = 'read committed' AS read_committed,
           current_setting('transaction_read_only') = 'on' AS read_only,
           set_config('synchronous_commit', 'off', true) AS relaxed
),
gate AS MATERIALIZED (
    SELECT p.admission_mode
    FROM {schema}.docket_claim_policy AS p
    WHERE p.id = 1
      AND (SELECT pr.read_committed AND NOT pr.read_only FROM probe AS pr)
    FOR SHARE OF p SKIP LOCKED
),
authority AS MATERIALIZED (
    SELECT true AS granted FROM gate WHERE gate.admission_mode = '{mode}'
),
`

const claimExpiredCTE = `expired AS MATERIALIZED (
    SELECT r.id, r.ctid, r.claimed_at AS eligible_at
    FROM {schema}.docket_runs AS r
    WHERE EXISTS (SELECT 1 FROM authority)
      AND r.status = 'running' AND r.poisoned_at IS NULL
      AND r.claim_token IS NOT NULL
      AND r.claimed_at < {cutoff}
    ORDER BY r.claimed_at, r.id
    LIMIT $2::integer
    FOR UPDATE OF r SKIP LOCKED
),
`

var claimOutcomeTail = `
    FROM picked AS p
    WHERE r.ctid = ANY (ARRAY(SELECT ctid FROM picked))
      AND r.ctid = p.ctid AND r.id = p.id
      AND (r.status = 'running' AND r.poisoned_at IS NULL) IS TRUE
    RETURNING r.run_id, r.tenant_id, r.graph_id, r.graph_hash, r.checkpoint_seq,
              r.claim_token::text AS claim_token, r.claimed_at, r.claim_attempts,
              r.poisoned_at, r.poison_reason, p.class, p.admission_order,
              CASE WHEN r.claim_token IS NOT NULL THEN r.state END AS state,
              r.step, r.event_seq, r.started_at, r.updated_at
)
SELECT o.run_id, o.tenant_id, o.graph_id, o.graph_hash, o.checkpoint_seq, o.claim_token,
       o.claimed_at, o.claim_attempts, o.poisoned_at, o.poison_reason, o.class,
       o.admission_order, o.state, o.step, o.event_seq, o.started_at, o.updated_at,
       (SELECT count(*) FROM ready) AS ready_count,
       (SELECT count(*) FROM expired) AS expired_count,
       0 AS gate_code
FROM outcome AS o
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT count(*) FROM ready), (SELECT count(*) FROM expired),
       CASE WHEN EXISTS (SELECT 1 FROM authority) THEN ` + strconv.Itoa(claimCountsOnly) + `
            WHEN (SELECT read_only FROM probe) THEN -4
            WHEN NOT (SELECT read_committed FROM probe) THEN -3
            WHEN EXISTS (SELECT 1 FROM gate) THEN -2
            ELSE -1
       END
WHERE NOT EXISTS (SELECT 1 FROM outcome)`

// sqlClaimDueLegacy is ClaimDue under the legacy FIFO policy
// (claim.Legacy), as one autocommit statement.
//
// Invariants:
//   - The statement's transaction commits without waiting for its WAL
//     flush (synchronous_commit off, local to it): a lease lost in a
//     database crash is only a lease that never was (the run is due again,
//     its holder's commit finds no token), and the holder's first
//     synchronous commit flushes the claim's WAL with its own. So a claim
//     costs no fsync.
//   - Admission happens only under the gate row's 'legacy' authority, read
//     FOR SHARE SKIP LOCKED (admissions run in parallel; a mode switch that
//     holds the row makes them fail fast) and only under READ COMMITTED in
//     a writable transaction. Without authority no candidate is read and
//     the statement returns one sentinel row whose gate_code says why:
//     -4 read-only, -3 isolation, -2 another engine's mode, -1 gate row
//     locked or absent.
//   - Candidates are locked FOR UPDATE SKIP LOCKED: a row a concurrent
//     writer holds is skipped, never waited on, and READ COMMITTED re-checks
//     every locked row against its latest committed version, so concurrent
//     claimers take disjoint rows.
//   - ready: running, unpoisoned, unclaimed, wake_at <= now (inclusive);
//     expired: running, unpoisoned, claimed_at < cutoff (strict); now and
//     cutoff are claimNow and claimCutoff, each the safe side of the
//     caller's and the store's clocks. Each class is cut at the limit in
//     (eligible_at, id) order.
//   - Merge (claim.Merge): with limit >= 2 each non-empty class's head
//     first, at limit 1 the preferred class first (an empty one falls
//     through), then (eligible_at, id); keep limit rows. Locked rows that
//     are not kept are left untouched.
//   - The update finds each kept row by the tuple its class CTE locked
//     (ctid, with the id re-checked): a TID scan, whatever the planner
//     thinks of the table. Joined by id, on tables never analysed it
//     could read every running run through the status index and compare
//     each with every kept row; the status re-check is written IS TRUE so
//     that no index can serve it. The lock keeps the tuple in place until
//     the statement ends. A row another writer changed between the
//     statement's snapshot and its lock is locked in its newer version,
//     which the snapshot cannot see: it is left unleased and unchanged,
//     for the next claim.
//   - A claim that changes no row (none was due, or another writer
//     changed every row it locked) returns one row of code 1 instead,
//     carrying the two class counts: its telemetry still tells the
//     candidates it saw.
//   - Per row, on its current attempts: below the maximum it is leased
//     (new token, claimed_at = now, no wake, attempts + 1, admission marker
//     kept); otherwise poisoned (max_claim_attempts_exceeded at now, no
//     claim, no wake, admission cleared, attempts unchanged). The document,
//     checkpoint_seq and updated_at are never written. A lease returns the
//     committed document it leased (the holder skips a read).
//
// $1 caller's now, $2 limit, $3 caller's expiry cutoff, $4 max attempts,
// $5 preference, $6 store clock override, $7 orphan TTL in microseconds.
var sqlClaimDueLegacy = claimGateCTEs + `ready AS MATERIALIZED (
    SELECT r.id, r.ctid, r.wake_at AS eligible_at
    FROM {schema}.docket_runs AS r
    WHERE EXISTS (SELECT 1 FROM authority)
      AND r.status = 'running' AND r.poisoned_at IS NULL
      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
      AND r.wake_at <= {now}
    ORDER BY r.wake_at, r.id
    LIMIT $2::integer
    FOR UPDATE OF r SKIP LOCKED
),
` + claimExpiredCTE + claimMergeCTEs("eligible_at, id", "eligible_at, id",
	" THEN r.tenant_admitted_at END")

// sqlClaimDueWindowed is ClaimDue under the tenant-fair policy
// (claim.WindowedInterleave), as one autocommit statement. It shares the
// gate, the sentinel row, the expired class, the merge and the per-row
// outcome of sqlClaimDueLegacy (same parameters, same row layout); only
// the ready class, the merge's tail order and the admission marker differ.
//
// Invariants (beyond sqlClaimDueLegacy's):
//   - Admission happens only under the gate's 'windowed' authority.
//   - Sampling: the scopes with at least one due ready run (so with
//     unfinished runs: those of docket_claim_schedule with
//     unfinished_count > 0 and due work); random order; at most limit
//     scopes. A scope whose runs all sleep is never sampled. They are
//     found one of two ways, by how many runs are due:
//   - Few due runs: the due ready runs are read oldest first
//     (docket_runs_wake_at_id_index), at most 2·limit + 65 of them
//     (windowedDueScanSlack); when that reached them all, their scopes
//     are the due scopes, and neither the schedule nor any idle scope is
//     read. So a claim with little due work costs the same with ten
//     tenants ever seen as with a hundred thousand, whether their runs
//     finished (the schedule keeps their rows forever), wait for input or
//     sleep.
//   - More due runs than that (a backlog): the scopes of the schedule
//     with unfinished runs, each probed for a due ready run by two probes
//     (queued, then admitted if need be) that each match one partial
//     index (docket_runs_scope_queued_ready_index,
//     docket_runs_scope_admitted_ready_index). This reads a row of every
//     scope ever seen and probes every scope with unfinished runs, so
//     behind a backlog the claim's cost grows with them
//     (docs/operations.md); the due scan it read first costs about twice
//     the limit. The probes are a LATERAL LIMIT 1, not EXISTS: the
//     planner may turn an EXISTS into one hashed read of the whole ready
//     index, which it picks on tables never analysed (every ready index
//     looks empty) and which costs a read of every due run at every
//     claim.
//   - Per-scope page (LATERAL, no locks): up to 2·limit due admitted
//     runs and up to 2·limit due queued runs, each by (wake_at, id),
//     ranked admitted first then (wake_at, id) into scope_rank, cut at
//     2·limit. Twice the limit because a row another writer holds (a
//     concurrent claim's, a signal's) is skipped only when the pool is
//     locked, and the rows behind it must be there to take its place;
//     unlocked, the first limit rows of the breadth-first order are the
//     same as with pages of limit. Doubled as bigint: twice a 32-bit
//     limit overflows integer. The pages are read in two parts: first
//     each scope's head, its first ceil(2·limit / sampled scopes) ranks
//     (share.depth), which together hold 2·limit candidates when every
//     sampled scope has that many; the rest of the pages (the ranks past
//     the head of scopes whose head was full) are read, and locked the
//     same way after the heads, only when locking the heads came back
//     short. Every head rank comes before every later rank in the
//     breadth-first order, so the rows locked are those of one pass over
//     whole pages, while a claim behind a backlog reads about 2·limit
//     candidates instead of 2·limit per sampled scope.
//   - Breadth first: the pool is ordered by (scope_rank, wake_at, id) and
//     each candidate in turn read from docket_runs by id and locked FOR
//     UPDATE OF the run SKIP LOCKED (a LATERAL per candidate), its ready
//     predicate checked on the version locked, until limit ready rows are
//     locked: every sampled scope's first candidate comes before any
//     scope's second, and a locked head is skipped, not waited on. That
//     order is the ready class rank. The wake_at the pool was read with
//     is the one re-read (one snapshot), so the order is that of the
//     re-read rows. Locking in the pool's order reads limit rows plus
//     those skipped and leaves the planner no join to choose: joined
//     whole, the pool was matched against every due run of the table (a
//     hash of the ready index, or a nested loop over it per candidate
//     where statistics were missing). The lookup names only the id (the
//     predicate is checked above its LIMIT 1) so that only the primary
//     key serves it: with the predicate beside it, the ready index
//     (wake_at, id) qualifies too, and read by id it is read whole.
//   - Fill: when that comes back short, the rest of the limit is taken
//     from the other due ready runs: the admitted ones first, then the
//     queued ones, each oldest first, locked the same way and ranked
//     after every page (admitted before queued), so a scope's queued run
//     is never leased ahead of a free admitted run of its own. Unheld,
//     a short breadth-first pass has taken every due ready run (fewer due
//     scopes than the limit are all sampled, and each yields its whole
//     page), so the fill finds nothing and the selection is
//     claim.SelectWindowed's; it serves only what held rows left over (a
//     sampled scope whose due runs are all held, more than a page of
//     them), so a claim never returns fewer leases than unheld due work
//     allows. A full pass leaves it LIMIT 0, which reads nothing.
//   - Merge tail: (class_rank, eligible_at, id), interleaving the classes
//     rank by rank (claim.Merge with interleave).
//   - A lease sets tenant_admitted_at = COALESCE(tenant_admitted_at, now):
//     the first admission time survives re-claims and steals. Poison
//     clears it.
//
// $1 caller's now, $2 limit, $3 caller's expiry cutoff, $4 max attempts,
// $5 preference, $6 store clock override, $7 orphan TTL in microseconds.
var sqlClaimDueWindowed = claimGateCTEs + `due_scan AS MATERIALIZED (
    SELECT r.scope_key
    FROM {schema}.docket_runs AS r
    WHERE EXISTS (SELECT 1 FROM authority)
      AND r.status = 'running' AND r.poisoned_at IS NULL
      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
      AND r.wake_at <= {now}
    ORDER BY r.wake_at, r.id
    LIMIT 2 * $2::bigint + ` + windowedDueScanSlack + ` + 1
),
sampled AS MATERIALIZED (
    SELECT c.scope_key
    FROM (
        SELECT d.scope_key
        FROM (SELECT DISTINCT u.scope_key FROM due_scan AS u) AS d
        WHERE (SELECT count(*) FROM due_scan) <= 2 * $2::bigint + ` + windowedDueScanSlack + `
        UNION ALL
        SELECT s.scope_key
        FROM {schema}.docket_claim_schedule AS s
        CROSS JOIN LATERAL (
            (SELECT 1
             FROM {schema}.docket_runs AS q
             ` + scopeDueReady("q", false) + `
             LIMIT 1)
            UNION ALL
            (SELECT 1
             FROM {schema}.docket_runs AS a
             ` + scopeDueReady("a", true) + `
             LIMIT 1)
            LIMIT 1
        ) AS due
        WHERE (SELECT count(*) FROM due_scan) > 2 * $2::bigint + ` + windowedDueScanSlack + `
          AND s.unfinished_count > 0
    ) AS c
    ORDER BY random()
    LIMIT $2::integer
),
share AS MATERIALIZED (
    SELECT (2 * $2::bigint + count(*) - 1) / GREATEST(count(*), 1) AS depth
    FROM sampled
),
paged AS MATERIALIZED (
    SELECT s.scope_key, page.id, page.wake_at, page.scope_rank
    FROM sampled AS s
    CROSS JOIN LATERAL (` + windowedPage("(SELECT depth FROM share)") + `) AS page
),
fair_head AS MATERIALIZED (` + windowedLock("paged", "$2::integer") + `),
paged_rest AS MATERIALIZED (
    SELECT page.id, page.wake_at, page.scope_rank
    FROM (SELECT p.scope_key
          FROM paged AS p
          GROUP BY p.scope_key
          HAVING count(*) >= (SELECT depth FROM share)) AS s
    CROSS JOIN LATERAL (` + windowedPage("2 * $2::bigint") + `) AS page
    WHERE (SELECT count(*) FROM fair_head) < $2::integer
      AND page.scope_rank > (SELECT depth FROM share)
),
fair_rest AS MATERIALIZED (` + windowedLock("paged_rest", "$2::integer - (SELECT count(*) FROM fair_head)") + `),
fair AS MATERIALIZED (
    SELECT id, ctid, eligible_at, scope_rank FROM fair_head
    UNION ALL
    SELECT id, ctid, eligible_at, scope_rank FROM fair_rest
),
filled_admitted AS MATERIALIZED (
    SELECT r.id, r.ctid, r.wake_at AS eligible_at, 2 * $2::bigint + 1 AS scope_rank
    FROM {schema}.docket_runs AS r
    WHERE EXISTS (SELECT 1 FROM authority)
      AND r.status = 'running' AND r.poisoned_at IS NULL
      AND r.tenant_admitted_at IS NOT NULL
      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
      AND r.wake_at <= {now}
      AND NOT EXISTS (SELECT 1 FROM fair AS f WHERE f.id = r.id)
    ORDER BY r.wake_at, r.id
    LIMIT $2::integer - (SELECT count(*) FROM fair)
    FOR UPDATE OF r SKIP LOCKED
),
filled_queued AS MATERIALIZED (
    SELECT r.id, r.ctid, r.wake_at AS eligible_at, 2 * $2::bigint + 2 AS scope_rank
    FROM {schema}.docket_runs AS r
    WHERE EXISTS (SELECT 1 FROM authority)
      AND r.status = 'running' AND r.poisoned_at IS NULL
      AND r.tenant_admitted_at IS NULL
      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
      AND r.wake_at <= {now}
      AND NOT EXISTS (SELECT 1 FROM fair AS f WHERE f.id = r.id)
    ORDER BY r.wake_at, r.id
    LIMIT $2::integer - (SELECT count(*) FROM fair) - (SELECT count(*) FROM filled_admitted)
    FOR UPDATE OF r SKIP LOCKED
),
ready AS MATERIALIZED (
    SELECT id, ctid, eligible_at, scope_rank FROM fair
    UNION ALL
    SELECT id, ctid, eligible_at, scope_rank FROM filled_admitted
    UNION ALL
    SELECT id, ctid, eligible_at, scope_rank FROM filled_queued
),
` + claimExpiredCTE + claimMergeCTEs("scope_rank, eligible_at, id", "class_rank, eligible_at, id", `
                                  THEN COALESCE(r.tenant_admitted_at, {now}) END`)

// windowedDueScanSlack is how many due runs past twice its limit a
// tenant-fair claim reads to find the scopes with due work from the runs
// themselves, before it samples the claim schedule instead (see
// sqlClaimDueWindowed): enough for an idle dispatcher's poll, whose limit
// is its free concurrency, and small beside what a claim behind a backlog
// reads anyway.
const windowedDueScanSlack = "64"

// scopeDueReady is the WHERE clause of a probe or a page of the sampled
// scope s.scope_key: its due ready runs, as alias, that are admitted or
// queued. Each form matches one partial index
// (docket_runs_scope_admitted_ready_index,
// docket_runs_scope_queued_ready_index), so the probe and the page that
// both use it read the same index.
func scopeDueReady(alias string, admitted bool) string {
	marker := "IS NULL"
	if admitted {
		marker = "IS NOT NULL"
	}
	return "WHERE " + alias + ".scope_key = s.scope_key" +
		" AND " + alias + ".status = 'running' AND " + alias + ".poisoned_at IS NULL" +
		" AND " + alias + ".tenant_admitted_at " + marker +
		" AND " + alias + ".claim_token IS NULL AND " + alias + ".wake_at IS NOT NULL" +
		" AND " + alias + ".wake_at <= {now}"
}

// windowedPage is a sampled scope's page (s.scope_key) for the
// tenant-fair claim: its first limit due ready runs, admitted before
// queued, each by (wake_at, id), ranked in that order as scope_rank.
func windowedPage(limit string) string {
	return `
        SELECT u.id, u.wake_at,
               row_number() OVER (ORDER BY u.admitted DESC, u.wake_at, u.id) AS scope_rank
        FROM ((SELECT a.id, a.wake_at, true AS admitted
               FROM {schema}.docket_runs AS a
               ` + scopeDueReady("a", true) + `
               ORDER BY a.wake_at, a.id
               LIMIT ` + limit + `)
              UNION ALL
              (SELECT q.id, q.wake_at, false AS admitted
               FROM {schema}.docket_runs AS q
               ` + scopeDueReady("q", false) + `
               ORDER BY q.wake_at, q.id
               LIMIT ` + limit + `)) AS u
        ORDER BY scope_rank
        LIMIT ` + limit + `
    `
}

// windowedLock locks up to limit candidates of pool for the tenant-fair
// claim, in breadth-first order, each re-read by id (see
// sqlClaimDueWindowed).
func windowedLock(pool, limit string) string {
	return `
    SELECT r.id, r.ctid, r.wake_at AS eligible_at, p.scope_rank
    FROM (SELECT id, wake_at, scope_rank
          FROM ` + pool + `
          ORDER BY scope_rank, wake_at, id) AS p
    CROSS JOIN LATERAL (
        SELECT r.id, r.ctid, r.status, r.poisoned_at, r.claim_token, r.wake_at
        FROM {schema}.docket_runs AS r
        WHERE r.id = p.id
        LIMIT 1
        FOR UPDATE OF r SKIP LOCKED
    ) AS r
    WHERE r.status = 'running' AND r.poisoned_at IS NULL
      AND r.claim_token IS NULL AND r.wake_at IS NOT NULL
      AND r.wake_at <= {now}
    LIMIT ` + limit + `
`
}

// claimMergeCTEs ranks the two classes, merges them (claim.Merge) and
// applies the per-row outcome, after a statement's ready and expired
// CTEs. The policies differ only in the ready class's rank order, the
// merge's tail order and what a lease does to the admission marker (the
// end of its CASE).
func claimMergeCTEs(readyRank, mergeTail, leaseAdmission string) string {
	return `ranked AS (
    SELECT id, ctid, eligible_at, 'ready'::text AS class,
           row_number() OVER (ORDER BY ` + readyRank + `) AS class_rank
    FROM ready
    UNION ALL
    SELECT id, ctid, eligible_at, 'expired'::text AS class,
           row_number() OVER (ORDER BY eligible_at, id) AS class_rank
    FROM expired
),
picked AS MATERIALIZED (
    SELECT id, ctid, class, admission_order
    FROM (
        SELECT id, ctid, class,
               row_number() OVER (
                   ORDER BY ($2::integer >= 2 AND class_rank = 1) DESC,
                            ($2::integer = 1 AND class = $5::text) DESC,
                            ` + mergeTail + `
               ) AS admission_order
        FROM ranked
    ) AS ordered
    WHERE admission_order <= $2::integer
),
outcome AS (
    UPDATE {schema}.docket_runs AS r
    SET claim_token        = CASE WHEN r.claim_attempts < $4::integer THEN gen_random_uuid() END,
        claimed_at         = CASE WHEN r.claim_attempts < $4::integer THEN {now} END,
        wake_at            = NULL,
        claim_attempts     = CASE WHEN r.claim_attempts < $4::integer THEN r.claim_attempts + 1
                                  ELSE r.claim_attempts END,
        poisoned_at        = CASE WHEN r.claim_attempts < $4::integer THEN NULL ELSE {now} END,
        poison_reason      = CASE WHEN r.claim_attempts < $4::integer THEN NULL
                                  ELSE 'max_claim_attempts_exceeded' END,
        tenant_admitted_at = CASE WHEN r.claim_attempts < $4::integer` + leaseAdmission + claimOutcomeTail
}

// sqlGateMode reads the admission gate's mode without locking it.
const sqlGateMode = `SELECT admission_mode FROM {schema}.docket_claim_policy WHERE id = 1`

// sqlNormalizeGate makes this store's engine the gate's authority ("last
// boot wins"). It runs only when sqlGateMode saw another mode (or no row),
// so a store starting against a gate already in its mode takes no tuple lock
// and never makes concurrent admissions fail fast. ($1 mode)
const sqlNormalizeGate = `
INSERT INTO {schema}.docket_claim_policy AS p (id, admission_mode, updated_at)
VALUES (1, $1::text, CURRENT_TIMESTAMP)
ON CONFLICT (id) DO UPDATE
SET admission_mode = EXCLUDED.admission_mode, updated_at = EXCLUDED.updated_at
WHERE p.admission_mode IS DISTINCT FROM EXCLUDED.admission_mode`

// Gate codes of the claim statements' sentinel row, and the code of the
// row that carries only the class counts of a claim that changed no row.
const (
	claimCountsOnly    = 1
	gateReadOnly       = -4
	gateIsolation      = -3
	gateInactiveEngine = -2
	gateLocked         = -1
)

// incomingEventsCTE and wakeCTE are the parts both event CTE lists share:
// the proposed events as a relation, and the announcement (a plain
// SELECT, so the final SELECT of each list references it).
const incomingEventsCTE = `,
incoming AS MATERIALIZED (
    SELECT *
    FROM unnest(@evord::integer[], @ev0::bigint[], @ev1::text[], @ev2::integer[], @ev3::text[], @ev4::text[],
                @ev5::text[], @ev6::bytea[], @ev7::bytea[], @ev8::timestamptz[])
         AS e(ord, seq, type, step, node_id, channel_id, task_id, payload, metadata, occurred_at)
),`

const wakeCTE = `wake AS (
    SELECT pg_notify('` + wakeChannel + `', @payload::text) AS sent
    FROM moved AS m
    WHERE m.sched = 'immediate'
       OR (m.sched = 'at' AND m.at <= COALESCE(@now::timestamptz, clock_timestamp()))
)`

// eventRows is what every event insert writes: the columns, and each
// proposed event of a moved run (a missed fence moves nothing, so writes
// none).
const eventRows = `        (run_id, seq, type, step, node_id, channel_id, task_id, payload, metadata, occurred_at, inserted_at)
    SELECT m.run_id, e.seq, e.type, e.step, e.node_id, e.channel_id, e.task_id, e.payload, e.metadata,
           e.occurred_at, COALESCE(@now::timestamptz, clock_timestamp())
    FROM moved AS m JOIN incoming AS e ON e.ord = m.ord`

// Every event insert orders its rows by (ord, seq): the bigserial id is
// assigned in that order, so within one insertion time ids follow seqs and
// the pruner (inserted_at, id) removes a run's oldest events first,
// whatever join order the plan of the moment chose.
//
// freshEventCTEs is eventCTEs for events that cannot exist yet (a new
// run's) or that the caller expects not to (a claimed commit's fast path):
// plain inserts, no idempotency. A stored row at a proposed (run_id, seq)
// raises unique_violation on docket_events_run_id_seq_index and rolls the
// statement back; a claimed commit then retries with eventCTEs, which
// tells an identical replay from a conflict. Same parameters and result.
const freshEventCTEs = incomingEventsCTE + `
written AS (
    INSERT INTO {schema}.docket_events
` + eventRows + `
    ORDER BY e.ord, e.seq
    RETURNING run_id, seq
),
` + wakeCTE + `
SELECT m.ord,
       COALESCE(w.n, 0) AS written,
       (SELECT count(*) FROM wake) AS side_effects
FROM moved AS m
LEFT JOIN (SELECT run_id, count(*) AS n FROM written GROUP BY run_id) AS w ON w.run_id = m.run_id`

// eventCTEs appends the moments' events after the CTE "moved" (one row per
// run that was written, with its moment's ord, sched and at; none for a
// missed fence) and announces the wake. Shared by both commit statements;
// bindEventCTEs numbers its parameters after the statement's own: @now the
// store clock override, @payload the announcement payload, @evord the
// moment each event belongs to, @ev0..@ev8 the event columns, all as
// parallel typed arrays. The result is one row per moved run: its ord and
// how many of its events were written.
//
// Invariants:
//   - Events are inserted only through a join with moved: a lost fence
//     writes none, and one run's lost fence does not touch another's.
//   - Idempotency by (run_id, seq): a stored row with identical content
//     (byte-equal canonical payload and metadata, same occurred_at, ...)
//     counts as written through a no-op DO UPDATE that returns it; a row
//     with different content is not returned, and the tripwire re-inserts
//     exactly those keys, raising unique_violation (23505) on
//     docket_events_run_id_seq_index, which rolls the whole statement back
//     and is reported as an event conflict. Events arrive de-duplicated by
//     seq per run (ON CONFLICT cannot touch one row twice).
//   - The announcement runs inside the statement: PostgreSQL delivers it
//     at commit and drops it on rollback (and folds repeats of the same
//     payload in one transaction into one). An immediate wake always
//     announces, an at-wake iff due at the store clock's wall time; the
//     wake CTE is a plain SELECT, so it is referenced by the final SELECT,
//     or it would never run.
const eventCTEs = incomingEventsCTE + `
written AS (
    INSERT INTO {schema}.docket_events AS stored
` + eventRows + `
    ORDER BY e.ord, e.seq
    ON CONFLICT (run_id, seq) DO UPDATE SET seq = EXCLUDED.seq
    WHERE stored.type = EXCLUDED.type
      AND stored.step = EXCLUDED.step
      AND stored.node_id IS NOT DISTINCT FROM EXCLUDED.node_id
      AND stored.channel_id IS NOT DISTINCT FROM EXCLUDED.channel_id
      AND stored.task_id IS NOT DISTINCT FROM EXCLUDED.task_id
      AND stored.payload = EXCLUDED.payload
      AND stored.metadata = EXCLUDED.metadata
      AND stored.occurred_at = EXCLUDED.occurred_at
    RETURNING stored.run_id, stored.seq
),
tripwire AS (
    INSERT INTO {schema}.docket_events
` + eventRows + `
    WHERE NOT EXISTS (SELECT 1 FROM written AS w WHERE w.run_id = m.run_id AND w.seq = e.seq)
    ORDER BY e.ord, e.seq
    RETURNING seq
),
` + wakeCTE + `
SELECT m.ord,
       COALESCE(w.n, 0) AS written,
       (SELECT count(*) FROM tripwire) + (SELECT count(*) FROM wake) AS side_effects
FROM moved AS m
LEFT JOIN (SELECT run_id, count(*) AS n FROM written GROUP BY run_id) AS w ON w.run_id = m.run_id`

// sqlCommitClaimed is the fused claimed commit of one or more runs' moments:
// one statement, no explicit transaction. Every moment is one element of
// the parallel arrays $1..$19 and keeps its own fence; the batch shares
// only the round trip, the transaction and its WAL flush.
//
// Invariants:
//   - A moment's fence is run_id + scope + immutable binding (graph_id,
//     graph_hash, started_at) + checkpoint_seq = expected + claim_token =
//     token, all in the UPDATE's WHERE, so that when several commits race
//     on one fence READ COMMITTED re-checks the winner's new row version
//     and turns every loser into a miss: exactly one winner. A missed
//     fence leaves that run (and writes no event for it) and does not
//     affect the other moments. The caller never puts one run in a batch
//     twice. The claimed path needs no status check: a current token
//     implies a healthy running row (CHECK constraints).
//   - The access path is the unique run_id index (= ANY of the batch's
//     run ids), always: the rest of the fence is one row comparison with
//     IS NOT DISTINCT FROM, which no index can serve, so stale statistics
//     on a young table cannot make the planner walk another index (say,
//     every run of the same graph).
//   - Success resets attempts and abandons and clears poison. retain keeps
//     the token with claimed_at = store clock; immediate clears the claim
//     with wake = store clock and keeps the admission marker (a cooperative
//     yield stays in its cohort); at/external/terminal clear claim and
//     marker with wake T/none/none.
//   - updated_at is the proposed document's own.
//
// Arrays: $1 ord, $2 run_id, $3 is_system, $4 scope_key, $5 graph_id,
// $6 graph_hash, $7 started_at, $8 expected seq, $9 token, $10 status,
// $11 step, $12 checkpoint_seq, $13 event_seq, $14 checkpoint type,
// $15 updated_at, $16 finished_at, $17 schedule kind, $18 at-wake; then
// the event CTEs from $19 (freshEventCTEs on the fast path, eventCTEs,
// replayable, when that path met a stored event); last, $31 the states.
// The states come last because they are the bulk of the message: pgx
// appends the parameters one by one to a buffer that starts small for
// every statement, and a large parameter followed by others is copied
// twice (once in, once when the next one overflows the buffer).
const sqlCommitClaimed = `
WITH proposed AS MATERIALIZED (
    SELECT *
    FROM unnest($1::integer[], $2::text[], $3::boolean[], $4::text[], $5::text[], $6::text[],
                $7::timestamptz[], $8::bigint[], $9::uuid[], $10::text[], $11::integer[], $31::bytea[],
                $12::bigint[], $13::bigint[], $14::text[], $15::timestamptz[], $16::timestamptz[],
                $17::text[], $18::timestamptz[])
         AS p(ord, run_id, is_system, scope_key, graph_id, graph_hash, started_at, expected_seq, token,
              status, step, state, checkpoint_seq, event_seq, checkpoint_type, updated_at, finished_at,
              sched, at)
),
moved AS (
    UPDATE {schema}.docket_runs AS r
    SET status                 = p.status,
        step                   = p.step,
        state                  = p.state,
        checkpoint_seq         = p.checkpoint_seq,
        event_seq              = p.event_seq,
        latest_checkpoint_type = p.checkpoint_type,
        updated_at             = p.updated_at,
        finished_at            = p.finished_at,
        claim_attempts         = 0,
        claim_abandons         = 0,
        poisoned_at            = NULL,
        poison_reason          = NULL,
        claim_token            = CASE WHEN p.sched = 'retain' THEN r.claim_token END,
        claimed_at             = CASE WHEN p.sched = 'retain'
                                      THEN COALESCE(@now::timestamptz, CURRENT_TIMESTAMP) END,
        wake_at                = CASE p.sched
                                      WHEN 'immediate' THEN COALESCE(@now::timestamptz, CURRENT_TIMESTAMP)
                                      WHEN 'at' THEN p.at END,
        tenant_admitted_at     = CASE WHEN p.sched IN ('retain', 'immediate') THEN r.tenant_admitted_at END
    FROM proposed AS p
    WHERE r.run_id = ANY($2::text[])
      AND r.run_id = p.run_id
      AND (p.is_system OR r.scope_key = p.scope_key)
      AND (r.graph_id, r.graph_hash, r.started_at, r.checkpoint_seq, r.claim_token)
          IS NOT DISTINCT FROM (p.graph_id, p.graph_hash, p.started_at, p.expected_seq, p.token)
    RETURNING p.ord, r.run_id, p.sched, p.at
)`

// sqlCommitUnclaimed is the serialized (signal) commit. It runs inside
// MutateRun's transaction after the row was locked and the mutation
// evaluated against it, so the fence is the locked row's id and sequence.
//
// Invariants: the commit revokes any claim and any admission marker
// (even for an immediate wake), clears poison and resets both counters;
// wake is store clock (immediate), T (at) or none.
//
// $1 row id, $2 expected seq, $3 status, $4 step, $5 state,
// $6 checkpoint_seq, $7 event_seq, $8 checkpoint type, $9 updated_at,
// $10 finished_at, $11 schedule kind, $12 at-wake, then eventCTEs from
// $13 (its single moment is ord 0).
const sqlCommitUnclaimed = `
WITH moved AS (
    UPDATE {schema}.docket_runs AS r
    SET status                 = $3::text,
        step                   = $4::integer,
        state                  = $5::bytea,
        checkpoint_seq         = $6::bigint,
        event_seq              = $7::bigint,
        latest_checkpoint_type = $8::text,
        updated_at             = $9::timestamptz,
        finished_at            = $10::timestamptz,
        claim_attempts         = 0,
        claim_abandons         = 0,
        poisoned_at            = NULL,
        poison_reason          = NULL,
        claim_token            = NULL,
        claimed_at             = NULL,
        tenant_admitted_at     = NULL,
        wake_at                = CASE $11::text
                                      WHEN 'immediate' THEN COALESCE(@now::timestamptz, CURRENT_TIMESTAMP)
                                      WHEN 'at' THEN $12::timestamptz END
    WHERE r.id = $1::bigint AND r.checkpoint_seq = $2::bigint
    RETURNING 0 AS ord, r.run_id, $11::text AS sched, $12::timestamptz AS at
)`

// sqlEnsurePartition makes sure the owner's claim partition exists before
// its run is inserted (the schedule trigger requires the membership row).
// Reading first avoids queueing behind an admission that holds the
// existing tuple; DO NOTHING arbitrates concurrent first inserts. Runs in
// the insertion transaction, so a failed insert removes it again.
//
// $1 scope_key.
const sqlEnsurePartition = `
INSERT INTO {schema}.docket_claim_partitions (scope_key)
SELECT $1::text
WHERE NOT EXISTS (SELECT 1 FROM {schema}.docket_claim_partitions WHERE scope_key = $1::text)
ON CONFLICT (scope_key) DO NOTHING`

// sqlInsertRuns inserts one or more initialized runs, their events and
// their announcement as one statement (alone, or inside the insertion
// transaction that first ensures the owner's partition).
//
// Invariants: zero counters, no claim, no poison, no admission marker, the
// given first wake; rows are inserted in ord order, so runs started
// together keep their submission order as insertion order (the FIFO
// tie-break). A run id that exists anywhere violates
// docket_runs_run_id_index (conflict); a graph version absent from the
// owner scope violates docket_runs_graph_scope_fkey (not found); a scope
// without its partition fails in the schedule trigger. Any of them rolls
// the whole statement back. The runs are new, so their events cannot
// conflict. A first wake at or before the run's updated_at (the
// starter's now: an immediate start) is stored as the earlier of it and
// the store clock, so a starter whose clock is ahead does not hold its
// runs back from the other engines by its lead. A first wake at or
// before the store clock's wall time announces.
//
// Arrays: $1 ord, $2 run_id, $3 tenant_id, $4 graph_id, $5 graph_hash,
// $6 status, $7 step, $8 state, $9 checkpoint_seq, $10 event_seq,
// $11 checkpoint type, $12 wake_at, $13 started_at, $14 updated_at,
// $15 finished_at; then freshEventCTEs from $16.
const sqlInsertRuns = `
WITH proposed AS MATERIALIZED (
    SELECT *
    FROM unnest($1::integer[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::integer[],
                $8::bytea[], $9::bigint[], $10::bigint[], $11::text[], $12::timestamptz[], $13::timestamptz[],
                $14::timestamptz[], $15::timestamptz[])
         AS p(ord, run_id, tenant_id, graph_id, graph_hash, status, step, state, checkpoint_seq, event_seq,
              checkpoint_type, wake_at, started_at, updated_at, finished_at)
),
inserted AS (
    INSERT INTO {schema}.docket_runs
        (run_id, tenant_id, graph_id, graph_hash, status, step, state, checkpoint_seq, event_seq,
         latest_checkpoint_type, wake_at, inserted_at, started_at, updated_at, finished_at)
    SELECT p.run_id, p.tenant_id, p.graph_id, p.graph_hash, p.status, p.step, p.state, p.checkpoint_seq,
           p.event_seq, p.checkpoint_type,
           CASE WHEN p.wake_at <= p.updated_at
                THEN LEAST(p.wake_at, COALESCE(@now::timestamptz, CURRENT_TIMESTAMP))
                ELSE p.wake_at END,
           COALESCE(@now::timestamptz, CURRENT_TIMESTAMP), p.started_at, p.updated_at, p.finished_at
    FROM proposed AS p
    ORDER BY p.ord
    RETURNING run_id, wake_at
),
moved AS (
    SELECT p.ord, i.run_id, 'at'::text AS sched, i.wake_at AS at
    FROM inserted AS i JOIN proposed AS p ON p.run_id = i.run_id
)`

// runColumns is what FetchRun, InspectRun and the locks read of a run.
// The column copies of the document (graph, status, step, event_seq,
// timestamps) are read to check that the document agrees with them.
const runColumns = `r.id, r.run_id, r.tenant_id, r.state, r.checkpoint_seq, r.latest_checkpoint_type,
       r.wake_at, r.claimed_at, r.claim_attempts, r.claim_abandons, r.poisoned_at, r.poison_reason,
       r.graph_id, r.graph_hash, r.status, r.step, r.event_seq, r.started_at, r.updated_at, r.finished_at`

// sqlFetchRun reads one run in scope ($1 run_id, $2 is_system, $3 scope_key).
const sqlFetchRun = `
SELECT ` + runColumns + `
FROM {schema}.docket_runs AS r
WHERE r.run_id = $1::text AND ($2::boolean OR r.scope_key = $3::text)`

// sqlLockRun reads and locks one run in scope for a serialized write
// (mutation, poison recovery): concurrent admissions skip it (SKIP LOCKED),
// other writers wait.
const sqlLockRun = sqlFetchRun + `
FOR UPDATE OF r`

// sqlClassifyMiss explains a claimed commit that matched nothing: the
// scoped row's binding and sequence say whether the proposal was invalid
// or stale; no row means not found. ($1 run_id, $2 is_system, $3 scope_key)
const sqlClassifyMiss = `
SELECT r.graph_id, r.graph_hash, r.started_at, r.checkpoint_seq
FROM {schema}.docket_runs AS r
WHERE r.run_id = $1::text AND ($2::boolean OR r.scope_key = $3::text)`

// eventColumns is what event reads select (alias e).
const eventColumns = `e.seq, e.type, e.step, e.node_id, e.channel_id, e.task_id, e.payload, e.metadata, e.occurred_at`

// sqlStoredEvents reads the stored events at some seqs of a run (to name
// the seq of an event conflict). ($1 run_id, $2 seqs)
const sqlStoredEvents = `
SELECT ` + eventColumns + `
FROM {schema}.docket_events AS e
WHERE e.run_id = $1::text AND e.seq = ANY($2::bigint[])
ORDER BY e.seq`

// sqlRefreshClaim stamps a current claim as alive.
//
// Invariants: matches only the exact current token (expiry deliberately
// not checked: a token keeps authority past its TTL until a steal replaces
// it); claimed_at = GREATEST(claimed_at, store clock), so a refresh delayed
// behind a retained commit never moves it back and re-exposes the run. The
// caller's now is not written.
//
// $1 run_id, $2 token, $3 store clock override.
const sqlRefreshClaim = `
UPDATE {schema}.docket_runs AS r
SET claimed_at = GREATEST(r.claimed_at, COALESCE($3::timestamptz, CURRENT_TIMESTAMP))
WHERE r.run_id = $1::text AND r.claim_token = $2::uuid`

// sqlReleaseClaim hands a current claim back with an immediate wake: the
// earlier of the caller's now and the store clock, so a caller whose
// clock is ahead does not hold the run back from other engines by its
// lead. Invariants: only the exact current token matches (a stale release
// changes nothing); checkpoint_seq, attempts (not refunded), abandons, the
// admission marker and the document stay; nothing is announced.
//
// $1 run_id, $2 token, $3 now, $4 store clock override.
const sqlReleaseClaim = `
UPDATE {schema}.docket_runs AS r
SET claim_token = NULL, claimed_at = NULL,
    wake_at = LEAST($3::timestamptz, COALESCE($4::timestamptz, CURRENT_TIMESTAMP))
WHERE r.run_id = $1::text AND r.claim_token = $2::uuid`

// sqlAbandonClaim is a pre-execution hand-back (claim.Abandon), one
// statement over the row's old values.
//
// Invariants: matches only the current token at the expected sequence (so
// it can apply only before the holder's first commit); clears the claim
// and admission marker; refunds the attempt (never below zero). A
// poisoning policy whose abandons reached the maximum poisons
// (max_claim_abandons_exceeded at now, no wake, abandons unchanged);
// otherwise abandons + 1 and wake = retry_at, or, for a non-poisoning
// policy with backoff, now + min(base * 2^min(abandons, 30), cap) computed
// here from the durable abandon count exactly as claim.Backoff.Delay does
// (in nanoseconds, then truncated to the microsecond). The document never
// changes; nothing is announced.
//
// $1 run_id, $2 token, $3 expected seq, $4 now, $5 retry_at,
// $6 max abandons, $7 non-poisoning, $8 backoff base ns (NULL: none),
// $9 backoff cap ns. RETURNING poisoned.
const sqlAbandonClaim = `
UPDATE {schema}.docket_runs AS r
SET claim_token        = NULL,
    claimed_at         = NULL,
    tenant_admitted_at = NULL,
    claim_attempts     = GREATEST(r.claim_attempts - 1, 0),
    claim_abandons     = CASE WHEN NOT $7::boolean AND r.claim_abandons >= $6::integer
                              THEN r.claim_abandons ELSE r.claim_abandons + 1 END,
    wake_at            = CASE
                             WHEN NOT $7::boolean AND r.claim_abandons >= $6::integer THEN NULL
                             WHEN $7::boolean AND $8::bigint IS NOT NULL THEN
                                 $4::timestamptz + ((
                                     CASE WHEN $8::bigint > ($9::bigint >> LEAST(r.claim_abandons, 30))
                                          THEN $9::bigint
                                          ELSE $8::bigint << LEAST(r.claim_abandons, 30)
                                     END) / 1000) * interval '1 microsecond'
                             ELSE $5::timestamptz
                         END,
    poisoned_at        = CASE WHEN NOT $7::boolean AND r.claim_abandons >= $6::integer
                              THEN $4::timestamptz END,
    poison_reason      = CASE WHEN NOT $7::boolean AND r.claim_abandons >= $6::integer
                              THEN 'max_claim_abandons_exceeded' END
WHERE r.run_id = $1::text AND r.claim_token = $2::uuid AND r.checkpoint_seq = $3::bigint
RETURNING r.poisoned_at IS NOT NULL AS poisoned`

// sqlRecoverPoisoned clears poison from a locked, poisoned, non-terminal
// run with an immediate wake (the earlier of the caller's now and the
// store clock, as sqlReleaseClaim), resets both counters and announces
// the wake (delivered at commit). The document never changes.
//
// $1 row id, $2 now, $3 payload, $4 store clock override.
const sqlRecoverPoisoned = `
WITH recovered AS (
    UPDATE {schema}.docket_runs AS r
    SET claim_token = NULL, claimed_at = NULL, tenant_admitted_at = NULL,
        wake_at = LEAST($2::timestamptz, COALESCE($4::timestamptz, CURRENT_TIMESTAMP)),
        claim_attempts = 0, claim_abandons = 0,
        poisoned_at = NULL, poison_reason = NULL
    WHERE r.id = $1::bigint AND r.poisoned_at IS NOT NULL
      AND r.status NOT IN ('done', 'failed', 'cancelled')
    RETURNING r.id
),
wake AS (
    SELECT pg_notify('` + wakeChannel + `', $3::text) AS sent FROM recovered
)
SELECT (SELECT count(*) FROM recovered) AS recovered, (SELECT count(*) FROM wake) AS announced`

// sqlListEvents is one event page and its header from ONE snapshot (one
// statement): the header row carries the run's committed event counter and
// the retained bounds; the page rows follow in seq order. Ownership is the
// scoped run row; no header row means not found.
//
// $1 run_id, $2 is_system, $3 scope_key, $4 after_seq, $5 limit.
const sqlListEvents = `
WITH owner AS MATERIALIZED (
    SELECT r.run_id, r.event_seq
    FROM {schema}.docket_runs AS r
    WHERE r.run_id = $1::text AND ($2::boolean OR r.scope_key = $3::text)
),
bounds AS (
    SELECT min(e.seq) AS oldest, max(e.seq) AS latest
    FROM {schema}.docket_events AS e
    WHERE e.run_id = (SELECT run_id FROM owner)
),
page AS (
    SELECT ` + eventColumns + `
    FROM {schema}.docket_events AS e
    WHERE e.run_id = (SELECT run_id FROM owner) AND e.seq > $4::bigint
    ORDER BY e.seq
    LIMIT $5::integer
)
SELECT true AS header, o.event_seq, b.oldest, b.latest,
       NULL::bigint, NULL::text, NULL::integer, NULL::text, NULL::text, NULL::text,
       NULL::bytea, NULL::bytea, NULL::timestamptz
FROM owner AS o CROSS JOIN bounds AS b
UNION ALL
SELECT false, NULL, NULL, NULL, p.seq, p.type, p.step, p.node_id, p.channel_id, p.task_id,
       p.payload, p.metadata, p.occurred_at
FROM page AS p
ORDER BY 1 DESC, 5`

// sqlFetchEvent reads one event of a scoped run: no row means the run is
// not visible; a row with a NULL seq means the event is absent or pruned.
// ($1 run_id, $2 is_system, $3 scope_key, $4 seq)
const sqlFetchEvent = `
SELECT ` + eventColumns + `
FROM {schema}.docket_runs AS r
LEFT JOIN {schema}.docket_events AS e ON e.run_id = r.run_id AND e.seq = $4::bigint
WHERE r.run_id = $1::text AND ($2::boolean OR r.scope_key = $3::text)`

// sqlFetchLatestEvent reads the highest retained event of a scoped run,
// with the same row conventions as sqlFetchEvent.
const sqlFetchLatestEvent = `
SELECT ` + eventColumns + `
FROM {schema}.docket_runs AS r
LEFT JOIN LATERAL (
    SELECT * FROM {schema}.docket_events AS x
    WHERE x.run_id = r.run_id
    ORDER BY x.seq DESC
    LIMIT 1
) AS e ON true
WHERE r.run_id = $1::text AND ($2::boolean OR r.scope_key = $3::text)`

// sqlPruneEvents deletes up to a batch of events inserted strictly before
// the cutoff, oldest first, skipping rows another writer holds.
// ($1 cutoff, $2 batch size)
const sqlPruneEvents = `
WITH victims AS (
    SELECT e.run_id, e.seq
    FROM {schema}.docket_events AS e
    WHERE e.inserted_at < $1::timestamptz
    ORDER BY e.inserted_at, e.id
    LIMIT $2::integer
    FOR UPDATE SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.docket_events AS e
    USING victims AS v
    WHERE e.run_id = v.run_id AND e.seq = v.seq
    RETURNING e.seq
)
SELECT count(*) FROM deleted`

// sqlPruneRuns deletes up to a batch of terminal runs whose document was
// last updated strictly before the cutoff, oldest first, skipping rows
// another writer holds; their events cascade and are counted first.
// Terminal rows are not in the unfinished accounting, so the schedule
// counts do not change. ($1 cutoff, $2 batch size)
const sqlPruneRuns = `
WITH victims AS (
    SELECT r.id, r.run_id
    FROM {schema}.docket_runs AS r
    WHERE r.status IN ('done', 'failed', 'cancelled') AND r.updated_at < $1::timestamptz
    ORDER BY r.updated_at, r.id
    LIMIT $2::integer
    FOR UPDATE OF r SKIP LOCKED
),
deleted AS (
    DELETE FROM {schema}.docket_runs AS r
    USING victims AS v
    WHERE r.id = v.id
    RETURNING (SELECT count(*) FROM {schema}.docket_events AS e WHERE e.run_id = v.run_id) AS events
)
SELECT count(*), COALESCE(sum(events), 0)::bigint FROM deleted`

// sqlPruneGraphs locks up to a batch of graph versions, oldest first,
// that rank beyond the newest $1 of their (scope, graph id) by
// (inserted_at DESC, graph_hash DESC) and that no run of the same scope
// references, and returns their ids for sqlDeleteGraphs. One owner's
// publications never evict another's. A run inserted meanwhile holds
// its version's key-share lock, so its version is skipped; a run
// committed after this statement's snapshot is invisible here, which is
// why the deletion re-checks in a statement of its own.
// ($1 keep, $2 batch size)
const sqlPruneGraphs = `
WITH ranked AS (
    SELECT g.id,
           row_number() OVER (PARTITION BY g.scope_key, g.graph_id
                              ORDER BY g.inserted_at DESC, g.graph_hash COLLATE "C" DESC) AS revision
    FROM {schema}.docket_graph_versions AS g
)
SELECT g.id
FROM {schema}.docket_graph_versions AS g
JOIN ranked AS k ON k.id = g.id
WHERE k.revision > $1::integer
  AND NOT EXISTS (SELECT 1 FROM {schema}.docket_runs AS r
                  WHERE r.scope_key = g.scope_key AND r.graph_id = g.graph_id
                    AND r.graph_hash = g.graph_hash)
ORDER BY g.inserted_at, g.id
LIMIT $2::integer
FOR UPDATE OF g SKIP LOCKED`

// sqlDeleteGraphs deletes the versions sqlPruneGraphs locked in the same
// transaction that still no run references. Its own snapshot sees every
// run committed before the locks were taken, and no run can reference a
// locked version until the transaction ends, so the composite foreign
// key (RESTRICT) never fires. ($1 version ids)
const sqlDeleteGraphs = `
WITH deleted AS (
    DELETE FROM {schema}.docket_graph_versions AS g
    WHERE g.id = ANY($1::bigint[])
      AND NOT EXISTS (SELECT 1 FROM {schema}.docket_runs AS r
                      WHERE r.scope_key = g.scope_key AND r.graph_id = g.graph_id
                        AND r.graph_hash = g.graph_hash)
    RETURNING g.id
)
SELECT count(*) FROM deleted`

// sqlPruneLock takes the pruner's per-schema transaction lock without
// waiting: one pass per schema at a time across all instances.
// ($1 lock key)
const sqlPruneLock = `SELECT pg_try_advisory_xact_lock(hashtextextended($1::text, 0))`

// sqlPruneNow is the pass's "now" when the caller gives none: the
// transaction's timestamp.
const sqlPruneNow = `SELECT transaction_timestamp()`

// sqlSaveGraph stores a version idempotently and returns the stored bytes
// and publication time; no row means the version was committed by a
// concurrent writer after this statement's snapshot (read it again).
//
// Invariants: (scope_key, graph_id, graph_hash) is the content address; a
// re-save never rewrites the row, so its publication time and order stay.
//
// $1 tenant_id, $2 scope_key, $3 graph_id, $4 graph_hash, $5 bytes,
// $6 store clock override.
const sqlSaveGraph = `
WITH inserted AS (
    INSERT INTO {schema}.docket_graph_versions (tenant_id, graph_id, graph_hash, graph, inserted_at)
    VALUES ($1::text, $3::text, $4::text, $5::bytea, COALESCE($6::timestamptz, clock_timestamp()))
    ON CONFLICT (scope_key, graph_id, graph_hash) DO NOTHING
    RETURNING graph, inserted_at
)
SELECT graph, inserted_at FROM inserted
UNION ALL
SELECT g.graph, g.inserted_at
FROM {schema}.docket_graph_versions AS g
WHERE g.scope_key = $2::text AND g.graph_id = $3::text AND g.graph_hash = $4::text
  AND NOT EXISTS (SELECT 1 FROM inserted)`

// sqlReadGraph reads a stored version's bytes and publication time.
// ($1 scope_key, $2 graph_id, $3 graph_hash)
const sqlReadGraph = `
SELECT g.graph, g.inserted_at
FROM {schema}.docket_graph_versions AS g
WHERE g.scope_key = $1::text AND g.graph_id = $2::text AND g.graph_hash = $3::text`

// sqlGraphPublished tells whether a version is published in a scope.
// ($1 scope_key, $2 graph_id, $3 graph_hash)
const sqlGraphPublished = `
SELECT EXISTS (
    SELECT 1 FROM {schema}.docket_graph_versions AS g
    WHERE g.scope_key = $1::text AND g.graph_id = $2::text AND g.graph_hash = $3::text)`

// sqlFetchGraph is sqlReadGraph for FetchGraph (bytes only).
const sqlFetchGraph = `
SELECT g.graph
FROM {schema}.docket_graph_versions AS g
WHERE g.scope_key = $1::text AND g.graph_id = $2::text AND g.graph_hash = $3::text`
