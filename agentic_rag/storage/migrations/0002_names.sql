-- The typeahead index: every name, alias, native and romanised name of every entity, normalised
-- (lower case, accents removed), with the entity's popularity for ranking. Synced from
-- entity_name_source by ingestion, like the edge table.

CREATE EXTENSION IF NOT EXISTS unaccent;

CREATE TABLE entity_name (
  entity_id uuid NOT NULL,
  norm text NOT NULL,
  entity_type text NOT NULL,
  name text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('primary', 'alias', 'native', 'romaji')),
  popularity integer NOT NULL,
  source text NOT NULL,
  PRIMARY KEY (entity_id, norm)
);
-- fuzzy and word matching ("Lufy", "ルフィ") and substring search
CREATE INDEX entity_name_trgm ON entity_name USING gin (norm gin_trgm_ops);
-- prefix matching walked in popularity order within a two-letter bucket
CREATE INDEX entity_name_prefix ON entity_name (left(norm, 2), popularity DESC, norm text_pattern_ops);
CREATE INDEX entity_name_exact ON entity_name (norm);
CREATE INDEX entity_name_source_idx ON entity_name (source);

CREATE VIEW entity_name_source AS
  WITH names AS (
    SELECT id, 'anime' AS entity_type, title AS name, 'primary' AS kind, popularity, source, 1 AS rank FROM anime
    UNION ALL SELECT id, 'anime', unnest(aliases), 'alias', popularity, source, 2 FROM anime
    UNION ALL SELECT id, 'anime', title_native, 'native', popularity, source, 3 FROM anime WHERE title_native IS NOT NULL
    UNION ALL SELECT id, 'anime', title_romaji, 'romaji', popularity, source, 4 FROM anime WHERE title_romaji IS NOT NULL
    UNION ALL SELECT id, 'manga', title, 'primary', popularity, source, 1 FROM manga
    UNION ALL SELECT id, 'manga', unnest(aliases), 'alias', popularity, source, 2 FROM manga
    UNION ALL SELECT id, 'manga', title_native, 'native', popularity, source, 3 FROM manga WHERE title_native IS NOT NULL
    UNION ALL SELECT id, 'manga', title_romaji, 'romaji', popularity, source, 4 FROM manga WHERE title_romaji IS NOT NULL
    UNION ALL SELECT id, 'character', name, 'primary', popularity, source, 1 FROM character
    UNION ALL SELECT id, 'character', unnest(aliases), 'alias', popularity, source, 2 FROM character
    UNION ALL SELECT id, 'character', name_native, 'native', popularity, source, 3 FROM character
      WHERE name_native IS NOT NULL
    UNION ALL SELECT e.id, 'episode', e.title, 'primary', a.popularity / 4, e.source, 1
      FROM episode e JOIN anime a ON a.id = e.anime_id WHERE e.title IS NOT NULL
    UNION ALL SELECT id, 'franchise', name, 'primary', popularity, source, 1 FROM franchise
    UNION ALL SELECT id, 'studio', name, 'primary', popularity, source, 1 FROM studio
    UNION ALL SELECT id, 'person', name, 'primary', popularity, source, 1 FROM person
    UNION ALL SELECT id, 'person', unnest(aliases), 'alias', popularity, source, 2 FROM person
    UNION ALL SELECT id, 'person', native_name, 'native', popularity, source, 3 FROM person
      WHERE native_name IS NOT NULL
  )
  -- one row per (entity, normalised form): the most primary spelling wins
  SELECT DISTINCT ON (id, lower(unaccent(name)))
         id AS entity_id, lower(unaccent(name)) AS norm, entity_type, name, kind, popularity, source
  FROM names
  WHERE btrim(name) <> ''
  ORDER BY id, lower(unaccent(name)), rank;
