"""The one typed failure of a retrieval step, which the orchestrator turns into partial results."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

import asyncpg

from agentic_rag.errors import Unavailable
from agentic_rag.storage.retry import CONNECTION_ERRORS, Conn, with_connection
from agentic_rag.storage.sql import Pool

T = TypeVar("T")
FailureKind = Literal["timeout", "unavailable"]


class RetrievalError(Unavailable, RuntimeError):
    """A retrieval step could not complete: it ran past its time limit, or its store stayed unavailable
    (``reason``); ``source`` names the store."""

    def __init__(self, source: str, reason: FailureKind, message: str) -> None:
        super().__init__(message)
        self.source = source
        self.reason = reason


async def on_pool(pool: Pool, source: str, op: Callable[[Conn], Awaitable[T]], *, attempts: int) -> T:
    """A lookup's statements on a pooled connection under the retry policy (:mod:`agentic_rag.storage.retry`);
    a failure that remains is a :class:`RetrievalError` of ``source``."""
    try:
        return await with_connection(pool, op, attempts=attempts)
    except (TimeoutError, asyncpg.QueryCanceledError) as exc:
        raise RetrievalError(source, "timeout", f"{source} ran past its time limit") from exc
    except CONNECTION_ERRORS as exc:
        raise RetrievalError(source, "unavailable", f"{source} failed after {attempts} attempts: {exc}") from exc
