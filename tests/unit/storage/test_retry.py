"""What the one retry policy calls transient: the connection, never a time limit, never a refused statement."""

from __future__ import annotations

import asyncpg
import pytest
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from agentic_rag.storage.retry import ConnectionLost, ConnectRefused, PoolTimeout, qdrant_transient, transient


@pytest.mark.parametrize("exc", [
    ConnectionRefusedError(111, "refused"), ConnectionResetError(), PoolTimeout("busy"), ConnectRefused("no db"),
    ConnectionLost("closed"), asyncpg.ConnectionDoesNotExistError("gone"), asyncpg.AdminShutdownError("bye"),
    asyncpg.CannotConnectNowError("starting"), asyncpg.TooManyConnectionsError("full"),
])
def test_connection_failures_are_retried(exc: BaseException) -> None:
    assert transient(exc)


@pytest.mark.parametrize("exc", [
    TimeoutError(), asyncpg.QueryCanceledError("statement timeout"), asyncpg.UniqueViolationError("dup"),
    asyncpg.UndefinedTableError("no table"), asyncpg.InterfaceError("another operation is in progress"),
    ValueError("bad"),
])
def test_verdicts_and_bugs_are_not(exc: BaseException) -> None:
    assert not transient(exc)


def test_qdrant_has_its_own_transient_under_the_same_policy() -> None:
    def status(code: int) -> UnexpectedResponse:
        return UnexpectedResponse(status_code=code, reason_phrase="", content=b"", headers=None)  # type: ignore[arg-type]

    assert qdrant_transient(status(503)) and qdrant_transient(ConnectionResetError())
    assert qdrant_transient(ResponseHandlingException(ValueError("truncated")))
    assert not qdrant_transient(status(400)) and not qdrant_transient(TimeoutError()) and not transient(status(503))
