-- Where an entity's picture is (a cover, a portrait, a logo), as its data file gives it: an http(s) URL, or the
-- absolute path of a file (a record's relative path, resolved against its data file's folder). Loaded with the
-- catalog's other rows of its source (catalog/load.py); the index embeds it into the `image` vector of the
-- entity's Qdrant collection when an image model is configured (catalog/index.py). An entity has one image at
-- most; the row goes when the record loses its image or the entity goes.

CREATE TABLE entity_image (
  entity_id uuid PRIMARY KEY,
  entity_type text NOT NULL
    CHECK (entity_type IN ('anime', 'manga', 'character', 'person', 'studio', 'franchise', 'episode')),
  location text NOT NULL CHECK (location ~ '^(https?://|/)'),
  source text NOT NULL CHECK (source IN ('demo', 'synthetic'))
);

-- the index reads one entity type's images at a time
CREATE INDEX entity_image_type ON entity_image (entity_type);
