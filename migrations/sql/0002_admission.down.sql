-- Returns a version 2 schema to version 1: drops the schedule with its
-- triggers and functions, the scoped admission indexes, the admission
-- column and its CHECK, partitions and the policy gate. Every drop
-- tolerates an object already gone, so that a schema altered by hand
-- (which Check refuses, advising down and up) can still be taken down.

DROP TRIGGER IF EXISTS docket_claim_schedule_run_truncate_guard ON {{.Schema}}.docket_runs;
DROP TRIGGER IF EXISTS docket_claim_schedule_run_delete ON {{.Schema}}.docket_runs;
DROP TRIGGER IF EXISTS docket_claim_schedule_run_owner ON {{.Schema}}.docket_runs;
DROP TRIGGER IF EXISTS docket_claim_schedule_run_activity ON {{.Schema}}.docket_runs;
DROP TRIGGER IF EXISTS docket_claim_schedule_run_insert ON {{.Schema}}.docket_runs;
DROP FUNCTION IF EXISTS {{.Schema}}.docket_claim_schedule_activity_v1();
DROP TRIGGER IF EXISTS docket_claim_schedule_partition_insert ON {{.Schema}}.docket_claim_partitions;
DROP FUNCTION IF EXISTS {{.Schema}}.docket_claim_schedule_partition_v1();
DROP TRIGGER IF EXISTS docket_claim_schedule_truncate_guard ON {{.Schema}}.docket_claim_schedule;
DROP TRIGGER IF EXISTS docket_claim_schedule_delete_guard ON {{.Schema}}.docket_claim_schedule;
DROP TRIGGER IF EXISTS docket_claim_schedule_guard ON {{.Schema}}.docket_claim_schedule;
DROP FUNCTION IF EXISTS {{.Schema}}.docket_claim_schedule_guard_v1();
DROP TABLE IF EXISTS {{.Schema}}.docket_claim_schedule;

DROP INDEX IF EXISTS {{.Schema}}.docket_runs_scope_admitted_expired_index;
DROP INDEX IF EXISTS {{.Schema}}.docket_runs_scope_queued_ready_index;
DROP INDEX IF EXISTS {{.Schema}}.docket_runs_scope_admitted_ready_index;
DROP INDEX IF EXISTS {{.Schema}}.docket_runs_scope_admitted_index;

ALTER TABLE {{.Schema}}.docket_runs DROP CONSTRAINT IF EXISTS docket_runs_tenant_admission_shape_check;
ALTER TABLE {{.Schema}}.docket_runs DROP COLUMN IF EXISTS tenant_admitted_at;

DROP TABLE IF EXISTS {{.Schema}}.docket_claim_partitions;
DROP TABLE IF EXISTS {{.Schema}}.docket_claim_policy;
