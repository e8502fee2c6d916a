"""Noun phrases: a name, or a description of an entity relative to another one.

"the anime Luffy appears in" is the name "Luffy" (a character) followed by one hop (appears_in);
"the manga that the Demon Slayer anime is based on" is "Demon Slayer" (an anime) then adapted_from;
"the 2003 Fullmetal Alchemist anime" is the name "Fullmetal Alchemist", typed anime, from 2003.
Descriptions nest: the inner phrase is parsed the same way, so compositions need no extra rules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agentic_rag.catalog.vocabulary import EntityType

WORK: tuple[EntityType, ...] = ("anime", "manga")
ANIME: tuple[EntityType, ...] = ("anime", "manga")  # an anime first; the manga when no anime has the name


@dataclass(frozen=True, slots=True)
class Hop:
    """One traversal from each entity of the previous level."""

    edges: tuple[str, ...]
    roles: tuple[str, ...] = ()  # keep neighbors whose edge qualifier is one of these (staff role, "main")
    kind: str = "neighbors"  # or "k_hop" for a whole chain (sequels in order)
    node_types: tuple[EntityType, ...] = ()
    first: bool = False  # keep only the earliest result ("the first TV season")
    exclude_seen: bool = False  # drop entities already met on the way ("what *other* anime")
    include_start: bool = False  # keep the entities the hop starts from ("both seasons": the first and its sequels)


@dataclass(slots=True)
class Phrase:
    name: str
    types: tuple[EntityType, ...]
    year: int | None = None
    hops: list[Hop] = field(default_factory=list)


_ARTICLE = re.compile(r"^(?:the|a|an|original|both)\s+", re.IGNORECASE)
# Type words around a name: "the Death Note manga", "the Jujutsu Kaisen 0 movie", "the 1999 X TV series".
_TYPE_SUFFIX = re.compile(r"\s+(?P<w>manga|anime|tv series|tv anime|tv show|series|show|movie|film|ova|ona|"
                          r"franchise|studio|character)$", re.IGNORECASE)
_TYPE_PREFIX = re.compile(r"^(?P<w>anime|manga|character|studio|franchise|series|show|movie)\s+(?P<rest>.+)$",
                          re.IGNORECASE)
_TYPE_OF: dict[str, tuple[EntityType, ...]] = {"manga": ("manga",), "franchise": ("franchise",),
                                                "studio": ("studio",), "character": ("character",)}
_YEAR = re.compile(r"^(?P<y>(?:19|20)\d\d)\s+(?P<rest>.+)$")
# "Tatsuki Fujimoto's Chainsaw Man": a creator's name before a title (two capitalised words and 's)
_BY = re.compile(r"^(?:[A-Z][\w.\-]*\s){1,2}?[A-Z][\w.\-]*'s\s+(?P<rest>[A-Z].+)$")
_SEASON_TAIL = re.compile(r"'s first (?:tv )?season$", re.IGNORECASE)

_R = r"(?P<x>.+?)"
_WORKWORD = r"(?:anime|show|series|tv series|work|title)"
# (pattern, hops, types of the inner phrase); "first" in a pattern keeps the earliest result
_RELATIVE: tuple[tuple[re.Pattern[str], tuple[Hop, ...], tuple[EntityType, ...]], ...] = tuple(
    (re.compile(p, re.IGNORECASE), h, t) for p, h, t in (
        (rf"^(?:the )?(?P<first>first )?(?:tv )?(?:season of )?(?:the )?{_WORKWORD} (?:that )?{_R} "
         rf"(?:appears in|is in|stars in|shows up in|is from|was in|comes from|belongs to)$",
         (Hop(("appears_in",), node_types=("anime",)),), ("character",)),
        (rf"^(?:the )?(?P<first>first )?(?:tv )?{_WORKWORD} (?:featuring|starring|with) {_R}$",
         (Hop(("appears_in",), node_types=("anime",)),), ("character",)),
        (rf"^(?:the )?(?:direct )?sequel (?:to|of) {_R}$", (Hop(("sequel",)),), ANIME),
        (rf"^(?:the )?prequel (?:to|of) {_R}$", (Hop(("prequel",)),), ANIME),
        (rf"^(?:the )?(?:movie|film|season|anime|show|series|entry) (?:that )?(?:follows|comes after|came after) {_R}$",
         (Hop(("sequel",)),), ANIME),
        (rf"^(?:the )?manga (?:that )?{_R} (?:adapts|adapted|is based on|was based on|is adapted from|"
         rf"was adapted from)$", (Hop(("adapted_from",)),), ANIME),
        (rf"^(?:the )?(?:source )?manga (?:of|behind) {_R}$", (Hop(("adapted_from",)),), ANIME),
        (rf"^(?:the )?anime (?:adaptations? )?(?:of|that adapts|adapting|based on) {_R}$",
         (Hop(("adapted_into",), node_types=("anime",)),), ("manga",)),
        (rf"^(?:the )?main (?:characters?|protagonists?|heroe?s?) (?:of|in) {_R}$",
         (Hop(("features",), ("main",), node_types=("character",)),), WORK),
        (rf"^(?:the )?(?P<role>director|composer|author|writer|artist|illustrator|creator|character designer) "
         rf"(?:of|behind) {_R}$", (), WORK),
    ))


def clean(text: str) -> str:
    """The name without surrounding quotes, articles and trailing punctuation."""
    text = text.strip()
    if text[:1] in "\"'“‘":  # a quoted name; a quote inside a title ("Resurrection 'F'") stays
        text = text.strip("\"'“”‘’")
    text = text.strip().rstrip("?.!,").strip()
    while (stripped := _ARTICLE.sub("", text)) != text:
        text = stripped
    return text


def staff_roles(word: str) -> tuple[str, ...]:
    """The staff roles a verb or noun names ("directed" -> director); empty: every credit."""
    w = word.lower()
    if "music" in w or "compos" in w or "scored" in w:
        return ("music",)
    if "design" in w:
        return ("character_design",)
    if "direct" in w:
        return ("director", "chief_director")
    if "wrote and drew" in w or "credited" in w or w in ("staff", "made"):
        return ()
    if any(x in w for x in ("drew", "draw", "illustrat", "artist")):
        return ("story_and_art", "art")
    if any(x in w for x in ("wrote", "writ", "author", "creat", "mangaka")):
        return ("original_creator", "story_and_art", "story")
    return ()


def noun_phrase(text: str, types: tuple[EntityType, ...]) -> Phrase:
    """Unfold ``text`` into a name to resolve and the hops that lead from it to what is meant."""
    text = clean(_SEASON_TAIL.sub("", clean(text)))
    for pattern, hops, inner_types in _RELATIVE:
        m = pattern.match(text)
        if m is None:
            continue
        inner = noun_phrase(m.group("x"), inner_types)
        found = list(hops)
        if m.groupdict().get("role"):
            found = [Hop(("staff",), staff_roles(m.group("role")), node_types=("person",))]
        if m.groupdict().get("first"):
            found = [Hop(h.edges, h.roles, h.kind, h.node_types, first=True) for h in found]
        inner.hops.extend(found)
        return inner
    if (by := _BY.match(text)) and not by.group("rest").lower().startswith(("first", "sequel", "prequel")):
        text = by.group("rest")
    year = None
    if y := _YEAR.match(text):
        year, text = int(y.group("y")), y.group("rest")
    if p := _TYPE_PREFIX.match(text):
        text, types = p.group("rest"), _TYPE_OF.get(p.group("w").lower(), ("anime",))
    if t := _TYPE_SUFFIX.search(text):
        word = t.group("w").lower()
        # "Cowboy Bebop: The Movie" is a title, "the Death Note manga" a typed name
        if len(text) > len(t.group(0)) and not re.search(r"(?:\bthe|:|-)$", text[: t.start()], re.IGNORECASE):
            text = text[: t.start()]
            types = _TYPE_OF.get(word, ("anime",))
    return Phrase(name=clean(text), types=types, year=year)
