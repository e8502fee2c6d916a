"""The paraphrase stress set, generated from the catalog records alone (no database)."""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from agentic_rag.catalog.records import Catalog, load_catalog
from agentic_rag.eval import QUESTION_TYPES, EvalQuestion, load_questions
from agentic_rag.eval.stress import (
    TEMPLATES,
    StressQuestion,
    build_facts,
    build_stress_set,
    template_split,
    to_jsonl,
    write_stress_set,
)
from agentic_rag.eval.stress.noise import typo

SEED = 11
ID = re.compile(r"^stress-(?P<type>[a-z-]+)-t(?P<tid>\d{2})-(?P<index>\d{4})$")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="module")
def stress(catalog: Catalog) -> list[StressQuestion]:
    return build_stress_set(seed=SEED, catalog=catalog)


def stored_names(cat: Catalog) -> dict[str, set[str]]:
    """Every name and alias the catalog stores, by entity type (what gold resolution matches)."""
    names: dict[str, set[str]] = defaultdict(set)
    for a in cat.anime:
        names["anime"] |= {a.title, *a.aliases, *filter(None, (a.title_native, a.title_romaji))}
    for m in cat.manga:
        names["manga"] |= {m.title, *m.aliases, *filter(None, (m.title_native, m.title_romaji))}
    for c in cat.characters:
        names["character"] |= {c.name, *c.aliases}
    for p in cat.people:
        names["person"] |= {p.name, *p.aliases}
    names["studio"] = {s.name for s in cat.studios}
    names["franchise"] = {f.name for f in cat.franchises}
    return {t: {n.lower() for n in ns} for t, ns in names.items()}


def test_same_seed_same_bytes_other_seed_other_set(stress: list[StressQuestion], catalog: Catalog) -> None:
    assert to_jsonl(build_stress_set(seed=SEED, catalog=catalog)) == to_jsonl(stress)
    assert to_jsonl(build_stress_set(seed=SEED + 1, catalog=catalog)) != to_jsonl(stress)


def test_size_types_and_templates(stress: list[StressQuestion]) -> None:
    assert len(stress) >= 1500
    per_type = Counter(q.question.type for q in stress)
    assert set(per_type) == set(TEMPLATES) and set(TEMPLATES) <= set(QUESTION_TYPES)
    used = {q.template for q in stress}
    for t in TEMPLATES:
        assert len(TEMPLATES[t]) >= 12, t
        assert sum(u.startswith(f"{t}-t") for u in used) >= 12, f"{t}: fewer than 12 templates produced questions"


def test_file_loads_as_eval_questions(stress: list[StressQuestion], tmp_path: Path) -> None:
    path = tmp_path / "stress.jsonl"
    write_stress_set(path, stress)
    loaded = load_questions(path)  # also rejects duplicate ids
    assert [q.id for q in loaded] == [q.question.id for q in stress]
    for line in path.read_text(encoding="utf-8").splitlines():
        EvalQuestion.model_validate_json(line)


def test_ids_encode_type_template_and_index(stress: list[StressQuestion]) -> None:
    assert len({q.question.id for q in stress}) == len(stress)
    assert len({q.question.question.lower() for q in stress}) == len(stress)
    for q in stress:
        m = ID.match(q.question.id)
        assert m is not None, q.question.id
        assert m["type"] == q.question.type.replace("_", "-")
        assert q.template == f"{q.question.type}-t{m['tid']}"


def test_gold_names_are_stored_for_their_type(stress: list[StressQuestion], catalog: Catalog) -> None:
    names = stored_names(catalog)
    for q in stress:
        for g in q.question.gold_entities:
            assert g.name.lower() in names[g.entity_type], f"{q.question.id}: {g.entity_type} {g.name!r}"


def test_expectations_per_type(stress: list[StressQuestion]) -> None:
    for q in stress:
        e = q.question
        if e.type == "no_match":
            assert (e.expect_status, e.gold_entities, e.answer_contains) == ("not_found", [], [])
        elif e.type == "ambiguous":
            assert (e.expect_status, e.gold_entities, e.answer_contains) == ("needs_clarification", [], [])
        elif e.type == "recommendation":  # works like the one named: any of the acceptable ones (stress/recommend.py)
            assert e.expect_status == "answered" and e.gold_entities and len(e.answer_any) >= 3, e.id
            assert e.min_any == 1 and e.gold_entities[0].name not in e.answer_any, e.id
        else:
            assert e.expect_status == "answered" and e.gold_entities and e.answer_contains, e.id
            assert all(a.isdigit() or len(a) >= 3 for a in e.answer_contains), e.id


def test_comparisons_carry_two_different_values(stress: list[StressQuestion]) -> None:
    for q in stress:
        if q.question.type == "comparison":
            a, b = q.question.answer_contains
            assert a != b


def test_no_match_names_are_absent_and_ambiguous_names_shared(catalog: Catalog) -> None:
    world, facts = build_facts(catalog)
    for kind in ("absent_anime", "absent_person", "absent_character", "absent_studio"):
        assert facts[kind], kind
        assert not any(world.names.known(f.words["x"]) for f in facts[kind])
    for f in facts["shared_name"]:
        owners = world.names.owners[f.words["x"].lower()]
        assert len({t for t, _ in owners if t in ("anime", "manga", "character")}) >= 2, f.words["x"]


def test_noise_is_present(stress: list[StressQuestion]) -> None:
    noise = Counter(n for q in stress for n in q.noise)
    for kind in ("lowercase", "typo", "alias", "surname_first", "possessive", "chatter", "no_punct"):
        assert noise[kind] >= 20, f"{kind}: {noise[kind]}"
    assert noise["typo"] >= len(stress) // 10
    for q in stress:
        if "lowercase" in q.noise:
            assert q.question.question == q.question.question.lower()
        assert q.noise.count("typo") <= 1


def test_a_typo_is_one_slip_after_the_first_letter() -> None:
    rng = random.Random(0)
    for word in ("Kakashi", "Evangelion", "Madhouse", "Sotozaki") * 25:
        slip = typo(word, rng)
        assert slip != word and slip[0] == word[0]
        assert abs(len(slip) - len(word)) <= 1
        if len(slip) == len(word):
            assert sum(x != y for x, y in zip(slip, word, strict=True)) == 1


def test_every_type_has_both_halves(stress: list[StressQuestion], catalog: Catalog) -> None:
    for t in TEMPLATES:
        halves = Counter(q.split for q in stress if q.question.type == t)
        assert halves["tune"] > 0 and halves["held"] > 0, t
    for q in stress:
        assert q.split == template_split(int(q.template.rsplit("-t", 1)[1]))
    held = build_stress_set(seed=SEED, split="held", catalog=catalog)
    assert [q.question for q in held] == [q.question for q in stress if q.split == "held"]
