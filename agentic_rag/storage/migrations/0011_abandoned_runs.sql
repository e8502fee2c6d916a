-- Runs whose process died (a crashed or killed Orchestrator replica) are closed as 'abandoned' by a
-- sweep, instead of staying 'running' forever. updated_at is when a run last (re)started or finished:
-- with its newest event, it tells a dead run from a slow one.

ALTER TABLE trajectories DROP CONSTRAINT trajectories_status_check;
ALTER TABLE trajectories ADD CONSTRAINT trajectories_status_check
  CHECK (status IN ('running', 'answered', 'not_found', 'best_effort', 'needs_clarification', 'blocked', 'failed',
                    'cancelled', 'abandoned'));

ALTER TABLE trajectories ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now();
UPDATE trajectories SET updated_at = coalesce(finished_at, created_at);

-- the sweep reads only the running runs
CREATE INDEX trajectories_running_idx ON trajectories (updated_at) WHERE status = 'running';
