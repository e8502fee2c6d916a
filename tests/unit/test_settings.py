"""The one settings object: environment prefix, the DATABASE_URL alias, validation."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from agentic_rag.settings import Settings, parse_duration


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


@pytest.mark.parametrize(("text", "span"), [
    ("30d", timedelta(days=30)), ("12h", timedelta(hours=12)), ("90m", timedelta(minutes=90)),
    ("45s", timedelta(seconds=45)), ("2w", timedelta(weeks=2)), ("1d12h", timedelta(hours=36)),
    ("1.5h", timedelta(minutes=90)), (" 7D ", timedelta(days=7)), ("3600", timedelta(hours=1)),
    (3600, timedelta(hours=1)), (timedelta(days=1), timedelta(days=1)),
])
def test_durations_are_read_in_the_units_people_write(text: object, span: timedelta) -> None:
    assert parse_duration(text) == span


@pytest.mark.parametrize(("text", "why"), [
    ("0d", "must be longer than zero"), ("0", "must be longer than zero"), ("-1d", "must be longer than zero"),
    (-5, "must be longer than zero"), (timedelta(0), "must be longer than zero"),
    ("soon", "is not a duration"), ("30 days", "is not a duration"), ("P30D", "is not a duration"), ("", "is not a"),
    ("d", "is not a duration"), ("1y", "is not a duration"), (True, "is not a duration"),
    ("99999999d", "is longer than 36500d"), (float("inf"), "is longer than"), (float("nan"), "longer than zero"),
])
def test_other_durations_are_refused_saying_why(text: object, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_duration(text)


def test_trajectory_retention_defaults_to_30_days_and_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(_env_file=None).trajectory_retention == timedelta(days=30)  # type: ignore[call-arg]
    monkeypatch.setenv("RAG_TRAJECTORY_RETENTION", "12h")
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.trajectory_retention == timedelta(hours=12)
    assert Settings.model_validate(s.model_dump(mode="json")).trajectory_retention == timedelta(hours=12)


@pytest.mark.parametrize("value", ["0d", "-3d", "0", "forever"])
def test_a_retention_of_zero_or_less_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch,
                                                                    value: str) -> None:
    monkeypatch.setenv("RAG_TRAJECTORY_RETENTION", value)
    with pytest.raises(ValidationError) as info:
        Settings(_env_file=None)  # type: ignore[call-arg]
    (error,) = info.value.errors()
    assert error["loc"] == ("trajectory_retention",)
    assert error["msg"].startswith(f"{value!r} ")  # the whole line is ours: no "Value error, " before it
