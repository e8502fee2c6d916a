"""The command line as a user runs it: exit codes, messages, output."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rag.catalog.ingest import IngestReport
from agentic_rag.catalog.records import DATA_DIR
from agentic_rag.cli import app

pytestmark = pytest.mark.integration
runner = CliRunner()


@pytest.fixture
def env(dsn: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAG_DATABASE_URL", dsn)
    monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "qdrant"))


def test_search_finds_luffy_from_a_typo(demo: IngestReport, env: None) -> None:
    result = runner.invoke(app, ["search", "lufy", "--limit", "3"])
    assert result.exit_code == 0, result.output
    assert "Monkey D." in result.output and "fuzzy" in result.output


def test_search_rejects_an_unknown_type_with_the_allowed_ones(env: None) -> None:
    result = runner.invoke(app, ["search", "x", "--type", "users"])
    assert result.exit_code == 1
    assert "types.0" in result.output and "'anime'" in result.output


def test_ingest_of_a_broken_file_fails_naming_file_and_record(demo: IngestReport, env: None,
                                                              tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(DATA_DIR, data)
    (data / "cowboy_bebop.yaml").write_text((data / "cowboy_bebop.yaml").read_text().replace(
        "episodes: 26", "episodes: -3", 1))
    result = runner.invoke(app, ["ingest", "--no-index", "--data", str(data)])
    assert result.exit_code == 1
    assert "cowboy_bebop.yaml: record anime[0] (cowboy-bebop): episodes" in result.output


def test_ingest_again_reports_nothing_changed(demo: IngestReport, env: None) -> None:
    result = runner.invoke(app, ["ingest", "--no-index"])
    assert result.exit_code == 0, result.output
    assert "already up to date: nothing changed" in result.output


def test_ask_before_any_ingest_says_to_ingest(scratch: Callable[[str], AbstractContextManager[str]],
                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with scratch(f"agentic_rag_cli_empty_{os.getpid()}") as empty:
        monkeypatch.setenv("RAG_DATABASE_URL", empty)
        monkeypatch.setenv("RAG_QDRANT_PATH", str(tmp_path / "qdrant"))
        result = runner.invoke(app, ["ask", "who is luffy?"])
    assert result.exit_code == 1
    assert result.output.strip() == "error: the catalog is empty: run `agentic-rag ingest` first"
