-- Full-text search over what the catalog says about an entity in words, for questions that describe
-- a work instead of naming it ("the show where a student finds a notebook that kills"): an anime's or
-- manga's synopsis with its franchise's description, a character's description
-- (retrievers/prose.py). Both views are refreshed by every catalog load (catalog/load.py,
-- catalog/synthetic/load.py).
CREATE MATERIALIZED VIEW entity_prose AS
  SELECT a.id AS entity_id, 'anime'::text AS entity_type, a.popularity,
         to_tsvector('english', concat_ws(' ', a.synopsis, f.description)) AS doc
  FROM anime a LEFT JOIN franchise f ON f.id = a.franchise_id
  UNION ALL
  SELECT m.id, 'manga', m.popularity, to_tsvector('english', concat_ws(' ', m.synopsis, f.description))
  FROM manga m LEFT JOIN franchise f ON f.id = m.franchise_id
  UNION ALL
  SELECT c.id, 'character', c.popularity, to_tsvector('english', coalesce(c.description, ''))
  FROM character c;
CREATE UNIQUE INDEX entity_prose_id ON entity_prose (entity_id);
CREATE INDEX entity_prose_doc ON entity_prose USING gin (doc);

-- How many entities of a type use each word (and how many there are): a word's weight in a match is
-- its inverse document frequency, so "notebook" counts and "anime" barely does.
CREATE MATERIALIZED VIEW prose_word AS
  SELECT t.entity_type, s.word, s.ndoc, t.docs
  FROM (SELECT entity_type, count(*)::integer AS docs FROM entity_prose GROUP BY entity_type) t,
       LATERAL ts_stat(format('SELECT doc FROM entity_prose WHERE entity_type = %L', t.entity_type)) s;
CREATE UNIQUE INDEX prose_word_key ON prose_word (entity_type, word);
