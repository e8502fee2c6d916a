-- The OpenTelemetry trace a run was recorded under (32 hex digits, as the traceparent header and trace viewers
-- write it), so a slow run in the trajectories leads to its trace and a trace to its run. NULL when tracing was off
-- or the request was not sampled, and on runs recorded before this migration.

ALTER TABLE trajectories ADD COLUMN trace_id text CHECK (trace_id IS NULL OR trace_id ~ '^[0-9a-f]{32}$');
