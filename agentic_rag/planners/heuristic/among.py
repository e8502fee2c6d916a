"""The answer to a choice among listed names ("which of these is NOT in X: A, B or C?"): the set difference.

For each listed name the predicate the reader found (``Analysis.among``) holds or fails, read from the cards alone:
the hop from that name reached the other name (or anything, "anyone's teacher"), or the name's own record says the
words of a group the catalog has no entry for. The answer names the ones asked (those it fails for, when negated),
says why for each (what the hop did reach, the record's sentence), and says which listed names the catalog lacks.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentic_rag.planners.heuristic.context import bare, qualifiers, row_of
from agentic_rag.planners.heuristic.groups import record_says, singular
from agentic_rag.planners.heuristic.progress import Progress, among_tests
from agentic_rag.planners.heuristic.sentences import hop_sentence, join, nothing_sentence
from agentic_rag.protocol import DraftAnswer, EntityRef, Evidence, GraphIntent
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Among, Analysis
from agentic_rag.protocol.roles import CardEntity, ContextCard
from agentic_rag.understanding.text import fold

QUOTED = 120  # characters of a record's sentence an answer quotes
_ANSWER = max_len(DraftAnswer, "answer")
_ENTITIES = min(max_len(DraftAnswer, "source_entities"), max_len(DraftAnswer, "result_entities"))
_FACTS, _FACT = max_len(Evidence, "facts"), max_len(Evidence, "facts", item=True)
_CITATIONS, _CITATION = max_len(DraftAnswer, "citations"), max_len(DraftAnswer, "citations", item=True)
_PLURAL = {"is": "are", "was": "were"}

# how a predicate along an edge to another name is said after its copula ("is in X", "was animated by X")
_TO: dict[str, tuple[str, str]] = {
    "appears_in": ("is", "in {}"), "animated_by": ("was", "animated by {}"), "animated": ("is", "a studio of {}"),
    "worked_on": ("is", "credited on {}"), "part_of": ("is", "part of {}"), "adapted_from": ("is", "adapted from {}"),
    "adapted_into": ("was", "adapted into {}"), "mentor_of": ("is", "a mentor of {}"),
    "student_of": ("is", "a student of {}"), "teammate": ("is", "a teammate of {}"), "rival": ("is", "a rival of {}"),
    "enemy": ("is", "an enemy of {}"), "ally": ("is", "an ally of {}"), "family": ("is", "family of {}"),
}
# a credit asked by its role: "was directed by X"
_CREDIT: dict[str, str] = {"director": "directed by {}", "music": "scored by {}", "series_composition": "written by {}",
                           "original_creator": "written by {}", "art": "drawn by {}", "character_design":
                           "designed by {}"}
# ... and a relation to anyone: "is anyone's mentor"
_ANYONE: dict[str, str] = {"mentor_of": "mentor", "student_of": "student", "teammate": "teammate", "rival": "rival",
                           "enemy": "enemy", "ally": "ally", "family": "relative"}


@dataclass(slots=True)
class Verdict:
    """One listed name: whether the predicate holds for it, and why (what its hop reached, its record's words)."""

    entity: CardEntity
    holds: bool
    reached: list[CardEntity]
    quote: str = ""


@dataclass(frozen=True, slots=True)
class _Said:
    """The predicate after its copula: "is" + "in Mob Psycho 100 III"."""

    copula: str
    rest: str

    def says(self, n: int, holds: bool) -> str:
        c = self.copula if n == 1 else _PLURAL.get(self.copula, self.copula)
        return f"{c} {self.rest}" if holds else f"{c} not {self.rest}"

    def all(self, n: int) -> str:
        """"are both in X", "were all animated by X"."""
        return f"{_PLURAL.get(self.copula, self.copula)} {'both' if n == 2 else 'all'} {self.rest}"

    def again(self, n: int, holds: bool) -> str:
        c = self.copula if n == 1 else _PLURAL.get(self.copula, self.copula)
        return c if holds else f"{c} not"


def verdicts(a: Analysis, cards: list[ContextCard], ents: list[CardEntity]) -> list[Verdict]:
    """The predicate tested for each listed name (``ents`` in the order of ``a.mentions``), from the cards."""
    among = a.among
    assert among is not None
    listed = ents[:len(among.candidates)]
    target = ents[len(among.candidates)] if among.target and len(ents) > len(among.candidates) else None
    if among.value is not None:
        return [_by_value(e, among.value, row_of(cards, e.ref.id)) for e in listed]
    if among.hop is None:
        return [_by_record(e, among, row_of(cards, e.ref.id)) for e in listed]
    out: list[Verdict] = []
    for e, step in zip(listed, among_tests(a, ents), strict=True):
        assert isinstance(step, GraphIntent)
        reached = _reached(cards, step, among)
        holds = any(r.ref.id == target.ref.id for r in reached) if target is not None else bool(reached)
        out.append(Verdict(e, holds, reached))
    return out


def _reached(cards: list[ContextCard], step: GraphIntent, among: Among) -> list[CardEntity]:
    """What the hop reached from one listed name, less the credits the predicate does not ask for."""
    card = next((c for c in cards if c.source == "pg_graph" and c.data.get("start") == step.start.id
                 and list(c.data.get("edge_types") or []) == list(step.edge_types)), None)
    if card is None:
        return []
    details = card.data.get("meta", {}).get("details", {}) or {}
    roles = set(among.hop.roles) if among.hop else set()
    return [e for e in card.entities if e.ref.id != step.start.id
            and (not roles or roles & qualifiers(str(details.get(e.ref.id, ""))))]


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_GROUP_LEAD = re.compile(r"^(?:(?:a|an|the|in|of|on|from|one|part|members?)\s+)+", re.IGNORECASE)


def _by_record(e: CardEntity, among: Among, row: dict[str, Any]) -> Verdict:
    """Whether the name's own record (its names and description, not the works it lists) says every group word."""
    snippet = str(row.get("snippet") or "")
    about = row.get("about_at")
    story = snippet[about:] if isinstance(about, int) else ""
    names = [bare(e.name), *(str(x) for x in row.get("aliases") or [])]
    holds = record_says(row, bare(e.name), among.group)
    sentences = [*names[1:], *_SENTENCE.split(story.strip())]
    quote = next((s for s in sentences if {singular(w) for w in re.findall(r"\w+", fold(s))} & {
        singular(g) for g in among.group}), "") if holds else (_SENTENCE.split(story.strip())[0] if story else "")
    return Verdict(e, holds, [], quote[:QUOTED].rstrip("."))


_COMPARED = {"lt": operator.lt, "lte": operator.le, "gt": operator.gt, "gte": operator.ge, "eq": operator.eq}


def _by_value(e: CardEntity, value: tuple[str, str, str | int], row: dict[str, Any]) -> Verdict:
    """Whether a value of the name's own record is as the predicate says, and the value itself as the quote."""
    field, op, wanted = value
    have = row.get(field)
    if field == "status":  # "still running", "still airing": not finished, whichever word the record uses
        holds = have == wanted if wanted == "finished" else have is not None and have != "finished"
    elif field == "magazine":
        holds = bool(have) and names_magazine(str(wanted), str(have))
    elif field == "year" and isinstance(have, int) and isinstance(wanted, int):
        holds = _COMPARED[op](have, wanted)
    else:
        holds = have is not None and str(have).lower() == str(wanted).lower()
    return Verdict(e, holds, [], "" if have is None else str(have))


_MAGAZINE_WORDS = frozenset(("weekly", "monthly", "shonen", "shounen", "seinen", "shojo", "shoujo", "magazine",
                             "the", "comic", "comics"))


def names_magazine(said: str, magazine: str) -> bool:
    """Whether the words say this magazine: every word of it past the ones magazines share ("jump" for Weekly
    Shōnen Jump, not "shonen"), or its initials ("WSJ")."""
    words = fold(magazine).replace("+", " plus").split()
    own = [w for w in words if w not in _MAGAZINE_WORDS] or words
    told = fold(said).replace("+", " plus").split()
    initials = "".join(w[0] for w in fold(magazine).split())
    return all(w in told for w in own) or initials in told


def _said(among: Among, target: str) -> _Said:
    """How the predicate is said, after the name it is said of."""
    hop = among.hop
    if among.value is not None:  # a value of each one's record: "is finished", "was serialized in Jump"
        return _Said("was" if among.value[0] == "magazine" else "is", among.said)
    if hop is None:  # a group: "a hashira", "in the league of villains"; "straw hats": one of them
        first = among.said.split()[0].lower() if among.said else ""
        return _Said("is", among.said if first in ("a", "an", "the", "in", "of", "on", "from", "one", "part",
                                                    "member") else f"one of the {among.said}")
    edge = hop.edges[0]
    if among.target is None:
        return _Said("is", f"anyone's {_ANYONE.get(edge, edge.replace('_', ' '))} in the catalog")
    if edge == "staff":
        credit = next((_CREDIT[r] for r in hop.roles if r in _CREDIT), "made by {}")
        return _Said("was", credit.format(target))
    copula, rest = _TO.get(edge, ("is", f"linked to {{}} by {edge.replace('_', ' ')}"))
    return _Said(copula, rest.format(target))


def among_answer(a: Analysis, p: Progress, cards: list[ContextCard], said_already: Sequence[str] = ()) -> DraftAnswer:
    """The listed names the predicate fails for (holds for, unless negated), each with why, and the listed names the
    catalog lacks (but ``said_already``: those linking reported, which the loop's answer states first)."""
    among = a.among
    assert among is not None
    ents = [r.entity for r in p.found if r.entity is not None]
    lines: list[str] = []
    if unlisted := [u for u in among.unlisted if u not in said_already]:
        lacking = join([f'"{u}"' for u in unlisted])
        lines.append(f"None of {lacking} is in the catalog." if not among.candidates
                     else f"I could not find {lacking} in the catalog.")
    if not among.candidates:
        return _draft(" ".join(lines), [], [], lines, confidence=0.85)
    target = ents[len(among.candidates)] if among.target and len(ents) > len(among.candidates) else None
    said = _said(among, bare(target.name) if target else "")
    vs = verdicts(a, cards, ents)
    asked = [v for v in vs if v.holds != among.negated]
    rest = [v for v in vs if v.holds == among.negated]
    if among.hop is None and among.value is None:
        lines.append(f'The catalog has no entry for "{_GROUP_LEAD.sub("", among.said)}", so this is read from what '
                     "each one's own record says.")
        if not any(v.holds for v in vs):
            lines.append(f"None of the records of {names(vs)} says it, so the catalog cannot tell.")
            # all the catalog can say, said: no more steps would tell more
            return _draft(" ".join(lines), [v.entity.ref for v in vs], [], lines, confidence=0.8)
    if asked and rest:
        lines.append(f"{names(asked)} {said.says(len(asked), not among.negated)}; "
                     f"{names(rest)} {said.again(len(rest), among.negated)}.")
    elif len(vs) == 1:
        lines.append(f"{names(vs)} {said.says(1, vs[0].holds)}.")
    elif (not among.negated) == bool(asked):  # it holds for every one
        lines.append(f"{names(vs)} {said.all(len(vs))}" + (", so none is left out." if among.negated else "."))
    else:
        lines.append(f"None of {names(vs)} {said.says(1, True)}.")
    facts = [_why(v, among) for v in vs]
    # why for each the predicate fails for (what it does reach), and each record's words for a group
    lines += [f for v, f in zip(vs, facts, strict=True) if not v.holds or among.hop is None or among.value]
    sources = [*(v.entity.ref for v in vs), *([target.ref] if target else []), *(r.ref for v in vs for r in v.reached)]
    return _draft(" ".join(lines), sources, [v.entity.ref for v in asked], facts, confidence=0.85,
                  citations=[bare(e.name) for e in ents])


def names(vs: list[Verdict]) -> str:
    """The listed names, every one ("A, B and C")."""
    return join([bare(v.entity.name) for v in vs], len(vs))


def _why(v: Verdict, among: Among) -> str:
    """One listed name's evidence: what its hop reached, or its record's words."""
    name = bare(v.entity.name)
    if among.value is not None:
        field = among.value[0]
        return f"{name}: {field} {v.quote}." if v.quote else f"The catalog does not record the {field} of {name}."
    if among.hop is None:
        if v.holds:
            return f'{name}\'s record says "{v.quote}".' if v.quote else f"{name}'s record says it."
        return f'{name}\'s record does not: "{v.quote}".' if v.quote else f"{name}'s record does not say it."
    if not v.reached:
        return nothing_sentence(among.hop, [v.entity])
    return hop_sentence(among.hop, [v.entity], v.reached, {})


def _draft(text: str, sources: list[EntityRef], results: list[EntityRef], facts: list[str], *, confidence: float,
           citations: list[str] | None = None) -> DraftAnswer:
    return DraftAnswer(answer=text[:_ANSWER], source_entities=list(dict.fromkeys(sources))[:_ENTITIES],
                       result_entities=list(dict.fromkeys(results))[:_ENTITIES], confidence=confidence,
                       evidence=Evidence(facts=[f[:_FACT] for f in facts][:_FACTS]),
                       citations=[c[:_CITATION] for c in citations or []][:_CITATIONS])
