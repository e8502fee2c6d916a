-- Typeahead typos (SymSpell's deletion neighbourhood, on a name's first letters). Each name is
-- indexed with its 1st, 2nd, ... 12th letter deleted, so that one edit (a deletion, an insertion, a
-- substitution or a swap) among the first twelve letters of what was typed is a prefix match on one
-- of these indexes or on entity_name_norm_pattern: a short byte-range walk instead of the trigram
-- GIN index (58-106 ms p95 at 2M names). The expressions must match
-- retrievers/typeahead.py:deletion_expr exactly. Candidates are scored by edit distance to the
-- name's start (fuzzystrmatch): trigram similarity is too coarse for a short word with an early
-- typo ("lffy" against "luffy": 0.4).
CREATE EXTENSION IF NOT EXISTS fuzzystrmatch;
CREATE INDEX IF NOT EXISTS entity_name_del1 ON entity_name (((left(norm, 0) || substr(norm, 2))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del2 ON entity_name (((left(norm, 1) || substr(norm, 3))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del3 ON entity_name (((left(norm, 2) || substr(norm, 4))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del4 ON entity_name (((left(norm, 3) || substr(norm, 5))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del5 ON entity_name (((left(norm, 4) || substr(norm, 6))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del6 ON entity_name (((left(norm, 5) || substr(norm, 7))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del7 ON entity_name (((left(norm, 6) || substr(norm, 8))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del8 ON entity_name (((left(norm, 7) || substr(norm, 9))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del9 ON entity_name (((left(norm, 8) || substr(norm, 10))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del10 ON entity_name (((left(norm, 9) || substr(norm, 11))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del11 ON entity_name (((left(norm, 10) || substr(norm, 12))) text_pattern_ops);
CREATE INDEX IF NOT EXISTS entity_name_del12 ON entity_name (((left(norm, 11) || substr(norm, 13))) text_pattern_ops);
