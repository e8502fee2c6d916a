"""Render an :class:`EvalReport` for people: a rich table for the terminal, Markdown for the docs.

For machines, use ``report.model_dump_json(indent=2)``.
"""

from __future__ import annotations

from rich.table import Table

from agentic_rag.eval.metrics import EvalReport, TypeMetrics

COLUMNS = ("type", "n", "accuracy", "entity recall", "turns", "p50 ms", "p95 ms", "clarification rate")
DASH = "–"


def _pct(x: float | None) -> str:
    return DASH if x is None else f"{x:.1%}"


def _num(x: float | None, digits: int) -> str:
    return DASH if x is None else f"{x:.{digits}f}"


def _cells(name: str, m: TypeMetrics) -> list[str]:
    return [name, str(m.n), _pct(m.accuracy), _pct(m.entity_recall), _num(m.mean_turns, 2),
            _num(m.latency_p50_ms, 0), _num(m.latency_p95_ms, 0), _pct(m.clarification_rate)]


def report_rows(report: EvalReport) -> list[list[str]]:
    """One row per question type, then the overall row, as display strings."""
    return [_cells(t, m) for t, m in report.per_type.items()] + [_cells("overall", report.overall)]


def render_table(report: EvalReport) -> Table:
    """The report as a rich table (print it with a ``rich.console.Console``)."""
    errors = f", {report.overall.errors} errored" if report.overall.errors else ""
    table = Table(title=f"eval: {report.mode}, {report.n} questions{errors}")
    for i, col in enumerate(COLUMNS):
        table.add_column(col, justify="left" if i == 0 else "right")
    rows = report_rows(report)
    for row in rows[:-1]:
        table.add_row(*row)
    table.add_section()
    table.add_row(*rows[-1], style="bold")
    return table


def render_markdown(report: EvalReport) -> str:
    """The report as a GitHub-flavoured Markdown table (for docs/benchmarks.md)."""
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "|".join([":---"] + ["---:"] * (len(COLUMNS) - 1)) + "|",
    ]
    rows = report_rows(report)
    lines += ["| " + " | ".join(row) + " |" for row in rows[:-1]]
    lines.append("| " + " | ".join(f"**{c}**" for c in rows[-1]) + " |")
    return "\n".join(lines) + "\n"
