-- Entity linking (agentic_rag/understanding/linker.py): every mention of a name in a question is
-- found by probing the question's word n-grams against the names and aliases, so names are
-- compared on their words alone: lower case, accents removed (entity_name.norm), a possessive 's
-- dropped, every other run of punctuation a single space ("Frieren: Beyond Journey's End" ->
-- "frieren beyond journey end"). understanding/text.py:link_key must compute exactly this.
CREATE FUNCTION link_key(t text) RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN btrim(regexp_replace(regexp_replace(t, '[''’]s\M', '', 'g'), '[^[:alnum:]]+', ' ', 'g'));
CREATE INDEX entity_name_link ON entity_name (link_key(norm));
-- A title's part after its colon ("Hunter x Hunter: Greed Island" -> "greed island"), which people
-- type alone; understanding/linker.py:SUBTITLE_SQL must use exactly this expression.
CREATE INDEX entity_name_subtitle ON entity_name (link_key(substr(norm, strpos(norm, ':') + 1)))
  WHERE strpos(norm, ':') > 0;
-- The words of every name with their one-letter deletions (SymSpell), so that a typo anywhere in a
-- word of a name ("shipuden", "yaegar") is corrected to the catalog's own word by one index probe
-- per question. Each word is also its own zero-deletion row: one probe tells known words apart.
-- Refreshed by every catalog load (catalog/load.py, catalog/synthetic/load.py).
CREATE MATERIALIZED VIEW name_word AS
  WITH w AS (
    SELECT word, count(*)::integer AS freq
    FROM entity_name, unnest(string_to_array(link_key(norm), ' ')) AS word
    WHERE word <> ''
    GROUP BY word
  )
  SELECT word AS del, word, freq FROM w
  UNION ALL
  SELECT left(word, p) || substr(word, p + 2), word, freq
  FROM w, generate_series(0, length(word) - 1) AS p
  WHERE length(word) >= 4;
CREATE INDEX name_word_del ON name_word (del);
