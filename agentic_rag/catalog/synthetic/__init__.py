"""A synthetic catalog of any size, deterministic by seed, streamed straight into PostgreSQL.

The generator builds the *structure* of the graph up front as compact numpy index arrays (who
appears in what, who is related to whom: a few tens of MB at a million entities) and streams the
*rows* table by table in fixed-size chunks, so neither a million entities nor five million
relation rows are ever held in Python as rows at once.

* :mod:`.words`: the vocabularies text is built from, and the enumerations (genres, roles, relations);
* :mod:`.hashing`: deterministic randomness (per-index hashes, Zipf draws, syllable words, uuid5 ids);
* :mod:`.structure`: entity counts and the graph's structure, and the shape of the data it has;
* :mod:`.rows`: :class:`SyntheticCatalog`, every table's rows from the structure, and :func:`generate`;
* :mod:`.load`: :func:`load_synthetic`, the generated catalog into PostgreSQL in one transaction.
"""

from agentic_rag.catalog.synthetic.hashing import uuid5_ids
from agentic_rag.catalog.synthetic.load import Progress, SyntheticReport, load_synthetic
from agentic_rag.catalog.synthetic.rows import CHUNK_ROWS, SOURCE, SyntheticCatalog, generate
from agentic_rag.catalog.synthetic.structure import (
    ENTITY_SHARES,
    GENERATOR_VERSION,
    MIN_ENTITIES,
    entity_counts,
    fingerprint,
)
from agentic_rag.catalog.synthetic.words import (
    ANIME_RELATIONS,
    ANIME_STAFF_ROLES,
    CHARACTER_RELATIONS,
    CHARACTER_ROLES,
    GENRES,
    MANGA_AUTHOR_ROLES,
)

__all__ = [
    "ANIME_RELATIONS",
    "ANIME_STAFF_ROLES",
    "CHARACTER_RELATIONS",
    "CHARACTER_ROLES",
    "CHUNK_ROWS",
    "ENTITY_SHARES",
    "GENERATOR_VERSION",
    "GENRES",
    "MANGA_AUTHOR_ROLES",
    "MIN_ENTITIES",
    "SOURCE",
    "Progress",
    "SyntheticCatalog",
    "SyntheticReport",
    "entity_counts",
    "fingerprint",
    "generate",
    "load_synthetic",
    "uuid5_ids",
]
