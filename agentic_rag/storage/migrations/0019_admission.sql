-- Admission per API key (issue 41, point 1): a bound on the runs a key holds at once and a rate of new runs, the
-- same for every replica of every front door, so the state is here, where every replica already writes its runs.
-- A slot is held while a run is served and given back at its end; one whose holder died lapses at expires_at (the
-- run's deadline and a margin). The rate is GCRA (the generic cell rate algorithm): one timestamp per key, the
-- theoretical arrival time of the next run, so a key's whole history is one row.

CREATE TABLE admission_slots (
  id uuid PRIMARY KEY,
  key text NOT NULL CHECK (length(key) <= 64),
  expires_at timestamptz NOT NULL
);

CREATE INDEX admission_slots_key_idx ON admission_slots (key, expires_at);

CREATE TABLE admission_rates (
  key text PRIMARY KEY CHECK (length(key) <= 64),
  tat timestamptz NOT NULL
);

-- One call admits a run or says why not. A key's calls queue on its advisory lock, so the count and the rate are
-- read and written by one caller at a time; other keys never wait on it. NULL max_runs or rate: no such bound.
CREATE FUNCTION agentic_rag_admit(p_key text, p_slot uuid, p_max_runs integer, p_rate double precision,
                                  p_burst integer, p_hold_s double precision,
                                  OUT admitted boolean, OUT reason text, OUT retry_after_s double precision,
                                  OUT held integer)
LANGUAGE plpgsql AS $$
DECLARE
  t timestamptz;
  emission interval;
  prior timestamptz;
  next_tat timestamptz;
BEGIN
  PERFORM pg_advisory_xact_lock(7243003, hashtext(p_key));
  t := clock_timestamp();  -- after the lock: the wait for it is not counted as time gone by
  DELETE FROM admission_slots WHERE key = p_key AND expires_at <= t;
  IF EXISTS (SELECT 1 FROM admission_slots WHERE id = p_slot) THEN  -- a retry whose first reply was lost
    admitted := true; reason := NULL; retry_after_s := 0;
    SELECT count(*) INTO held FROM admission_slots WHERE key = p_key;
    RETURN;
  END IF;
  SELECT count(*) INTO held FROM admission_slots WHERE key = p_key;
  IF p_max_runs IS NOT NULL AND held >= p_max_runs THEN
    admitted := false; reason := 'runs'; retry_after_s := 1;
    RETURN;
  END IF;
  IF p_rate IS NOT NULL THEN
    emission := make_interval(secs => 1 / p_rate);
    SELECT r.tat INTO prior FROM admission_rates r WHERE r.key = p_key;
    next_tat := greatest(coalesce(prior, t), t) + emission;
    IF next_tat - t > emission * p_burst THEN
      admitted := false; reason := 'rate';
      retry_after_s := extract(epoch FROM next_tat - t - emission * p_burst);
      RETURN;
    END IF;
    INSERT INTO admission_rates (key, tat) VALUES (p_key, next_tat)
      ON CONFLICT (key) DO UPDATE SET tat = excluded.tat;
  END IF;
  INSERT INTO admission_slots (id, key, expires_at) VALUES (p_slot, p_key, t + make_interval(secs => p_hold_s));
  admitted := true; reason := NULL; retry_after_s := 0; held := held + 1;
END;
$$;
