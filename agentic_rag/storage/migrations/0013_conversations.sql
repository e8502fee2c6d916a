-- Conversations (issue 38): a run may be a turn of a conversation, and a follow-up is read in the light of the
-- turns before it. State lives here, not in a replica, so any Orchestrator replica continues any conversation.
--
-- A conversation belongs to one tenant; its turns are append-only (each points at its run's trajectory) and go
-- only with the conversation itself (DELETE /v1/conversations/{id}: a person asking to be forgotten; their
-- trajectories stay, append-only like every trajectory, but nothing links them to one another any more).
-- One turn at a time: a turn claims the conversation (busy_trajectory, busy_until) and a second request while the
-- claim holds is refused with 409; a claim whose run died lapses at busy_until (the run's deadline and a margin).

CREATE TABLE conversations (
  id uuid PRIMARY KEY,
  tenant text NOT NULL CHECK (length(tenant) <= 200),
  turns integer NOT NULL DEFAULT 0 CHECK (turns >= 0),
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  busy_trajectory uuid,
  busy_until timestamptz
);

CREATE INDEX conversations_tenant_idx ON conversations (tenant, updated_at DESC);
CREATE INDEX conversations_expiry_idx ON conversations (expires_at);

CREATE TABLE conversation_turns (
  conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
  seq integer NOT NULL CHECK (seq > 0),
  trajectory_id uuid NOT NULL REFERENCES trajectories (id) ON DELETE RESTRICT,
  question text NOT NULL CHECK (length(question) <= 4000),
  standalone text NOT NULL CHECK (length(standalone) <= 4000),
  status text NOT NULL CHECK (length(status) <= 40),
  card jsonb NOT NULL DEFAULT '{}',  -- the turn as a follow-up reads it (protocol/conversation.py: PastTurn)
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conversation_id, seq)
);

CREATE INDEX conversation_turns_trajectory_idx ON conversation_turns (trajectory_id);

CREATE FUNCTION conversation_turns_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'conversation turns are append-only: % refused', TG_OP
    USING HINT = 'add a turn, or delete the whole conversation';
END;
$$;

CREATE TRIGGER conversation_turns_no_update
  BEFORE UPDATE ON conversation_turns
  FOR EACH ROW EXECUTE FUNCTION conversation_turns_append_only();
