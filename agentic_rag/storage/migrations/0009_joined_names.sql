-- A name typed without its spaces ("chainsawman", "spyxfamily", "deathnote"): entity linking
-- (understanding/linker.py:NAMES_SQL) probes a long unknown word against every name's key with the
-- spaces taken out. linker.py must use exactly this expression.
CREATE INDEX entity_name_joined ON entity_name (replace(link_key(norm), ' ', ''));
