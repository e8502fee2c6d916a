-- Runners (issue 41, point 7): each process that runs the loop is heard in PostgreSQL every few seconds. A run
-- whose runner (trajectories.runner, host:pid) has gone unheard for the lapse is closed as abandoned within
-- seconds, by whichever live process looks first, instead of waiting out the timed sweep (the deadline plus the
-- grace). started_at tells a process from an earlier one that had its pid on the same host: a run still running
-- with no activity since its runner's (re)start belongs to the earlier one. State lives here, not in Ray, so the
-- same rule holds for an Orchestrator replica, a CLI and a node that vanished.

CREATE TABLE runners (
  runner text PRIMARY KEY CHECK (length(runner) <= 200),
  started_at timestamptz NOT NULL DEFAULT now(),
  seen_at timestamptz NOT NULL DEFAULT now()
);

-- the liveness check reads the running runs by runner
CREATE INDEX trajectories_running_runner_idx ON trajectories (runner) WHERE status = 'running';
