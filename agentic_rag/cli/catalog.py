"""Catalog commands: ingest, reindex, migrate, the typeahead search, and the private database."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, TaskID
from rich.table import Table

from agentic_rag.catalog.index import IndexChange
from agentic_rag.catalog.load import Change
from agentic_rag.catalog.records import DATA_DIR
from agentic_rag.cli._app import app, console, fail, load_settings, progress_bar
from agentic_rag.storage.devcluster import dev_dsn


def _print_tables(changes: dict[str, Change], seconds: float) -> None:
    table = Table(title=f"PostgreSQL ({seconds:.2f} s)")
    for col in ("table", "rows", "inserted", "updated", "deleted"):
        table.add_column(col, justify="left" if col == "table" else "right")
    for name, c in changes.items():
        table.add_row(name, str(c.total), str(c.inserted), str(c.updated), str(c.deleted))
    console.print(table)


def _print_index(changes: dict[str, IndexChange], seconds: float) -> None:
    table = Table(title=f"Qdrant ({seconds:.2f} s)")
    for col in ("collection", "upserted", "embedded", "deleted", "unchanged", "embeddings/s"):
        table.add_column(col, justify="left" if col == "collection" else "right")
    for name, c in changes.items():
        rate = f"{c.embedded / c.embed_seconds:.0f}" if c.embed_seconds > 0 and c.embedded else "-"
        table.add_row(name, str(c.upserted), str(c.embedded), str(c.deleted), str(c.unchanged), rate)
    console.print(table)


def _index_progress(progress: Progress) -> Callable[[str, int, int], None]:
    tasks: dict[str, TaskID] = {}

    def advance(entity_type: str, done: int, total: int) -> None:
        if entity_type not in tasks:
            tasks[entity_type] = progress.add_task(f"index {entity_type}", total=total)
        progress.advance(tasks[entity_type], done)

    return advance


@app.command()
def ingest(
    synthetic: Annotated[int | None, typer.Option(help="Load N synthetic entities instead of the demo catalog.",
                                                  min=10, max=20_000_000)] = None,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic generator.")] = 0,
    index: Annotated[bool, typer.Option(help="Also build the Qdrant index (embeddings).")] = True,
    data: Annotated[Path, typer.Option(help="Folder of catalog YAML files.", exists=True, file_okay=False)] = DATA_DIR,
) -> None:
    """Load the demo catalog (or a synthetic one) into PostgreSQL and index it in Qdrant. Idempotent."""
    from agentic_rag.catalog.ingest import index_catalog, ingest_demo

    settings = load_settings()
    dsn = dev_dsn(settings)
    with progress_bar() as progress:
        if synthetic is None:
            load_task = progress.add_task("postgres (demo)", total=16)
            report = asyncio.run(ingest_demo(
                dsn, settings, data_dir=data, index=index,
                on_step=lambda _t: progress.advance(load_task), progress=_index_progress(progress),
            ))
        else:
            from agentic_rag.catalog.synthetic import load_synthetic

            tasks: dict[str, TaskID] = {}

            def on_rows(table: str, done: int, total: int) -> None:
                if table not in tasks:
                    tasks[table] = progress.add_task(f"copy {table}", total=total)
                progress.update(tasks[table], completed=done)

            syn = asyncio.run(load_synthetic(dsn, synthetic, seed, progress=on_rows))
            index_changes: dict[str, IndexChange] = {}
            index_seconds = 0.0
            if index:
                index_changes, index_seconds = asyncio.run(
                    index_catalog(dsn, settings, progress=_index_progress(progress))
                )
    if synthetic is None:
        _print_tables(report.tables, report.pg_seconds)
        if report.index:
            _print_index(report.index, report.index_seconds)
        verdict = "changed" if report.changed else "already up to date: nothing changed"
        console.print(f"demo catalog: {report.rows} rows, {verdict}.  database: {_redact(dsn)}")
    else:
        console.print(syn.describe())
        if index_changes:
            _print_index(index_changes, index_seconds)


@app.command()
def reindex() -> None:
    """Drop and rebuild every Qdrant collection from PostgreSQL alone."""
    from agentic_rag.catalog.ingest import index_catalog

    settings = load_settings()
    dsn = dev_dsn(settings)
    with progress_bar() as progress:
        changes, seconds = asyncio.run(index_catalog(dsn, settings, rebuild=True, progress=_index_progress(progress)))
    _print_index(changes, seconds)


@app.command()
def migrate() -> None:
    """Apply pending schema migrations."""
    from agentic_rag.storage.postgres import migrate as run_migrations

    applied = asyncio.run(run_migrations(dev_dsn(load_settings())))
    console.print(f"applied: {', '.join(applied) or 'nothing (up to date)'}")


@app.command()
def search(
    query: Annotated[str, typer.Argument(help="What a user typed, e.g. 'lufy'.")],
    type_: Annotated[list[str] | None, typer.Option("--type", help="Restrict to an entity type (repeatable).")] = None,
    limit: Annotated[int, typer.Option(min=1, max=50)] = 10,
) -> None:
    """The typeahead lane: entities whose names match, exact then prefix then fuzzy, popular first."""
    from pydantic import ValidationError

    from agentic_rag.retrievers.typeahead import TypeaheadHit, TypeaheadQuery, typeahead
    from agentic_rag.storage.postgres import connect

    settings = load_settings()
    try:
        q = TypeaheadQuery.model_validate({"q": query, "types": type_ or None, "limit": limit})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise fail(ValueError(problems)) from None
    dsn = dev_dsn(settings)

    async def run() -> list[TypeaheadHit]:
        conn = await connect(dsn)
        try:
            return list(await typeahead(conn, q))
        finally:
            await conn.close()

    hits = asyncio.run(run())
    table = Table(title=f"search {query!r}")
    for col in ("name", "type", "match", "matched name", "popularity", "id"):
        table.add_column(col)
    for h in hits:
        table.add_row(h.name, h.entity.entity_type, h.match, h.matched, str(h.popularity), h.entity.id)
    console.print(table if hits else f"no match for {query!r}")


@app.command("db-url")
def db_url() -> None:
    """Print the PostgreSQL DSN in use (starting the private cluster if that is what it takes)."""
    console.print(dev_dsn(load_settings()))


@app.command("db-stop")
def db_stop() -> None:
    """Stop the private PostgreSQL cluster under the data dir, if one runs (its data stays)."""
    from agentic_rag.storage.devcluster import stop_private_cluster

    settings = load_settings()
    stop_private_cluster(settings.data_dir)
    console.print(f"private cluster in {settings.data_dir / 'pg'} is stopped")


def _redact(dsn: str) -> str:
    from agentic_rag.dsn import conninfo

    info = conninfo(dsn)
    return f"{info.get('host', '')}:{info.get('port', 5432)}/{info.get('dbname', '')}"
