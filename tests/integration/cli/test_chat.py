"""``agentic-rag chat`` through a pseudo-terminal, as a person types into it: turns of one conversation, a
clarification picked by its number, a new conversation, Ctrl-D to leave."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.settings import Settings

pytestmark = pytest.mark.integration

PROMPT = "you> "
WAIT_S = 120.0  # the first turn loads the embedding model and opens the stores


class Terminal:
    """A child process on a pseudo-terminal: what it prints, and keys typed into it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the command, on the terminal
            os.execvpe(argv[0], argv, env)
        self.seen = ""

    def expect(self, pattern: str, timeout: float = WAIT_S) -> str:
        """Read until ``pattern`` appears in what was printed since the last match; what came before it."""
        deadline = time.monotonic() + timeout
        while (m := re.search(pattern, self.seen)) is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} did not appear; the terminal shows:\n{self.seen[-2000:]}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:  # the child closed the terminal
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the process ended before {pattern!r}:\n{self.seen[-2000:]}")
                self.seen += chunk.decode("utf-8", "replace")
        before, self.seen = self.seen[:m.start()], self.seen[m.end():]
        return before

    def type(self, line: str) -> None:
        os.write(self.fd, line.encode() + b"\r")

    def ctrl_d(self) -> None:
        os.write(self.fd, b"\x04")

    def exit_code(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            with_output = select.select([self.fd], [], [], 0.2)[0]
            if with_output:
                with contextlib.suppress(OSError):
                    os.read(self.fd, 4096)
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError("the chat did not exit")


def test_a_conversation_in_the_terminal(demo: IngestReport, dsn: str, settings: Settings, tmp_path: Path) -> None:
    # the embedded Qdrant store opens in one process at a time: the chat gets a copy of the indexed one
    store = tmp_path / "qdrant"
    shutil.copytree(settings.qdrant_path, store)
    env = {**os.environ, "RAG_DATABASE_URL": dsn, "RAG_QDRANT_PATH": str(store), "HOME": str(tmp_path),
           "HF_HUB_OFFLINE": "1", "TERM": "dumb", "COLUMNS": "200"}
    term = Terminal([sys.executable, "-m", "agentic_rag.cli", "chat"], env)
    try:
        term.expect(PROMPT)
        term.type("who directed Death Note?")
        assert "Tetsurō Araki" in term.expect(PROMPT)
        term.type("what else did he direct?")  # a follow-up: "he" is the answer's director
        assert "Attack on Titan" in term.expect(PROMPT)
        term.type("who animated hunter x hunter?")
        offered = term.expect(PROMPT)
        assert "1 Hunter x Hunter" in offered and "type a number" in offered
        choice = next(n for n, label in re.findall(r"(\d) (Hunter x Hunter \(\d{4}\))", offered) if "2011" in label)
        term.type(choice)  # the clarification, picked by its number
        assert "Madhouse" in term.expect(PROMPT)
        term.type("/new")
        assert "a new conversation" in term.expect(PROMPT)
        term.type("what else did he direct?")  # nothing earlier now: no director to point at
        assert "Tetsurō Araki" not in term.expect(PROMPT)
        term.ctrl_d()
        assert term.exit_code() == 0
    finally:
        with_pid = term.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(with_pid, signal.SIGKILL)
        os.close(term.fd)
    # readline kept what was typed
    history = (tmp_path / ".agentic_rag_history").read_text()
    assert "who directed Death Note?" in history and "what else did he direct?" in history
