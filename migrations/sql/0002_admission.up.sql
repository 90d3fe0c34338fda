-- Schema version 2: the claim-policy gate, per-scope claim partitions,
-- sticky tenant admission and the trigger-maintained unfinished-run
-- schedule. Written so that it also upgrades a populated version 1
-- schema in place (writers must be stopped; everything is one
-- transaction). {{.Schema}} is the quoted schema name.

-- The admission gate: one row naming the engine allowed to claim.
CREATE TABLE {{.Schema}}.docket_claim_policy (
    id             smallint    NOT NULL DEFAULT 1,
    admission_mode varchar(16) NOT NULL DEFAULT 'legacy',
    updated_at     timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT docket_claim_policy_pkey PRIMARY KEY (id),
    CONSTRAINT docket_claim_policy_singleton_check CHECK (id = 1),
    CONSTRAINT docket_claim_policy_mode_check CHECK (admission_mode IN ('legacy', 'windowed'))
);

-- One row per scope that ever had a run ('' for tenantless); created by
-- run insertion, never deleted by Docket.
CREATE TABLE {{.Schema}}.docket_claim_partitions (
    scope_key   text        NOT NULL,
    inserted_at timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at  timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT docket_claim_partitions_pkey PRIMARY KEY (scope_key)
);

INSERT INTO {{.Schema}}.docket_claim_policy (id, admission_mode) VALUES (1, 'legacy');

-- Same lock order as admission (policy, then partitions, then runs), so
-- an upgrade never deadlocks against a straggling claimer.
LOCK TABLE {{.Schema}}.docket_claim_policy IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE {{.Schema}}.docket_claim_partitions IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE {{.Schema}}.docket_runs IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE {{.Schema}}.docket_runs ADD COLUMN tenant_admitted_at timestamptz;

-- A run that already holds a healthy claim counts as admitted since its claim.
UPDATE {{.Schema}}.docket_runs
SET tenant_admitted_at = claimed_at
WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;

ALTER TABLE {{.Schema}}.docket_runs
    ADD CONSTRAINT docket_runs_tenant_admission_shape_check
    CHECK (tenant_admitted_at IS NULL OR (status = 'running' AND poisoned_at IS NULL));

INSERT INTO {{.Schema}}.docket_claim_partitions (scope_key)
SELECT DISTINCT scope_key FROM {{.Schema}}.docket_runs
ON CONFLICT (scope_key) DO NOTHING;

-- Per-scope admission scans (WindowedInterleave).
CREATE INDEX docket_runs_scope_admitted_index
    ON {{.Schema}}.docket_runs (scope_key)
    WHERE status = 'running' AND poisoned_at IS NULL
      AND tenant_admitted_at IS NOT NULL;
CREATE INDEX docket_runs_scope_admitted_ready_index
    ON {{.Schema}}.docket_runs (scope_key, wake_at, id)
    WHERE status = 'running' AND poisoned_at IS NULL
      AND tenant_admitted_at IS NOT NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX docket_runs_scope_queued_ready_index
    ON {{.Schema}}.docket_runs (scope_key, wake_at, id)
    WHERE status = 'running' AND poisoned_at IS NULL
      AND tenant_admitted_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;
CREATE INDEX docket_runs_scope_admitted_expired_index
    ON {{.Schema}}.docket_runs (scope_key, claimed_at, id)
    WHERE status = 'running' AND poisoned_at IS NULL
      AND tenant_admitted_at IS NOT NULL AND claim_token IS NOT NULL;

-- Authoritative membership: how many non-terminal runs (running or
-- waiting, poisoned included) each scope has. Maintained by triggers only.
-- ring_position is unused by the shipped engines; kept for schema parity.
CREATE TABLE {{.Schema}}.docket_claim_schedule (
    scope_key        text        NOT NULL,
    ring_position    bigint      NOT NULL GENERATED ALWAYS AS IDENTITY,
    unfinished_count bigint      NOT NULL DEFAULT 0,
    inserted_at      timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    updated_at       timestamptz NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT docket_claim_schedule_pkey PRIMARY KEY (scope_key),
    CONSTRAINT docket_claim_schedule_ring_position_key UNIQUE (ring_position),
    CONSTRAINT docket_claim_schedule_partition_fkey
        FOREIGN KEY (scope_key) REFERENCES {{.Schema}}.docket_claim_partitions (scope_key)
        ON DELETE CASCADE,
    CONSTRAINT docket_claim_schedule_position_check CHECK (ring_position > 0),
    CONSTRAINT docket_claim_schedule_unfinished_count_check CHECK (unfinished_count >= 0)
);

-- No index covers unfinished_count or updated_at: the count changes with
-- every started and every finished run, and only an update that touches
-- no indexed column is a HOT update (no index entries, dead versions
-- pruned on the page). Scope sampling reads this small table whole.

