"""Spelled-out numbers, as people type them and voice assistants transcribe them."""

from __future__ import annotations

import pytest

from agentic_rag.understanding.filters import parse_filter
from agentic_rag.understanding.numbers import spelled, with_digits


@pytest.mark.parametrize(("text", "expected"), [
    ("studios founded before nineteen eighty", "studios founded before 1980"),
    ("manga with forty two volumes", "manga with 42 volumes"),
    ("the twenty eleven version", "the 2011 version"),
    ("twenty one episodes", "21 episodes"),
    ("after the year two thousand and ten", "after the year 2010"),
    ("between ninety six and ninety eight", "between 96 and 98"),
    ("which one is older, the first one?", "which one is older, the first one?"),  # "one" alone stays a word
])
def test_number_words_become_digits(text: str, expected: str) -> None:
    assert with_digits(text) == expected


def test_digits_spelled_inside_a_name() -> None:
    assert spelled(["evangelion", "one", "point", "oh"]) == ["evangelion", "1", "0"]
    assert spelled(["jujutsu", "kaisen", "zero"]) == ["jujutsu", "kaisen", "0"]
    assert spelled(["death", "note"]) is None and spelled(["point"]) is None


@pytest.mark.parametrize(("question", "where"), [
    ("give me animation studios founded before nineteen eighty", [("founded", "lt", 1980)]),
    ("which manga have forty volumes or more", [("volumes", "gte", 40)]),
    ("anime that came out between ninety six and ninety eight, uh, which ones", [("year", "gte", 1996),
                                                                                 ("year", "lte", 1998)]),
    ("studios that founded after the year two thousand", [("founded", "gt", 2000)]),
])
def test_filters_read_spelled_numbers(question: str, where: list[tuple[str, str, int]]) -> None:
    f = parse_filter(question)
    assert f is not None and sorted((c["field"], c["op"], c["value"]) for c in f.where) == sorted(where)
    assert f.words == ""  # fillers are no facet values
