"""The evaluation harness without services: metrics, the question loader, the runner, reports."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentic_rag.eval import (
    QUESTION_TYPES,
    EvalQuestion,
    GoldEntity,
    QuestionOutcome,
    QuestionSetError,
    compute_report,
    demo_questions_path,
    judge,
    load_demo_questions,
    load_questions,
    percentile,
    render_markdown,
    render_table,
    run_eval,
)
from agentic_rag.eval.stress.templates import TEMPLATES
from agentic_rag.protocol import AgentResponse, Clarification, ClarificationChoice, EntityRef

LUFFY, ZORO, TOEI, NAMI = (f"00000000-0000-4000-8000-00000000000{i}" for i in range(1, 5))
GOLD = {("character", "monkey d. luffy"): [LUFFY], ("character", "zoro"): [ZORO],
        ("studio", "toei animation"): [TOEI]}


def question(qid: str, qtype: str = "lookup", gold: list[tuple[str, str]] | None = None,
             contains: list[str] | None = None, expect: str = "answered") -> EvalQuestion:
    return EvalQuestion.model_validate({
        "id": qid, "question": f"question {qid}?", "type": qtype,
        "gold_entities": [{"entity_type": t, "name": n} for t, n in gold or []],
        "answer_contains": contains or [], "expect_status": expect,
    })


def outcome(q: EvalQuestion, status: str = "answered", answer: str = "", result: list[str] | None = None,
            source: list[str] | None = None, turns: int = 1, latency_ms: float = 100.0,
            clarified: bool = False, error: str | None = None) -> QuestionOutcome:
    return QuestionOutcome.model_validate({
        "question": q, "status": status, "answer": answer, "result_entities": result or [],
        "source_entities": source or [], "turns": turns, "latency_ms": latency_ms,
        "clarification_asked": clarified, "error": error,
    })


# --- metrics -------------------------------------------------------------------------------------------------------

def hand_built() -> list[QuestionOutcome]:
    both = [("character", "Monkey D. Luffy"), ("character", "Zoro")]
    return [
        # lookup: correct, full recall (one id via source entities)
        outcome(question("l1", gold=both, contains=["Straw Hat"]), answer="The straw hat crew...",
                result=[LUFFY], source=[ZORO], turns=1, latency_ms=10),
        # lookup: right status, answer lacks a string, half recall
        outcome(question("l2", gold=both, contains=["Luffy", "Toei"]), answer="Luffy!", result=[LUFFY, NAMI],
                turns=3, latency_ms=20),
        # multi_hop: wrong status, zero recall
        outcome(question("m1", "multi_hop", gold=[("studio", "Toei Animation")], contains=["Toei"]),
                status="best_effort", answer="Toei Animation", turns=4, latency_ms=30),
        # ambiguous: clarification asked, no gold (excluded from recall), answer_contains ignored
        outcome(question("a1", "ambiguous", expect="needs_clarification"), status="needs_clarification",
                answer="Which one?", turns=1, latency_ms=40, clarified=True),
        # no_match: errored run, incorrect and left out of turns/latency
        outcome(question("n1", "no_match", expect="not_found"), status="error", error="boom", turns=0,
                latency_ms=5000),
    ]


def test_report_per_type_and_overall_numbers() -> None:
    report = compute_report(hand_built(), GOLD, mode="agentic")
    assert report.mode == "agentic" and report.n == 5
    assert list(report.per_type) == ["lookup", "multi_hop", "no_match", "ambiguous"]  # canonical order

    lookup = report.per_type["lookup"]
    assert (lookup.n, lookup.correct, lookup.accuracy) == (2, 1, 0.5)
    assert lookup.entity_recall == pytest.approx(0.75)  # mean of 1.0 and 0.5
    assert lookup.mean_turns == 2.0
    assert lookup.latency_p50_ms == 15.0 and lookup.latency_p95_ms == pytest.approx(19.5)

    multi = report.per_type["multi_hop"]
    assert (multi.accuracy, multi.entity_recall) == (0.0, 0.0)

    amb = report.per_type["ambiguous"]
    assert (amb.accuracy, amb.entity_recall, amb.clarification_rate) == (1.0, None, 1.0)

    nm = report.per_type["no_match"]
    assert (nm.accuracy, nm.errors, nm.mean_turns, nm.latency_p50_ms) == (0.0, 1, None, None)

    overall = report.overall
    assert (overall.n, overall.correct, overall.accuracy, overall.errors) == (5, 2, 0.4, 1)
    assert overall.entity_recall == pytest.approx(0.5)  # (1.0 + 0.5 + 0.0) / 3 questions with gold
    assert overall.mean_turns == pytest.approx(9 / 4)
    assert overall.latency_p50_ms == 25.0  # 10, 20, 30, 40 (the errored 5000 ms run is left out)
    assert overall.latency_p95_ms == pytest.approx(38.5)
    assert overall.clarification_rate == pytest.approx(0.2)

    reasons = {f.id: f.reason for f in report.failures}
    assert list(reasons) == ["l2", "m1", "n1"]
    assert reasons["l2"] == "answer lacks 'Toei'"
    assert reasons["m1"] == "status 'best_effort', expected 'answered'"
    assert reasons["n1"] == "error: boom"
    assert json.loads(report.model_dump_json())["overall"]["correct"] == 2


def test_percentile_interpolates_linearly_between_ranks() -> None:
    assert percentile([40, 10, 30, 20], 50) == 25.0
    assert percentile([10, 20, 30, 40], 95) == pytest.approx(38.5)
    assert percentile([10, 20, 30, 40], 0) == 10 and percentile([10, 20, 30, 40], 100) == 40
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_answer_matching_ignores_case_and_accents_but_needs_every_string() -> None:
    q = question("c1", "cast", contains=["Keiichirō Saitō", "madhouse"])
    assert judge(outcome(q, answer="Directed by KEIICHIRO SAITO at Madhouse.")) is None
    assert judge(outcome(q, answer="Directed by Keiichirō Saitō.")) == "answer lacks 'madhouse'"


def test_not_found_and_clarification_are_judged_by_status() -> None:
    nf = question("n1", "no_match", expect="not_found")
    assert judge(outcome(nf, status="not_found", answer="Not in the catalog.")) is None
    wrong = judge(outcome(nf, status="answered", answer="Sailor Moon is..."))
    assert wrong == "status 'answered', expected 'not_found'"
    amb = question("a1", "ambiguous", contains=["Naruto"], expect="needs_clarification")
    assert judge(outcome(amb, status="needs_clarification", answer="Which one did you mean?")) is None


def test_unresolved_gold_entity_is_an_error_not_a_miss() -> None:
    q = question("l1", gold=[("anime", "Sailor Moon")])
    with pytest.raises(ValueError, match="Sailor Moon"):
        compute_report([outcome(q)], GOLD, mode="linear")


# --- the question loader -------------------------------------------------------------------------------------------

def write(tmp_path: Path, *lines: str) -> Path:
    p = tmp_path / "qs.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


GOOD = json.dumps({"id": "lookup-01", "question": "Who is Ryuk?", "type": "lookup",
                   "gold_entities": [{"entity_type": "character", "name": "Ryuk"}], "answer_contains": ["Shinigami"]})


def test_loads_a_valid_file_skipping_blank_lines(tmp_path: Path) -> None:
    qs = load_questions(write(tmp_path, GOOD, "", GOOD.replace("lookup-01", "lookup-02")))
    assert [q.id for q in qs] == ["lookup-01", "lookup-02"]
    assert qs[0].expect_status == "answered"
    assert qs[0].gold_entities == [GoldEntity(entity_type="character", name="Ryuk")]


def test_bad_json_names_file_and_line(tmp_path: Path) -> None:
    p = write(tmp_path, GOOD, "", '{"id": "x", "question": ')
    with pytest.raises(QuestionSetError, match=r"qs\.jsonl:3: not valid JSON"):
        load_questions(p)


def test_unknown_field_names_the_field_and_line(tmp_path: Path) -> None:
    bad = json.dumps({**json.loads(GOOD), "id": "lookup-02", "answer": "x"})
    with pytest.raises(QuestionSetError, match=r"qs\.jsonl:2: answer: Extra inputs are not permitted"):
        load_questions(write(tmp_path, GOOD, bad))


def test_unknown_type_is_rejected(tmp_path: Path) -> None:
    bad = GOOD.replace('"lookup"', '"trivia"')
    with pytest.raises(QuestionSetError, match=r"qs\.jsonl:1: type:"):
        load_questions(write(tmp_path, bad))


def test_duplicate_id_names_both_lines(tmp_path: Path) -> None:
    with pytest.raises(QuestionSetError, match=r"qs\.jsonl:3: duplicate id 'lookup-01' \(first on line 1\)"):
        load_questions(write(tmp_path, GOOD, GOOD.replace("lookup-01", "lookup-02"), GOOD))


def test_empty_and_missing_files_are_errors(tmp_path: Path) -> None:
    with pytest.raises(QuestionSetError, match="no questions"):
        load_questions(write(tmp_path, ""))
    with pytest.raises(QuestionSetError, match="cannot read"):
        load_questions(tmp_path / "absent.jsonl")


# --- the shipped question set --------------------------------------------------------------------------------------

def test_demo_question_set_is_complete() -> None:
    qs = load_demo_questions()
    assert demo_questions_path().name == "demo.jsonl"
    assert len(qs) >= 90
    assert len({q.id for q in qs}) == len(qs)
    per_type = Counter(q.type for q in qs)
    assert set(per_type) == set(TEMPLATES)  # every kind the stress generator asks, too
    assert set(TEMPLATES) < set(QUESTION_TYPES)
    assert all(n >= 8 for n in per_type.values()), per_type
    assert all(per_type[t] >= 10 for t in ("relation", "sequel", "multi_hop")), per_type
    assert len({q.question.lower() for q in qs}) == len(qs)  # no repeated question


def test_demo_question_set_is_internally_consistent() -> None:
    for q in load_demo_questions():
        if q.type == "ambiguous":
            assert q.expect_status == "needs_clarification" and not q.answer_contains, q.id
        elif q.type == "no_match":
            assert q.expect_status == "not_found" and not q.gold_entities, q.id
        elif q.type == "recommendation":  # no one right answer: any of the acceptable works
            assert q.expect_status == "answered" and q.gold_entities and q.answer_any, q.id
        else:
            assert q.expect_status == "answered" and q.gold_entities and q.answer_contains, q.id
        assert q.id.startswith(q.type.replace("_", "-") + "-"), q.id


# --- the runner ----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FakeRun:
    response: AgentResponse
    turns: int
    latency_ms: float


def test_run_eval_keeps_order_bounds_concurrency_and_records_errors() -> None:
    qs = [question(f"q{i}", gold=[("character", "Zoro")]) for i in range(6)]
    in_flight = peak = 0

    async def ask(text: str) -> FakeRun:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        if text == "question q3?":
            raise RuntimeError("planner timed out")
        if text == "question q4?":
            choice = [ClarificationChoice(label=n, entity=EntityRef(entity_type="anime", id=i))
                      for n, i in (("A", LUFFY), ("B", NAMI))]
            return FakeRun(AgentResponse(answer="Which?", status="needs_clarification", confidence=0.2,
                                         clarification=Clarification(question="Which?", choices=choice)), 1, 5.0)
        return FakeRun(AgentResponse(answer=f"answer to {text}", confidence=0.9,
                                     result_entities=[EntityRef(entity_type="character", id=ZORO)],
                                     source_entities=[EntityRef(entity_type="studio", id=TOEI)]), 2, 12.5)

    outcomes = asyncio.run(run_eval(qs, ask, concurrency=2, progress=False))
    assert [o.question.id for o in outcomes] == [q.id for q in qs]
    assert peak == 2
    assert outcomes[0].status == "answered" and outcomes[0].answer == "answer to question q0?"
    assert (outcomes[0].result_entities, outcomes[0].source_entities) == ([ZORO], [TOEI])
    assert (outcomes[0].turns, outcomes[0].latency_ms) == (2, 12.5)
    assert outcomes[3].status == "error" and outcomes[3].error == "RuntimeError: planner timed out"
    assert outcomes[4].clarification_asked and outcomes[4].status == "needs_clarification"
    report = compute_report(outcomes, GOLD, mode="agentic")
    assert report.overall.errors == 1 and report.overall.correct == 4


def test_run_eval_rejects_zero_concurrency() -> None:
    async def ask(text: str) -> FakeRun:
        raise AssertionError("not called")

    with pytest.raises(ValueError, match="concurrency"):
        asyncio.run(run_eval([question("q")], ask, concurrency=0, progress=False))


# --- reports -------------------------------------------------------------------------------------------------------

def test_markdown_and_rich_tables_have_a_row_per_type_and_overall() -> None:
    report = compute_report(hand_built(), GOLD, mode="agentic")
    md = render_markdown(report).splitlines()
    assert md[0] == ("| type | n | accuracy | entity recall | turns | p50 ms | p95 ms | clarification rate |")
    assert md[1].startswith("|:---|---:|")
    assert md[2] == "| lookup | 2 | 50.0% | 75.0% | 2.00 | 15 | 20 | 0.0% |"
    assert md[5] == "| ambiguous | 1 | 100.0% | – | 1.00 | 40 | 40 | 100.0% |"
    assert md[-1].startswith("| **overall** | **5** | **40.0%** | **50.0%** |")
    assert len(md) == 2 + 4 + 1

    table = render_table(report)
    assert table.row_count == 5 and len(table.columns) == 8
    assert "1 errored" in str(table.title)


def test_answers_files_are_compared_question_by_question(tmp_path: Path) -> None:
    from agentic_rag.eval.answers import differences, read_answers, write_answers

    same = QuestionOutcome(question=question("q1", contains=["Toei"]), status="answered", answer="Toei Animation",
                           result_entities=[TOEI], turns=1)
    moved = QuestionOutcome(question=question("q2"), status="answered", answer="Zoro", result_entities=[ZORO],
                            turns=2)
    write_answers(tmp_path / "before.jsonl", [same, moved])
    write_answers(tmp_path / "after.jsonl", [same, moved.model_copy(update={"turns": 3, "answer": "Nami"})])
    before, after = read_answers(tmp_path / "before.jsonl"), read_answers(tmp_path / "after.jsonl")
    assert before["q1"]["correct"] and before["q1"]["result_entities"] == [TOEI]
    assert differences(before, before) == []
    assert differences(before, after) == [("q2", "answer", "Zoro", "Nami"), ("q2", "turns", 2, 3)]
    del after["q1"]
    assert ("q1", "id", True, False) in differences(before, after)


def test_acceptable_answers_need_so_many_named() -> None:
    """A recommendation is right when it names enough of the hand-listed acceptable titles (any of them)."""
    q = EvalQuestion.model_validate({"id": "rec-01", "question": "anime like death note?", "type": "recommendation",
                                     "answer_any": ["Code Geass", "Monster", "Psycho-Pass"], "min_any": 2})
    said = QuestionOutcome(question=q, status="answered", answer="Try Monster, and psycho-pass.")
    assert judge(said) is None
    once = said.model_copy(update={"answer": "Try Monster or Naruto."})
    assert judge(once) == "answer names 1 of the acceptable 3, fewer than 2"
