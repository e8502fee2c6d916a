"""Agent commands: ask a question in-process, resume a clarification, show a trajectory, run the evaluation."""

from __future__ import annotations

import asyncio
import functools
import json
import uuid
from pathlib import Path
from typing import Annotated, Any, cast, get_args

import typer
from rich.panel import Panel
from rich.table import Table

from agentic_rag.cli._app import app, console, err, fail, load_settings, with_dev_database
from agentic_rag.logs import configure_logging
from agentic_rag.orchestrator.loop import RunResult
from agentic_rag.orchestrator.runtime import Runtime, open_runtime
from agentic_rag.orchestrator.trajectory import Trajectory
from agentic_rag.protocol import AgentResponse, Mode
from agentic_rag.retrievers.hydrate import labels
from agentic_rag.settings import Settings

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
VerboseOpt = Annotated[bool, typer.Option("--verbose", "-v", help="Log every stage (JSON lines on stderr).")]
EVENT_CHARS = 110  # characters of an event's gist in the trace table
FAILURES_SHOWN = 40  # incorrect questions an eval report lists under its table (--json has them all)


def _mode(mode: str) -> Mode:
    if mode not in get_args(Mode):
        raise fail(ValueError(f"--mode must be agentic or linear, not {mode!r}"))
    return cast(Mode, mode)


def _agent_settings(verbose: bool) -> Settings:
    settings = load_settings()
    configure_logging(settings.model_copy(update={"log_level": "INFO" if verbose else "WARNING"}))
    return settings


def _run(settings: Settings, work: Any) -> Any:
    """Run ``work(runtime)`` in a runtime (the failures a user can fix end at the CLI's error boundary)."""

    async def go() -> Any:
        async with open_runtime(await asyncio.to_thread(with_dev_database, settings)) as rt:
            return await work(rt)

    return asyncio.run(go())


async def _names(rt: Runtime, response: AgentResponse) -> dict[str, str]:
    async with rt.pool.acquire() as conn:
        return await labels(conn, [*response.result_entities, *response.source_entities])


def _print_run(result: RunResult, names: dict[str, str], traj: Trajectory | None) -> None:
    r = result.response
    style = {"answered": "green", "needs_clarification": "yellow", "blocked": "red"}.get(r.status, "magenta")
    console.print(Panel(r.answer, title=f"[{style}]{r.status}[/] (confidence {r.confidence:.2f}, {result.turns} "
                                        f"turn(s), {result.latency_ms:.0f} ms)", title_align="left"))
    if r.clarification:
        table = Table(title=r.clarification.question)
        for col in ("choice", "label", "id"):
            table.add_column(col)
        for i, c in enumerate(r.clarification.choices):
            table.add_row(str(i), c.label, c.entity.id)
        console.print(table)
        console.print(f"resume with: agentic-rag resume {result.trajectory_id} CHOICE")
    if r.result_entities:
        table = Table(title="result entities")
        for col in ("name", "type", "id"):
            table.add_column(col)
        for e in r.result_entities:
            table.add_row(names.get(e.id, "?"), e.entity_type, e.id)
        console.print(table)
    for path in r.evidence.paths[:3]:
        hops = [names.get(path.nodes[0].id, path.nodes[0].id)]
        for rel, node in zip(path.rels, path.nodes[1:], strict=True):
            hops.append(f"-[{rel}]-> {names.get(node.id, node.id)}")
        console.print("path: " + " ".join(hops), markup=False, highlight=False)
    for w in r.warnings:
        console.print(f"[yellow]warning:[/] {w}")
    if traj is not None:
        _print_trajectory(traj)


def _brief(payload: dict[str, Any]) -> str:
    keep = {k: v for k, v in payload.items() if k not in ("usage", "rewrite", "intent", "intents", "clarification")}
    if "intents" in payload:
        keep["intents"] = len(payload["intents"])
    if "rewrite" in payload and isinstance(payload["rewrite"], dict):
        keep["mode"] = payload["rewrite"].get("retrieval_mode")
        keep["mentions"] = payload["rewrite"].get("mentions")
    if "intent" in payload and isinstance(payload["intent"], dict):
        i = payload["intent"]
        keep["intent"] = i.get("query") or i.get("query_type") or i.get("entity_type")
    text = json.dumps(keep, ensure_ascii=False, default=str)
    return text if len(text) <= EVENT_CHARS else text[: EVENT_CHARS - 3] + "..."


def _print_trajectory(traj: Trajectory) -> None:
    table = Table(title=f"trajectory {traj.id} ({traj.status})")
    for col in ("seq", "stage", "type", "ms", "payload"):
        table.add_column(col, overflow="fold")
    for e in traj.events:
        table.add_row(str(e.seq), e.stage, e.type, f"{e.latency_ms:.1f}" if e.latency_ms is not None else "",
                      _brief(e.payload))
    console.print(table)
    console.print("timings: " + ", ".join(f"{k}={v:.1f}" for k, v in traj.timings.items()))


