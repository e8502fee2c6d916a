"""Generating the stress set: templates round-robin per type, facts drawn without replacement, noise.

Everything random comes from ``random.Random`` seeded per type from the run's seed, and every
collection is walked in a fixed order, so a seed always yields the same file byte for byte.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentic_rag.catalog.records import Catalog, load_catalog
from agentic_rag.eval.questions import QUESTION_TYPES, EvalQuestion, QuestionType
from agentic_rag.eval.stress import absent, chains, figures, recommend, works
from agentic_rag.eval.stress.facts import Builder, Fact, World
from agentic_rag.eval.stress.noise import Rates, Renderer
from agentic_rag.eval.stress.templates import TEMPLATES, Split, Template, template_split

SplitChoice = Literal["tune", "held", "all"]
DEFAULT_SEED = 20240601
DEFAULT_PER_TYPE = 150
DRAWS_PER_QUESTION = 12

BUILDERS: dict[str, Builder] = {**works.BUILDERS, **chains.BUILDERS, **figures.BUILDERS, **absent.BUILDERS,
                                **recommend.BUILDERS}


@dataclass(frozen=True, slots=True)
class StressQuestion:
    """One generated question with where it came from: its template, split half and noise."""

    question: EvalQuestion
    template: str
    split: Split
    noise: tuple[str, ...]


def question_id(qtype: QuestionType, tid: int, index: int) -> str:
    """``stress-multi-hop-t03-0042``: type, template and running index within the type."""
    return f"stress-{qtype.replace('_', '-')}-t{tid:02d}-{index:04d}"


class _Deck:
    """A template's facts, dealt in a shuffled order and reshuffled once all were used."""

    def __init__(self, facts: list[Fact], rng: random.Random) -> None:
        self.facts = facts
        self.rng = rng
        self.order: list[int] = []

    def draw(self) -> Fact:
        if not self.order:
            self.order = list(range(len(self.facts)))
            self.rng.shuffle(self.order)
        return self.facts[self.order.pop()]


def _generate(qtype: QuestionType, facts: dict[str, list[Fact]], renderer: Renderer, per_type: int,
              seed: int, seen: set[str]) -> list[StressQuestion]:
    rng = random.Random(f"stress:{seed}:{qtype}")
    usable: list[tuple[int, Template]] = [(i, t) for i, t in enumerate(TEMPLATES[qtype]) if facts[t.kind]]
    decks = {i: _Deck(facts[t.kind], rng) for i, t in usable}
    out: list[StressQuestion] = []
    for index in range(per_type):
        for step in range(len(usable)):
            tid, template = usable[(index + step) % len(usable)]
            made = _draw(qtype, tid, template, index, decks[tid], renderer, rng, seen)
            if made is not None:
                out.append(made)
                break
    return out


def _draw(qtype: QuestionType, tid: int, template: Template, index: int, deck: _Deck, renderer: Renderer,
          rng: random.Random, seen: set[str]) -> StressQuestion | None:
    """A question from ``template`` whose text is new to the set, or None after a few tries."""
    for _ in range(DRAWS_PER_QUESTION):
        fact = deck.draw()
        text, noise = renderer.render(template.text, fact, rng)
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        q = EvalQuestion(id=question_id(qtype, tid, index), question=text, type=qtype,
                         gold_entities=list(fact.gold), answer_contains=list(fact.answers),
                         answer_any=list(fact.any_of), min_any=fact.min_any, expect_status=fact.expect)
        return StressQuestion(q, f"{qtype}-t{tid:02d}", template_split(tid), noise)
    return None


def build_facts(cat: Catalog) -> tuple[World, dict[str, list[Fact]]]:
    """Every kind of fact the templates use, built from the catalog."""
    world = World(cat)
    return world, {kind: build(world) for kind, build in BUILDERS.items()}


def build_stress_set(seed: int = DEFAULT_SEED, per_type: int = DEFAULT_PER_TYPE, split: SplitChoice = "all",
                     catalog: Catalog | None = None, rates: Rates | None = None) -> list[StressQuestion]:
    """The paraphrase stress set: ``per_type`` questions of every type (fewer only if the data runs out).

    The whole set is generated whatever ``split``; a split keeps the questions of its templates,
    so ids and texts are the same in a split as in the whole set.
    """
    world, facts = build_facts(catalog if catalog is not None else load_catalog())
    renderer = Renderer(world.names, rates)
    seen: set[str] = set()
    out = [q for qtype in QUESTION_TYPES if qtype in TEMPLATES
           for q in _generate(qtype, facts, renderer, per_type, seed, seen)]
    return [q for q in out if split == "all" or q.split == split]


def to_jsonl(questions: Iterable[StressQuestion]) -> str:
    """JSON Lines of the questions' ``EvalQuestion`` records, as ``load_questions`` reads them."""
    return "".join(q.question.model_dump_json() + "\n" for q in questions)


def write_stress_set(path: str | Path, questions: Iterable[StressQuestion]) -> None:
    Path(path).write_text(to_jsonl(questions), encoding="utf-8")
