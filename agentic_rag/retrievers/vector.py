"""Qdrant retrieval: fetch by id, or embed and search with structured filters.

A search with an ``image_query`` searches the ``image`` vector by the image alone (after the image passed
every bound of :mod:`agentic_rag.models.images`); :class:`~agentic_rag.retrievers.hybrid.HybridRetriever`
fuses it with the text search when the intent has a query too.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt
from qdrant_client import models

from agentic_rag import tracing
from agentic_rag.models.images import IMAGE_SEARCH_OFF, ImageBounds, ImageSearchOff, read_image_query
from agentic_rag.protocol import RetrievalResult, SearchFilters, SearchIntent
from agentic_rag.protocol.base import clip_lines
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.retrievers.quotes import about, quote
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import IMAGE_VECTOR, VectorStore, collection_name
from agentic_rag.storage.retry import QDRANT_FAILURES, qdrant_transient, retrying

T = TypeVar("T")
log = logging.getLogger(__name__)
EmbedFn = Callable[[Sequence[str]], Awaitable[npt.NDArray[np.float32]]]
ImageEmbedFn = Callable[[Sequence[bytes]], Awaitable[npt.NDArray[np.float32]]]  # encoded images, verified
SNIPPET_CHARS = 400  # the stored text's start: a lookup answers from it
ABOUT_CHARS = 240  # ... with at least this much of the description
FULL_TEXT = "_text"  # a row's whole description, while an explanation's sentences are picked from it


def compile_filter(filters: SearchFilters) -> models.Filter | None:
    """SearchFilters -> a Qdrant filter. Values become match/range conditions, never query text."""
    must: list[models.Condition] = []
    if filters.year_min is not None or filters.year_max is not None:
        must.append(models.FieldCondition(key="year", range=models.Range(gte=filters.year_min, lte=filters.year_max)))
    if filters.format:
        must.append(models.FieldCondition(key="format", match=models.MatchAny(any=list(filters.format))))
    if filters.genres:
        must.append(models.FieldCondition(key="genres", match=models.MatchAny(any=list(filters.genres))))
    if filters.anime_id:
        # episodes carry their one parent; characters the list of anime they appear in
        must.append(models.Filter(should=[
            models.FieldCondition(key="anime_id", match=models.MatchValue(value=filters.anime_id)),
            models.FieldCondition(key="anime_ids", match=models.MatchAny(any=[filters.anime_id])),
        ]))
    if filters.franchise_id:
        must.append(models.FieldCondition(key="franchise_id", match=models.MatchValue(value=filters.franchise_id)))
    return models.Filter(must=must) if must else None


def _row(payload: dict[str, Any], score: float | None, *, full: bool = False) -> dict[str, Any]:
    """A hit as a row; ``full``: it keeps its whole description too (:data:`FULL_TEXT`, taken off again once the
    sentences to quote are picked from it)."""
    row = {k: v for k, v in payload.items() if k not in ("_hash", "_text_hash", "_image", "text")}
    row["entity_type"] = row.pop("type", None)
    text, at = str(payload.get("text", "")), payload.get("about_at")
    row["snippet"], row["about_at"] = snippet(text, at)
    if full:  # the description whole
        row[FULL_TEXT] = text[at:].strip() if isinstance(at, int) else ""
    if score is not None:
        row["score"] = round(float(score), 4)
    return row


def snippet(text: str, about: Any) -> tuple[str, int | None]:
    """The stored text's start, which a lookup answers from (at most SNIPPET_CHARS), and where its description
    starts in it: at least ABOUT_CHARS of the description, in whole sentences where one ends in time, after as much
    of the head (name, links, other names) as fits; a long head (a character in twelve works) is cut, not the
    description."""
    if len(text) <= SNIPPET_CHARS or not isinstance(about, int) or not 0 < about < len(text):
        return text[:SNIPPET_CHARS], about
    story = text[about:]
    room = max(SNIPPET_CHARS - about, ABOUT_CHARS)
    if len(story) > room:
        stop = story.rfind(". ", 0, room)
        story = story[:stop + 1] if stop > 0 else story[:room]
    head = text[:about]
    if len(head) + len(story) > SNIPPET_CHARS:
        head = head[:max(0, SNIPPET_CHARS - len(story) - 5)].rstrip(" ,.") + "... "
    return head + story, len(head)


def _quotes(intent: SearchIntent) -> bool:
    """Whether the step quotes its records: an explanation's fetch of named records, with the question to rank by."""
    return bool(intent.quote and intent.filters.id and intent.query is not None)


def summarize(intent: SearchIntent, rows: list[dict[str, Any]]) -> str:
    if intent.filters.id:
        what = f"ids {', '.join(intent.filters.id[:5])}"
    elif intent.image_query is not None:
        what = "the image" + (f" and {intent.query!r}" if intent.query is not None else "")
    else:
        what = repr(intent.query)
    if not rows:
        return f"No {intent.entity_type} found for {what}."
    lines = [f"{len(rows)} {intent.entity_type} result(s) for {what}:"]
    for i, row in enumerate(rows, 1):
        year = f", {row['year']}" if row.get("year") else ""
        lines.append(f"{i}. {row.get('name')} ({row['entity_type']}{year}) [id {row['id']}]: {row['snippet']}")
    return clip_lines(lines)


