"""Run a question set through an answering function, with bounded concurrency and a progress bar.

The runner knows nothing of the orchestrator: it takes ``ask(question) -> RunLike``, so the same
harness scores the agentic loop, the linear baseline, or a remote service behind a client. The turns of a
conversation (questions with ``conversation`` set) are asked in order, each with ``conversation_id=`` the id the
turn before it was answered in (None for the first): a turn is scored given only its own conversation's earlier
turns. Conversations run concurrently with each other and with single questions.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agentic_rag.eval.metrics import QuestionOutcome
from agentic_rag.eval.questions import EvalQuestion
from agentic_rag.protocol import AgentResponse

ERROR_CHARS = 2000  # characters of a failed question's error its outcome keeps


class RunLike(Protocol):
    """What one answered question must expose (the orchestrator's ``RunResult`` does)."""

    @property
    def response(self) -> AgentResponse: ...

    @property
    def turns(self) -> int: ...

    @property
    def latency_ms(self) -> float: ...


# ask(question) for a single question; ask(question, conversation_id=...) for a turn of a conversation
Ask = Callable[..., Awaitable[RunLike]]


def outcome_from_run(question: EvalQuestion, run: RunLike) -> QuestionOutcome:
    """The scored view of one finished run."""
    r = run.response
    return QuestionOutcome(
        question=question,
        status=r.status,
        answer=r.answer,
        result_entities=[e.id for e in r.result_entities],
        source_entities=[e.id for e in r.source_entities],
        turns=run.turns,
        latency_ms=run.latency_ms,
        clarification_asked=r.clarification is not None,
    )


async def ask_one(question: EvalQuestion, ask: Ask) -> QuestionOutcome:
    """Ask one question; an exception becomes an ``error`` outcome instead of propagating."""
    return (await _ask(question, ask, None))[0]


async def _ask(question: EvalQuestion, ask: Ask, conversation: Any) -> tuple[QuestionOutcome, Any]:
    """One question (a turn of ``conversation`` when it has one); its outcome, and the conversation it was
    answered in."""
    start = time.perf_counter()
    try:
        run = await (ask(question.question, conversation_id=conversation) if question.conversation
                     else ask(question.question))
        return outcome_from_run(question, run), getattr(run, "conversation_id", None)
    except Exception as exc:  # any failure of one question is recorded, never aborts the run
        return QuestionOutcome(
            question=question,
            status="error",
            error=f"{type(exc).__name__}: {exc}"[:ERROR_CHARS],
            latency_ms=(time.perf_counter() - start) * 1000,
        ), None


async def run_eval(
    questions: Sequence[EvalQuestion],
    ask: Ask,
    *,
    concurrency: int = 1,
    progress: bool = True,
    console: Console | None = None,
) -> list[QuestionOutcome]:
    """Ask every question, at most ``concurrency`` at a time; outcomes come back in question order."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    gate = asyncio.Semaphore(concurrency)
    outcomes: list[QuestionOutcome | None] = [None] * len(questions)
    columns = (TextColumn("[bold]eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[errors]} errors"),
               TimeElapsedColumn())
    with Progress(*columns, console=console, disable=not progress) as bar:
        task = bar.add_task("eval", total=len(questions), errors=0)
        errors = 0

        async def one(indexes: list[int]) -> None:
            nonlocal errors
            conversation = None
            for i in indexes:  # a conversation's turns in order; a single question alone
                async with gate:
                    outcome, conversation = await _ask(questions[i], ask, conversation)
                outcomes[i] = outcome
                errors += outcome.status == "error"
                bar.update(task, advance=1, errors=errors)

        groups: dict[str, list[int]] = {}
        for i, q in enumerate(questions):
            groups.setdefault(q.conversation or f"\0{i}", []).append(i)
        async with asyncio.TaskGroup() as tg:
            for indexes in groups.values():
                tg.create_task(one(sorted(indexes, key=lambda i: questions[i].turn)))
    return [o for o in outcomes if o is not None]
