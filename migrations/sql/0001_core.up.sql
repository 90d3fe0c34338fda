-- Schema version 1: immutable graph versions, runs (each row is its own
-- queue entry) and retained events. {{.Schema}} is the quoted schema name.

CREATE TABLE {{.Schema}}.docket_graph_versions (
    id          bigserial   NOT NULL,
    tenant_id   text,
    scope_key   text        NOT NULL GENERATED ALWAYS AS (COALESCE(tenant_id, '')) STORED,
    graph_id    text        NOT NULL,
    graph_hash  text        NOT NULL,
    graph       bytea       NOT NULL,
    -- The public "published_at" of a version: the database wall clock.
    inserted_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT docket_graph_versions_pkey PRIMARY KEY (id),
    CONSTRAINT docket_graph_versions_tenant_id_check
        CHECK (tenant_id IS NULL OR tenant_id <> '')
);

-- Content address per owner scope; also the target of the runs' graph FK.
CREATE UNIQUE INDEX docket_graph_versions_scope_graph_index
    ON {{.Schema}}.docket_graph_versions (scope_key, graph_id, graph_hash);

-- Newest-first version listing and the pruner's per-graph ranking.
CREATE INDEX docket_graph_versions_scope_revision_order_index
    ON {{.Schema}}.docket_graph_versions (scope_key, graph_id, inserted_at DESC, graph_hash DESC);

CREATE TABLE {{.Schema}}.docket_runs (
    id                     bigserial   NOT NULL,
    run_id                 text        NOT NULL,
    tenant_id              text,
    scope_key              text        NOT NULL GENERATED ALWAYS AS (COALESCE(tenant_id, '')) STORED,
    graph_id               text        NOT NULL,
    graph_hash             text        NOT NULL,
    status                 text        NOT NULL,
    step                   integer     NOT NULL DEFAULT 0,
    state                  bytea       NOT NULL,
    checkpoint_seq         bigint      NOT NULL DEFAULT 0,
    -- Go port addition: the committed event counter as a column, so event
    -- pages can report latest_seq without decoding state.
    event_seq              bigint      NOT NULL DEFAULT 0,
    latest_checkpoint_type text,
    claim_token            uuid,
    claimed_at             timestamptz,
    wake_at                timestamptz,
    claim_attempts         integer     NOT NULL DEFAULT 0,
    claim_abandons         integer     NOT NULL DEFAULT 0,
    poisoned_at            timestamptz,
    poison_reason          text,
    inserted_at            timestamptz NOT NULL,
    started_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL,
    finished_at            timestamptz,
    CONSTRAINT docket_runs_pkey PRIMARY KEY (id),
    -- A run may only point at a version published in its own scope.
    CONSTRAINT docket_runs_graph_scope_fkey
        FOREIGN KEY (scope_key, graph_id, graph_hash)
        REFERENCES {{.Schema}}.docket_graph_versions (scope_key, graph_id, graph_hash)
        ON DELETE RESTRICT,
    CONSTRAINT docket_runs_tenant_id_check
        CHECK (tenant_id IS NULL OR tenant_id <> ''),
    CONSTRAINT docket_runs_status_check
        CHECK (status IN ('running', 'waiting', 'done', 'failed', 'cancelled')),
    CONSTRAINT docket_runs_finished_at_check
        CHECK ((status IN ('done', 'failed', 'cancelled')) = (finished_at IS NOT NULL)),
    CONSTRAINT docket_runs_claim_pair_check
        CHECK ((claim_token IS NULL) = (claimed_at IS NULL)),
    CONSTRAINT docket_runs_poison_pair_check
        CHECK ((poisoned_at IS NULL) = (poison_reason IS NULL)),
    -- Waiting and terminal rows are idle: no claim, no wake, no poison.
    CONSTRAINT docket_runs_waiting_terminal_idle_check
        CHECK (status = 'running' OR (claim_token IS NULL AND wake_at IS NULL AND poisoned_at IS NULL)),
    -- A poisoned row is running and idle until recovered.
    CONSTRAINT docket_runs_poisoned_shape_check
        CHECK (poisoned_at IS NULL OR (status = 'running' AND claim_token IS NULL AND wake_at IS NULL)),
    -- A healthy running row carries exactly one of {wake, claim}: it is
    -- either queued or held, never both and never lost.
    CONSTRAINT docket_runs_running_schedule_check
        CHECK (status <> 'running' OR poisoned_at IS NOT NULL OR ((wake_at IS NOT NULL) <> (claim_token IS NOT NULL))),
    CONSTRAINT docket_runs_counters_check
        CHECK (step >= 0 AND checkpoint_seq >= 0 AND claim_attempts >= 0 AND claim_abandons >= 0),
    CONSTRAINT docket_runs_event_seq_check
        CHECK (event_seq >= 0)
);

