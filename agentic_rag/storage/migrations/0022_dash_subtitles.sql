-- A title's subtitle after a dash links alone, as one after a colon does (0008): "the final chapters" is
-- "Attack on Titan: The Final Season - The Final Chapters", "mugen train arc" a Demon Slayer season. The linker
-- (understanding/linker.py) probes this index with the same spans it probes the colon's with.
CREATE INDEX entity_name_dash_subtitle ON entity_name (link_key(substr(norm, strpos(norm, ' - ') + 3)))
  WHERE strpos(norm, ' - ') > 0;
