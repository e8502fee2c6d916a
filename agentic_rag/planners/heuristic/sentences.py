"""Answers a person would write: one plain sentence per finding, built from the cards' names and facts.

Only the words are made here; which entities and facts an answer uses is decided by the writer, and
the ids and evidence stay in their own fields of the draft.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from agentic_rag.planners.heuristic.context import bare, qualifiers, year_of
from agentic_rag.protocol.reading import Hop
from agentic_rag.protocol.roles import CardEntity
from agentic_rag.protocol.vocabulary import EDGE_WORDS

MAX_LISTED = 12
FORMAT_NAMES = {"tv": "TV series", "movie": "film", "ova": "OVA", "ona": "ONA", "special": "special"}
ROLE_PASSIVE = {
    "director": "was directed by", "chief_director": "had as chief director", "music": "has music by",
    "character_design": "has character designs by", "series_composition": "has series composition by",
    "original_creator": "was created by", "story_and_art": "was written and drawn by", "story": "was written by",
    "art": "was drawn by", "producer": "was produced by",
}
# How one entity stands to the next along an edge: "X <phrase> Y" (the vocabulary's words).
EDGE_PHRASES = {name: w.links for name, w in EDGE_WORDS.items()}


def join(items: Sequence[str], limit: int = MAX_LISTED) -> str:
    """"A", "A and B", "A, B and C", "A, B, C and 4 more"."""
    items = list(dict.fromkeys(i for i in items if i))
    if not items:
        return "nothing"
    if len(items) > limit:
        return ", ".join(items[:limit]) + f" and {len(items) - limit} more"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" and {items[-1]}"


def titled(e: CardEntity) -> str:
    """A work with its year ("One Piece (1999)"), any other entity by its name."""
    year, name = year_of(e.name), bare(e.name)
    shown = year and e.ref.entity_type in ("anime", "manga") and f"({year})" not in name  # "Hunter x Hunter (1999)"
    return f"{name} ({year})" if shown else name


def _detailed(e: CardEntity, details: dict[str, str], *, show: bool) -> str:
    d = details.get(e.ref.id, "")
    return f"{titled(e)} ({d.replace('_', ' ')})" if show and d and d not in ("main", "supporting") else titled(e)


def _subject(sources: Sequence[CardEntity]) -> str:
    return join([bare(e.name) for e in sources], 4)


def hop_sentence(hop: Hop, sources: Sequence[CardEntity], level: Sequence[CardEntity],
                 details: dict[str, str]) -> str:
    """One sentence for one followed hop: what the sources lead to."""
    who = _subject(sources)
    edge = hop.edges[0]
    listed = join([_detailed(e, details, show=edge in ("family", "worked_on", "staff")) for e in level])
    many = len(level) > 1
    if edge == "appears_in" and hop.last:
        return f"The latest anime {who} appears in is {listed}."
    if edge == "appears_in":
        return f"{who} appears in {listed}."
    if edge == "features":
        lead = "main characters" if hop.roles == ("main",) else "characters"
        return f"The {lead} of {who} {'are' if many else 'is'} {listed}."
    if edge == "animated_by":
        return f"{who} {'were' if len(sources) > 1 else 'was'} animated by {listed}."
    if edge == "animated":
        return f"{who} animated {listed}."
    if edge == "staff":
        by_role = [(r, [bare(e.name) for e in level if r in qualifiers(details.get(e.ref.id, ""))]) for r in hop.roles]
        said = [f"{ROLE_PASSIVE[r]} {join(people)}" for r, people in by_role if people and r in ROLE_PASSIVE]
        if said:
            return f"{who} {'; it '.join(said)}."
        return f"The credited staff of {who}: {listed}."
    if edge == "worked_on":
        return f"{who} worked on {listed}."
    if edge == "adapted_from":
        return f"{who} {'are' if len(sources) > 1 else 'is'} adapted from the manga {listed}."
    if edge == "adapted_into":
        return f"{who} was adapted into the anime {listed}."
    if edge == "sequel":
        if hop.last:
            return f"The latest in the {who} series is {listed}."
        if hop.kind == "k_hop":
            # in order of release: a work added to the run by name ("final season included") is listed where it airs
            ordered = join([titled(e) for e in sorted(level, key=lambda e: year_of(e.name) or 0)])
            return f"In order, the series runs {ordered}." if hop.include_start else \
                f"After {who} come, in order: {ordered}."
        return f"The sequel to {who} is {listed}." if not many else f"{who} is followed by {listed}."
    if edge == "prequel":
        return f"{who} follows {listed}." if hop.kind != "k_hop" else f"Before {who} came {listed}."
    if edge == "student_of":
        return f"{who} was taught by {listed}."
    if edge == "mentor_of":
        return f"{who} mentored {listed}."
    if "family" in hop.edges and hop.roles:  # "naruto's son", "goku's sons", "naruto's parents"
        found = [r for r in hop.roles if any(r in qualifiers(details.get(e.ref.id, "")) for e in level)]
        kin = found[0] if len(found) == 1 else _KIN_GROUP.get(hop.roles[1:], hop.roles[0])
        kin = _plural(kin) if many else kin
        return f"{who}'s {kin} {'are' if many else 'is'} {join([titled(e) for e in level])}."
    if edge in ("family", "romantic"):
        return f"{who}'s family and partners: {listed}."
    if edge in ("rival", "enemy", "ally", "teammate"):
        return f"{who}'s {EDGE_WORDS[edge].plural}: {listed}."
    if edge == "part_of":
        return f"{who} belongs to the {listed} franchise."
    if edge in ("side_story", "spinoff"):
        return f"Side stories and spin-offs of {who}: {listed}."
    return f"{who} {EDGE_PHRASES.get(edge, edge.replace('_', ' '))} {listed}."


# the word for the members a family word groups ("goku's kids" are his sons and daughters: his children)
_KIN_GROUP: dict[tuple[str, ...], str] = {
    ("son", "daughter"): "child", ("father", "mother"): "parent", ("brother", "sister"): "sibling",
    ("wife", "husband"): "spouse", ("grandson", "granddaughter"): "grandchild",
    ("grandfather", "grandmother"): "grandparent"}


def _plural(kin: str) -> str:
    """A family word for several ("sons", "wives", "children")."""
    if kin == "child":
        return "children"
    return f"{kin[:-2]}ves" if kin.endswith("fe") else f"{kin}s"


def nothing_sentence(hop: Hop, sources: Sequence[CardEntity]) -> str:
    said = EDGE_WORDS.get(hop.edges[0])
    what = said.missing if said is not None and said.missing else hop.edges[0].replace("_", " ")
    if hop.roles and hop.edges[0] == "staff":
        what = " or ".join(r.replace("_", " ") for r in hop.roles[:2])
    if hop.edges[0] == "adapted_from" and all(e.ref.entity_type == "anime" for e in sources):
        # "is X based on a manga or original?": an anime with no source is an original work
        return f"{_subject(sources)} is an original anime: the catalog records no manga it is adapted from."
    return f"The catalog records no {what} for {_subject(sources)}."


def attribute_sentence(attr: str, row: dict[str, Any], entity_type: str) -> str:
    """One entity's asked value, said the way people say it."""
    name, value = row.get("name"), row.get(attr)
    if value in (None, "", []):
        return f"The catalog does not record the {attr.replace('_', ' ')} of {name}."
    if attr == "year":
        if entity_type == "studio":
            return f"{name} was founded in {value}."
        # a run is said whole: when it began, and when it ended or that it still runs
        end, status = row.get("end_year"), row.get("status")
        subject, verb = (f"The {name} manga", "ran") if entity_type == "manga" else (str(name), "aired")
        if end and end != value:
            return f"{subject} {verb} from {value} to {end}."
        if status in ("airing", "ongoing", "publishing"):
            return f"{subject} began in {value} and is still {'airing' if status == 'airing' else 'ongoing'}."
        return f"{subject} {verb} in {value}." if end else f"{subject} began in {value}."
    if attr == "founded":
        return f"{name} was founded in {value}."
    if attr == "episode_count":
        return f"{name} has {value} episode{'' if str(value) == '1' else 's'}."
    if attr == "volumes":
        return f"The {name} manga has {value} volume{'' if str(value) == '1' else 's'}."
    if attr == "magazine":
        return f"{name} was serialized in {value}."
    if attr == "format":
        shown = str(FORMAT_NAMES.get(str(value), value))
        return f"{name} is {'an' if shown[:1].lower() in 'aeio' else 'a'} {shown}."  # "an OVA", "an ONA"
    if attr == "genres":
        return f"{name} is tagged {join([str(g).replace('_', ' ') for g in value])}." if isinstance(value, list) \
            else f"{name} is tagged {value}."
    if attr == "status":
        return f"{name} is {'still airing' if value == 'airing' else value}."
    return f"{name}: {attr.replace('_', ' ')} {value}."


