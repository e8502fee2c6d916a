-- The words of the magazines works ran in ("Monthly Shōnen Gangan", "Tonari no Young Jump") are the catalog's
-- words too: a question that names one names no missing entity (understanding/unknown.py). They join name_word
-- with freq 0: known words, never a typo's correction (no name holds them; linker.py:_corrections skips them).
DROP MATERIALIZED VIEW name_word;
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
  WHERE length(word) >= 4
  UNION ALL
  SELECT DISTINCT v.word, v.word, 0
  FROM manga, unnest(string_to_array(link_key(lower(unaccent(magazine))), ' ')) AS v(word)
  WHERE magazine IS NOT NULL AND v.word <> '' AND NOT EXISTS (SELECT 1 FROM w WHERE w.word = v.word);
CREATE INDEX name_word_del ON name_word (del);
