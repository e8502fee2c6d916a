"""``agentic-rag prune`` as an operator runs it, against a database of its own: a dry run, a prune, a refusal."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import asyncpg
import pytest
from typer.testing import CliRunner

from agentic_rag.cli import app
from agentic_rag.dsn import to_url
from agentic_rag.storage.postgres import migrate

pytestmark = pytest.mark.integration
runner = CliRunner()

# three runs that finished three days ago with two events each, one that started then and still runs, one of today
SEED = """
    INSERT INTO trajectories (id, request_id, query, status, created_at, finished_at)
    SELECT gen_random_uuid(), 'old-' || i, 'q', 'answered', now() - interval '3 days', now() - interval '3 days'
    FROM generate_series(1, 3) i;
    INSERT INTO trajectories (id, request_id, query, status, created_at)
    VALUES (gen_random_uuid(), 'stuck', 'q', 'running', now() - interval '3 days');
    INSERT INTO trajectories (id, request_id, query, status, finished_at)
    VALUES (gen_random_uuid(), 'today', 'q', 'answered', now());
    INSERT INTO trajectory_events (trajectory_id, seq, stage, type)
    SELECT id, seq, 'select', 'decision' FROM trajectories, generate_series(1, 2) seq;
"""


def sql(dsn: str, statement: str, fetch: bool = False) -> list[asyncpg.Record]:
    async def run() -> list[asyncpg.Record]:
        conn = await asyncpg.connect(to_url(dsn))
        try:
            if fetch:
                return await conn.fetch(statement)
            await conn.execute(statement)  # several statements, unprepared
            return []
        finally:
            await conn.close()

    return asyncio.run(run())


def left(dsn: str) -> list[str]:
    return sorted(r[0] for r in sql(dsn, "SELECT request_id FROM trajectories", fetch=True))


@pytest.fixture
def database(scratch: Callable[[str], AbstractContextManager[str]], monkeypatch: pytest.MonkeyPatch,
             tmp_path: Path) -> Iterator[str]:
    with scratch(f"agentic_rag_cli_prune_{os.getpid()}") as dsn:
        asyncio.run(migrate(dsn))
        sql(dsn, SEED)
        monkeypatch.setenv("RAG_DATABASE_URL", dsn)
        monkeypatch.setenv("RAG_DATA_DIR", str(tmp_path / "data"))
        yield dsn


def test_a_dry_run_counts_and_a_prune_deletes(database: str) -> None:
    dry = runner.invoke(app, ["prune", "--older-than", "1d", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "dry run: runs that finished before" in dry.output and "(older than 1d)" in dry.output
    for said in ("would delete 3 run(s) and their 6 event(s)", "would delete 0 expired conversation(s)",
                 "would keep 0 run(s) a live conversation holds"):
        assert said in dry.output
    assert left(database) == ["old-1", "old-2", "old-3", "stuck", "today"]

    result = runner.invoke(app, ["prune", "--older-than", "1d", "--batch", "2"])
    assert result.exit_code == 0, result.output
    for said in ("deleted 3 run(s) and their 6 event(s), in 2 batches", "deleted 0 expired conversation(s)",
                 "kept 0 run(s) a live conversation holds", "skipped 0 run(s) in use"):
        assert said in result.output
    assert left(database) == ["stuck", "today"]  # a run in progress is never deleted, however old


def test_the_retention_setting_is_the_default(database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_TRAJECTORY_RETENTION", "4d")
    result = runner.invoke(app, ["prune"])
    assert result.exit_code == 0, result.output
    assert "(older than 4d)" in result.output and "deleted 0 run(s)" in result.output
    monkeypatch.setenv("RAG_TRAJECTORY_RETENTION", "2d")
    assert "deleted 3 run(s)" in runner.invoke(app, ["prune"]).output
    assert left(database) == ["stuck", "today"]


@pytest.mark.parametrize(("value", "why"), [("0d", "'0d' must be longer than zero"),
                                            ("-2h", "'-2h' must be longer than zero"),
                                            ("soon", "'soon' is not a duration")])
def test_a_cutoff_of_zero_or_less_is_refused_and_nothing_goes(database: str, value: str, why: str) -> None:
    result = runner.invoke(app, ["prune", "--older-than", value])
    assert result.exit_code == 2
    assert "--older-than" in result.output and why in result.output
    assert left(database) == ["old-1", "old-2", "old-3", "stuck", "today"]