_FIELD_WORDS = {"episode_count": "episodes", "volumes": "volumes"}
# what a missing value of a compared field is said as ("the catalog does not record when X ended")
_UNRECORDED = {"episode_count": "the episode count of", "volumes": "the volume count of",
               "year": "a start year for", "end_year": "an end year for"}
_ONE = {"episode_count": "has {} episodes", "volumes": "has {} volumes", "year": "started in {}",
        "end_year": "ended in {}"}


def compare_sentence(field: str, x: str, y: str, va: Any, vb: Any) -> str:
    """Two entities side by side on one field, with which one is more (or earlier)."""
    def shown(v: Any) -> str:
        if isinstance(v, list):
            return join([str(i) for i in v]) if v else "none recorded"
        return "unknown" if v is None else str(v)

    if field in _UNRECORDED and (va is None or vb is None):
        # a field the catalog lacks for one of them is said missing, never "unknown" as if it were a value
        said = [f"{n} {_ONE[field].format(v)}. " for n, v in ((x, va), (y, vb)) if v is not None]
        lacks = [n for n, v in ((x, va), (y, vb)) if v is None]
        return f"{''.join(said)}The catalog does not record {_UNRECORDED[field]} {join(lacks)}."
    if field in _FIELD_WORDS:
        unit = _FIELD_WORDS[field]
        text = f"{x} has {shown(va)} {unit} and {y} has {shown(vb)}"
        if isinstance(va, int | float) and isinstance(vb, int | float) and va != vb:
            text += f", so {x if va > vb else y} has {abs(va - vb)} more"
        return text + "."
    if field in ("year", "end_year"):
        verb = "started in" if field == "year" else "ended in"
        text = f"{x} {verb} {shown(va)} and {y} in {shown(vb)}"
        if isinstance(va, int) and isinstance(vb, int) and va != vb:
            gap = abs(va - vb)
            text += f", so {x if va < vb else y} {'came' if field == 'year' else 'ended'} first, " \
                    f"by {gap} year{'s' if gap > 1 else ''}"
        return text + "."
    if field in ("studios", "authors", "magazine"):
        label = SIDE_BY_SIDE[field]
        same = va == vb and va not in (None, [])
        text = f"{x} was {label} {shown(va)}; {y} was {label} {shown(vb)}"
        return text + (" (the same)." if same else ".")
    if field == "anime":  # two characters side by side: where each appears
        return f"{x} appears in {shown(va)}; {y} in {shown(vb)}."
    return f"{field.replace('_', ' ').capitalize()}: {x} {shown(va)}, {y} {shown(vb)}."


