-- Index the franchise foreign keys: without them every deleted franchise makes PostgreSQL scan
-- all of anime and manga to check the key, which is quadratic when a catalog is replaced.
CREATE INDEX anime_franchise_id_idx ON anime (franchise_id);
CREATE INDEX manga_franchise_id_idx ON manga (franchise_id);
