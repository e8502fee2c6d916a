"""Clarify (seed 004's two-pass): ask instead of guessing when a bare name has several strong readings.

A reading is strong when the catalog holds an entity whose name or alias is exactly the mention.
The question's own wording narrows the types first ("Which anime is Luffy in?" wants a character,
"the sequel of Naruto" an anime), so only a name with no such context, such as "Tell me about
Naruto" (an anime, a manga and a character), gets a clarification. This is code, not a model
decision: it is cheap, deterministic, and the same whichever planner runs.
"""

from __future__ import annotations

import re

from agentic_rag.catalog.vocabulary import ENTITY_TYPES
from agentic_rag.models.heuristic.intent import ANY_TYPE, analyze
from agentic_rag.orchestrator.retrieval import Retrieval
from agentic_rag.protocol import Clarification, ClarificationChoice, EntityRef
from agentic_rag.retrievers.typeahead import TypeaheadHit

MAX_CHOICES = 10
# Words in a question that name the type the user means.
TYPE_WORDS: dict[str, tuple[str, ...]] = {
    "anime": ("anime", "series", "show", "tv", "movie", "film"),
    "manga": ("manga", "comic"),
    "character": ("character",),
    "person": ("director", "author", "artist", "composer", "voice"),
    "studio": ("studio",),
    "franchise": ("franchise",),
    "episode": ("episode",),
}
_WORD = re.compile(r"[a-z]+")


def open_types(question: str, mention: str) -> tuple[str, ...]:
    """The entity types ``mention`` may still be, judged by the question's wording alone.

    A bare name ("Who is Toji?", "Frieren") leaves every type open. Otherwise the question's
    reading decides: a type word ("the Death Note manga") or the frame ("Which studio animated X?"
    wants an anime) names the type meant, so only several readings *of that type* are ambiguous
    (two characters called Toji), and a year ("the 1999 X") already picks one.
    """
    a = analyze(question)
    types = a.types.get(mention)
    if types is None:  # a mention the heuristic did not read: fall back to the type words alone
        said = set(_WORD.findall(question.lower().replace(mention.lower(), " ")))
        named = tuple(t for t, ws in TYPE_WORDS.items() if said & set(ws))
        return named or (tuple(ENTITY_TYPES) if a.intent == "lookup" else ())
    if mention in a.years:
        return ()
    if a.intent == "lookup" and set(types) >= set(ANY_TYPE):
        return tuple(ENTITY_TYPES)
    return types[:1]


def _label(hit: TypeaheadHit) -> str:
    return f"{hit.name} ({hit.entity.entity_type})"[:200]


async def clarification(retrieval: Retrieval, question: str, mentions: list[str]) -> tuple[Clarification, str] | None:
    """A clarification for the first mention with several strong readings the question allows, with that
    mention (the resumed run searches the chosen entity under it), else None."""
    for mention in mentions[:6]:
        allowed = open_types(question, mention)
        hits = [h for h in await retrieval.names(mention) if h.entity.entity_type in allowed]
        unique = list({h.entity.id: h for h in hits}.values())
        if len(unique) < 2:
            continue
        choices = [ClarificationChoice(label=_label(h), entity=EntityRef(entity_type=h.entity.entity_type,
                                                                          id=h.entity.id))
                   for h in unique[:MAX_CHOICES]]
        return Clarification(question=f"Which {mention!r} do you mean?"[:200], choices=choices), mention
    return None
