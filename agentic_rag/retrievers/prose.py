"""Full-text search over what the catalog says about an entity, for a question that describes a work
instead of naming it ("the show where a student finds a notebook that kills anyone").

MiniLM puts a description and the entry it means at a cosine of 0.4-0.57, where questions about
absent titles land too (docs/benchmarks.md), so meaning alone cannot tell a description from a miss.
The words a person uses to describe a story are mostly the synopsis's own words ("notebook",
"bounty hunters", "elf mage"), so this search weighs each word of the question that the prose of that
entity type uses by its inverse document frequency and sums the words an entry shares. An entry must
share at least two of them to be returned. The prose and the word counts are two materialized views
(migration 0010), refreshed by every catalog load; every statement is bounded (words, candidates, rows).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentic_rag.storage.sql import Conn, Query
from agentic_rag.understanding.linker import STOP

PROSE_TYPES = ("anime", "manga", "character")
MAX_WORDS = 12  # the rarest words of the question that the prose uses: at most 66 pairs probed
MAX_TEXT = 2000  # characters of the text whose words are looked up (a question is at most this long)
MAX_CANDIDATES = 2000  # entries sharing a pair of them, scored; a bound, met only on huge catalogs

# The question's words, stemmed by the same configuration as the prose, those the prose of this type
# uses but not in most entries ("anime" says nothing of which), rarest first; an entry is a candidate
# when it holds two of them (a GIN probe of OR-ed pairs), and its score is the summed weight of every
# one it holds. Words are [a-z0-9]+, so a lexeme is a well-formed tsquery operand.
PROSE_SQL = Query("""
WITH lx AS (
  SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', :q)) WHERE lexeme ~ '^[a-z0-9]+$'
), w AS (
  SELECT lx.lexeme, ln((pw.docs + 1.0) / (pw.ndoc + 1.0)) AS weight
  FROM lx JOIN prose_word pw ON pw.entity_type = :t AND pw.word = lx.lexeme AND pw.ndoc * 2 <= pw.docs
  ORDER BY weight DESC, lx.lexeme LIMIT :words
), tq AS (
  SELECT to_tsquery('simple', string_agg(a.lexeme || ' & ' || b.lexeme, ' | ')) AS q
  FROM w a JOIN w b ON a.lexeme < b.lexeme
), cand AS (
  SELECT p.entity_id, p.doc, p.popularity FROM entity_prose p, tq
  WHERE tq.q IS NOT NULL AND p.entity_type = :t AND p.doc @@ tq.q LIMIT :candidates
)
SELECT c.entity_id::text, sum(w.weight)::float8 AS score, array_agg(w.lexeme ORDER BY w.weight DESC) AS words
FROM cand c JOIN w ON c.doc @@ w.lexeme::tsquery
GROUP BY c.entity_id, c.popularity
ORDER BY score DESC, c.popularity DESC, c.entity_id
LIMIT :limit
""")


_VERB = re.compile(r"[a-z]{3,}")
_IRREGULAR = {"led": "lead", "ran": "run", "taught": "teach", "fought": "fight", "built": "build", "made": "make"}
AGENTS = 6  # agent nouns a text is given at most


def with_agents(text: str) -> str:
    """``text`` with the agent noun of its verbs beside it ("who leads the phantom troupe": leader; "who founded
    it": founder): a description says what someone is ("Leader of the Phantom Troupe"), a question what they do.
    A noun the prose does not use weighs nothing (it is no word of any entry), so a word that is no verb costs
    nothing either."""
    nouns: list[str] = []
    for w in dict.fromkeys(_VERB.findall(text.lower())):
        if w in STOP or w.endswith(("er", "or", "ing")):
            continue
        base = _IRREGULAR.get(w) or (w[:-2] if len(w) > 4 and w.endswith(("ed", "es")) else
                                     w[:-1] if len(w) > 3 and w.endswith("s") else w)
        nouns.append(f"{base}r" if base.endswith("e") else f"{base}er")
    nouns = [n for n in dict.fromkeys(nouns) if n not in text.lower()][:AGENTS]
    return f"{text} {' '.join(nouns)}" if nouns else text


@dataclass(frozen=True, slots=True)
class ProseHit:
    """An entry whose prose shares words with the question: their summed weight, and the words."""

    id: str
    score: float
    words: tuple[str, ...]


async def prose_search(conn: Conn, text: str, entity_type: str, *,
                       limit: int = 10) -> list[ProseHit]:
    """Entries of ``entity_type`` whose prose shares the most (rare) words with ``text``, best first.

    Types without prose (people, studios, episodes) return nothing.
    """
    if entity_type not in PROSE_TYPES or not text.strip():
        return []
    text = with_agents(text[:MAX_TEXT])
    rows = await PROSE_SQL.fetch(conn, {"q": text[:MAX_TEXT], "t": entity_type, "limit": max(1, min(limit, 50)),
                                        "words": MAX_WORDS, "candidates": MAX_CANDIDATES})
    return [ProseHit(id=str(i), score=round(float(s), 3), words=tuple(w)) for i, s, w in rows]
