"""Which failures a person can fix, and the one line that tells them how.

The CLI's error boundary (``_app.Commands``) asks :func:`explain` about every exception a command lets
escape: a known cause becomes one line and exit status 1; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import socket

import asyncpg
from pydantic import ValidationError

from agentic_rag.errors import AgenticRagError

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
    if isinstance(exc, ValidationError) and exc.title == "Settings":  # a setting refused at startup: which, why
        return "invalid settings: " + "; ".join(
            f"{setting_name(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False, include_input=False))
    if isinstance(exc, AgenticRagError):  # ours say what is wrong and what to do (a Qdrant store in use ...)
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


def setting_name(loc: tuple[int | str, ...]) -> str:
    """A refused setting as its environment variable names it (``RAG_KEY_MAX_RUNS``), with the path inside it."""
    head, *rest = [str(part) for part in loc] or ["?"]
    return f"RAG_{head.upper()}" + "".join(f"[{part}]" for part in rest)
