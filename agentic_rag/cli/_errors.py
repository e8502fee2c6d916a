"""Which failures a person can fix, and the one line that tells them how.

The CLI's error boundary (``_app.Commands``) asks :func:`explain` about every exception a command lets
escape: a known cause becomes one line and exit status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import socket

import asyncpg

from agentic_rag.catalog.records import CatalogError
from agentic_rag.eval.questions import QuestionSetError
from agentic_rag.models.packaged import FetchError
from agentic_rag.orchestrator.loop import ClarificationError
from agentic_rag.orchestrator.runtime import CatalogEmpty
from agentic_rag.orchestrator.trajectory import TrajectoryError
from agentic_rag.storage.postgres import DatabaseUnavailable
from agentic_rag.storage.qdrant import QdrantUnavailable

# Errors whose message already says what is wrong and what to do (a Qdrant store in use, no database, ...)
SELF_EXPLAINED: tuple[type[Exception], ...] = (
    QdrantUnavailable, DatabaseUnavailable, CatalogEmpty, CatalogError, TrajectoryError, ClarificationError,
    FetchError, QuestionSetError,
)
# PostgreSQL out of reach. The CLI's only raw-socket client is asyncpg (HTTP and Ray commands catch their own).
UNREACHABLE: tuple[type[Exception], ...] = (
    ConnectionError, socket.gaierror, asyncpg.PostgresConnectionError, asyncpg.CannotConnectNowError,
    asyncpg.TooManyConnectionsError,
)
LOGIN_REFUSED: tuple[type[Exception], ...] = (asyncpg.InvalidPasswordError,
                                               asyncpg.InvalidAuthorizationSpecificationError)


def explain(exc: BaseException) -> str | None:
    """One line on what went wrong and what to do about it, or None when the cause is not a known one.

    An exception group (concurrent work) is explained when all it holds is; by its first member."""
    if isinstance(exc, BaseExceptionGroup):
        lines = [explain(e) for e in exc.exceptions]
        return lines[0] if all(lines) else None
    if isinstance(exc, SELF_EXPLAINED):
        return str(exc)
    if isinstance(exc, asyncpg.UndefinedTableError):
        return f"the database has no catalog tables ({exc}): run `agentic-rag ingest` first"
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return f"{exc}: create it, or set RAG_DATABASE_URL to a database that exists"
    if isinstance(exc, LOGIN_REFUSED):
        return f"PostgreSQL refused the login ({exc}): check the user and password in RAG_DATABASE_URL"
    if isinstance(exc, UNREACHABLE):
        return (f"cannot reach PostgreSQL ({exc or type(exc).__name__}): start it, or set RAG_DATABASE_URL "
                "to a server that is running")
    return None
