"""One retry policy for PostgreSQL, used by every store: what is transient, how often and how soon to try again.

A failure is transient when another attempt on another connection may not meet it: the connection
broke (a terminated backend, a restarted server), the server refused a new one, or the pool had none
to lend in time. A statement that ran past its time limit is a verdict, not a passing fault: the same
statement would take as long again, so it is never retried (neither ``QueryCanceled`` from the
server's ``statement_timeout`` nor a client-side ``TimeoutError``).

Between attempts the pool's idle connections are checked (:meth:`AsyncConnectionPool.check`): when
PostgreSQL terminated every backend, the next attempt gets a fresh connection rather than the next
dead one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
from psycopg import errors as pgerrors
from psycopg_pool import AsyncConnectionPool
from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt, wait_exponential

__all__ = ["Conn", "retrying", "transient", "with_connection"]

T = TypeVar("T")
Conn = psycopg.AsyncConnection[Any]


def transient(exc: BaseException) -> bool:
    """Worth another attempt: a connection-level failure (``PoolTimeout`` is one), never a timeout."""
    return isinstance(exc, psycopg.OperationalError) and not isinstance(exc, pgerrors.QueryCanceled)


def retrying(attempts: int) -> AsyncRetrying:
    """The policy: ``attempts`` tries in all, 50 ms then doubling (at most 1 s) between them; the last error is
    raised as itself."""
    return AsyncRetrying(stop=stop_after_attempt(attempts), wait=wait_exponential(multiplier=0.05, max=1.0),
                         retry=retry_if_exception(transient), reraise=True)


async def with_connection(pool: AsyncConnectionPool, op: Callable[[Conn], Awaitable[T]], *, attempts: int,
                          timeout_s: float | None = None) -> T:
    """``op`` on a pooled connection (one transaction), retried under the policy on a fresh one. ``timeout_s``
    bounds each attempt, the wait for a connection included."""
    async for attempt in retrying(attempts):
        with attempt:
            if attempt.retry_state.attempt_number > 1:
                await pool.check()  # the connection that failed may not be the only dead one
            async with asyncio.timeout(timeout_s), pool.connection() as conn:
                return await op(conn)
    raise AssertionError("unreachable")  # pragma: no cover
