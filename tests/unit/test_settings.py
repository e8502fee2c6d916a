"""The one settings object: environment prefix, the DATABASE_URL alias, validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agentic_rag.settings import Settings


def test_environment_prefix_and_database_url_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAG_STATEMENT_TIMEOUT_MS", "1500")
    monkeypatch.setenv("DATABASE_URL", "postgresql://app@db.internal:5432/catalog")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.statement_timeout_ms == 1500
    assert s.database_url == "postgresql://app@db.internal:5432/catalog"
    monkeypatch.setenv("RAG_DATABASE_URL", "host=other dbname=x")
    assert Settings(_env_file=None).database_url == "host=other dbname=x"  # type: ignore[call-arg]


@pytest.mark.parametrize("dsn", ["postgresql://u@h/db", "postgres://h:5433/db", "user=u dbname=db host=h"])
def test_valid_dsns_are_accepted(dsn: str) -> None:
    assert Settings(database_url=dsn).database_url == dsn


@pytest.mark.parametrize("dsn", ["mysql://h/db", "localhost", "just words here"])
def test_other_strings_are_rejected_as_dsn(dsn: str) -> None:
    with pytest.raises(ValidationError, match="not a PostgreSQL DSN"):
        Settings(database_url=dsn)


@pytest.mark.parametrize(("field", "value"), [("graph_max_hops", 7), ("pool_max_size", 0),
                                              ("database_name", "Robert'); DROP"), ("statement_timeout_ms", 5)])
def test_out_of_range_settings_are_rejected(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        Settings.model_validate({field: value})


def test_defaults_are_embedded() -> None:
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.qdrant_url is None and s.qdrant_engine == "edge" and s.resolved_qdrant_path == s.data_dir / "qdrant-edge"
    # each engine has its own default path: switching never opens the other's files
    assert Settings(_env_file=None, qdrant_engine="local").resolved_qdrant_path == s.data_dir / "qdrant"  # type: ignore[call-arg]


def test_fields_with_env_aliases_are_settable_by_name() -> None:
    assert Settings(agent_max_turns=3).agent_max_turns == 3
    assert Settings(database_url="postgresql://u@h/db").database_url == "postgresql://u@h/db"
