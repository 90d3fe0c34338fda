-- Removes schema version 1: every Docket table in the schema. The schema
-- itself is left in place; it may hold other objects. A table already
-- gone (a schema altered by hand) does not stop the others' removal.

DROP TABLE IF EXISTS {{.Schema}}.docket_events;
DROP TABLE IF EXISTS {{.Schema}}.docket_runs;
DROP TABLE IF EXISTS {{.Schema}}.docket_graph_versions;