SIDE_BY_SIDE = {"studios": "animated by", "authors": "by", "magazine": "serialized in"}  # fields with no order


def side_by_side_sentence(field: str, rows: list[tuple[str, Any]]) -> str:
    """Three or more entities on a field with no order, each said ("A was animated by Bones; B was animated by
    MAPPA.")."""
    def shown(v: Any) -> str:
        return (join([str(i) for i in v]) or "none recorded") if isinstance(v, list) else str(v or "none recorded")

    return "; ".join(f"{n} was {SIDE_BY_SIDE[field]} {shown(v)}" for n, v in rows) + "."


def ranking_sentence(field: str, rows: list[tuple[str, Any]], *, fewest: bool = False) -> str:
    """Three or more entities on one number, in order, and which has the most (``fewest``: the fewest, listed from
    there): "From most to fewest volumes: Demon Slayer (23 volumes), ..., so Demon Slayer has the most"."""
    known = [(n, v) for n, v in rows if isinstance(v, int | float)]
    unknown = [n for n, v in rows if not isinstance(v, int | float)]
    if field in ("year", "end_year", "founded"):
        known.sort(key=lambda r: r[1])
        verb = {"year": "came first", "end_year": "ended first", "founded": "was founded first"}[field]
        listed = join([f"{n} ({v})" for n, v in known], len(known))
        text = f"In order: {listed}, so {known[0][0]} {verb}." if known else ""
    else:
        known.sort(key=lambda r: r[1] if fewest else -r[1])
        unit = _FIELD_WORDS.get(field, field.replace("_", " "))
        listed = join([f"{n} ({v} {unit})" for n, v in known], len(known))
        order, end = ("fewest to most", "fewest") if fewest else ("most to fewest", "most")
        tied = [n for n, v in known if v == known[0][1]] if known else []
        lead = f"{join(tied, len(tied))} {'have' if len(tied) > 1 else 'has'} the {end}"
        text = f"From {order} {unit}: {listed}, so {lead}." if known else ""
    if unknown:
        text += f" The catalog does not record it for {join(unknown)}."
    return text.strip()


PEOPLE_RELATIONS = ("family", "romantic", "rival", "enemy", "ally", "teammate", "mentor_of", "student_of")
_FACT = re.compile(r"^(?P<text>.+) \((?P<rel>\w+)\)$")


def fact_sentence(fact: str) -> str | None:
    """A graph qualifier between people as a sentence ("Pan is Son Goku's granddaughter."); None for the
    qualifiers of other edges (a character's role in a work), which the path already says."""
    m = _FACT.match(fact)
    if m is None or m.group("rel") not in PEOPLE_RELATIONS:
        return None
    return m.group("text").rstrip(".") + "."


def path_sentence(nodes: Sequence[str], rels: Sequence[str]) -> str:
    """A path as a sentence: "Naruto was animated by Studio Pierrot, which animated Bleach."."""
    if not rels:
        return f"{nodes[0]}."
    text = f"{nodes[0]} {EDGE_PHRASES.get(rels[0], rels[0])} {nodes[1]}"
    for rel, node in zip(rels[1:], nodes[2:], strict=False):
        text += f", which {EDGE_PHRASES.get(rel, rel)} {node}"
    return text + "."


def quote_sentence(name: str, entity_type: str, text: str) -> str:
    """A record's own sentence, quoted and said whose it is ("The catalog says of Kakashi Hatake: "..."")."""
    whose = f"the {name} {entity_type}" if entity_type in ("anime", "manga", "franchise") else name
    text = text if text.endswith((".", "!", "?", "...")) else f"{text}."
    return f'The catalog says of {whose}: "{text}"'
