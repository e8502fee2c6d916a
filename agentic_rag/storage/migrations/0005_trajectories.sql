-- The trajectory log (seed 003): one row per run, and its events appended as the run goes.
-- Events are append-only history: the database itself refuses to change or remove them, and a
-- trajectory row may change (status, response, timings as the run goes) but never disappear.

CREATE TABLE trajectories (
  id uuid PRIMARY KEY,
  request_id text NOT NULL CHECK (length(request_id) <= 200),
  session_id text CHECK (length(session_id) <= 200),
  tenant text NOT NULL DEFAULT 'default' CHECK (length(tenant) <= 200),
  query text NOT NULL CHECK (length(query) <= 4000),
  mode text NOT NULL DEFAULT 'agentic' CHECK (mode IN ('agentic', 'linear')),
  status text NOT NULL CHECK (status IN ('running', 'answered', 'not_found', 'best_effort',
                                         'needs_clarification', 'blocked', 'failed', 'cancelled')),
  final_response jsonb,
  timings jsonb NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz
);

CREATE INDEX trajectories_request_id_idx ON trajectories (request_id);
CREATE INDEX trajectories_tenant_created_idx ON trajectories (tenant, created_at DESC);

CREATE TABLE trajectory_events (
  trajectory_id uuid NOT NULL REFERENCES trajectories (id) ON DELETE RESTRICT,
  seq integer NOT NULL CHECK (seq > 0),
  stage text NOT NULL CHECK (length(stage) <= 40),
  type text NOT NULL CHECK (type IN ('thought', 'action', 'observation', 'decision', 'guard', 'error')),
  payload jsonb NOT NULL DEFAULT '{}',
  latency_ms double precision,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (trajectory_id, seq)
);

CREATE FUNCTION trajectory_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'trajectory history is append-only: % on % refused', TG_OP, TG_TABLE_NAME
    USING HINT = 'record a new event (or update the trajectory''s status) instead of changing history';
END;
$$;

CREATE TRIGGER trajectory_events_no_change
  BEFORE UPDATE OR DELETE ON trajectory_events
  FOR EACH ROW EXECUTE FUNCTION trajectory_append_only();

CREATE TRIGGER trajectory_events_no_truncate
  BEFORE TRUNCATE ON trajectory_events
  FOR EACH STATEMENT EXECUTE FUNCTION trajectory_append_only();

CREATE TRIGGER trajectories_no_delete
  BEFORE DELETE ON trajectories
  FOR EACH ROW EXECUTE FUNCTION trajectory_append_only();

CREATE TRIGGER trajectories_no_truncate
  BEFORE TRUNCATE ON trajectories
  FOR EACH STATEMENT EXECUTE FUNCTION trajectory_append_only();
