-- Retention (issue 41): trajectories are deleted after RAG_TRAJECTORY_RETENTION by `agentic-rag prune`, and by
-- nothing else. History stays append-only against every other DELETE: the delete triggers of 0005 now refuse unless
-- the transaction has set agentic_rag.prune (SET LOCAL agentic_rag.prune = 'on', as the prune does), and even then
-- a run in progress (status 'running') and its events are never deleted. UPDATE of events and TRUNCATE of either
-- table stay refused, always. The setting guards against accidents, not against a role that means harm: who may
-- delete at all is the database role's privilege.

-- once per DELETE statement, on either table: only a prune deletes history
CREATE OR REPLACE FUNCTION trajectory_prune_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('agentic_rag.prune', true) IS DISTINCT FROM 'on' THEN
    RAISE EXCEPTION 'trajectory history is append-only: % on % refused', TG_OP, TG_TABLE_NAME
      USING HINT = 'only agentic-rag prune deletes history (it sets agentic_rag.prune for its own transaction)';
  END IF;
  RETURN NULL;
END;
$$;

-- per deleted run: never one in progress
CREATE OR REPLACE FUNCTION trajectory_not_running() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status = 'running' THEN
    RAISE EXCEPTION 'trajectory % is running: a run in progress is never deleted', OLD.id;
  END IF;
  RETURN OLD;
END;
$$;

-- once per DELETE of events, over the rows it deleted (a join, not a lookup per event): none of a run in progress
CREATE OR REPLACE FUNCTION trajectory_events_not_running() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  busy uuid;
BEGIN
  SELECT t.id INTO busy FROM deleted d JOIN trajectories t ON t.id = d.trajectory_id WHERE t.status = 'running' LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'trajectory % is running: the events of a run in progress are never deleted', busy;
  END IF;
  RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS trajectory_events_no_change ON trajectory_events;
DROP TRIGGER IF EXISTS trajectory_events_no_update ON trajectory_events;
CREATE TRIGGER trajectory_events_no_update
  BEFORE UPDATE ON trajectory_events
  FOR EACH ROW EXECUTE FUNCTION trajectory_append_only();

DROP TRIGGER IF EXISTS trajectory_events_prune_only ON trajectory_events;
CREATE TRIGGER trajectory_events_prune_only
  BEFORE DELETE ON trajectory_events
  FOR EACH STATEMENT EXECUTE FUNCTION trajectory_prune_only();

DROP TRIGGER IF EXISTS trajectory_events_not_running ON trajectory_events;
CREATE TRIGGER trajectory_events_not_running
  AFTER DELETE ON trajectory_events
  REFERENCING OLD TABLE AS deleted
  FOR EACH STATEMENT EXECUTE FUNCTION trajectory_events_not_running();

DROP TRIGGER IF EXISTS trajectories_no_delete ON trajectories;
DROP TRIGGER IF EXISTS trajectories_prune_only ON trajectories;
CREATE TRIGGER trajectories_prune_only
  BEFORE DELETE ON trajectories
  FOR EACH STATEMENT EXECUTE FUNCTION trajectory_prune_only();

DROP TRIGGER IF EXISTS trajectories_not_running ON trajectories;
CREATE TRIGGER trajectories_not_running
  BEFORE DELETE ON trajectories
  FOR EACH ROW EXECUTE FUNCTION trajectory_not_running();

-- the prune's scan: finished runs, oldest first (a batch reads only the index range before its cutoff)
CREATE INDEX IF NOT EXISTS trajectories_finished_idx ON trajectories (finished_at) WHERE status <> 'running';
