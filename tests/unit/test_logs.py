"""JSON log lines carry the request id of the work they belong to."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from agentic_rag.logs import HANDLER_NAME, configure_logging, request_context, request_id_var
from agentic_rag.settings import Settings


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    out = io.StringIO()
    configure_logging(Settings(log_level="DEBUG", log_json=True), stream=out)
    yield out
    for handler in root.handlers[:]:
        if handler not in saved_handlers:
            root.removeHandler(handler)
    root.setLevel(saved_level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    """Every line must be JSON; only this test's logger is kept (asyncio logs at DEBUG too)."""
    parsed = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in parsed if line["logger"] == "agentic_rag.test"]


def test_line_inside_a_request_context_is_json_with_its_request_id(stream: io.StringIO) -> None:
    with request_context("r-1", trajectory_id="t-9") as rid:
        logging.getLogger("agentic_rag.test").info("hello %s", "world")
    assert rid == "r-1"
    [line] = lines(stream)
    assert line["request_id"] == "r-1"
    assert line["trajectory_id"] == "t-9"
    assert line["message"] == "hello world"
    assert line["level"] == "INFO"
    assert line["logger"] == "agentic_rag.test"
    assert line["timestamp"]


def test_outside_a_context_request_id_is_null(stream: io.StringIO) -> None:
    logging.getLogger("agentic_rag.test").warning("no request")
    [line] = lines(stream)
    assert line["request_id"] is None
    assert "trajectory_id" not in line


def test_context_generates_an_id_and_restores_the_outer_one(stream: io.StringIO) -> None:
    with request_context("outer"):
        with request_context() as inner:
            assert len(inner) == 32 and request_id_var.get() == inner
        assert request_id_var.get() == "outer"
    assert request_id_var.get() is None


async def test_concurrent_tasks_each_log_their_own_request_id(stream: io.StringIO) -> None:
    log = logging.getLogger("agentic_rag.test")

    async def run(rid: str) -> None:
        with request_context(rid):
            for step in range(3):
                log.info("step %d of %s", step, rid)
                await asyncio.sleep(0)  # interleave the tasks' lines

    await asyncio.gather(*(run(f"r-{i}") for i in range(5)))
    got = lines(stream)
    assert len(got) == 15
    for line in got:
        assert line["message"].endswith(f"of {line['request_id']}")
    # the lines really interleaved, so the ids did not come from running one task after another
    assert [line["request_id"] for line in got[:5]] == [f"r-{i}" for i in range(5)]


def test_configuring_twice_keeps_one_handler(stream: io.StringIO) -> None:
    configure_logging(Settings(log_level="INFO", log_json=True), stream=stream)
    ours = [h for h in logging.getLogger().handlers if h.get_name() == HANDLER_NAME]
    assert len(ours) == 1
    logging.getLogger("agentic_rag.test").info("once")
    assert len(lines(stream)) == 1


def test_plain_text_lines_still_carry_the_request_id(stream: io.StringIO) -> None:
    configure_logging(Settings(log_level="INFO", log_json=False), stream=stream)
    with request_context("r-text"):
        logging.getLogger("agentic_rag.test").info("plain")
    assert "[r-text] plain" in stream.getvalue()


def test_the_default_stream_is_stderr_as_it_is_at_each_record(stream: io.StringIO,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # a command run inside another program (a test whose captured stderr is closed afterwards) must not leave
    # a handler writing to the stream it found at setup
    first = io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    configure_logging(Settings(log_level="DEBUG", log_json=True))  # replaces the fixture's handler
    logging.getLogger("agentic_rag.test").info("to the first")
    first.close()
    second = io.StringIO()
    monkeypatch.setattr("sys.stderr", second)
    logging.getLogger("agentic_rag.test").info("to the second")
    assert [line["message"] for line in lines(second)] == ["to the second"]
