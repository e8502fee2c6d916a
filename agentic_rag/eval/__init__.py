"""The evaluation harness: a question set with gold truth, a runner, metrics and reports.

Typical use::

    questions = load_demo_questions()
    async with pool.acquire() as conn:
        gold = await resolve_gold(conn, questions)
    outcomes = await run_eval(questions, functools.partial(orchestrator.run, mode="agentic"), concurrency=4)
    report = compute_report(outcomes, gold, mode="agentic")
    console.print(render_table(report))
"""

from agentic_rag.eval.metrics import (
    EvalReport,
    Failure,
    QuestionOutcome,
    TypeMetrics,
    compute_report,
    judge,
    percentile,
    question_recall,
)
from agentic_rag.eval.questions import (
    QUESTION_TYPES,
    EvalQuestion,
    ExpectStatus,
    GoldEntity,
    GoldKey,
    GoldResolutionError,
    QuestionSetError,
    QuestionType,
    demo_questions_path,
    load_demo_questions,
    load_questions,
    resolve_gold,
)
from agentic_rag.eval.report import render_markdown, render_table, report_rows
from agentic_rag.eval.runner import Ask, RunLike, ask_one, outcome_from_run, run_eval

__all__ = [
    "QUESTION_TYPES", "Ask", "EvalQuestion", "EvalReport", "ExpectStatus", "Failure", "GoldEntity", "GoldKey",
    "GoldResolutionError", "QuestionOutcome", "QuestionSetError", "QuestionType", "RunLike", "TypeMetrics",
    "ask_one", "compute_report", "demo_questions_path", "judge", "load_demo_questions", "load_questions",
    "outcome_from_run", "percentile", "question_recall", "render_markdown", "render_table", "report_rows",
    "resolve_gold", "run_eval",
]
