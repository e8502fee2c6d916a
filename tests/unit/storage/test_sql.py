"""Named parameters compiled to asyncpg's positional form, and connection strings in either form."""

from __future__ import annotations

import pytest

from agentic_rag.dsn import asyncpg_args, conninfo, to_url, with_database
from agentic_rag.storage.sql import Query, affected, ident


def test_names_become_positions_in_order_of_first_use() -> None:
    q = Query("SELECT :b::text, x FROM t WHERE a = :a AND b = :b AND c::int = 1 AND d = ':not' AND \":q\" = 1")
    assert q.text == "SELECT $1::text, x FROM t WHERE a = $2 AND b = $1 AND c::int = 1 AND d = ':not' AND \":q\" = 1"
    assert q.names == ("b", "a")
    assert q.args({"a": 1, "b": "x", "unused": 2}) == ["x", 1]
    with pytest.raises(KeyError):
        q.args({"a": 1})


def test_identifiers_are_quoted_and_tags_counted() -> None:
    assert ident("anime") == '"anime"' and ident('we"ird') == '"we""ird"'
    assert affected("INSERT 0 3") == 3 and affected("UPDATE 0") == 0 and affected("CREATE TABLE") == 0


@pytest.mark.parametrize(("dsn", "url"), [
    ("postgresql://u@h:5433/db", "postgresql://u@h:5433/db"),
    ("host=h port=5433 user=u dbname=db", "postgresql://u@h:5433/db"),
    ("host=/run/pg user=u password='a b\\'c' dbname=db", "postgresql://u:a%20b%27c@/db?host=%2Frun%2Fpg"),
    ("host=h dbname=db options='-c statement_timeout=5'", "postgresql://h/db?options=-c+statement_timeout%3D5"),
])
def test_either_form_of_dsn_becomes_a_url(dsn: str, url: str) -> None:
    assert to_url(dsn) == url
    assert conninfo(to_url(dsn)) == conninfo(dsn)


def test_another_database_and_the_connect_timeout() -> None:
    assert with_database("postgresql://u:p@h:5432/postgres?sslmode=disable", "x") == \
        "postgresql://u:p@h:5432/x?sslmode=disable"
    assert asyncpg_args("host=h dbname=d connect_timeout=3") == ("postgresql://h/d", 3.0)
    assert asyncpg_args("postgresql://h/d")[1] == 60.0


@pytest.mark.parametrize("dsn", ["mysql://h/db", "localhost", "host='unclosed"])
def test_what_is_not_a_dsn_is_refused(dsn: str) -> None:
    with pytest.raises(ValueError):
        conninfo(dsn)
