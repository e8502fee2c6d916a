"""What a GraphQL client is told when something fails, and what it is never told.

A failure the client can act on (bad input, no such trajectory, an API key missing, the agent busy) is a
:class:`ClientError`: its message goes out as it is, with ``extensions.code`` set to the same word the HTTP
API puts in an error body's ``type`` (:data:`agentic_rag.errors.ErrorKind`). Anything else is a bug or an
unexpected failure: :class:`MaskInternalErrors` replaces its message, and the log keeps the traceback.
"""

from __future__ import annotations

import logging
from typing import Any

from graphql import GraphQLError
from pydantic import ValidationError
from strawberry.extensions import MaskErrors

from agentic_rag.errors import ErrorKind

__all__ = ["INTERNAL_MESSAGE", "ClientError", "MaskInternalErrors", "from_validation", "is_client_error"]

log = logging.getLogger(__name__)

INTERNAL_MESSAGE = "an internal error occurred; it has been logged"


class ClientError(GraphQLError):
    """A failure the client caused or can retry; ``code`` names its kind, as the HTTP API's error ``type``."""

    def __init__(self, code: ErrorKind, message: str, **extensions: Any) -> None:
        super().__init__(message, extensions={"code": code, **extensions})
        self.code = code


def from_validation(exc: ValidationError, *, prefix: str = "") -> ClientError:
    """A pydantic validation failure of an argument as one readable error (the first five problems)."""
    problems = [f"{prefix}{'.'.join(str(p) for p in e['loc']) or 'value'}: {e['msg']}" for e in exc.errors()[:5]]
    return ClientError("validation_error", "; ".join(problems) or "invalid value")


def is_client_error(error: GraphQLError) -> bool:
    """Whether ``error`` may be shown as it is: ours for the client, or one of GraphQL's own (syntax, validation,
    an argument of the wrong type), which carry no original exception."""
    original = error.original_error
    return original is None or isinstance(original, GraphQLError)


class MaskInternalErrors(MaskErrors):
    """Replaces the message of every error that is not a client error; a bug's text never reaches a client."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=lambda e: not is_client_error(e), error_message=INTERNAL_MESSAGE)

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        masked = super().anonymise_error(error)
        masked.extensions = {"code": "internal_error"}
        return masked
