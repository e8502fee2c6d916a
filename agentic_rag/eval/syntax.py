"""Whether an answer repeats a context card's own notation instead of saying it (issue 37, point 7).

A card is written for a planner to read: relation lines ("animated_by: Madhouse (studio)"), paths
("Luffy --teammate--> Nami"), id marks ("[id ...]", "[end id ...]"), a record's values ("year=1998"), a step's
tally ("3 found (neighbors from ...)"). A person writes none of these; every planner's answer is written by the
heuristic's writer from what its model picked, so none should reach a user. :func:`card_syntax` finds them.
"""

from __future__ import annotations

import re

# each a notation of a card (orchestrator/cards.py, retrievers/graph.py, retrievers/dsl.py), never of a sentence
_TYPES = "anime|manga|character|person|studio|franchise|episode"
_TYPED = rf"\((?:{_TYPES})\)"  # a label's type, "(studio)"
CARD_NOTATION = re.compile(
    r"-->"  # a path's arrow
    r"|\[(?:end |start )?id\b"  # an id mark
    r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-"  # a bare id
    r"|\b[a-z]+(?:_[a-z]+)*=[^\s=]"  # a record's value, "episode_count=26"
    rf"|\b[a-z]+(?:_[a-z]+)*: [^.;|:]{{1,120}}? {_TYPED}"  # a relation line, "animated_by: Madhouse (studio)"
    r"|\b\d+ found \("  # a step's tally
    rf"|\((?:{_TYPES}), \d{{4}}\)"  # a graph label, "(anime, 1998)"
)


def card_syntax(answer: str) -> list[str]:
    """The pieces of card notation in ``answer`` (none for an answer written as sentences)."""
    return [m.group(0) for m in CARD_NOTATION.finditer(answer)]