-- Guards the schedule: membership is immutable, the count belongs to the
-- run-activity trigger, and a row leaves only with its partition and
-- only when no unfinished run remains.
CREATE FUNCTION {{.Schema}}.docket_claim_schedule_guard_v1()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
PARALLEL UNSAFE
SECURITY INVOKER
SET search_path TO pg_catalog, pg_temp
AS $guard$
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'TRUNCATE of docket_claim_schedule is not allowed: it holds the authoritative unfinished-run counts'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;

    IF TG_OP = 'UPDATE' THEN
        IF NEW.scope_key IS DISTINCT FROM OLD.scope_key
           OR NEW.ring_position IS DISTINCT FROM OLD.ring_position THEN
            RAISE EXCEPTION 'docket_claim_schedule membership (scope_key, ring_position) is immutable'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        -- Depth 1 is a direct statement; the activity trigger's own
        -- updates arrive at depth 2.
        IF NEW.unfinished_count IS DISTINCT FROM OLD.unfinished_count
           AND pg_trigger_depth() < 2 THEN
            RAISE EXCEPTION 'docket_claim_schedule.unfinished_count is maintained by triggers on docket_runs and cannot be set directly'
                USING ERRCODE = 'integrity_constraint_violation';
        END IF;
        RETURN NEW;
    END IF;

    -- DELETE
    IF OLD.unfinished_count > 0 THEN
        RAISE EXCEPTION 'docket_claim_schedule row for scope % still counts % unfinished run(s)', OLD.scope_key, OLD.unfinished_count
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    PERFORM 1 FROM {{.Schema}}.docket_claim_partitions WHERE scope_key = OLD.scope_key;
    IF FOUND THEN
        RAISE EXCEPTION 'docket_claim_schedule rows are removed only by deleting their docket_claim_partitions row'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;
    RETURN OLD;
END;
$guard$;

-- Every new partition gets its schedule row in the same statement;
-- concurrent first inserts of one scope still yield exactly one.
CREATE FUNCTION {{.Schema}}.docket_claim_schedule_partition_v1()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
PARALLEL UNSAFE
SECURITY INVOKER
SET search_path TO pg_catalog, pg_temp
AS $partition$
BEGIN
    INSERT INTO {{.Schema}}.docket_claim_schedule (scope_key)
    VALUES (NEW.scope_key)
    ON CONFLICT (scope_key) DO NOTHING;
    RETURN NEW;
END;
$partition$;

CREATE TRIGGER docket_claim_schedule_partition_insert
    AFTER INSERT ON {{.Schema}}.docket_claim_partitions
    FOR EACH ROW
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_partition_v1();

INSERT INTO {{.Schema}}.docket_claim_schedule (scope_key)
SELECT scope_key FROM {{.Schema}}.docket_claim_partitions
ORDER BY scope_key
ON CONFLICT (scope_key) DO NOTHING;

-- Keeps unfinished_count equal to the scope's non-terminal runs, and
-- refuses what would make it unknowable: TRUNCATE, ownership changes,
-- runs without a membership row, and underflow.
--
-- Insertions, updates and deletions are counted per statement (transition
-- tables): a batch of started runs, a batch of closing commits or a prune
-- pass changes each scope's row once, and a statement that opens or closes
-- no run (claims, refreshes, releases, mid-run commits) changes none.
-- Counting an update per row instead would update the scope's row once per
-- closing run, and each such update walks the chain of that row's earlier
-- versions in the same transaction: quadratic in the batch. Owner changes
-- are refused per row (a WHEN clause passes only those). The counting
-- trigger runs at the end of the statement, after the statement has taken
-- all its run row locks: the schedule row, the one row every writer of a
-- scope shares, is locked last and held only from there to commit, and
-- scopes are visited in scope_key order.
CREATE FUNCTION {{.Schema}}.docket_claim_schedule_activity_v1()
RETURNS trigger
LANGUAGE plpgsql
VOLATILE
PARALLEL UNSAFE
SECURITY INVOKER
SET search_path TO pg_catalog, pg_temp
AS $activity$
DECLARE
    scopes text[];
    deltas bigint[];
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        RAISE EXCEPTION 'TRUNCATE of docket_runs is not allowed: docket_claim_schedule counts are trigger-maintained; use DELETE'
            USING ERRCODE = 'integrity_constraint_violation';
    END IF;

    IF TG_LEVEL = 'ROW' THEN
        -- An update that changes a run's owner (the WHEN clause).
        RAISE EXCEPTION 'the owner (tenant_id) of docket run % is immutable', OLD.run_id
            USING ERRCODE = 'integrity_constraint_violation';
    ELSIF TG_OP = 'UPDATE' THEN
        -- Owners are immutable (the row trigger above), so each scope's
        -- change is its open runs after the statement less those before.
        SELECT array_agg(c.scope_key ORDER BY c.scope_key), array_agg(c.delta ORDER BY c.scope_key)
        INTO scopes, deltas
        FROM (SELECT x.scope_key, sum(x.delta)::bigint AS delta
              FROM (SELECT n.scope_key, 1 AS delta
                    FROM new_runs AS n
                    WHERE n.status NOT IN ('done', 'failed', 'cancelled')
                    UNION ALL
                    SELECT o.scope_key, -1
                    FROM old_runs AS o
                    WHERE o.status NOT IN ('done', 'failed', 'cancelled')) AS x
              GROUP BY x.scope_key
              HAVING sum(x.delta) <> 0) AS c;
    ELSIF TG_OP = 'INSERT' THEN
        SELECT array_agg(c.scope_key ORDER BY c.scope_key), array_agg(c.delta ORDER BY c.scope_key)
        INTO scopes, deltas
        FROM (SELECT n.scope_key, count(*) AS delta
              FROM new_runs AS n
              WHERE n.status NOT IN ('done', 'failed', 'cancelled')
              GROUP BY n.scope_key) AS c;
    ELSE
        SELECT array_agg(c.scope_key ORDER BY c.scope_key), array_agg(c.delta ORDER BY c.scope_key)
        INTO scopes, deltas
        FROM (SELECT o.scope_key, -count(*) AS delta
              FROM old_runs AS o
              WHERE o.status NOT IN ('done', 'failed', 'cancelled')
              GROUP BY o.scope_key) AS c;
    END IF;

    FOR i IN 1 .. coalesce(array_length(scopes, 1), 0) LOOP
        UPDATE {{.Schema}}.docket_claim_schedule
        SET unfinished_count = unfinished_count + deltas[i],
            updated_at = CURRENT_TIMESTAMP
        WHERE scope_key = scopes[i] AND unfinished_count + deltas[i] >= 0;
        IF NOT FOUND THEN
            IF deltas[i] > 0 THEN
                RAISE EXCEPTION 'no docket_claim_schedule membership for scope %: insert its docket_claim_partitions row first', scopes[i]
                    USING ERRCODE = 'foreign_key_violation';
            END IF;
            RAISE EXCEPTION 'docket_claim_schedule unfinished_count underflow for scope %', scopes[i]
                USING ERRCODE = 'check_violation';
        END IF;
    END LOOP;

    RETURN NULL;
