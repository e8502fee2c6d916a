"""How a stored turn marks the characters it named (he or she), from the words of their descriptions."""

from __future__ import annotations

import pytest

from agentic_rag.orchestrator.conversations import pronoun_of, with_pronouns
from agentic_rag.protocol import EntityRef
from agentic_rag.protocol.conversation import Named, PastTurn


@pytest.mark.parametrize(("description", "pronoun"), [
    ("The introverted fourteen-year-old pilot of Unit-01, son of the commander.", "he"),
    ("A city hall clerk who is secretly an assassin; she marries Loid.", "she"),
    ("Light's father, a police chief.", "he"),  # a noun said of the character
    ("Tanjiro's younger sister, turned into a demon.", "she"),
    # what the character has or does to others is not what they are
    ("A cheerful officer devoted to his wife and daughter.", None),
    ("Jet's former lover on Ganymede, who left him.", None),
    ("A demon turned by Tamayo, fiercely devoted to her.", None),
    ("The proud pilot of Evangelion Unit-02.", None),
    (None, None),
])
def test_the_pronoun_a_description_uses(description: str | None, pronoun: str | None) -> None:
    assert pronoun_of(description) == pronoun


def test_only_characters_are_marked() -> None:
    shinji = Named(ref=EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001"), name="Shinji")
    anno = Named(ref=EntityRef(entity_type="person", id="00000000-0000-4000-8000-000000000002"), name="Anno")
    card = PastTurn(question="q", standalone="q", status="answered", subjects=[anno], answers=[shinji])
    marked = with_pronouns(card, {shinji.ref.id: "son of Gendo", anno.ref.id: "his father"})
    assert marked.answers[0].pronoun == "he" and marked.subjects[0].pronoun is None


def test_another_name_says_who_a_description_does_not() -> None:
    # (the card reads the description with the character's other names: "Aunt Mito")
    assert pronoun_of("Ging's cousin, who raised Gon on Whale Island.") is None
    assert pronoun_of("Ging's cousin, who raised Gon on Whale Island.. Mito. Aunt Mito") == "she"
