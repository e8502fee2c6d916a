"""Log lines that say which request they belong to: JSON to stderr, with ``request_id`` on every line.

The ids live in context variables, so concurrent runs on one event loop (an Orchestrator replica holds
many) each log their own id without passing it around; ``asyncio`` tasks and ``asyncio.to_thread``
copy the context they were started from.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

from agentic_rag.settings import Settings

request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)
trajectory_id_var: ContextVar[str | None] = ContextVar("trajectory_id", default=None)

HANDLER_NAME = "agentic_rag"
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
ERROR_TEXT_MAX = 500  # characters of an exception's message kept in a log line, an error event or a 503's log
QUOTED_INPUT_MAX = 100  # characters of a caller's input (a name, an id, a schema title) an error message quotes


class RequestContextFilter(logging.Filter):
    """Put ``request_id`` (and ``trajectory_id`` when one is set) onto every record it sees."""

    def filter(self, record: logging.LogRecord) -> bool:
        # An id passed explicitly with extra={"request_id": ...} wins over the context.
        if not hasattr(record, "request_id"):
            record.request_id = request_id_var.get()
        trajectory_id = trajectory_id_var.get()
        if trajectory_id is not None and not hasattr(record, "trajectory_id"):
            record.trajectory_id = trajectory_id
        return True


def _formatter(json_lines: bool) -> logging.Formatter:
    if not json_lines:
        return logging.Formatter(TEXT_FORMAT)
    return JsonFormatter(
        ["levelname", "name", "message"],
        rename_fields={"levelname": "level", "name": "logger"},
        timestamp=True,
    )


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is when a record is emitted, not as it was when logging was set up: a
    command run inside another program (a test's captured stderr, closed after the test) must not leave a
    handler writing to a closed stream."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _: TextIO) -> None:  # StreamHandler.__init__ and setStream assign it; sys.stderr decides
        pass


def configure_logging(settings: Settings, stream: TextIO | None = None) -> logging.Handler:
    """Send root logging to ``stream`` (default: whatever ``sys.stderr`` is at each record) at
    ``settings.log_level``, JSON lines if ``settings.log_json``.

    Idempotent: calling it again replaces this module's handler rather than adding a second one, and
    leaves handlers that others installed alone.
    """
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
        old.close()
    handler = logging.StreamHandler(stream) if stream is not None else _StderrHandler()
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(_formatter(settings.log_json))
    # On the handler, not a logger: a logger's filters skip records that propagate up from child loggers.
    handler.addFilter(RequestContextFilter())
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    return handler


@contextmanager
def request_context(request_id: str | None = None, trajectory_id: str | None = None) -> Iterator[str]:
    """Tag every log line inside the block with ``request_id`` (a new uuid4 hex when None) and ``trajectory_id``.

    Yields the request id. Both ids are restored on exit, so blocks nest.
    """
    rid = request_id or uuid.uuid4().hex
    request_token = request_id_var.set(rid)
    trajectory_token = trajectory_id_var.set(trajectory_id)
    try:
        yield rid
    finally:
        trajectory_id_var.reset(trajectory_token)
        request_id_var.reset(request_token)
