-- Genres are a vocabulary the catalog holds, not one the code knows: a recommendation's wish ("a psychological
-- manga", "dark fantasy") is checked word by word against the genres works have (similar.py WISHED_SQL), and
-- catalog filters test them too. GIN indexes make each test an index probe, not a scan of every work.
CREATE INDEX anime_genres_idx ON anime USING gin (genres);
CREATE INDEX manga_genres_idx ON manga USING gin (genres);
