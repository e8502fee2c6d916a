"""Recommendations: works like the examples, by meaning and by what the catalog graph says they share.

A :class:`~agentic_rag.protocol.SimilarIntent` names examples (works, or a studio, a person or a franchise whose
works are meant), the wish in words, the facts the picks must have (year, format, finished, length, genres)
and the works not wanted. Two bounded rankings are fused by the same weighted RRF as hybrid search
(:func:`~agentic_rag.retrievers.hybrid.rrf`):

- **by meaning**: Qdrant's recommendation query in the asked type's collection, the examples' stored vectors
  (and the embedded wish) as positive examples, the filters and the left-out works as the query's filter. The
  examples go as vectors, not point ids: an example of another type (the manga, for anime like it) has its
  vector in another collection, and the embedded engine takes vectors alone.
- **by the graph** (PostgreSQL): works of the asked type credited to a studio or a person of the examples
  (staff, original creator, author), ranked by how many they share and by genre overlap (Jaccard); each studio
  or person offers its :data:`PER_VIA` most popular works, so a hub is no scan.

The examples' own franchises (the same story in every form) and the excluded works' franchises are left out
unless the intent asks for them. Every pick carries the evidence it was chosen on (the shared studios, people
and genres), and ``reasons`` says it in words ("also animated by Madhouse"). Every statement is bounded: at
most :data:`SIMILAR_LIKE_MAX` examples, :data:`CANDIDATES` candidates per ranking, the pool's statement timeout.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from qdrant_client import models

from agentic_rag import tracing
from agentic_rag.protocol import EntityRef, RetrievalResult, SimilarFilters, SimilarIntent
from agentic_rag.protocol.base import clip_lines
from agentic_rag.protocol.contracts import SIMILAR_LIKE_MAX
from agentic_rag.retrievers.errors import RetrievalError, on_pool
from agentic_rag.retrievers.hybrid import rrf
from agentic_rag.retrievers.vector import QdrantExecutor, snippet
from agentic_rag.storage.qdrant import collection_name
from agentic_rag.storage.retry import QDRANT_FAILURES, qdrant_transient, retrying
from agentic_rag.storage.sql import Conn, Pool, Query

CANDIDATES = 30  # candidates each ranking offers the fusion
# works one studio or person of the examples contributes to the graph's ranking, the most popular first: a hub
# (a studio of 8,000 works, a composer of 12,000 credits at 1M entities) must not turn one step into a scan
PER_VIA = 300
GRAPH_WEIGHT = 1.0  # the graph's ranking weighs as much as the meaning's: neither is known to be the better
SHARED_WEIGHT = 1.0  # a shared studio or person, in the graph's score
GENRE_WEIGHT = 3.0  # genre overlap (Jaccard, 0..1), in the graph's score: a third of the genres is one studio
REASONS_SHOWN = 3  # names of one kind a reason lists ("also by A, B and C")
STATUS_FINISHED = "finished"

# The works an example stands for: itself, the same story in its other form (adapted_from / adapted_into),
# or a franchise's works; with the franchise each belongs to. Bounded by the examples' count and their edges.
WORKS_SQL = Query("""
WITH ex AS (SELECT unnest(CAST(:ids AS uuid[])) AS id),
ids AS (
  SELECT id FROM ex
  UNION SELECT e.dst_id FROM edge e JOIN ex ON e.src_id = ex.id
        WHERE e.rel IN ('adapted_from', 'adapted_into', 'includes')
)
SELECT a.id::text AS id, 'anime' AS type, a.title AS name, a.franchise_id::text AS franchise_id, a.genres,
       a.id IN (SELECT id FROM ex) AS example
  FROM anime a WHERE a.id IN (SELECT id FROM ids)
UNION ALL
SELECT m.id::text, 'manga', m.title, m.franchise_id::text, m.genres, m.id IN (SELECT id FROM ex)
  FROM manga m WHERE m.id IN (SELECT id FROM ids)
""")

# The studios and people of those works, and the studios, people and franchises named as examples themselves.
EVIDENCE_SQL = Query("""
SELECT 'studio' AS kind, s.id::text AS id, s.name FROM anime_studio x JOIN studio s ON s.id = x.studio_id
  WHERE x.anime_id = ANY(CAST(:works AS uuid[]))
