-- Typeahead at scale: walk a name's 2- or 3-letter bucket in popularity order straight from a
-- covering index (index-only scans, no heap visits), for prefixes and for typo candidates alike.
-- Measured on 2M names: a prefix or typo lookup reads at most a few hundred index entries.
DROP INDEX IF EXISTS entity_name_prefix;
CREATE INDEX entity_name_bucket2 ON entity_name (left(norm, 2), popularity DESC)
  INCLUDE (norm, entity_id, entity_type, name);
CREATE INDEX entity_name_bucket3 ON entity_name (left(norm, 3), popularity DESC)
  INCLUDE (norm, entity_id, entity_type, name);
