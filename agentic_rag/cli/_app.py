"""The ``agentic-rag`` Typer app and what every command shares: settings, consoles, errors."""

from __future__ import annotations

import logging
import os
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from typer.core import TyperGroup

from agentic_rag.cli._errors import explain
from agentic_rag.settings import Settings
from agentic_rag.storage.devcluster import dev_dsn

console = Console()
err = Console(stderr=True)


class Commands(TyperGroup):
    """The command group, and the CLI's one error boundary: a command that fails for a cause a person can fix
    (a Qdrant store in use, PostgreSQL out of reach, no catalog loaded) prints one line saying what to do and
    exits 1; any other failure keeps its traceback."""

    def invoke(self, ctx: Any) -> Any:  # a click Context, of the click that typer vendors privately
        try:
            return super().invoke(ctx)
        except Exception as exc:
            line = explain(exc)
            if line is None:
                raise
            raise fail(line) from None


app = typer.Typer(help="agentic-rag: question answering over a catalog in PostgreSQL and Qdrant.",
                  no_args_is_help=True, pretty_exceptions_enable=False, cls=Commands)


def load_settings() -> Settings:
    # The model is read from the package directory; never reach for a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return Settings()


def with_dev_database(settings: Settings) -> Settings:
    """``settings`` naming the database a development command uses: the configured one, else the server on
    127.0.0.1:5432, else a private cluster in ``data_dir``, started if need be (the served application itself
    never starts one)."""
    if settings.database_url:
        return settings
    return settings.model_copy(update={"database_url": dev_dsn(settings)})


def fail(problem: Exception | str) -> typer.Exit:
    """Print ``problem`` as one ``error:`` line on stderr; the ``Exit`` (status 1) to raise after it."""
    err.print(f"[bold red]error:[/] {escape(str(problem))}", soft_wrap=True, highlight=False)
    return typer.Exit(code=1)


def progress_bar() -> Progress:
    return Progress(TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=False)
