"""SQL text for asyncpg: named parameters compiled once to ``$1..$n``, and quoted identifiers.

asyncpg binds parameters by position. A statement with many parameters, or one assembled from
fragments, reads better and is safer with names: :class:`Query` takes ``:name`` placeholders (the
same name may appear more than once; ``::type`` casts and quoted text are left alone), compiles them
once when the module is imported, and :meth:`Query.args` puts the values in order. Values are always
bound, never written into the text. Identifiers come only from our own code (table and column names of
the schema), quoted by :func:`ident`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

import asyncpg
from opentelemetry.trace import SpanKind

from agentic_rag import tracing

__all__ = ["Conn", "Pool", "Query", "affected", "ident", "idents"]

# A connection as the code sees it: one of its own, or one lent by the pool (a proxy with the same methods).
Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | asyncpg.pool.PoolConnectionProxy[asyncpg.Record]"
Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

# a quoted literal or identifier (skipped whole), a cast (skipped), or a :name placeholder
_TOKEN = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|::|:([A-Za-z_][A-Za-z0-9_]*)")


class Query:
    """One statement with ``:name`` placeholders, compiled to asyncpg's ``$n`` form."""

    __slots__ = ("names", "text")

    def __init__(self, text: str) -> None:
        names: list[str] = []

        def number(m: re.Match[str]) -> str:
            name = m.group(1)
            if name is None:
                return m.group(0)
            if name not in names:
                names.append(name)
            return f"${names.index(name) + 1}"

        self.text = _TOKEN.sub(number, text)
        self.names = tuple(names)

    def args(self, params: Mapping[str, Any]) -> list[Any]:
        """The values of ``params`` in placeholder order; a missing name is a ``KeyError``."""
        return [params[n] for n in self.names]

    async def fetch(self, conn: Conn, params: Mapping[str, Any] | None = None) -> list[asyncpg.Record]:
        return await conn.fetch(self.text, *self.args(params or {}))

    async def fetchrow(self, conn: Conn, params: Mapping[str, Any] | None = None
                       ) -> asyncpg.Record | None:
        return await conn.fetchrow(self.text, *self.args(params or {}))

    async def execute(self, conn: Conn, params: Mapping[str, Any] | None = None) -> str:
        """Run it; returns the command tag ("UPDATE 1")."""
        return await conn.execute(self.text, *self.args(params or {}))

    async def fetchmany(self, conn: Conn, batch: Iterable[Mapping[str, Any]]) -> list[asyncpg.Record]:
        """Run it once per parameter set, pipelined in one round trip and atomically (asyncpg's executemany,
        returning rows). A span of its own, with the attributes asyncpg's instrumentation gives the calls it covers:
        it does not cover this one."""
        args = [self.args(p) for p in batch]
        name = tracing.statement_name(self.text)
        with tracing.span(name, {"db.system": "postgresql", "db.query.summary": name,
                                 "db.operation.batch.size": len(args)}, kind=SpanKind.CLIENT):
            return await conn.fetchmany(self.text, args)

    def __repr__(self) -> str:
        return f"Query({self.text!r})"


def ident(name: str) -> str:
    """``name`` as a quoted SQL identifier (for names from our own code, never from input)."""
    return '"' + name.replace('"', '""') + '"'


def idents(names: Sequence[str]) -> str:
    """Quoted identifiers, comma-separated."""
    return ", ".join(ident(n) for n in names)


def affected(tag: str) -> int:
    """The row count of a command tag ("INSERT 0 3" -> 3, "DELETE 2" -> 2; 0 when it has none)."""
    last = tag.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0
