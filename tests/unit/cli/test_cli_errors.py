"""The CLI's error boundary: a failure a person can fix is one line on what to do and exit status 1."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.cli._errors import explain
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import QdrantUnavailable, open_qdrant

runner = CliRunner()


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def no_database(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    url = f"postgresql://agentic:secret@127.0.0.1:{_closed_port()}/agentic_rag"
    monkeypatch.setenv("RAG_DATABASE_URL", url)
    monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "qdrant"))
    return url


def _one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("error: ") and "Traceback" not in output, output
    return lines[0]


@pytest.mark.parametrize("argv", [["migrate"], ["search", "lufy"], ["trajectory", "abc"]])
def test_an_unreachable_database_is_one_line_naming_the_fix(no_database: str, argv: list[str]) -> None:
    result = runner.invoke(app, argv)
    assert result.exit_code == 1
    line = _one_error_line(result.output)
    assert "cannot reach PostgreSQL" in line and "RAG_DATABASE_URL" in line


@pytest.fixture
def store_in_use(no_database: str, tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "qdrant"
    held = open_qdrant(Settings(qdrant_path=path))  # the running service, say
    try:
        yield path
    finally:
        held.close()


def test_a_qdrant_store_in_use_is_one_line_naming_the_fix(store_in_use: Path) -> None:
    result = runner.invoke(app, ["reindex"])
    assert result.exit_code == 1
    line = _one_error_line(result.output)
    assert str(store_in_use) in line and "in use by another process" in line and "RAG_QDRANT_URL" in line


def test_a_usage_error_stays_clicks_own() -> None:
    result = runner.invoke(app, ["search"])
    assert result.exit_code == 2 and "Missing argument" in result.output


def test_an_unknown_failure_is_not_explained_away() -> None:
    assert explain(ZeroDivisionError("a bug")) is None
    assert explain(ValueError("a bug")) is None


def test_a_group_is_explained_only_when_all_of_it_is() -> None:
    store = QdrantUnavailable("store busy: stop the other process")
    assert explain(ExceptionGroup("both", [store, ConnectionRefusedError(111, "refused")])) == str(store)
    assert explain(ExceptionGroup("mixed", [store, ZeroDivisionError()])) is None


@pytest.mark.parametrize(("env", "named"), [
    ({"RAG_KEY_MAX_RUNS": "-1"}, "RAG_KEY_MAX_RUNS: Input should be greater than or equal to 1"),
    ({"RAG_KEY_RATE_PER_S": "0"}, "RAG_KEY_RATE_PER_S: Input should be greater than 0"),
    ({"RAG_RUNNER_LAPSE_MS": "0"}, "RAG_RUNNER_LAPSE_MS: Input should be greater than or equal to 1000"),
    ({"RAG_KEY_LIMITS": '{"k-0123456789ab": {"max_runs": 0}}'}, "RAG_KEY_LIMITS[k-0123456789ab][max_runs]"),
])
def test_a_bad_setting_is_refused_at_startup_naming_it(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                                       named: str) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = runner.invoke(app, ["search", "lufy"])
    assert result.exit_code == 1
    line = _one_error_line(result.output)
    assert line.startswith("error: invalid settings: ") and named in line, line


def test_a_limit_keyed_by_the_key_itself_is_refused_without_echoing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_KEY_LIMITS", '{"my-secret-api-key": {"max_runs": 0}}')
    result = runner.invoke(app, ["search", "lufy"])
    line = _one_error_line(result.output)
    assert "RAG_KEY_LIMITS" in line and "not a key id" in line and "my-secret" not in result.output


def test_key_id_names_a_key_without_showing_it() -> None:
    by_argument = runner.invoke(app, ["key-id", "flood-key-0123456789"])
    by_stdin = runner.invoke(app, ["key-id"], input="flood-key-0123456789\n")
    assert by_argument.exit_code == by_stdin.exit_code == 0
    assert by_argument.output.strip() == by_stdin.output.strip() == "k-4bec45d56abf"


@pytest.mark.parametrize("argv", [["prune"], ["serve"], ["migrate"]])
@pytest.mark.parametrize(("value", "why"), [("0d", "'0d' must be longer than zero"),
                                            ("-1d", "'-1d' must be longer than zero"),
                                            ("a month", "'a month' is not a duration")])
def test_a_bad_retention_is_refused_at_startup_in_one_line_naming_the_setting(
    no_database: str, monkeypatch: pytest.MonkeyPatch, argv: list[str], value: str, why: str
) -> None:
    monkeypatch.setenv("RAG_TRAJECTORY_RETENTION", value)
    result = runner.invoke(app, argv)
    assert result.exit_code == 1
    line = _one_error_line(result.output)
    assert f"RAG_TRAJECTORY_RETENTION: {why}" in line
