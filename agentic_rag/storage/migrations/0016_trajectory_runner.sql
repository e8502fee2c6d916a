-- Which process ran a run: "<host>:<pid>" of the process that last (re)started it (a resumed run may continue in
-- another replica). With updated_at it tells an operator which replica a dead run belonged to, and a test which
-- replica answered a conversation's turn. NULL on runs recorded before this migration.

ALTER TABLE trajectories ADD COLUMN runner text CHECK (runner IS NULL OR length(runner) <= 200);
