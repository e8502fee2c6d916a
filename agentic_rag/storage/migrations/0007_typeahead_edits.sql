-- Typeahead typos in the first three letters. A name's 3-letter bucket only finds a typo made after
-- its third letter; one made before moved the name to another bucket, and used to fall back to the
-- trigram GIN index (58-106 ms p95 at 2M names). These covering indexes hold each name under the
-- first three letters it has with its 1st, 2nd or 3rd letter deleted (SymSpell's deletion
-- neighbourhood, on a prefix): one edit (a deletion, insertion, substitution or swap) in the first
-- letters is then an equality on one of these keys or on the 3-letter bucket, read in popularity
-- order as an index-only scan. The expressions must match retrievers/typeahead.py exactly.
-- Candidates are scored by edit distance to the name's start (fuzzystrmatch's levenshtein):
-- trigram similarity is too coarse for a short word with an early typo ("lffy" vs "luffy": 0.4).
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;
CREATE INDEX IF NOT EXISTS entity_name_del1 ON entity_name (substr(norm, 2, 3), popularity DESC)
  INCLUDE (norm, entity_id, entity_type, name);
CREATE INDEX IF NOT EXISTS entity_name_del2 ON entity_name ((left(norm, 1) || substr(norm, 3, 2)), popularity DESC)
  INCLUDE (norm, entity_id, entity_type, name);
CREATE INDEX IF NOT EXISTS entity_name_del3 ON entity_name ((left(norm, 2) || substr(norm, 4, 1)), popularity DESC)
  INCLUDE (norm, entity_id, entity_type, name);
