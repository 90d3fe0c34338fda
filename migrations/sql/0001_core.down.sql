-- Removes schema version 1: every Docket table in the schema. The schema
-- itself is left in place; it may hold other objects.

DROP TABLE {{.Schema}}.docket_events;
DROP TABLE {{.Schema}}.docket_runs;
DROP TABLE {{.Schema}}.docket_graph_versions;
