"""The one typed failure of a retrieval step, which the orchestrator turns into partial results."""

from __future__ import annotations

from typing import Literal

import psycopg
from psycopg import errors as pgerrors

FailureKind = Literal["timeout", "unavailable"]


class RetrievalError(RuntimeError):
    """A retrieval step could not complete: it ran past its time limit, or its store stayed unavailable."""

    def __init__(self, source: str, kind: FailureKind, message: str) -> None:
        super().__init__(message)
        self.source = source
        self.kind = kind


def transient_db_error(exc: BaseException) -> bool:
    """Worth retrying: a connection-level failure. A statement timeout is a verdict, not a passing fault."""
    return isinstance(exc, psycopg.OperationalError) and not isinstance(exc, pgerrors.QueryCanceled)