UNION
SELECT 'person', p.id::text, p.name FROM anime_staff x JOIN person p ON p.id = x.person_id
  WHERE x.anime_id = ANY(CAST(:works AS uuid[]))
UNION
SELECT 'person', p.id::text, p.name FROM manga_author x JOIN person p ON p.id = x.person_id
  WHERE x.manga_id = ANY(CAST(:works AS uuid[]))
UNION
SELECT 'studio', s.id::text, s.name FROM studio s WHERE s.id = ANY(CAST(:ids AS uuid[]))
UNION
SELECT 'person', p.id::text, p.name FROM person p WHERE p.id = ANY(CAST(:ids AS uuid[]))
UNION
SELECT 'franchise', f.id::text, f.name FROM franchise f WHERE f.id = ANY(CAST(:ids AS uuid[]))
ORDER BY 1, 3, 2
""")  # (in a stable order: a union's own order is the plan's, and the examples' names are said in it)

# Which of a wish's words (and word pairs, joined as the catalog writes "dark_fantasy") are genres works have: the
# catalog's own vocabulary, each an index probe (0014_genre_indexes.sql).
WISHED_SQL = Query("""
SELECT t FROM unnest(CAST(:terms AS text[])) AS t
WHERE EXISTS (SELECT 1 FROM anime WHERE genres @> ARRAY[t]) OR EXISTS (SELECT 1 FROM manga WHERE genres @> ARRAY[t])
""")
WISH_TERMS = 40  # words and word runs of one wish tested as genres

# The franchises of the works not wanted.
FRANCHISES_SQL = Query("""
SELECT franchise_id::text FROM anime WHERE id = ANY(CAST(:ids AS uuid[])) AND franchise_id IS NOT NULL
UNION SELECT franchise_id::text FROM manga WHERE id = ANY(CAST(:ids AS uuid[])) AND franchise_id IS NOT NULL
UNION SELECT id::text FROM franchise WHERE id = ANY(CAST(:ids AS uuid[]))
""")
# the works of a studio left out ("made by some studio other than Madhouse"): none of them is a pick
STUDIO_WORKS_SQL = Query("""
SELECT x.anime_id::text FROM anime_studio x WHERE x.studio_id = ANY(CAST(:ids AS uuid[]))
""")

# What a pick must be, for both work tables (w is the candidate's row; its length is episodes or volumes).
_WANTED = """
  NOT w.id = ANY(CAST(:skip AS uuid[]))
  AND (w.franchise_id IS NULL OR NOT w.franchise_id = ANY(CAST(:franchises AS uuid[])))
  AND (CAST(:year_min AS int) IS NULL OR w.year >= CAST(:year_min AS int))
  AND (CAST(:year_max AS int) IS NULL OR w.year <= CAST(:year_max AS int))
  AND (cardinality(CAST(:genres_any AS text[])) = 0 OR w.genres && CAST(:genres_any AS text[]))
  AND (CAST(:finished AS bool) IS NULL OR (w.status = 'finished') = CAST(:finished AS bool))
  AND (CAST(:max_length AS int) IS NULL OR w.length <= CAST(:max_length AS int))
  AND (CAST(:min_length AS int) IS NULL OR w.length >= CAST(:min_length AS int))
"""
# The score: shared studios and people, and genre overlap with the examples (Jaccard).
_SCORE = f"""
  {SHARED_WEIGHT} * count(DISTINCT h.via)
  + {GENRE_WEIGHT} * cardinality(ARRAY(SELECT unnest(w.genres) INTERSECT SELECT unnest(CAST(:genres AS text[]))))
    / greatest(1, cardinality(ARRAY(SELECT unnest(w.genres) UNION SELECT unnest(CAST(:genres AS text[])))))
"""
# The candidates (w, with the studios and people they share in hits) that are wanted, best score first.
_RANKED = f"""
SELECT w.id::text AS id, {_SCORE} AS score
FROM w JOIN hits h ON h.id = w.id
WHERE {_WANTED}
GROUP BY w.id, w.genres, w.popularity
ORDER BY score DESC, w.popularity DESC, w.id
LIMIT :limit
"""  # noqa: S608  (fragments of this module; every value is bound)
CANDIDATES_SQL: dict[str, Query] = {
    "anime": Query(f"""