-- run_id is globally unique, not per scope.
CREATE UNIQUE INDEX docket_runs_run_id_index
    ON {{.Schema}}.docket_runs (run_id);

-- Newest-first listing with the immutable (started_at, run_id) cursor.
CREATE INDEX docket_runs_list_order_index
    ON {{.Schema}}.docket_runs (started_at DESC, run_id DESC);
-- A tenant's listing filters on tenant_id = $1, which implies NOT NULL:
-- tenantless runs need no entry here (the plain list order serves them).
CREATE INDEX docket_runs_tenant_list_order_index
    ON {{.Schema}}.docket_runs (tenant_id, started_at DESC, run_id DESC)
    WHERE tenant_id IS NOT NULL;
CREATE INDEX docket_runs_tenant_id_status_index
    ON {{.Schema}}.docket_runs (tenant_id, status)
    WHERE tenant_id IS NOT NULL;
CREATE INDEX docket_runs_tenant_id_graph_id_status_index
    ON {{.Schema}}.docket_runs (tenant_id, graph_id, status)
    WHERE tenant_id IS NOT NULL;

-- The ready/scheduled queue, oldest wake first.
CREATE INDEX docket_runs_wake_at_id_index
    ON {{.Schema}}.docket_runs (wake_at, id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NULL AND wake_at IS NOT NULL;

-- Held claims, oldest stamp first: the expired (recoverable) scan.
CREATE INDEX docket_runs_claimed_at_id_index
    ON {{.Schema}}.docket_runs (claimed_at, id)
    WHERE status = 'running' AND poisoned_at IS NULL AND claim_token IS NOT NULL;

CREATE INDEX docket_runs_poisoned_at_index
    ON {{.Schema}}.docket_runs (poisoned_at)
    WHERE poisoned_at IS NOT NULL;
CREATE INDEX docket_runs_status_updated_at_index
    ON {{.Schema}}.docket_runs (status, updated_at);

-- The pruner's terminal-run scan (ORDER BY updated_at, id).
CREATE INDEX docket_runs_updated_at_id_index
    ON {{.Schema}}.docket_runs (updated_at, id)
    WHERE status IN ('done', 'failed', 'cancelled');

-- The pruner's "is this graph version still referenced" probe.
CREATE INDEX docket_runs_graph_id_graph_hash_index
    ON {{.Schema}}.docket_runs (graph_id, graph_hash);

CREATE TABLE {{.Schema}}.docket_events (
    id          bigserial   NOT NULL,
    run_id      text        NOT NULL,
    seq         bigint      NOT NULL,
    type        text        NOT NULL,
    step        integer     NOT NULL,
    node_id     text,
    channel_id  text,
    task_id     text,
    payload     bytea       NOT NULL,
    metadata    bytea       NOT NULL,
    occurred_at timestamptz NOT NULL,
    inserted_at timestamptz NOT NULL,
    -- One event per (run, seq): the fused commit's idempotency key and
    -- every reader's access path. id only orders the pruner's scan, so it
    -- has no index of its own (one index entry less per event written).
    CONSTRAINT docket_events_run_id_seq_index PRIMARY KEY (run_id, seq),
    CONSTRAINT docket_events_run_id_fkey
        FOREIGN KEY (run_id) REFERENCES {{.Schema}}.docket_runs (run_id)
        ON DELETE CASCADE
);

-- The pruner's event scan (ORDER BY inserted_at, id).
CREATE INDEX docket_events_inserted_at_id_index
    ON {{.Schema}}.docket_events (inserted_at, id);

-- Documents are compressed with lz4 where the server has it: a run's state
-- is rewritten whole on every commit, and once it outgrows a TOAST page
-- (about 2 KB) lz4 compresses it four to five times faster than the
-- default pglz at a similar ratio (a growing agent history committed
-- ten steps at a time: +45 % step commits/s, -40 % database CPU). A
-- server built without lz4 (feature_not_supported), or older than
-- PostgreSQL 14 (no SET COMPRESSION: syntax_error), keeps pglz; either
-- way every reader sees the same bytes.
DO $compression$
BEGIN
    EXECUTE 'ALTER TABLE {{.Schema}}.docket_runs ALTER COLUMN state SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE {{.Schema}}.docket_events ALTER COLUMN payload SET COMPRESSION lz4, '
         || 'ALTER COLUMN metadata SET COMPRESSION lz4';
    EXECUTE 'ALTER TABLE {{.Schema}}.docket_graph_versions ALTER COLUMN graph SET COMPRESSION lz4';
EXCEPTION
    WHEN feature_not_supported OR syntax_error THEN
        NULL;
END
$compression$;
