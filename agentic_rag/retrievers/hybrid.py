"""Hybrid retrieval: names matched in PostgreSQL (exact, prefix, trigram) fused with Qdrant vector
results by reciprocal rank fusion.

Lexical matching finds "Luffy" as the entity named Luffy; vector search finds what a description
means. Either alone misses the other's cases; RRF needs no score calibration between them.

A search by meaning (``match="semantic"``: a description, never a name) fuses the vector results with
a full-text search over the entries' prose (:mod:`agentic_rag.retrievers.prose`) the same way; each
row keeps its cosine ``score`` and its ``text_score`` and ``text_words``, so the reader can tell an
entry the description's own words pick out from one that is merely nearest.

A search with an image (``image_query``) searches the ``image`` vectors; with a query too, the text search
above and the image search are fused the same way, each row keeping its ``image_score`` (the cosine of the
images) beside what matched it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from qdrant_client import models

from agentic_rag import tracing
from agentic_rag.protocol import RetrievalResult, SearchIntent
from agentic_rag.protocol.limits import max_len
from agentic_rag.retrievers.errors import on_pool
from agentic_rag.retrievers.prose import ProseHit, prose_search
from agentic_rag.retrievers.typeahead import TypeaheadQuery, typeahead
from agentic_rag.retrievers.vector import QdrantExecutor, compile_filter, summarize
from agentic_rag.storage.qdrant import collection_name
from agentic_rag.storage.sql import Pool

RRF_K = 60
_TYPEAHEAD = max_len(TypeaheadQuery, "q")
# A name typed exactly is stronger evidence than any embedding neighbour; a typo match is not.
TIER_WEIGHT = {"exact": 3.0, "prefix": 2.0, "fuzzy": 1.5}
# The text search's ranking (itself fused) and the image neighbours weigh the same: neither modality is
# known to be the stronger evidence for a question that gives both.
TEXT_WEIGHT = IMAGE_WEIGHT = 1.0


def rrf(rankings: Sequence[Sequence[tuple[str, float]]], k: int = RRF_K) -> list[tuple[str, float]]:
    """Weighted reciprocal rank fusion: ``sum(w / (k + rank))`` over the lists an item is in, best first.

    Each ranking is a list of (item, weight), best first; use weight 1.0 for plain RRF.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (item, weight) in enumerate(ranking, 1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))