WITH hits AS (
  SELECT t.id, s.id AS via FROM unnest(CAST(:studios AS uuid[])) AS s(id) CROSS JOIN LATERAL (
    SELECT x.anime_id AS id FROM anime_studio x JOIN anime a ON a.id = x.anime_id
    WHERE x.studio_id = s.id ORDER BY a.popularity DESC, a.id LIMIT :per_via) t
  UNION ALL
  SELECT t.id, p.id FROM unnest(CAST(:people AS uuid[])) AS p(id) CROSS JOIN LATERAL (
    SELECT DISTINCT ON (a.popularity, a.id) x.anime_id AS id FROM anime_staff x JOIN anime a ON a.id = x.anime_id
    WHERE x.person_id = p.id ORDER BY a.popularity DESC, a.id LIMIT :per_via) t
), w AS (
  SELECT a.id, a.franchise_id, a.year, a.genres, a.status, a.episode_count AS length, a.popularity
  FROM anime a WHERE a.id IN (SELECT id FROM hits)
    AND (cardinality(CAST(:formats AS text[])) = 0 OR a.format = ANY(CAST(:formats AS text[])))
)
{_RANKED}"""),  # noqa: S608  (fragments of this module; every value is bound)
    "manga": Query(f"""
WITH hits AS (
  SELECT t.id, p.id AS via FROM unnest(CAST(:people AS uuid[])) AS p(id) CROSS JOIN LATERAL (
    SELECT DISTINCT ON (m.popularity, m.id) x.manga_id AS id FROM manga_author x JOIN manga m ON m.id = x.manga_id
    WHERE x.person_id = p.id ORDER BY m.popularity DESC, m.id LIMIT :per_via) t
), w AS (
  SELECT m.id, m.franchise_id, m.year, m.genres, m.status, m.volumes AS length, m.popularity
  FROM manga m WHERE m.id IN (SELECT id FROM hits)
)
{_RANKED}"""),  # noqa: S608  (fragments of this module; every value is bound)
}

# What each pick shares with the examples: studios, people, genres (the reasons it is offered).
SHARED_SQL: dict[str, Query] = {
    "anime": Query("""
SELECT a.id::text AS id,
  ARRAY(SELECT s.name FROM anime_studio x JOIN studio s ON s.id = x.studio_id
        WHERE x.anime_id = a.id AND x.studio_id = ANY(CAST(:studios AS uuid[])) ORDER BY s.name) AS studios,
  ARRAY(SELECT DISTINCT p.name FROM anime_staff x JOIN person p ON p.id = x.person_id
        WHERE x.anime_id = a.id AND x.person_id = ANY(CAST(:people AS uuid[])) ORDER BY p.name) AS people,
  ARRAY(SELECT g FROM unnest(a.genres) g WHERE g = ANY(CAST(:genres AS text[]))) AS genres
FROM anime a WHERE a.id = ANY(CAST(:ids AS uuid[]))
"""),
    "manga": Query("""
SELECT m.id::text AS id, CAST('{}' AS text[]) AS studios,
  ARRAY(SELECT DISTINCT p.name FROM manga_author x JOIN person p ON p.id = x.person_id
        WHERE x.manga_id = m.id AND x.person_id = ANY(CAST(:people AS uuid[])) ORDER BY p.name) AS people,
  ARRAY(SELECT g FROM unnest(m.genres) g WHERE g = ANY(CAST(:genres AS text[]))) AS genres
