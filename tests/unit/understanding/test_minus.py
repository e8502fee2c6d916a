"""Set differences over what retrieval returns (understanding/reading/minus.py), over hand-written links."""

from __future__ import annotations

from agentic_rag.understanding.reading import read
from tests.unit.understanding.test_reading import cand, hops, links, work


def test_the_works_a_character_is_missing_from_are_the_franchise_s_less_theirs() -> None:
    for q in ("which zorb anime is quux missing from", "which zorb shows does quux not show up in",
              "which zorb movies is quux not in"):
        a = read(q, links(q, ("zorb", work("Zorb")), ("quux", [cand("character", "Quux")])))
        assert a.minus and hops(a) == [("includes",)] and a.types["zorb"][0] == "franchise", q
        assert len(a.more) == 1 and hops(a.more[0]) == [("appears_in",)] and a.more[0].mentions == ["quux"]


def test_one_work_s_characters_missing_from_another_are_its_cast_less_the_other_s() -> None:
    q = "which of the zorb main characters don't show up in the blip movie"
    a = read(q, links(q, ("zorb", work("Zorb")), ("blip", work("Blip"))))
    assert a.minus and a.hops[0].edges == ("features",) and a.hops[0].roles == ("main",)
    assert a.mentions == ["zorb"] and a.more[0].mentions == ["blip"] and a.more[0].hops[0].roles == ()


def test_no_set_asked_or_no_membership_denied_is_no_difference() -> None:
    q = "which zorb anime is quux in"  # the positive: the character's works
    assert not read(q, links(q, ("zorb", work("Zorb")), ("quux", [cand("character", "Quux")]))).minus
    q = "is quux missing from zorb"  # nothing asked for: yes or no
    assert not read(q, links(q, ("zorb", work("Zorb")), ("quux", [cand("character", "Quux")]))).minus
