"""prune: delete the trajectories of runs that finished long ago, and expired conversations (retention).

An operator's command against the configured database (``RAG_DATABASE_URL``, else the server on 127.0.0.1:5432): it
never starts a private cluster, since a database it had to start holds nothing to prune. Safe while the service runs
(orchestrator/retention.py says why); k8s/prune-cronjob.yaml runs it daily.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Annotated

import typer

from agentic_rag.cli._app import app, console, load_settings, progress_bar
from agentic_rag.orchestrator import retention
from agentic_rag.settings import Settings, parse_duration
from agentic_rag.storage.postgres import close_pool, make_pool, migrate, resolve_dsn


def _duration(value: str) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


async def _prune(dsn: str, settings: Settings, older_than: timedelta | None, batch: int, dry_run: bool
                 ) -> retention.PruneReport:
    if not dry_run:
        await migrate(dsn)  # the delete triggers of 0017; idempotent, as every process that writes does
    pool = await make_pool(dsn, settings)
    try:
        if dry_run:
            return await retention.survey(pool, settings, older_than=older_than)
        with progress_bar() as progress:
            task = progress.add_task("prune runs", total=None)  # a running count: the total is not read first
            return await retention.prune(pool, settings, older_than=older_than, batch=batch,
                                         on_batch=lambda runs, _events: progress.advance(task, runs))
    finally:
        await close_pool(pool)


def _span(span: timedelta) -> str:
    """A duration as it is written to RAG_TRAJECTORY_RETENTION: 30d, 1d12h, 90s."""
    seconds = round(span.total_seconds())
    parts: list[str] = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if seconds >= size or (unit == "s" and not parts):
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts)


def _print(report: retention.PruneReport, older_than: timedelta, dry_run: bool) -> None:
    verb = "would delete" if dry_run else "deleted"
    batches = "" if dry_run else f", in {report.batches} batch{'es' if report.batches != 1 else ''}"
    lines = [f"{'dry run: ' if dry_run else ''}runs that finished before {report.cutoff:%Y-%m-%d %H:%M:%S %Z} "
             f"(older than {_span(older_than)}):",
             f"  {verb} {report.runs} run(s) and their {report.events} event(s){batches}",
             f"  {verb} {report.conversations} expired conversation(s)",
             f"  {'would keep' if dry_run else 'kept'} {report.kept} run(s) a live conversation holds"]
    if not dry_run:
        lines.append(f"  skipped {report.skipped} run(s) in use (the next prune takes them)")
    console.print("\n".join(lines), highlight=False, soft_wrap=True)


@app.command()
def prune(
    older_than: Annotated[timedelta | None, typer.Option(
        parser=_duration, metavar="DURATION",
        help="Delete runs that finished longer ago than this: 30d, 12h, 90m, 1d12h, or seconds. "
             "Default: RAG_TRAJECTORY_RETENTION (30d).")] = None,
    batch: Annotated[int, typer.Option(min=1, max=retention.MAX_BATCH,
                                       help="Runs deleted per transaction.")] = retention.DEFAULT_BATCH,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Count what would go; change nothing.")] = False,
) -> None:
    """Delete the trajectories of runs that finished before the retention (never a run in progress, nor one a live
    conversation holds), a batch per transaction, and expired conversations. Safe while the service runs."""
    settings = load_settings()
    dsn = resolve_dsn(settings)
    report = asyncio.run(_prune(dsn, settings, older_than, batch, dry_run))
    _print(report, older_than or settings.trajectory_retention, dry_run)