END;
$activity$;

CREATE TRIGGER docket_claim_schedule_run_insert
    AFTER INSERT ON {{.Schema}}.docket_runs
    REFERENCING NEW TABLE AS new_runs
    FOR EACH STATEMENT
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_activity_v1();

CREATE TRIGGER docket_claim_schedule_run_activity
    AFTER UPDATE ON {{.Schema}}.docket_runs
    REFERENCING OLD TABLE AS old_runs NEW TABLE AS new_runs
    FOR EACH STATEMENT
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_activity_v1();

CREATE TRIGGER docket_claim_schedule_run_owner
    AFTER UPDATE OF tenant_id ON {{.Schema}}.docket_runs
    FOR EACH ROW
    WHEN (OLD.tenant_id IS DISTINCT FROM NEW.tenant_id)
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_activity_v1();

CREATE TRIGGER docket_claim_schedule_run_delete
    AFTER DELETE ON {{.Schema}}.docket_runs
    REFERENCING OLD TABLE AS old_runs
    FOR EACH STATEMENT
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_activity_v1();

CREATE TRIGGER docket_claim_schedule_run_truncate_guard
    BEFORE TRUNCATE ON {{.Schema}}.docket_runs
    FOR EACH STATEMENT
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_activity_v1();

-- Backfill before the guards exist: this is the one direct count write.
UPDATE {{.Schema}}.docket_claim_schedule AS schedule
SET unfinished_count = unfinished.n,
    updated_at = CURRENT_TIMESTAMP
FROM (
    SELECT scope_key, count(*)::bigint AS n
    FROM {{.Schema}}.docket_runs
    WHERE status NOT IN ('done', 'failed', 'cancelled')
    GROUP BY scope_key
) AS unfinished
WHERE schedule.scope_key = unfinished.scope_key;

-- The guard runs for deletions and for updates that change membership or
-- change the count from outside the activity trigger (trigger depth 0
-- while the WHEN clause is evaluated): the activity trigger's own count
-- updates, the hot path, never call it.
CREATE TRIGGER docket_claim_schedule_guard
    BEFORE UPDATE ON {{.Schema}}.docket_claim_schedule
    FOR EACH ROW
    WHEN (NEW.scope_key IS DISTINCT FROM OLD.scope_key
          OR NEW.ring_position IS DISTINCT FROM OLD.ring_position
          OR (NEW.unfinished_count IS DISTINCT FROM OLD.unfinished_count AND pg_trigger_depth() < 1))
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_guard_v1();

CREATE TRIGGER docket_claim_schedule_delete_guard
    BEFORE DELETE ON {{.Schema}}.docket_claim_schedule
    FOR EACH ROW
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_guard_v1();

CREATE TRIGGER docket_claim_schedule_truncate_guard
    BEFORE TRUNCATE ON {{.Schema}}.docket_claim_schedule
    FOR EACH STATEMENT
    EXECUTE FUNCTION {{.Schema}}.docket_claim_schedule_guard_v1();
