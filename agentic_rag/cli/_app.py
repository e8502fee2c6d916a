"""The ``agentic-rag`` Typer app and what every command shares: settings, consoles, errors."""

from __future__ import annotations

import logging
import os

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentic_rag.settings import Settings

app = typer.Typer(help="agentic-rag: question answering over a catalog in PostgreSQL and Qdrant.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
console = Console()
err = Console(stderr=True)


def load_settings() -> Settings:
    # The model is read from the package directory; never reach for a hub.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    return Settings()


def fail(exc: Exception) -> typer.Exit:
    err.print(f"[bold red]error:[/] {exc}")
    return typer.Exit(code=1)


def progress_bar() -> Progress:
    return Progress(TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    console=err, transient=False)
