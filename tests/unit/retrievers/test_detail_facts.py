"""An edge's detail said as a fact: a role word possessively, anything else beside the role the edge says."""

from __future__ import annotations

import pytest

from agentic_rag.planners.heuristic.sentences import fact_sentence
from agentic_rag.retrievers.graph import _detail_fact


@pytest.mark.parametrize(("detail", "rel", "said"), [
    ("granddaughter", "family", "Pan is Son Goku's granddaughter."),
    ("childhood friend", "ally", "Pan is Son Goku's childhood friend."),
    ("Team 7", "teammate", "Pan is Son Goku's teammate (Team 7)."),
    ("Kira investigation team", "teammate", "Pan is Son Goku's teammate (Kira investigation team)."),
    ("his adjutant", "teammate", "Pan is Son Goku's teammate (his adjutant)."),
    ("after Geto became a curse user", "enemy", "Pan is Son Goku's enemy (after Geto became a curse user)."),
    ("her tsuguko", "mentor_of", "Pan is Son Goku's student (her tsuguko)."),
])
def test_a_detail_is_said_as_a_role_word_or_beside_the_edge_s_role(detail: str, rel: str, said: str) -> None:
    fact = _detail_fact("Pan", "Son Goku", detail, rel)
    assert fact.endswith(f"({rel})") and fact_sentence(fact) == said
