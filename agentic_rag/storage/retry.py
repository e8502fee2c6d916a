"""One retry policy, used by every store: what is transient, how often and how soon to try again.

A failure is transient when another attempt on another connection may not meet it: the connection
broke (a terminated backend, a restarted server), the server refused a new one (:class:`ConnectRefused`),
or the pool had none to lend in time (:class:`PoolTimeout`). A statement that ran past its time limit is
a verdict, not a passing fault: the same statement would take as long again, so it is never retried
(neither asyncpg's ``QueryCanceledError`` from the server's ``statement_timeout`` nor a client-side
``TimeoutError``).

asyncpg's pool does not lend a connection it knows to be closed: one that broke under a statement is
terminated when it comes back, and one whose server went away while it sat idle is closed when the
event loop reads the end of its socket; either is replaced by a fresh connection on the next acquire.
The one gap is a connection used after it read the server's termination notice but before it read the
end of the socket: asyncpg then fails the statement with ``InternalClientError``, and :func:`with_connection`
terminates that connection itself (:class:`ConnectionLost`). By the next attempt (50 ms later) the loop has
read the other idle connections' sockets, so it meets a live one without a check of the idle ones first.

Qdrant has its own definition of transient (:func:`qdrant_transient`) under the same policy: a server error
(5xx), a response that did not arrive whole, a broken connection; never a time limit, never a refusal (4xx).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import asyncpg
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

from agentic_rag.errors import Unavailable
from agentic_rag.storage.sql import Conn, Pool

__all__ = ["CONNECTION_ERRORS", "DATABASE_FAILURES", "QDRANT_FAILURES", "Conn", "ConnectRefused", "ConnectionLost",
           "PoolTimeout", "qdrant_transient", "retrying", "transient", "with_connection"]

T = TypeVar("T")
POOL_TIMEOUT_S = 30.0  # the longest wait for a pooled connection before the attempt fails as PoolTimeout


class PoolTimeout(Unavailable, ConnectionError):
    """The pool had no connection to lend within :data:`POOL_TIMEOUT_S` (all busy, or none could be opened)."""


class ConnectRefused(Unavailable, ConnectionError):
    """The server refused a new connection (an unknown database, failed authentication, too many clients)."""


class ConnectionLost(Unavailable, ConnectionError):
    """The connection closed between two statements of one operation, or its protocol state broke (asyncpg's
    ``InternalClientError``: a server's termination notice read while the connection sat idle, say)."""


# Connection-level failures. TimeoutError is an OSError: catch it first where a timeout means something else.
CONNECTION_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # refused, reset, unreachable; PoolTimeout, ConnectRefused and ConnectionLost
    asyncpg.PostgresConnectionError,  # SQLSTATE class 08, and a connection that closed under a statement
    asyncpg.AdminShutdownError, asyncpg.CrashShutdownError, asyncpg.CannotConnectNowError,  # 57P01-57P03
    asyncpg.TooManyConnectionsError,  # 53300
)
# What a statement may fail with that is no bug: a time limit (client or server side) or the connection.
DATABASE_FAILURES: tuple[type[BaseException], ...] = (TimeoutError, asyncpg.QueryCanceledError, *CONNECTION_ERRORS)


def transient(exc: BaseException) -> bool:
    """Worth another attempt: a connection-level failure, never a timeout."""
    return isinstance(exc, CONNECTION_ERRORS) and not isinstance(exc, TimeoutError)


# What a call to a Qdrant server may fail with that is no bug (a client-side time limit aside)
QDRANT_FAILURES: tuple[type[BaseException], ...] = (UnexpectedResponse, ResponseHandlingException, ConnectionError)


def qdrant_transient(exc: BaseException) -> bool:
    """Worth another attempt at Qdrant: a server error (5xx), an unreadable response, a broken connection."""
    if isinstance(exc, UnexpectedResponse):
        return exc.status_code is not None and exc.status_code >= 500
    return isinstance(exc, QDRANT_FAILURES)


def retrying(attempts: int, when: Callable[[BaseException], bool] = transient) -> AsyncRetrying:
    """The policy: ``attempts`` tries in all, 50 ms then doubling (at most 1 s) between them, of the failures
    ``when`` calls transient (PostgreSQL's :func:`transient`, or :func:`qdrant_transient`); the last error is
    raised as itself."""
    return AsyncRetrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=0.05, max=1.0),
                         retry=retry_if_exception(when), reraise=True)


async def _attempt(pool: Pool, op: Callable[[Conn], Awaitable[T]]) -> T:
    try:
        conn = await pool.acquire(timeout=POOL_TIMEOUT_S)
    except TimeoutError as exc:  # only the acquire's own limit: an outer asyncio.timeout cancels instead
        raise PoolTimeout(f"no pooled connection within {POOL_TIMEOUT_S:g} s") from exc
    except asyncpg.PostgresError as exc:  # the pool opened a connection and the server said no
        raise ConnectRefused(str(exc)) from exc
    try:
        return await op(conn)
    except (asyncpg.InterfaceError, asyncpg.InternalClientError) as exc:
        if isinstance(exc, asyncpg.InternalClientError) or _gone(conn):
            with contextlib.suppress(asyncpg.InterfaceError):  # the pool may have taken it back already
                conn.terminate()  # never lent again: the next acquire opens a fresh connection
            raise ConnectionLost(str(exc)) from exc
        raise
    finally:
        await pool.release(conn)


def _gone(conn: Conn) -> bool:
    """Closed, or already taken back by the pool because it closed under a statement (a terminated backend met
    inside ``conn.transaction()``): the pool's proxy then refuses every call, ``is_closed`` included."""
    try:
        return conn.is_closed()
    except asyncpg.InterfaceError:
        return True


async def with_connection(pool: Pool, op: Callable[[Conn], Awaitable[T]], *, attempts: int,
                          timeout_s: float | None = None) -> T:
    """``op`` on a pooled connection, retried under the policy on a fresh one. ``timeout_s`` bounds each attempt,
    the wait for a connection included.

    Each statement commits on its own (asyncpg's autocommit); an ``op`` whose statements must commit together
    opens ``conn.transaction()``, and a failure rolls it back before the connection goes back to the pool."""
    async for attempt in retrying(attempts):
        with attempt:
            async with asyncio.timeout(timeout_s):
                return await _attempt(pool, op)
    raise AssertionError("unreachable")  # pragma: no cover
