-- Typeahead for long prefixes (a whole title typed): a bucket walk would read the whole 3-letter
-- bucket to find the few names sharing a long prefix. A byte-order range scan of a covering index
-- reads just those names. Comparisons in text_pattern_ops order (~>=~, ~<~) use it in generic plans.
CREATE INDEX IF NOT EXISTS entity_name_norm_pattern ON entity_name (norm text_pattern_ops)
  INCLUDE (popularity, entity_id, entity_type, name);
