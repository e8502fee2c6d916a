"""``agentic-rag eval-set``: generate evaluation question sets from the catalog's records."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, cast

import typer
from rich.table import Table

from agentic_rag.catalog.records import CatalogError
from agentic_rag.cli._app import app, console, fail
from agentic_rag.eval.questions import QUESTION_TYPES
from agentic_rag.eval.stress import DEFAULT_PER_TYPE, DEFAULT_SEED, SplitChoice, build_stress_set, write_stress_set
from agentic_rag.eval.stress.conversations import DEFAULT_COUNT, build_conversations, write_conversations
from agentic_rag.eval.stress.conversations import DEFAULT_SEED as CONVERSATION_SEED
from agentic_rag.eval.stress.conversations import Split as ConversationSplit
from agentic_rag.eval.stress.templates import TEMPLATES

eval_set = typer.Typer(help="Generate evaluation question sets (JSON Lines for `agentic-rag eval --questions`).",
                       no_args_is_help=True)
app.add_typer(eval_set, name="eval-set")


@eval_set.command()
def stress(
    out: Annotated[Path, typer.Option(help="Where to write the JSON Lines question file.")],
    seed: Annotated[int, typer.Option(help="Seed: the same seed writes the same file, byte for byte.")] = DEFAULT_SEED,
    split: Annotated[str, typer.Option(help="tune, held (the two halves of the templates) or all.")] = "all",
    per_type: Annotated[int, typer.Option(min=1, max=5000, help="Questions per type, before the split.")]
    = DEFAULT_PER_TYPE,
) -> None:
    """Write the paraphrase stress set: catalog facts asked many ways, with typos, aliases and chatter."""
    if split not in ("tune", "held", "all"):
        raise fail(ValueError(f"--split must be tune, held or all, not {split!r}"))
    try:
        questions = build_stress_set(seed=seed, per_type=per_type, split=cast(SplitChoice, split))
        write_stress_set(out, questions)
    except (CatalogError, OSError) as exc:
        raise fail(exc) from None
    counts = Counter((q.question.type, q.split) for q in questions)
    templates = Counter(q.question.type for q in {q.template: q for q in questions}.values())
    table = Table(title=f"stress set (seed {seed}, split {split})")
    for col in ("type", "questions", "tune", "held", "templates"):
        table.add_column(col, justify="left" if col == "type" else "right")
    for t in (t for t in QUESTION_TYPES if t in TEMPLATES):  # the kinds the generator has templates for
        tune, held = counts[(t, "tune")], counts[(t, "held")]
        table.add_row(t, str(tune + held), str(tune), str(held), str(templates[t]))
    table.add_row("all", str(len(questions)), str(sum(q.split == "tune" for q in questions)),
                  str(sum(q.split == "held" for q in questions)), str(sum(templates.values())))
    console.print(table)
    console.print(f"wrote {len(questions)} questions to {out}")


@eval_set.command()
def conversations(
    out: Annotated[Path, typer.Option(help="Where to write the JSON Lines conversation file.")],
    seed: Annotated[int, typer.Option(help="Seed: the same seed writes the same file, byte for byte.")]
    = CONVERSATION_SEED,
    split: Annotated[str, typer.Option(help="tune, held (the two halves of the phrasings) or all.")] = "held",
    count: Annotated[int, typer.Option(min=1, max=5000, help="Conversations per half.")] = DEFAULT_COUNT,
) -> None:
    """Write generated conversations: chains of turns from catalog facts, with follow-ups that lean on earlier turns
    (score with `agentic-rag eval --questions FILE`)."""
    if split not in ("tune", "held", "all"):
        raise fail(ValueError(f"--split must be tune, held or all, not {split!r}"))
    try:
        made = build_conversations(seed=seed, count=count, split=cast(ConversationSplit, split))
        write_conversations(out, made)
    except (CatalogError, OSError) as exc:
        raise fail(exc) from None
    kinds = Counter(c["id"].split("-")[2] for c in made)
    console.print(f"wrote {len(made)} conversations ({sum(len(c['turns']) for c in made)} turns) to {out}: "
                  + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