class QdrantExecutor:
    """Runs :class:`SearchIntent` against one collection per entity type. Never blocks the event loop.

    ``embed_image`` embeds a search's image; without it (no image model configured) a search with an image is
    refused as :class:`~agentic_rag.errors.InvalidInput`."""

    def __init__(self, client: VectorStore, embed: EmbedFn, settings: Settings,
                 embed_image: ImageEmbedFn | None = None) -> None:
        self.client = client
        self.settings = settings
        self._embed = embed
        self._embed_image = embed_image
        self._image_bounds = ImageBounds.of(settings)
        self._timeout = settings.query_timeout_ms / 1000
        self._attempts = settings.retry_attempts
        # an embedded store (edge or local mode) lives in this process: one call at a time
        self._lock = threading.Lock() if settings.qdrant_url is None else None

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if self._lock is None:
            return fn(*args, **kwargs)
        with self._lock:
            return fn(*args, **kwargs)

    async def embed_query(self, text: str) -> list[float]:
        """``text`` as the vector a search by it uses."""
        return (await self._embed([text]))[0].tolist()  # type: ignore[no-any-return]

    async def image(self, image_query: str) -> bytes:
        """A search's image, fetched or decoded and verified (:func:`~agentic_rag.models.images.read_image_query`);
        ``InvalidInput`` when it is refused or when no image model is configured."""
        if self._embed_image is None:
            raise ImageSearchOff(IMAGE_SEARCH_OFF)
        return await read_image_query(image_query, self._image_bounds)

    async def execute(self, intent: SearchIntent, *, image: bytes | None = None) -> RetrievalResult:
        """Fetch by ``filters.id`` (no embedding, unless ``quote`` asks for each record's sentences nearest the
        query), or search by the image (``image_query``, or ``image`` already
        read by :meth:`image`), else by the query's meaning; 0 results is a result.

        The image is read and verified before anything else, within its own fetch limit. The time limit covers
        embedding the query and the search; running out while embedding is the embedder's failure
        (``RetrievalError`` of ``embedder``), not Qdrant's."""
        name = collection_name(self.settings, intent.entity_type)
        if image is None and intent.image_query is not None and not intent.filters.id:
            image = await self.image(intent.image_query)
        vector: list[float] | None = None
        using: str | None = None
        try:
            async with asyncio.timeout(self._timeout):
                if not intent.filters.id and image is not None:
                    assert self._embed_image is not None  # self.image() refused it otherwise
                    vector, using = (await self._embed_image([image]))[0].tolist(), IMAGE_VECTOR
                elif not intent.filters.id:
                    assert intent.query is not None  # SearchIntent guarantees a query, an image or ids
                    vector = (await self._embed([intent.query]))[0].tolist()
                async for attempt in retrying(self._attempts, qdrant_transient):  # the one policy, Qdrant's transient
                    with attempt:
                        result = await self._run(name, intent, vector, using)
                        break
        except TimeoutError as exc:
            if vector is None and not intent.filters.id:
                raise RetrievalError("embedder", "timeout", "the query was not embedded within the time limit") \
                    from exc
            raise RetrievalError("qdrant", "timeout", f"qdrant search in {name} ran past its time limit") from exc
        except QDRANT_FAILURES as exc:
            raise RetrievalError("qdrant", "unavailable", f"qdrant search in {name} failed: {exc}") from exc
        if _quotes(intent):
            assert intent.query is not None
            await self._quoted(intent.query, result.raw_data)
        return result

    async def _run(self, name: str, intent: SearchIntent, vector: list[float] | None,
                   using: str | None) -> RetrievalResult:
        if vector is None:
            with tracing.span("qdrant.retrieve", {"db.system.name": "qdrant", "db.collection.name": name,
                                                  "agentic_rag.ids": len(intent.filters.id)}) as span:
                points = await asyncio.to_thread(self.call, self.client.retrieve, name, list(intent.filters.id),
                                                 with_payload=True, with_vectors=False)
                span.set_attribute("agentic_rag.rows", len(points))
            order = {pid: i for i, pid in enumerate(intent.filters.id)}
            points = sorted(points, key=lambda p: order.get(str(p.id), 0))
            payloads: list[tuple[dict[str, Any], float | None]] = [(p.payload or {}, None) for p in points]
        else:
            with tracing.span("qdrant.query", {"db.system.name": "qdrant", "db.collection.name": name,
                                               "agentic_rag.vector": using or "text", "agentic_rag.limit": intent.limit}
                              ) as span:
                response = await asyncio.to_thread(
                    self.call, self.client.query_points, name, query=vector, using=using,
                    query_filter=compile_filter(intent.filters), limit=intent.limit, with_payload=True,
                )
                span.set_attribute("agentic_rag.rows", len(response.points))
            payloads = [(p.payload or {}, p.score) for p in response.points]
        rows = [_row(payload, score, full=_quotes(intent)) for payload, score in payloads]
        return RetrievalResult(summary=summarize(intent, rows), raw_data=rows, count=len(rows))

    async def _quoted(self, query: str, rows: list[dict[str, Any]]) -> None:
        """An explanation's records: each row gets the sentences of its description nearest in meaning to the
        question (``quotes``). The records stand without them when the encoder does not answer in time: the answer
        then quotes nothing, which is no reason to lose the step."""
        # the whole description, not the snippet's start of it: the sentence that says why may come after it
        texts = [str(row.pop(FULL_TEXT)) if FULL_TEXT in row else about(row, str(row.get("snippet", "")))
                 for row in rows]
        try:
            async with asyncio.timeout(self._timeout):
                said = await quote(self._embed, query, texts)
        except TimeoutError:
            log.warning("the sentences to quote were not embedded within %.1f s", self._timeout)
            return
        for row, best in zip(rows, said, strict=True):
            row["quotes"] = [{"text": s, "score": v} for s, v in best]