def _as_json(result: RunResult, traj: Trajectory | None) -> str:
    return json.dumps({
        "trajectory_id": str(result.trajectory_id), "request_id": result.request_id, "turns": result.turns,
        "latency_ms": result.latency_ms, "timings": result.timings,
        "response": result.response.model_dump(mode="json"),
        "events": [e.model_dump(mode="json") for e in traj.events] if traj else [],
    }, ensure_ascii=False, indent=2)


def _show(settings: Settings, work: Any, as_json: bool) -> None:
    async def with_trajectory(rt: Runtime) -> tuple[RunResult, dict[str, str], Trajectory | None]:
        result = await work(rt)
        return result, await _names(rt, result.response), await rt.store.get(result.trajectory_id)

    result, names, traj = _run(settings, with_trajectory)
    console.print_json(_as_json(result, traj)) if as_json else _print_run(result, names, traj)


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="A question about the catalog.")],
    mode: Annotated[str, typer.Option(help="agentic (the loop) or linear (retrieve once, answer once).")] = "agentic",
    tenant: Annotated[str, typer.Option(help="Tenant the trajectory belongs to.")] = "default",
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Answer one question in-process and print the answer, its entities and the trajectory."""
    run_mode = _mode(mode)
    settings = _agent_settings(verbose)
    _show(settings, lambda rt: rt.orchestrator.run(question, mode=run_mode, tenant=tenant), as_json)


@app.command()
def resume(
    trajectory_id: Annotated[str, typer.Argument(help="The trajectory that asked for clarification.")],
    choice: Annotated[str, typer.Argument(help="The choice's number, or the chosen entity's id.")],
    tenant: Annotated[str, typer.Option(help="Tenant the trajectory belongs to.")] = "default",
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Continue a run that asked for clarification, from any process."""
    try:
        tid = uuid.UUID(trajectory_id)
    except ValueError:
        raise fail(ValueError(f"not a trajectory id: {trajectory_id!r}")) from None
    picked: int | str = int(choice) if choice.isdigit() else choice
    settings = _agent_settings(verbose)
    _show(settings, lambda rt: rt.orchestrator.resume(tid, picked, tenant=tenant), as_json)


@app.command()
def trajectory(
    trajectory_id: Annotated[str, typer.Argument(help="A trajectory id (or a request id).")],
    tenant: Annotated[str | None, typer.Option(help="Only if it belongs to this tenant.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a stored trajectory: every decision, action and observation of a run, with timings."""
    settings = _agent_settings(False)

    async def get(rt: Runtime) -> Trajectory | None:
        try:
            return await rt.store.get(uuid.UUID(trajectory_id), tenant=tenant)
        except ValueError:
            return await rt.store.by_request_id(trajectory_id, tenant=tenant)

    traj = _run(settings, get)
    if traj is None:
        raise fail(LookupError(f"no trajectory {trajectory_id}"))
    console.print_json(traj.model_dump_json()) if as_json else _print_trajectory(traj)


@app.command("eval")
def evaluate(
    questions: Annotated[Path | None, typer.Option(help="JSON Lines question file (default: the demo set).")] = None,
    mode: Annotated[str, typer.Option(help="agentic or linear.")] = "agentic",
    concurrency: Annotated[int, typer.Option(min=1, max=64, help="Questions in flight at once.")] = 1,
    as_json: JsonOpt = False,
    markdown: Annotated[bool, typer.Option(help="Print the table as Markdown (for docs).")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the JSON report here.")] = None,
    answers: Annotated[Path | None, typer.Option(
        help="Also write every question's outcome here, one JSON line each (scripts/compare_answers.py diffs two).")
    ] = None,
) -> None:
    """Run a question set through the loop and report accuracy, entity recall, turns and latency per type."""
    from agentic_rag.eval import compute_report, load_demo_questions, load_questions, resolve_gold, run_eval
    from agentic_rag.eval.answers import write_answers
    from agentic_rag.eval.report import render_markdown, render_table

    run_mode = _mode(mode)
    settings = _agent_settings(False)
    try:
        qs = load_questions(questions) if questions else load_demo_questions()
    except (OSError, ValueError) as exc:
        raise fail(exc) from None

    async def work(rt: Runtime) -> Any:
        async with rt.pool.acquire() as conn:
            gold = await resolve_gold(conn, qs, source="demo" if questions is None else None)
        outcomes = await run_eval(qs, functools.partial(rt.orchestrator.run, mode=run_mode, tenant="eval"),
                                  concurrency=concurrency, progress=not as_json, console=err)
        if answers:
            write_answers(answers, outcomes)
        return compute_report(outcomes, gold, mode=mode)

    try:
        report = _run(settings, work)
    except ValueError as exc:
        raise fail(exc) from None
    if out:
        out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    if as_json:
        console.print_json(report.model_dump_json())
    elif markdown:
        console.print(render_markdown(report), markup=False, highlight=False, soft_wrap=True)
    else:
        console.print(render_table(report))
        for f in report.failures[:FAILURES_SHOWN]:
            console.print(f"[red]x[/] {f.id} ({f.type}): {f.reason}", markup=True, highlight=False)