class HybridRetriever:
    """Lexical (PostgreSQL names) + semantic (Qdrant) search for one entity type, fused by RRF."""

    def __init__(self, pool: Pool, vector: QdrantExecutor) -> None:
        self._pool = pool
        self._vector = vector

    async def execute(self, intent: SearchIntent) -> RetrievalResult:
        with tracing.span("search", {"agentic_rag.entity_type": intent.entity_type, "agentic_rag.match": intent.match,
                                     "agentic_rag.limit": intent.limit, "agentic_rag.by_id": bool(intent.filters.id),
                                     "agentic_rag.by_image": intent.image_query is not None}) as span:
            result = await self._execute(intent)
            span.set_attribute("agentic_rag.rows", result.count)
            return result

    async def _execute(self, intent: SearchIntent) -> RetrievalResult:
        if intent.image_query is not None and not intent.filters.id:
            return await self._with_image(intent)
        if intent.filters.id or intent.query is None:
            return await self._vector.execute(intent)  # a fetch by id: nothing to fuse
        if intent.match == "semantic":
            return await self._described(intent)
        lexical, semantic = await asyncio.gather(self._lexical(intent), self._vector.execute(intent))
        return await self._fused(intent, lexical, "name", semantic)

    async def _with_image(self, intent: SearchIntent) -> RetrievalResult:
        """By the image alone, or (with a query) the text search and the image search fused by RRF. The image is
        read and verified before either search starts."""
        assert intent.image_query is not None
        image = await self._vector.image(intent.image_query)
        by_image = intent.model_copy(update={"query": None})
        if intent.query is None:
            return await self._vector.execute(by_image, image=image)
        by_text = intent.model_copy(update={"image_query": None})
        text, seen = await asyncio.gather(self.execute(by_text), self._vector.execute(by_image, image=image))
        text_rows = {str(r["id"]): r for r in text.raw_data}
        image_rows = {str(r["id"]): r for r in seen.raw_data}
        fused = rrf([[(i, TEXT_WEIGHT) for i in text_rows], [(i, IMAGE_WEIGHT) for i in image_rows]])
        rows = []
        for item, score in fused[: intent.limit]:
            by_words = text_rows.get(item)
            row = dict(by_words) if by_words is not None else {
                k: v for k, v in image_rows[item].items() if k != "score"}
            matched = list(by_words.get("matched_by", ["vector"])) if by_words is not None else []
            if item in image_rows:
                row["image_score"] = image_rows[item].get("score")
                matched.append("image")
            row["rrf"] = round(score, 5)
            row["matched_by"] = matched
            rows.append(row)
        return RetrievalResult(summary=summarize(intent, rows), raw_data=rows, count=len(rows))

    async def _described(self, intent: SearchIntent) -> RetrievalResult:
        """A description: the vector neighbours and the prose that shares its words, fused by RRF; each row
        keeps its cosine ``score`` beside the words its prose shares."""
        semantic, prose = await asyncio.gather(self._vector.execute(intent), self._prose(intent))
        shared = {h.id: {"text_score": h.score, "text_words": list(h.words)} for h in prose}
        return await self._fused(intent, [(h.id, 1.0) for h in prose], "text", semantic, shared)

    async def _fused(self, intent: SearchIntent, lexical: list[tuple[str, float]], label: str,
                     semantic: RetrievalResult, extra: dict[str, dict[str, Any]] | None = None) -> RetrievalResult:
        """``lexical`` (id, weight), best first, and the vector rows fused by RRF: the rows of the fused order,
        each saying what matched it; a name match drops the cosine score (the RRF score ranks), a text match
        keeps it (the reader weighs both)."""
        vec_rows = {str(r["id"]): r for r in semantic.raw_data}
        weight = dict(lexical)
        lex_ids = await self._admissible(intent, [i for i, _ in lexical])
        fused = rrf([[(i, weight[i]) for i in lex_ids], [(i, 1.0) for i in vec_rows]])[: intent.limit]
        missing = [i for i, _ in fused if i not in vec_rows]
        rows_by_id = {**vec_rows, **(await self._payloads(intent, missing))}
        rows = []
        for item, score in fused:
            if item in rows_by_id:
                row = {k: v for k, v in rows_by_id[item].items() if k != "score" or extra is not None}
                row["rrf"] = round(score, 5)
                row.update((extra or {}).get(item, {}))
                row["matched_by"] = [m for m, ids in ((label, lex_ids), ("vector", vec_rows)) if item in ids]
                rows.append(row)
        return RetrievalResult(summary=summarize(intent, rows), raw_data=rows, count=len(rows))

    async def _prose(self, intent: SearchIntent) -> list[ProseHit]:
        query = intent.query
        assert query is not None
        return await on_pool(self._pool, "postgres",
                             lambda conn: prose_search(conn, query, intent.entity_type, limit=max(intent.limit, 10)),
                             attempts=self._vector.settings.retry_attempts)

    async def _lexical(self, intent: SearchIntent) -> list[tuple[str, float]]:
        assert intent.query is not None
        asked = TypeaheadQuery(q=intent.query[:_TYPEAHEAD], types=[intent.entity_type], limit=intent.limit)
        hits = await on_pool(self._pool, "postgres", lambda conn: typeahead(conn, asked),
                             attempts=self._vector.settings.retry_attempts)
        return [(h.entity.id, TIER_WEIGHT[h.match]) for h in hits]

    async def _admissible(self, intent: SearchIntent, ids: list[str]) -> list[str]:
        """Lexical hits that also satisfy the intent's structured filters, in their original order."""
        flt = compile_filter(intent.filters)
        if not ids or flt is None:
            return ids
        name = collection_name(self._vector.settings, intent.entity_type)
        scoped = models.Filter(must=[models.HasIdCondition(has_id=list(ids)), flt])
        points, _ = await asyncio.to_thread(self._vector.call, self._vector.client.scroll, name,
                                            scroll_filter=scoped, limit=len(ids), with_payload=False)
        keep = {str(p.id) for p in points}
        return [i for i in ids if i in keep]

    async def _payloads(self, intent: SearchIntent, ids: list[str]) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        fetched = await self._vector.execute(intent.model_copy(update={
            "filters": intent.filters.model_copy(update={"id": ids}), "query": None}))
        return {str(r["id"]): r for r in fetched.raw_data}
