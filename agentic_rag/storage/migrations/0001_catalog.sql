-- The catalog: entities, their relation tables, and the materialised graph edge table.
-- Every entity has a stable uuid (uuid5 of its natural key), its natural key, and its source
-- (the shipped demo catalog or the synthetic generator) so that each can be reloaded alone.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE franchise (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  name text NOT NULL,
  description text,
  popularity integer NOT NULL DEFAULT 0,
  extra jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE studio (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  name text NOT NULL,
  founded integer,
  popularity integer NOT NULL DEFAULT 0,
  extra jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE person (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  name text NOT NULL,
  native_name text,
  aliases text[] NOT NULL DEFAULT '{}',
  popularity integer NOT NULL DEFAULT 0,
  extra jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE anime (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  title text NOT NULL,
  title_native text,
  title_romaji text,
  aliases text[] NOT NULL DEFAULT '{}',
  format text NOT NULL CHECK (format IN ('tv', 'movie', 'ova', 'ona', 'special')),
  year integer NOT NULL,
  end_year integer,
  episode_count integer CHECK (episode_count > 0),
  status text NOT NULL CHECK (status IN ('finished', 'airing')),
  genres text[] NOT NULL DEFAULT '{}',
  popularity integer NOT NULL DEFAULT 0,
  synopsis text,
  franchise_id uuid REFERENCES franchise (id),
  extra jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE manga (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  title text NOT NULL,
  title_native text,
  title_romaji text,
  aliases text[] NOT NULL DEFAULT '{}',
  year integer NOT NULL,
  end_year integer,
  volumes integer CHECK (volumes > 0),
  status text NOT NULL CHECK (status IN ('finished', 'ongoing')),
  magazine text,
  genres text[] NOT NULL DEFAULT '{}',
  popularity integer NOT NULL DEFAULT 0,
  synopsis text,
  franchise_id uuid REFERENCES franchise (id),
  extra jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE character (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  name text NOT NULL,
  name_native text,
  aliases text[] NOT NULL DEFAULT '{}',
  description text,
  popularity integer NOT NULL DEFAULT 0,
  extra jsonb NOT NULL DEFAULT '{}'
);

CREATE TABLE episode (
  id uuid PRIMARY KEY,
  key text NOT NULL UNIQUE,
  source text NOT NULL CHECK (source IN ('demo', 'synthetic')),
  anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  number integer NOT NULL CHECK (number >= 0),
  title text,
  season integer,
  aired date,
  UNIQUE (anime_id, number)
);

-- Relation tables (seed 000/001 section 3.3). Each row is one fact as the data states it;
-- the edge table below holds both directions for traversal.
CREATE TABLE anime_related_anime (
  anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  related_anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  relation_type text NOT NULL CHECK (relation_type IN
    ('sequel', 'prequel', 'side_story', 'spinoff', 'alternative_version', 'parent_story', 'summary')),
  source text NOT NULL,
  PRIMARY KEY (anime_id, related_anime_id, relation_type),
  CHECK (anime_id <> related_anime_id)
);
CREATE INDEX ON anime_related_anime (related_anime_id);

CREATE TABLE anime_related_manga (
  anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  manga_id uuid NOT NULL REFERENCES manga (id) ON DELETE CASCADE,
  relation_type text NOT NULL DEFAULT 'adapted_from' CHECK (relation_type IN ('adapted_from')),
  source text NOT NULL,
  PRIMARY KEY (anime_id, manga_id, relation_type)
);
CREATE INDEX ON anime_related_manga (manga_id);

CREATE TABLE anime_character (
  anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  character_id uuid NOT NULL REFERENCES character (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('main', 'supporting')),
  source text NOT NULL,
  PRIMARY KEY (anime_id, character_id)
);
CREATE INDEX ON anime_character (character_id);

CREATE TABLE manga_character (
  manga_id uuid NOT NULL REFERENCES manga (id) ON DELETE CASCADE,
  character_id uuid NOT NULL REFERENCES character (id) ON DELETE CASCADE,
  source text NOT NULL,
  PRIMARY KEY (manga_id, character_id)
);
CREATE INDEX ON manga_character (character_id);

CREATE TABLE character_relationship (
  character_id uuid NOT NULL REFERENCES character (id) ON DELETE CASCADE,
  related_character_id uuid NOT NULL REFERENCES character (id) ON DELETE CASCADE,
  relation_type text NOT NULL CHECK (relation_type IN
    ('family', 'ally', 'rival', 'enemy', 'teammate', 'romantic', 'mentor_of', 'student_of')),
  detail text,
  source text NOT NULL,
  PRIMARY KEY (character_id, related_character_id, relation_type),
  CHECK (character_id <> related_character_id)
);
CREATE INDEX ON character_relationship (related_character_id);

CREATE TABLE anime_studio (
  anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  studio_id uuid NOT NULL REFERENCES studio (id) ON DELETE CASCADE,
  source text NOT NULL,
  PRIMARY KEY (anime_id, studio_id)
);
CREATE INDEX ON anime_studio (studio_id);

CREATE TABLE anime_staff (
  anime_id uuid NOT NULL REFERENCES anime (id) ON DELETE CASCADE,
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('original_creator', 'director', 'chief_director',
    'series_composition', 'character_design', 'music', 'producer')),
  source text NOT NULL,
  PRIMARY KEY (anime_id, person_id, role)
);
CREATE INDEX ON anime_staff (person_id);

CREATE TABLE manga_author (
  manga_id uuid NOT NULL REFERENCES manga (id) ON DELETE CASCADE,
  person_id uuid NOT NULL REFERENCES person (id) ON DELETE CASCADE,
  role text NOT NULL CHECK (role IN ('story_and_art', 'story', 'art')),
  source text NOT NULL,
  PRIMARY KEY (manga_id, person_id, role)
);
CREATE INDEX ON manga_author (person_id);

-- The allowlisted edge vocabulary. Mirrors agentic_rag/catalog/vocabulary.py (a test checks).
-- derived_via: the edge is two hops through that node type and is never stored.
CREATE TABLE edge_type (
  name text PRIMARY KEY,
  inverse text NOT NULL,
  description text NOT NULL,
  derived_via text
);
INSERT INTO edge_type (name, inverse, description, derived_via) VALUES
  ('sequel', 'prequel', 'the target continues the story of the source', NULL),
  ('prequel', 'sequel', 'the target comes before the source in the story', NULL),
  ('side_story', 'parent_story', 'the target is a side story of the source', NULL),
  ('parent_story', 'side_story', 'the target is the main story the source branches from', NULL),
  ('spinoff', 'spinoff_of', 'the target is a spin-off of the source', NULL),
  ('spinoff_of', 'spinoff', 'the source is a spin-off of the target', NULL),
  ('alternative_version', 'alternative_version', 'another adaptation of the same source material', NULL),
  ('summary', 'summarized_by', 'the source summarises or recaps the target', NULL),
  ('summarized_by', 'summary', 'the target summarises or recaps the source', NULL),
  ('adapted_from', 'adapted_into', 'the anime adapts the manga', NULL),
  ('adapted_into', 'adapted_from', 'the manga was adapted into the anime', NULL),
  ('appears_in', 'features', 'the character appears in the work', NULL),
  ('features', 'appears_in', 'the work features the character', NULL),
  ('episode_of', 'has_episode', 'the episode belongs to the anime', NULL),
  ('has_episode', 'episode_of', 'the anime has this episode', NULL),
  ('animated_by', 'animated', 'the studio animated the anime', NULL),
  ('animated', 'animated_by', 'the studio animated the anime', NULL),
  ('staff', 'worked_on', 'the person is credited on the work (role in detail)', NULL),
  ('worked_on', 'staff', 'the person is credited on the work (role in detail)', NULL),
  ('part_of', 'includes', 'the work belongs to the franchise', NULL),
  ('includes', 'part_of', 'the franchise includes the work', NULL),
  ('family', 'family', 'relatives (detail says how)', NULL),
  ('ally', 'ally', 'allies or companions', NULL),
  ('rival', 'rival', 'rivals', NULL),
  ('enemy', 'enemy', 'enemies or antagonists of each other', NULL),
  ('teammate', 'teammate', 'members of the same team, crew or squad', NULL),
  ('romantic', 'romantic', 'romantic partners or spouses', NULL),
  ('mentor_of', 'student_of', 'the source mentors the target', NULL),
  ('student_of', 'mentor_of', 'the source is a student of the target', NULL),
  ('same_studio', 'same_studio', 'animated by a common studio', 'studio'),
  ('shared_staff', 'shared_staff', 'a person credited on both', 'person'),
  ('co_appears', 'co_appears', 'both appear in a common work', 'anime'),
  ('shares_franchise', 'shares_franchise', 'both belong to one franchise', 'franchise');

-- The graph: every stored relation in both directions, so traversal is one index range scan on
-- (src_id, rel) per frontier node. Rebuilt from the relation tables by ingestion.
CREATE TABLE edge (
  src_id uuid NOT NULL,
  rel text NOT NULL REFERENCES edge_type (name),
  dst_id uuid NOT NULL,
  src_type text NOT NULL,
  dst_type text NOT NULL,
  detail text,
  source text NOT NULL,
  PRIMARY KEY (src_id, rel, dst_id)
);
CREATE INDEX ON edge (source);

-- How relation rows become edges (both directions). Ingestion syncs the edge table to this view.
CREATE VIEW edge_source AS
  SELECT r.anime_id AS src_id, r.relation_type AS rel, r.related_anime_id AS dst_id,
         'anime' AS src_type, 'anime' AS dst_type, NULL::text AS detail, r.source
    FROM anime_related_anime r
  UNION ALL
  SELECT r.related_anime_id, t.inverse, r.anime_id, 'anime', 'anime', NULL, r.source
    FROM anime_related_anime r JOIN edge_type t ON t.name = r.relation_type
  UNION ALL
  SELECT anime_id, 'adapted_from', manga_id, 'anime', 'manga', NULL, source FROM anime_related_manga
  UNION ALL
  SELECT manga_id, 'adapted_into', anime_id, 'manga', 'anime', NULL, source FROM anime_related_manga
  UNION ALL
  SELECT character_id, 'appears_in', anime_id, 'character', 'anime', role, source FROM anime_character
  UNION ALL
  SELECT anime_id, 'features', character_id, 'anime', 'character', role, source FROM anime_character
  UNION ALL
  SELECT character_id, 'appears_in', manga_id, 'character', 'manga', NULL, source FROM manga_character
  UNION ALL
  SELECT manga_id, 'features', character_id, 'manga', 'character', NULL, source FROM manga_character
  UNION ALL
  -- detail says what the target is to the source ("grandfather"); the reverse edge cannot know
  -- the converse word, so it carries none.
  SELECT r.character_id, r.relation_type, r.related_character_id, 'character', 'character', r.detail, r.source
    FROM character_relationship r
  UNION ALL
  SELECT r.related_character_id, t.inverse, r.character_id, 'character', 'character', NULL, r.source
    FROM character_relationship r JOIN edge_type t ON t.name = r.relation_type
  UNION ALL
  SELECT id, 'episode_of', anime_id, 'episode', 'anime', NULL, source FROM episode
  UNION ALL
  SELECT anime_id, 'has_episode', id, 'anime', 'episode', NULL, source FROM episode
  UNION ALL
  SELECT anime_id, 'animated_by', studio_id, 'anime', 'studio', NULL, source FROM anime_studio
  UNION ALL
  SELECT studio_id, 'animated', anime_id, 'studio', 'anime', NULL, source FROM anime_studio
  UNION ALL
  SELECT anime_id, 'staff', person_id, 'anime', 'person', string_agg(role, ', ' ORDER BY role), min(source)
    FROM anime_staff GROUP BY anime_id, person_id
  UNION ALL
  SELECT person_id, 'worked_on', anime_id, 'person', 'anime', string_agg(role, ', ' ORDER BY role), min(source)
    FROM anime_staff GROUP BY anime_id, person_id
  UNION ALL
  SELECT manga_id, 'staff', person_id, 'manga', 'person', string_agg(role, ', ' ORDER BY role), min(source)
    FROM manga_author GROUP BY manga_id, person_id
  UNION ALL
  SELECT person_id, 'worked_on', manga_id, 'person', 'manga', string_agg(role, ', ' ORDER BY role), min(source)
    FROM manga_author GROUP BY manga_id, person_id
  UNION ALL
  SELECT id, 'part_of', franchise_id, 'anime', 'franchise', NULL, source FROM anime WHERE franchise_id IS NOT NULL
  UNION ALL
  SELECT franchise_id, 'includes', id, 'franchise', 'anime', NULL, source FROM anime WHERE franchise_id IS NOT NULL
  UNION ALL
  SELECT id, 'part_of', franchise_id, 'manga', 'franchise', NULL, source FROM manga WHERE franchise_id IS NOT NULL
  UNION ALL
  SELECT franchise_id, 'includes', id, 'franchise', 'manga', NULL, source FROM manga WHERE franchise_id IS NOT NULL;

-- What each load put in, so re-running the same load can be recognised as a no-op.
CREATE TABLE catalog_load (
  source text PRIMARY KEY,
  fingerprint text NOT NULL,
  counts jsonb NOT NULL,
  loaded_at timestamptz NOT NULL DEFAULT now()
);
