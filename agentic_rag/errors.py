"""The one exception hierarchy of agentic-rag: every failure raised on purpose is an :class:`AgenticRagError`.

A failure says *what kind* of failure it is (:data:`ErrorKind`): bad input, nothing found, a conflict with
the record's state, a store or deployment unavailable, out of time, or a model that gave no valid output.
The API layers map a kind to an HTTP and a gRPC status in one table
(:data:`agentic_rag.api.errors.STATUSES`); the CLI prints the message of any of them as one line.

Each family also keeps the built-in base that code around it already catches (``ValueError`` for bad input,
``LookupError`` for a missing record, ``TimeoutError``), so a caller may catch either.

An error crosses a Ray handle as itself: a replica raises it, Ray pickles it, and the caller re-raises the
original (:func:`agentic_rag.serve.wire.settle`). :meth:`AgenticRagError.__reduce__` makes that work
whatever a subclass's constructor takes. This module imports nothing else of ours, so every layer can use it.
"""

from __future__ import annotations

from typing import Any, Literal

# What kind of failure it was, in the words the API shows a client (an error body's ``type``). The core raises
# the first group; the API layers raise the rest at their edge.
ErrorKind = Literal[
    "validation_error",  # the request or a value in it is not acceptable
    "invalid_choice",  # a clarification answered with a choice that was not offered
    "not_found",  # no such record (for this tenant)
    "conflict",  # the record is not in a state that allows this
    "unavailable",  # a store or a deployment did not answer: worth retrying
    "overloaded",  # refused at the door: too much in flight
    "timeout",  # ran past its time limit
    "model_error",  # a model gave no valid output after its retries
    "internal_error",  # a failure of ours with no better kind
    # the edge's own
    "bad_request", "invalid_json", "unauthorized", "forbidden", "method_not_allowed", "not_acceptable",
    "payload_too_large", "unsupported_media_type", "too_many_requests",
]


def _rebuild(cls: type[AgenticRagError], args: tuple[Any, ...], state: dict[str, Any]) -> AgenticRagError:
    """An error as it was pickled: its args and its fields, without calling its constructor again."""
    exc = cls.__new__(cls)
    exc.args = args
    exc.__dict__.update(state)
    return exc


class AgenticRagError(Exception):
    """The base of every failure agentic-rag raises on purpose; :attr:`kind` says which family it is."""

    kind: ErrorKind = "internal_error"

    def __reduce__(self) -> tuple[Any, ...]:
        # the default pickles ``cls(*args)``, which breaks for a constructor with other parameters
        return _rebuild, (type(self), self.args, dict(self.__dict__))


class InvalidInput(AgenticRagError, ValueError):
    """A request, or a value in it, that cannot be accepted; the message says which and why."""

    kind: ErrorKind = "validation_error"


class NotFound(AgenticRagError, LookupError):
    """No such record, or none this tenant may see."""

    kind: ErrorKind = "not_found"


class Conflict(AgenticRagError):
    """The record exists but is not in a state that allows what was asked."""

    kind: ErrorKind = "conflict"


class Unavailable(AgenticRagError):
    """A store or a deployment did not answer; the same request may succeed if retried."""

    kind: ErrorKind = "unavailable"


class Overloaded(Unavailable):
    """Refused before any work started: too much already in flight."""

    kind: ErrorKind = "overloaded"


class Timeout(AgenticRagError, TimeoutError):
    """A step or a request ran past its time limit."""

    kind: ErrorKind = "timeout"