FROM manga m WHERE m.id = ANY(CAST(:ids AS uuid[]))
"""),
}


@dataclass(slots=True)
class Examples:
    """What the examples are, as evidence: the works they stand for, their studios, people and genres, and what
    is left out (works and franchises)."""

    names: list[str] = field(default_factory=list)  # the examples' names, as the summary says them
    works: list[str] = field(default_factory=list)
    studios: dict[str, str] = field(default_factory=dict)  # id -> name
    people: dict[str, str] = field(default_factory=dict)
    genres: list[str] = field(default_factory=list)
    skip: set[str] = field(default_factory=set)  # works never offered: the examples, the excluded
    franchises: set[str] = field(default_factory=set)  # franchises left out
    own: set[str] = field(default_factory=set)  # the examples' own franchises (left out unless asked for)


def _said(names: Sequence[str]) -> str:
    shown = list(names[:REASONS_SHOWN])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def reasons(shared: dict[str, list[str]], matched: Sequence[str], fits: Sequence[str] = ()) -> list[str]:
    """A pick's evidence in words: what it shares with the examples, the wished genres it has (``fits``), or that
    it is close to them in meaning."""
    out = []
    if shared.get("studios"):
        out.append(f"also animated by {_said(shared['studios'])}")
    if shared.get("people"):
        out.append(f"also by {_said(shared['people'])}")
    if shared.get("genres"):
        out.append(f"also {_said([g.replace('_', ' ') for g in shared['genres']])}")
    elif fits:  # ("something cozy ... with comedy": no example to share them with)
        out.append(f"{_said([g.replace('_', ' ') for g in fits])} as asked")
    if not out and "vector" in matched:
        out.append("close to it in what it is about")
    return out


async def _read_examples(conn: Conn, intent: SimilarIntent) -> tuple[SimilarIntent, Examples]:
    """The intent with the genres its wish names as a filter, and its examples, on one connection."""
    if intent.query and not intent.filters.genres:
        # "a psychological manga": the genres a wish names are what the picks must have (any of them)
        wished = [r["t"] for r in await WISHED_SQL.fetch(conn, {"terms": wish_terms(intent.query)})]
        # "dark fantasy" is dark_fantasy, not also fantasy
        wished = [g for g in wished if not any(g != h and g in h.split("_") for h in wished)]
        if wished:
            intent = intent.model_copy(update={"filters": intent.filters.model_copy(update={"genres": wished})})
    return intent, await examples(conn, intent)


async def examples(conn: Conn, intent: SimilarIntent) -> Examples:
    """The examples read from the catalog: their works, studios, people, genres, and what is left out."""
    ids = [r.id for r in intent.like]
    out = Examples()
    works = await WORKS_SQL.fetch(conn, {"ids": ids})
    for r in works:
        out.works.append(r["id"])
        out.genres.extend(g for g in r["genres"] if g not in out.genres)
        if r["example"]:
            out.names.append(r["name"])
            out.skip.add(r["id"])
        if r["franchise_id"] is not None:
            out.own.add(r["franchise_id"])
            if not intent.include_franchise:
                out.franchises.add(r["franchise_id"])
    for r in await EVIDENCE_SQL.fetch(conn, {"ids": ids, "works": out.works}):
        if r["kind"] == "studio":
            out.studios[r["id"]] = r["name"]
        elif r["kind"] == "person":
            out.people[r["id"]] = r["name"]
        if r["id"] in ids:
            out.names.append(r["name"])
            if r["kind"] == "franchise" and not intent.include_franchise:
                out.franchises.add(r["id"])
    if not intent.include_franchise:
        out.skip.update(out.works)  # the same story in its other form is not a recommendation
    excluded = list(intent.exclude)
    out.skip.update(excluded)
    out.franchises.update(r[0] for r in await FRANCHISES_SQL.fetch(conn, {"ids": excluded}))
    out.skip.update(r[0] for r in await STUDIO_WORKS_SQL.fetch(conn, {"ids": excluded}))
    return out


# The genre a wish's adjective (or verb) names: English derivations, not titles ("something funny" is a comedy).
# A genre the catalog lacks is no filter (WISHED_SQL keeps only the catalog's own).
GENRE_OF: dict[str, str] = {
    **dict.fromkeys(("funny", "funnier", "funniest", "hilarious", "comedic", "goofy", "silly", "laugh", "laughs",
                     "laughing", "jokes", "gags"), "comedy"),
    **dict.fromkeys(("scary", "scarier", "creepy", "creepier", "spooky", "terrifying", "horrifying", "frightening"),
                    "horror"),
    **dict.fromkeys(("romantic", "love", "romcom"), "romance"),
    **dict.fromkeys(("mysterious", "detective", "whodunit"), "mystery"),
    **dict.fromkeys(("thrilling", "suspenseful", "suspense"), "thriller"),
    **dict.fromkeys(("magic", "magical", "wizards", "elves"), "fantasy"),
    **dict.fromkeys(("robot", "robots", "mechs", "mech"), "mecha"),
    **dict.fromkeys(("superheroes", "heroes", "superpowers", "superpowered"), "superhero"),
    **dict.fromkeys(("futuristic", "space", "scifi"), "sci_fi"),
    **dict.fromkeys(("cozy", "cosy", "wholesome", "chill", "everyday"), "slice_of_life"),
    **dict.fromkeys(("ghosts", "spirits", "demons", "paranormal", "occult"), "supernatural"),
}


def wish_terms(wish: str) -> list[str]:
    """The words of a wish and its runs of two and three words joined by "_" (how the catalog writes "sci_fi",
    "slice_of_life"), lower case, as said and with comparatives made plain, at most :data:`WISH_TERMS`."""
    words = re.findall(r"[a-z0-9]+", wish.lower())
    plain = [GENRE_OF.get(w) or _plain(w) for w in words]  # "a darker fantasy": dark_fantasy too; "funny": comedy
    runs = ["_".join(ws[i:i + n]) for n in (1, 2, 3) for ws in (words, plain) for i in range(len(ws) - n + 1)]
    return list(dict.fromkeys(runs))[:WISH_TERMS]


def _plain(word: str) -> str:
    """An adjective said more or most as itself: "darker", "darkest" -> "dark", "creepier" -> "creepy"."""
    for suffix, base in (("ier", "y"), ("iest", "y"), ("er", ""), ("est", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)] + base
    return word


def _filter_params(f: SimilarFilters) -> dict[str, Any]:
    return {"year_min": f.year_min, "year_max": f.year_max, "genres_any": list(f.genres), "finished": f.finished,
            "max_length": f.max_length, "min_length": f.min_length}


def compile_similar_filter(intent: SimilarIntent, ex: Examples,
                           within: list[str] | None = None) -> models.Filter | None:
    """The intent's filters and what is left out, as a Qdrant filter (payload fields of catalog/index.py); only
    the points ``within`` when given."""
    f = intent.filters
    must: list[models.Condition] = [models.HasIdCondition(has_id=list(within))] if within is not None else []
    must_not: list[models.Condition] = []
    if f.year_min is not None or f.year_max is not None:
        must.append(models.FieldCondition(key="year", range=models.Range(gte=f.year_min, lte=f.year_max)))
    if f.format:
        must.append(models.FieldCondition(key="format", match=models.MatchAny(any=list(f.format))))
    if f.genres:
        must.append(models.FieldCondition(key="genres", match=models.MatchAny(any=list(f.genres))))
    if f.finished is not None:
        finished = models.FieldCondition(key="status", match=models.MatchValue(value=STATUS_FINISHED))
        (must if f.finished else must_not).append(finished)
    if f.max_length is not None or f.min_length is not None:
        key = "episode_count" if intent.entity_type == "anime" else "volumes"
        must.append(models.FieldCondition(key=key, range=models.Range(gte=f.min_length, lte=f.max_length)))
    if ex.skip:
        must_not.append(models.HasIdCondition(has_id=sorted(ex.skip)))
    if ex.franchises:
        must_not.append(models.FieldCondition(key="franchise_id", match=models.MatchAny(any=sorted(ex.franchises))))
    if not must and not must_not:
        return None
    return models.Filter(must=must or None, must_not=must_not or None)


class SimilarRetriever:
    """The ``similar`` step: Qdrant's recommendation query and the catalog graph's evidence, fused by RRF."""

    def __init__(self, pool: Pool, vector: QdrantExecutor) -> None:
        self._pool = pool
        self._vector = vector
        self._attempts = vector.settings.retry_attempts
        self._timeout = vector.settings.query_timeout_ms / 1000

    async def execute(self, intent: SimilarIntent) -> RetrievalResult:
        """The picks; when none is left outside the examples' own franchises, the picks from within them, each
        saying so ("from the same franchise as X"): an empty answer helps nobody who did not rule them out. A
        franchise the question left out ("not Death Note") stays out either way."""
        with tracing.span("similar", {"agentic_rag.entity_type": intent.entity_type, "agentic_rag.limit": intent.limit,
                                      "agentic_rag.examples": len(intent.like)}) as span:
            result = await self._execute(intent)
            if not result.count and intent.like and not intent.include_franchise:
                result = await self._execute(intent.model_copy(update={"include_franchise": True}))
                span.set_attribute("agentic_rag.own_franchise", True)
            span.set_attribute("agentic_rag.rows", result.count)
            return result

    async def _execute(self, intent: SimilarIntent) -> RetrievalResult:
        intent, ex = await self._db(lambda conn: _read_examples(conn, intent))
        if not ex.works and (ex.studios or ex.people):
            # a studio or a person as the example: their works are what is meant, the meaning only ranks them
            by_graph = await self._by_graph(intent, ex)
            by_meaning = await self._by_meaning(intent, ex, within=by_graph) if by_graph else {}
        else:
            by_meaning, by_graph = await asyncio.gather(self._by_meaning(intent, ex), self._by_graph(intent, ex))
        fused = rrf([[(i, 1.0) for i in by_meaning], [(i, GRAPH_WEIGHT) for i in by_graph]])
        payloads = {**by_meaning, **(await self._payloads(intent, [i for i, _ in fused if i not in by_meaning]))}
        fused = [(i, s) for i, s in fused if i in payloads]
        if len(intent.filters.genres) > 1:
            # "an action comedy": the picks with more of the wished genres first (any one lets a pick in)
            wished = set(intent.filters.genres)
            fused.sort(key=lambda x: -len(wished & set(payloads[x[0]].get("genres") or ())))
        fused = one_per_franchise(fused, payloads)[: intent.limit]
        ids = [i for i, _ in fused]
        shared = await self._db(lambda conn: self._shared(conn, intent, ex, ids))
        rows = []
        for item, score in fused:
            matched = [m for m, ranked in (("vector", by_meaning), ("graph", by_graph)) if item in ranked]
            evidence = shared.get(item, {})
            own = payloads[item].get("franchise_id") in ex.own
            fits = [g for g in intent.filters.genres if g in (payloads[item].get("genres") or ())]
            said = ([f"from the same franchise as {_said(ex.names)}"] if own and ex.names else []) + reasons(
                evidence, matched, fits)
            rows.append({**_row(payloads[item]), "rrf": round(score, 5), "matched_by": matched,
                         "shared_studios": evidence.get("studios", []), "shared_people": evidence.get("people", []),
                         "shared_genres": evidence.get("genres", []), "reasons": said})
        return RetrievalResult(summary=summarize(intent, ex, rows), raw_data=rows, count=len(rows))

    async def _db(self, op: Any) -> Any:
        async def bounded(conn: Conn) -> Any:
            async with asyncio.timeout(self._timeout):
                return await op(conn)

        return await on_pool(self._pool, "postgres", bounded, attempts=self._attempts)

    async def _by_meaning(self, intent: SimilarIntent, ex: Examples,
                          within: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """Qdrant's recommendation query (among ``within`` when given): id -> payload, best first."""
        v = self._vector
        try:
            async with asyncio.timeout(self._timeout):
                positives = await asyncio.to_thread(self._example_vectors, intent.like[:SIMILAR_LIKE_MAX])
                if intent.query is not None:
                    positives.append(await v.embed_query(intent.query))
                if not positives:
                    return {}
                query = models.RecommendQuery(recommend=models.RecommendInput(
                    positive=positives, strategy=models.RecommendStrategy.SUM_SCORES))
                name = collection_name(v.settings, intent.entity_type)
                flt = compile_similar_filter(intent, ex, within)
                async for attempt in retrying(self._attempts, qdrant_transient):
                    with attempt, tracing.span("qdrant.recommend", {"db.system.name": "qdrant",
                                                                     "db.collection.name": name,
                                                                     "agentic_rag.limit": CANDIDATES}) as span:
                        response = await asyncio.to_thread(v.call, v.client.query_points, name, query=query,
                                                           query_filter=flt, limit=CANDIDATES, with_payload=True)
                        span.set_attribute("agentic_rag.rows", len(response.points))
        except TimeoutError as exc:
            raise RetrievalError("qdrant", "timeout", "the recommendation query ran past its time limit") from exc
        except QDRANT_FAILURES as exc:
            raise RetrievalError("qdrant", "unavailable", f"the recommendation query failed: {exc}") from exc
        return {str(p.id): {**(p.payload or {}), "_score": p.score} for p in response.points}

    def _example_vectors(self, like: Sequence[EntityRef]) -> list[list[float]]:
        """The stored text vectors of the examples, each from its own type's collection."""
        v = self._vector
        out: list[list[float]] = []
        by_type: dict[str, list[str]] = {}
        for ref in like:
            by_type.setdefault(ref.entity_type, []).append(ref.id)
        for entity_type, ids in by_type.items():
            name = collection_name(v.settings, entity_type)
            for record in v.call(v.client.retrieve, name, ids, with_payload=False, with_vectors=True):
                vector = record.vector.get("") if isinstance(record.vector, dict) else record.vector
                if isinstance(vector, list) and vector:
                    out.append([float(x) for x in vector])  # type: ignore[arg-type]  # a dense vector
        return out

    async def _by_graph(self, intent: SimilarIntent, ex: Examples) -> list[str]:
        if not ex.studios and not ex.people:
            return []
        params = {"studios": list(ex.studios), "people": list(ex.people), "genres": ex.genres,
                  "skip": sorted(ex.skip), "franchises": sorted(ex.franchises), "limit": CANDIDATES,
                  "per_via": PER_VIA,
                  **_filter_params(intent.filters)}
        if intent.entity_type == "anime":
            params["formats"] = list(intent.filters.format)
        rows = await self._db(lambda conn: CANDIDATES_SQL[intent.entity_type].fetch(conn, params))
        return [r["id"] for r in rows if r["score"] > 0]

    @staticmethod
    async def _shared(conn: Conn, intent: SimilarIntent, ex: Examples,
                      ids: list[str]) -> dict[str, dict[str, list[str]]]:
        if not ids:
            return {}
        rows = await SHARED_SQL[intent.entity_type].fetch(conn, {
            "ids": ids, "studios": list(ex.studios), "people": list(ex.people), "genres": ex.genres})
        return {r["id"]: {"studios": list(r["studios"]), "people": list(r["people"]), "genres": list(r["genres"])}
                for r in rows}

    async def _payloads(self, intent: SimilarIntent, ids: list[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        v = self._vector
        name = collection_name(v.settings, intent.entity_type)
        try:
            points = await asyncio.to_thread(v.call, v.client.retrieve, name, ids, with_payload=True,
                                             with_vectors=False)
        except QDRANT_FAILURES as exc:
            raise RetrievalError("qdrant", "unavailable", f"fetching the picks failed: {exc}") from exc
        return {str(p.id): dict(p.payload or {}) for p in points}


def one_per_franchise(fused: list[tuple[str, float]], payloads: dict[str, dict[str, Any]]) -> list[tuple[str, float]]:
    """One pick per franchise, at the rank of its best-ranked work: the best-known of its works among the
    candidates (a recommendation of three seasons of one show is one pick, and it is the show, not a recap film)."""
    best: dict[str, tuple[str, float]] = {}
    order: list[str] = []
    for item, score in fused:
        kin = str(payloads[item].get("franchise_id") or item)
        if kin not in best:
            order.append(kin)
            best[kin] = (item, score)
        elif _popularity(payloads[item]) > _popularity(payloads[best[kin][0]]):
            best[kin] = (item, best[kin][1])
    return [best[k] for k in order]


def _popularity(payload: dict[str, Any]) -> int:
    value = payload.get("popularity")
    return value if isinstance(value, int) else 0


def _row(payload: dict[str, Any]) -> dict[str, Any]:
    row = {k: v for k, v in payload.items() if k not in ("_hash", "_text_hash", "_image", "text", "_score")}
    row["entity_type"] = row.pop("type", None)
    row["snippet"], row["about_at"] = snippet(str(payload.get("text", "")), payload.get("about_at"))
    if isinstance(payload.get("_score"), float | int):
        row["score"] = round(float(payload["_score"]), 4)
    return row


def summarize(intent: SimilarIntent, ex: Examples, rows: list[dict[str, Any]]) -> str:
    like = _said(ex.names) if ex.names else repr(intent.query)
    if not rows:
        return f"No {intent.entity_type} like {like} found."
    lines = [f"{len(rows)} {intent.entity_type} like {like}:"]
    for i, row in enumerate(rows, 1):
        year = f", {row['year']}" if row.get("year") else ""
        why = "; ".join(row["reasons"])
        lines.append(f"{i}. {row.get('name')} ({row['entity_type']}{year}) [id {row['id']}]: {why}")
    return clip_lines(lines)
