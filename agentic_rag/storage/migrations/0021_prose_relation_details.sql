-- A character's prose also holds what the graph's finer labels say of it: each relation's detail, beside the name of
-- the character it is told of ("L Lawliet: his handler" in Watari's, "Renji Abarai: 6th Division" in Byakuya's). The
-- detail describes the related character to the one whose relation it is, and names words no description may use
-- ("who is L's handler" is Watari, whose description says "aide"). Relation types stay the allowlisted vocabulary;
-- the detail is only searched as words (retrievers/prose.py), never read as a relation. Both views as in 0010.
DROP MATERIALIZED VIEW prose_word;
DROP MATERIALIZED VIEW entity_prose;
CREATE MATERIALIZED VIEW entity_prose AS
  SELECT a.id AS entity_id, 'anime'::text AS entity_type, a.popularity,
         to_tsvector('english', concat_ws(' ', a.synopsis, f.description)) AS doc
  FROM anime a LEFT JOIN franchise f ON f.id = a.franchise_id
  UNION ALL
  SELECT m.id, 'manga', m.popularity, to_tsvector('english', concat_ws(' ', m.synopsis, f.description))
  FROM manga m LEFT JOIN franchise f ON f.id = m.franchise_id
  UNION ALL
  SELECT c.id, 'character', c.popularity,
         to_tsvector('english', concat_ws(' ', c.description,
           (SELECT string_agg(o.name || ': ' || r.detail, '. ' ORDER BY o.name, r.detail)
            FROM character_relationship r JOIN character o ON o.id = r.character_id
            WHERE r.related_character_id = c.id AND r.detail IS NOT NULL)))
  FROM character c;
CREATE UNIQUE INDEX entity_prose_id ON entity_prose (entity_id);
CREATE INDEX entity_prose_doc ON entity_prose USING gin (doc);

CREATE MATERIALIZED VIEW prose_word AS
  SELECT t.entity_type, s.word, s.ndoc, t.docs
  FROM (SELECT entity_type, count(*)::integer AS docs FROM entity_prose GROUP BY entity_type) t,
       LATERAL ts_stat(format('SELECT doc FROM entity_prose WHERE entity_type = %L', t.entity_type)) s;
CREATE UNIQUE INDEX prose_word_key ON prose_word (entity_type, word);
