"""The heuristic planner's draft role: an answer built only from the cards, with ids and citations.

It reads the same :func:`~agentic_rag.planners.heuristic.progress.progress` as the planner: while
steps are pending the draft says so (no result entities, so the validator asks for more); a name
that matched nothing is an explicit not-found; otherwise the answer says, in plain sentences
(:mod:`~agentic_rag.planners.heuristic.sentences`), what each step found and the values it read
("Luffy appears in One Piece (1999) and ... One Piece (1999) was animated by Toei Animation."). An explanation
also quotes the catalog's own sentences nearest in meaning to the question, and cites their records.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from agentic_rag.planners.heuristic.among import among_answer
from agentic_rag.planners.heuristic.context import bare
from agentic_rag.planners.heuristic.pictured import IMAGE_MATCH, image_attached, pictured
from agentic_rag.planners.heuristic.progress import LISTED, Progress, described, progress, ranked_field
from agentic_rag.planners.heuristic.sentences import (
    SIDE_BY_SIDE,
    attribute_sentence,
    compare_sentence,
    fact_sentence,
    hop_sentence,
    join,
    nothing_sentence,
    path_sentence,
    quote_sentence,
    ranking_sentence,
    side_by_side_sentence,
    titled,
)
from agentic_rag.protocol import NOT_RECORDED, DraftAnswer, EntityRef, Evidence, GraphPath
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis, Recommend
from agentic_rag.protocol.roles import CardEntity, ContextCard, DraftInput
from agentic_rag.understanding.linker import STOP
from agentic_rag.understanding.reading import reading_of

MIN_REPEATED = 4  # words a sentence needs before a repeat of it is dropped from a multi-part answer
ATTRS = ("year", "episode_count", "volumes", "magazine", "founded", "format", "status", "genres")
ATTRIBUTE_ROWS = 20  # rows whose values an attribute answer states
LISTED_ROWS = 30  # rows an answer lists by name
_WORD = re.compile(r"[a-z]+")
MAX_QUOTED = 2  # sentences an explanation quotes: the named entities' nearest, and another record's
# cosine similarity to the question (MiniLM) a quoted sentence reaches: one that says why is at 0.24-0.7, one about
# something else (a season's plot asked why it looks different) under 0.2
QUOTE_MIN = 0.2
QUOTE_MARGIN = 0.05  # how much nearer than the named entities' sentence another record's must be to be quoted too
_ANSWER = max_len(DraftAnswer, "answer")
_ENTITIES = min(max_len(DraftAnswer, "source_entities"), max_len(DraftAnswer, "result_entities"))
_PATHS = max_len(Evidence, "paths")
_FACTS, _FACT = max_len(Evidence, "facts"), max_len(Evidence, "facts", item=True)
_CITATIONS, _CITATION = max_len(DraftAnswer, "citations"), max_len(DraftAnswer, "citations", item=True)


def _result(text: str, sources: list[EntityRef], results: list[EntityRef], *, confidence: float,
            paths: list[GraphPath] | None = None, facts: list[str] | None = None,
            citations: list[str] | None = None) -> DraftAnswer:
    return DraftAnswer(
        answer=text[:_ANSWER], source_entities=list(dict.fromkeys(sources))[:_ENTITIES],
        result_entities=list(dict.fromkeys(results))[:_ENTITIES], confidence=confidence,
        evidence=Evidence(paths=(paths or [])[:_PATHS], facts=[f[:_FACT] for f in (facts or [])][:_FACTS]),
        citations=[c[:_CITATION] for c in (citations or [])][:_CITATIONS],
    )


def draft(inp: DraftInput) -> DraftAnswer:
    a = reading_of(inp)
    if not a.mentions and a.filter is None and image_attached(inp.cards):
        return _by_image(inp)
    if a.minus and a.more:
        return _minus(inp, a)
    return _unanswered(_draft(inp, a) if not a.more else _parts(inp, a), a)


def _minus(inp: DraftInput, a: Analysis) -> DraftAnswer:
    """A set difference ("which demon slayer anime is zenitsu missing from"): what the first chain reaches less what
    the second does, said with both sets' names cited."""
    first, other = dataclasses.replace(a, more=[], minus=False), a.more[0]
    pa, pb = progress(first, inp.cards, inp.question), progress(other, inp.cards, inp.question)
    weakest = min((_drafted(inp, first, pa), _drafted(inp, other, pb)), key=lambda d: d.confidence)
    if weakest.confidence < 0.6:
        return weakest  # a chain is pending or reached nothing: that is what the run must hear
    kept, taken = (p.levels[-1] if p.levels else [] for p in (pa, pb))
    gone = {e.ref.id for e in taken}
    left = [e for e in kept if e.ref.id not in gone]
    x = next((bare(r.entity.name) for r in pa.found if r.entity is not None), "")
    y = next((bare(r.entity.name) for r in pb.found if r.entity is not None), "")
    names = [bare(e.name) for e in left]
    if other.hops and other.hops[-1].edges == ("appears_in",):  # works: where the character is not
        text = (f"{y} does not appear in {join(names)}; of the {x} anime in the catalog, {y} appears in the other "
                f"{len(kept) - len(left)}." if left else f"{y} appears in every {x} anime in the catalog.")
    else:  # characters: who of one work's cast the other lacks
        cast = "main characters" if a.hops and a.hops[-1].roles == ("main",) else "characters"
        text = (f"Of the {cast} of {x}, {join(names)} {'does' if len(names) == 1 else 'do'} not appear in {y}."
                if left else f"Every one of the {cast} of {x} appears in {y}.")
    sources = [r.entity.ref for p in (pa, pb) for r in p.found if r.entity is not None]
    return _result(text, sources, [e.ref for e in left], confidence=0.8,
                   facts=[f"{x}: {join([bare(e.name) for e in kept], limit=50)}",
                          f"{y}: {join([bare(e.name) for e in taken], limit=50)}"],
                   citations=[x, y])


def _unanswered(d: DraftAnswer, a: Analysis) -> DraftAnswer:
    """``d`` saying the parts of the message it does not answer: those no pass read, and those past the first
    few of a long message (never dropped silently). A draft still pending is left as it is."""
    if d.confidence < 0.6 or not (a.unread or a.parts):
        return d
    said = [f"The catalog does not record the answer to \"{part}?\"." for part in a.unread]
    if a.parts is not None:
        said.append(f"Answered the first {a.parts[0]} of {a.parts[1]} questions in the message.")
    text = " ".join([d.answer, *said])
    return d.model_copy(update={"answer": text[:_ANSWER], "evidence": d.evidence.model_copy(
        update={"facts": [*d.evidence.facts, *(x[:_FACT] for x in said)][:_FACTS]})})


def _parts(inp: DraftInput, a: Analysis) -> DraftAnswer:
    """A question in parts: one answer per part, said one after the other."""
    parts = [_draft(inp, x) for x in (a, *a.more)]
    weakest = min(parts, key=lambda d: d.confidence)
    if weakest.confidence < 0.6:
        return weakest  # a part is still pending or not found: that is what the run must hear
    said: list[str] = []
    for d in parts:  # a later part restates the chain an earlier one walked: each sentence once (a short
        # piece is kept: the split also cuts after initials, "Monkey D." in "Monkey D. Luffy")
        said += [x for x in re.split(r"(?<=\.)(?<!\b[A-Z]\.) ", d.answer)
                 if x not in said or len(x.split()) < MIN_REPEATED]
    return _result(" ".join(said), [r for d in parts for r in d.source_entities],
                   [r for d in parts for r in d.result_entities], confidence=weakest.confidence,
                   paths=[x for d in parts for x in d.evidence.paths],
                   facts=[x for d in parts for x in d.evidence.facts],
                   citations=[x for d in parts for x in d.citations])


def _draft(inp: DraftInput, a: Analysis) -> DraftAnswer:
    p = progress(a, inp.cards, inp.question)
    if a.described and a.mentions and p.starts:
        # who a record describes beside the name ("who gave luffy his straw hat"): that record, not the chain the
        # encoder read for the question (the plan had there been none)
        a = dataclasses.replace(a, hops=[], attr=None, intent="lookup")
    d = _drafted(inp, a, p)
    # an explanation's quotes, or the sentence a character's record says nearest a relation the graph lacks
    return _with_quotes(d, p) if (a.explain or p.quotes) and d.confidence >= 0.4 else d


def _drafted(inp: DraftInput, a: Analysis, p: Progress) -> DraftAnswer:
    if p.missing:
        # no facts and no entities: the loop ends with an explicit not-found, never a guess
        return _result(f"I could not find {', '.join(p.missing)} in the catalog.", [], [], confidence=0.1)
    if p.pending:
        return _result("The context does not answer the question yet.", [], [], confidence=0.2)
    if a.among is not None:  # a choice among listed names: the set difference
        return among_answer(a, p, inp.cards, inp.links.unknown or [] if inp.links else [])
    if a.unrecorded:  # what the catalog records of nothing ("who voices levi"): said so, of the names given
        named = p.starts or [r.entity for r in p.found if r.entity is not None]
        of = f" for {join([bare(e.name) for e in named])}" if named else ""
        text = f"{a.unrecorded[0].upper()}{a.unrecorded[1:]} are not in the catalog: it records none{of}."
        return _result(text, [e.ref for e in named], [], confidence=0.6, facts=[f"{NOT_RECORDED}{text}"])
    if a.members and p.starts:  # a group's members among one work's characters
        return _members(a, p.starts)
    if a.filter is not None and not p.starts:
        return _query_answer(a, p, [])
    if a.recommend is not None and not a.mentions and p.card is not None:
        return recommendation(a, p.card, [], [])
    ents = p.starts or [r.entity for r in p.found if r.entity is not None]
    if not ents:
        return _by_meaning(inp)
    if a.intent in ("relation", "compare"):
        return _pair(a, p, ents, _FEWEST.search(inp.question) is not None)
    starts = ents if a.together or p.starts else ents[:1]  # "s1 + s2 combined": every name is a start
    chain = [*starts, *(e for level in p.levels for e in level)]
    sources = [e.ref for e in chain]
    lines: list[str] = []
    if p.starts and a.described and not a.mentions:
        lines.append(f"That sounds like {titled(starts[0])}.")
    if p.starts and a.filter is not None:
        # "the manga serialized in Ura Sunday": which entities the description picked, then the chain from them
        kind = {"anime": "anime", "manga": "manga", "studio": "studio"}.get(a.filter.entity_type, "entry")
        lines.append(f"The {kind} matching that description: {join([bare(e.name) for e in starts])}.")
    current = starts
    each = _each(a, inp.cards, starts, p)
    if each:  # "who directed A and B": one sentence per name, what its own hop reached
        lines += each
        current = p.levels[0]
    skip = 1 if each else 0
    for hop, level in zip(a.hops[skip:], p.levels[skip:], strict=False):
        if not level:
            lines.append(nothing_sentence(hop, current))
            if p.creators:
                lines.append(f"It was created by {join([bare(e.name) for e in p.creators])}.")
                sources += [e.ref for e in p.creators]
            break
        if not (hop.include_start and level == current):  # a chain of one: nothing to say about its order
            lines.append(hop_sentence(hop, current, level, p.details))
        current = level
    if a.hops and (len(p.levels) < len(a.hops) or not p.levels[-1]):
        if len(lines) == 1 and len(p.levels) <= 1 and not p.creators and not p.starts and not _quoted(p) and \
                a.hops[0].edges != ("adapted_from",):
            # only what the catalog does not record of the record asked about ("records no director for X"): the
            # record is found, the question is not answered (its description, searched for why, says nothing near)
            return _result(lines[0], sources, [], confidence=0.6, citations=[ents[0].name],
                           facts=[f"{NOT_RECORDED}{lines[0]}"])
        return _result(" ".join(lines), sources, [ents[0].ref], confidence=0.6, citations=[ents[0].name])
    if p.card is not None and p.card.source == "similar":
        return recommendation(a, p.card, lines, sources)
    if p.card is not None:
        return _query_answer(a, p, lines, sources, current)
    final = current
    if a.attr == "count":
        lines.append(f"That is {len(final)} in total.")
    if not a.hops:  # an explanation quotes the description's sentences that say why, not its start
        lines.append(about(inp, ents[0], story=not _quoted(p)))
    return _result(" ".join(lines), sources, [e.ref for e in final], confidence=0.85,
                   citations=[bare(e.name) for e in chain][:_CITATIONS], facts=lines[:_FACTS])


def _each(a: Analysis, cards: list[ContextCard], starts: list[CardEntity], p: Progress) -> list[str]:
    """A first hop from several names asked the same ("who directed A and B"), said per name from the card of its
    own hop; [] where that is not the shape (one name, or a card the hop did not write)."""
    if not a.together or len(starts) < 2 or len(a.hops) != 1 or a.attr is not None or a.hops[0].kind != "neighbors" \
            or not p.levels or not p.levels[0]:
        return []
    hop, reached = a.hops[0], {e.ref.id for e in p.levels[0]}
    out = []
    for s in starts:
        card = next((c for c in cards if c.source == "pg_graph" and c.data.get("start") == s.ref.id
                     and list(c.data.get("edge_types") or []) == list(hop.edges)), None)
        if card is None:
            return []
        got = [e for e in card.entities if e.ref.id in reached and e.ref.id != s.ref.id]
        out.append(hop_sentence(hop, [s], got, p.details) if got else nothing_sentence(hop, [s]))
    return out


FORMAT_WORDS = {"movie": "films", "tv": "TV series", "ova": "OVAs", "ona": "ONAs", "special": "specials"}


def recommendation(a: Analysis, card: ContextCard, lines: list[str], sources: list[EntityRef]) -> DraftAnswer:
    """The picks of a ``similar`` step, each with the reasons it was picked, after what the chain to its
    examples found ("Mob Psycho 100 was animated by Bones."); none found is said with the wishes that ruled
    every candidate out."""
    r = a.recommend
    assert r is not None
    rows = [row for row in card.data.get("rows", []) if isinstance(row, dict) and row.get("id")]
    examples = _example_names(card)
    kind = r.entity_type if r.entity_type == "manga" else "anime"
    wanted = _wishes(r)
    if r.lacking:
        lines.append(f"The catalog holds anime and manga only, no {r.lacking}; here is {kind} instead.")
    if not rows:
        what = f"{kind} like {join(examples)}" if examples else f"{kind} matching that wish"
        lines.append(f"The catalog has no other {what}{' that ' + wanted if wanted else ''}.")
        return _result(" ".join(lines), sources, [], confidence=0.8, facts=lines[-1:])
    picks = []
    for row in rows:
        year = f" ({row['year']})" if row.get("year") and str(row["year"]) not in str(row.get("name")) else ""
        why = " and ".join(row.get("reasons") or [])
        picks.append(f"{row.get('name')}{year}" + (f", {why}" if why else ""))
    that = f" that {wanted}" if wanted else ""
    makers = set(card.data.get("like_types") or ()) <= {"studio", "person"}
    if examples and makers:  # "the studio that animated X": its works are what is meant
        head = f"More {kind} by {join(examples)}{that}:"
    elif examples:
        head = f"If you liked {join(examples)}, try these {kind}{that}:"
    else:
        head = f"Some {kind} matching that wish{that}:"
    lines.append(f"{head} {'; '.join(picks[:-1]) + ('; and ' if len(picks) > 1 else '') + picks[-1]}.")
    refs = [EntityRef(entity_type=row["entity_type"], id=row["id"]) for row in rows if row.get("entity_type")]
    return _result(" ".join(lines), [*sources, *refs], refs, confidence=0.85, facts=lines[-1:],
                   citations=[str(row.get("name")) for row in rows])


def _example_names(card: ContextCard) -> list[str]:
    """The examples' names, as the card's summary says them ("5 anime like Death Note and Monster:")."""
    head = str(card.summary).split("\n", 1)[0]
    said = re.match(r"^(?:\d+|No) \w+ like (.+?)(?: found)?[.:]$", head)
    return [said.group(1)] if said and not said.group(1).startswith("'") else []


def _wishes(r: Recommend) -> str:
    """The facts asked of the picks, as words ("are finished, from 1990 to 1999, films")."""
    out = []
    if r.finished is not None:
        out.append("are finished" if r.finished else "are still running")
    if r.year_min and r.year_max:
        out.append(f"are from {r.year_min} to {r.year_max}")
    elif r.year_min:
        out.append(f"are from {r.year_min} on")
    elif r.year_max:
        out.append(f"are from before {r.year_max + 1}")
    if set(r.formats) == set(FORMAT_WORDS) - {"movie"}:
        out.append("are not films")
    elif r.formats and len(r.formats) < len(FORMAT_WORDS):
        out.append("are " + join([FORMAT_WORDS[f] for f in r.formats]))
    if r.most:
        out.append(f"have at most {r.most} {'episodes' if r.entity_type == 'anime' else 'volumes'}")
    elif r.short:
        out.append("are short")
    if r.least:
        out.append(f"have at least {r.least} {'episodes' if r.entity_type == 'anime' else 'volumes'}")
    elif r.long and not r.most:
        out.append("are long")
    return join(out) if out else ""


def _by_meaning(inp: DraftInput) -> DraftAnswer:
    """No name in the question is in the catalog: the entries closest in meaning, if any is close."""
    close = described(inp.cards)[:5]
    if not close:
        return _result("I could not find anything in the catalog that the question names.", [], [], confidence=0.1)
    shown = [f"{titled(e)} ({e.ref.entity_type})" for _, e in close]
    text = (f"No name in the question is in the catalog. The closest entries by meaning are {join(shown)}; "
            f"{'this is' if len(close) == 1 else 'these are'} a guess from the description, not a match.")
    # a guess: low confidence, so the validator does not call it sufficient and the run ends best-effort
    refs = [e.ref for _, e in close]
    facts = [f"similarity {s:.2f}: {bare(e.name)}" for s, e in close]
    return _result(text, refs, refs[:1], confidence=0.5, facts=facts)


def _by_image(inp: DraftInput) -> DraftAnswer:
    """A question about the attached image: the entity whose images are closest to it."""
    close = pictured(inp.cards)
    if not close:
        return _result("Nothing in the catalog has an image like the one attached.", [], [], confidence=0.1)
    score, top = close[0]
    facts = [f"image similarity {s:.2f}: {bare(e.name)}" for s, e in close[:5]]
    if score >= IMAGE_MATCH:
        text = f"The image matches {titled(top)} ({top.ref.entity_type}). {about(inp, top)}"
        return _result(text, [top.ref], [top.ref], confidence=0.85, facts=facts, citations=[top.name])
    # no near copy: the closest is a guess, said as one (the validator does not call it sufficient)
    others = [titled(e) for _, e in close[1:3]]
    text = (f"The closest image in the catalog is of {titled(top)} ({top.ref.entity_type}), similarity "
            f"{score:.2f}: a guess, not a match" + (f"; then {join(others)}." if others else "."))
    return _result(text, [e.ref for _, e in close[:3]], [top.ref], confidence=0.5, facts=facts)


def _members(a: Analysis, found: list[CardEntity]) -> DraftAnswer:
    """The characters of the work named whose own records say the group ("who are the hashira in demon slayer")."""
    work = next((bare(c.name) for m in a.mentions for t, c in a.linked.get(m, {}).items() if t == "anime"), "")
    names = [bare(e.name) for e in found]
    many = len(names) > 1
    text = (f"{len(names) if many else 'One'} character{'s' if many else ''} of {work} {'are' if many else 'is'} "
            f"described in the catalog as {a.members}: {join(names, len(names))}.")
    refs = [e.ref for e in found]
    return _result(text, refs, refs, confidence=0.85, facts=[text], citations=names)


def about(inp: DraftInput, entity: CardEntity, row: dict[str, Any] | None = None, *, story: bool = True) -> str:
    """A lookup's answer: what the entity is, its other names, and its description (from ``row``, else the
    cards' rows for it: a search hit's, which holds its story, before a query's; no description when ``story``
    is off)."""
    if row is None:
        rows = [r for c in inp.cards for r in c.data.get("rows", [])
                if isinstance(r, dict) and r.get("id") == entity.ref.id]
        row = next((r for r in rows if isinstance(r.get("snippet"), str)), rows[0] if rows else {})
    kind = {"anime": "an anime", "manga": "a manga", "character": "a character", "person": "a person",
            "studio": "a studio", "franchise": "a franchise"}.get(entity.ref.entity_type, entity.ref.entity_type)
    fmt = row.get("format")
    if entity.ref.entity_type == "anime" and fmt in ("movie", "ova", "ona", "special"):
        kind = {"movie": "an anime film", "ova": "an OVA", "ona": "an ONA", "special": "an anime special"}[fmt]
    head = f"{bare(entity.name)} is {kind}"
    if row.get("year") and entity.ref.entity_type in ("anime", "manga"):
        head += f" from {row['year']}"
    said, genres, names, said_story = _record_parts(row, entity.ref.entity_type)
    head += "".join(f" {x}" for x in said) + (f" ({genres})" if genres else "")
    aliases = [x for x in dict.fromkeys([*map(str, row.get("aliases") or []), *names]) if x != bare(entity.name)][:6]
    if aliases:
        head += f", also known as {join(aliases)}"
    return f"{head}. {said_story}" if story and said_story else f"{head}."


def _quoted(p: Progress) -> list[tuple[float, str, CardEntity]]:
    """The sentences an explanation quotes: the nearest in meaning to the question of the named entities' own
    descriptions, and the nearest of the other records' (a work's synopsis, an entity a relation goes through)
    when it is clearly nearer (a work's synopsis names the characters too, so it is near whatever it says)."""
    # a title's other forms left open are its own records too (the manga beside the anime)
    if p.described:  # what a chain reached, asked about: each one's sentence nearest what is asked, however near
        nearest = {x[2].ref.id: x for x in reversed(_sentences(p)) if x[2].ref.id in p.described}
        return sorted(nearest.values(), key=lambda x: -x[0])
    named = {r.entity.ref.id for r in p.found if r.entity is not None} | {e.ref.id for e in p.starts} | p.forms
    scored = [x for x in _sentences(p) if x[0] >= QUOTE_MIN]
    own = [x for x in scored if x[2].ref.id in named][:1]
    other = [x for x in scored if x[2].ref.id not in named and x[2].ref.id not in p.kin][:1]
    if own and other and other[0][0] < own[0][0] + QUOTE_MARGIN:
        other = []
    if not other and own and (kin := [x for x in scored if x[2].ref.id in p.kin]):
        # a related person's description names the one explained, so it is near any question about them: it is
        # quoted when it says more of the question's own words than the named one's sentence does ("how did jet
        # lose his arm": "the hitman responsible for the loss of Jet's arm")
        names = _named_words(p)
        asked = _said_words(str(p.quotes[0].data.get("query") or ""), names)
        said = {id(x): len(asked & _said_words(x[1], names)) for x in [*own, *kin]}
        best = max(kin, key=lambda x: (said[id(x)], x[0]))
        if said[id(best)] > said[id(own[0])]:
            other = [best]
    return sorted([*own, *other], key=lambda x: -x[0])[:MAX_QUOTED]


def _named_words(p: Progress) -> set[str]:
    """The words of the names an explanation is about and of the records it quotes (they say who or which work, not
    what is asked)."""
    names = [r.entity.name for r in p.found if r.entity is not None] + [e.name for e in p.starts] + [
        e.name for c in p.quotes for e in c.entities]
    return {w for n in names for w in _WORD.findall(n.lower())}


def _said_words(text: str, names: set[str]) -> set[str]:
    """What a text says, word by word: the first three letters of each content word ("lose" and "loss" alike), less
    the names and the words that carry no content."""
    return {w[:3] for w in _WORD.findall(text.lower()) if len(w) >= 3 and w not in STOP and w not in names}


def _sentences(p: Progress) -> list[tuple[float, str, CardEntity]]:
    """Every quoted record's sentences with their similarity to the question, nearest first."""
    scored: list[tuple[float, str, CardEntity]] = []
    for card in p.quotes:
        ents = {e.ref.id: e for e in card.entities}
        for row in card.data.get("rows", []):
            if not isinstance(row, dict) or row.get("id") not in ents:
                continue
            scored += [(float(x["score"]), x["text"], ents[row["id"]]) for x in row.get("quotes") or []
                       if isinstance(x, dict) and isinstance(x.get("text"), str)
                       and isinstance(x.get("score"), int | float)]
    return sorted(scored, key=lambda x: -x[0])


def _with_quotes(d: DraftAnswer, p: Progress) -> DraftAnswer:
    """An explanation's answer: what was found, then the catalog's own sentences that say why, cited."""
    picked = _quoted(p)
    if not picked:
        return d
    said = [quote_sentence(bare(e.name), e.ref.entity_type, text) for _, text, e in picked]
    return _result(" ".join([d.answer, *said]), [*d.source_entities, *(e.ref for _, _, e in picked)],
                   list(d.result_entities), confidence=d.confidence, paths=list(d.evidence.paths),
                   facts=[*d.evidence.facts, *(text for _, text, _ in picked)],
                   citations=list(dict.fromkeys([*d.citations, *(bare(e.name) for _, _, e in picked)])))


# what an indexed entity's record (a search hit's row, catalog/index.py) says of the links the answer's first
# sentence names, in the answer's words: studios ["Madhouse"] are "by Madhouse"
LINKED_SHOWN = 4  # the works a character's lookup names before "and N more" (a person's or studio's works are all said)
_LINKED: dict[str, tuple[tuple[str, str], ...]] = {
    "anime": (("studios", "by {}"),),
    "manga": (("authors", "by {}"), ("magazine", "serialized in {}")),
    "character": (("works", "in {}"),),
    "studio": (("founded", "founded in {}"), ("works", "behind {}")),
    "person": (("works", "credited on {}"),),
}


def _record_parts(row: dict[str, Any], entity_type: str) -> tuple[list[str], str, list[str], str]:
    """A search hit's record as phrases for the answer's first sentence ("by Madhouse"), its genres, its native
    and romaji names, and the start of its description (the stored text from ``about_at``). A row that is no
    search hit (no snippet: a query's row) says none of them."""
    snippet = row.get("snippet")
    if not isinstance(snippet, str):
        return [], "", [], ""
    said = []
    for field, phrase in _LINKED.get(entity_type, ()):
        value = row.get(field)
        if entity_type == "character" and isinstance(value, list) and len(value) > LINKED_SHOWN + 1:
            value = [*map(str, value[:LINKED_SHOWN]), f"{len(value) - LINKED_SHOWN} more"]
        if value not in (None, "", []):
            said.append(phrase.format(join([str(v) for v in value]) if isinstance(value, list) else value))
    genres = ", ".join(str(g).replace("_", " ") for g in row.get("genres") or [])
    about = row.get("about_at")
    story = snippet[about:].strip() if isinstance(about, int) else ""
    story = f"{story}." if story and not story.endswith((".", "!", "?", "...")) else story
    return said, genres, [str(n) for n in row.get("native_names") or []], story


# a ranking asked from its bottom ("which has the fewest episodes")
_FEWEST = re.compile(r"\b(?:fewest|least|shortest|smallest|lowest|fewer|less|shorter|smaller)\b", re.IGNORECASE)


def _pair(a: Analysis, p: Progress, ents: list[CardEntity], fewest: bool = False) -> DraftAnswer:
    card = p.card
    x, y = bare(ents[0].name), bare(ents[1].name)
    if x == y and ents[0].ref.entity_type != ents[1].ref.entity_type:  # one title's two forms: "the X manga"
        x, y = (f"the {x} {e.ref.entity_type}" for e in ents[:2])
    if card is not None and a.intent == "compare" and "rows" in card.data:  # three or more, in order
        field = ranked_field(a, ents[0].ref.entity_type)
        rows = [r for r in card.data["rows"] if isinstance(r, dict)]
        text = ranking_sentence(field, [(str(r.get("name")), r.get(field)) for r in rows], fewest=fewest)
        if a.compare_field in SIDE_BY_SIDE and any(a.compare_field in r for r in rows):  # "which studio made A, B, C"
            text = side_by_side_sentence(a.compare_field, [(str(r.get("name")), r.get(a.compare_field)) for r in rows])
        refs = [e.ref for e in card.entities] or [e.ref for e in ents]
        return _result(text or f"I found none of {join([bare(e.name) for e in ents])} in the catalog.", refs, refs,
                       confidence=0.85 if text else 0.4, facts=[text], citations=[bare(e.name) for e in ents])
    if card is None:
        return _result(f"{x} and {y} are the same entry.", [ents[0].ref], [ents[0].ref], confidence=0.6)
    if card.count == 0:
        return _result(f"I found no connection between {x} and {y} in the catalog.",
                       [e.ref for e in ents], [e.ref for e in ents], confidence=0.4, citations=[x, y])
    meta: dict[str, Any] = card.data.get("meta", {})
    if a.intent == "relation":
        facts = [str(f) for f in meta.get("facts", [])]
        # the qualifiers of relations between people ("Zeke Yeager is Eren Yeager's older half-brother")
        said = [s for f in facts if (s := fact_sentence(f))]
        names = {e.ref.id: bare(e.name) for e in [*card.entities, *ents]}
        chains = [path_sentence([names.get(n.id, n.id) for n in path.nodes], list(path.rels))
                  for path in card.paths[:3]]
        direct = bool(card.paths) and len(card.paths[0].rels) == 1
        text = " ".join(said[:4]) if said and direct else " ".join(said[:2] + chains[: 1 if said else 3])
        return _result(text, [e.ref for e in card.entities] or [e.ref for e in ents], [e.ref for e in ents],
                       confidence=0.85, paths=card.paths, facts=facts or chains[:8], citations=[x, y])
    left, right = meta.get("a", {}), meta.get("b", {})
    # the asked field, else the ones people compare works by (every field when none of those is known)
    headline = [f for f in ("year", "episode_count", "volumes", "studios", "authors") if f in left]
    fields = [a.compare_field] if a.compare_field and a.compare_field in left else headline or [
        f for f in left if f not in ("name", "id")]
    parts = [(t := compare_sentence(f, x, y, left.get(f), right.get(f)))[:1].upper() + t[1:] for f in fields]
    parts = [t for t in parts if t.strip()]
    if not parts:  # nothing both records have ("Dragon Ball Super" beside "Vegeta"): said, never an empty answer
        kinds = [e.ref.entity_type for e in ents[:2]]
        text = f"The catalog records nothing to compare {x} ({kinds[0]}) and {y} ({kinds[1]}) by."
        return _result(text, [e.ref for e in ents], [e.ref for e in ents], confidence=0.6, facts=[text],
                       citations=[x, y])
    return _result(" ".join(parts), [e.ref for e in ents], [e.ref for e in ents], confidence=0.85,
                   facts=parts, citations=[x, y])


def _query_answer(a: Analysis, p: Progress, lines: list[str], sources: list[EntityRef] | None = None,
                  subject: list[CardEntity] | None = None) -> DraftAnswer:
    card = p.card
    assert card is not None
    sources = sources or []
    rows = [r for r in card.data.get("rows", []) if isinstance(r, dict)]
    refs = [e.ref for e in card.entities]
    who = join([bare(e.name) for e in subject or []], 4)
    kind = a.filter.entity_type if a.filter else (subject[0].ref.entity_type if subject else "entry")
    plural = {"anime": "anime", "manga": "manga", "studio": "studios"}.get(kind, f"{kind}s")
    if not rows:
        text = f"I found no {plural} in the catalog matching {card.request}."
        if (a.attr and a.attr.startswith(("count", "sum"))) or (a.filter and a.filter.count):
            text = f"The catalog has none ({card.request})."
        return _result(" ".join([*lines, text]), sources, sources[:1], confidence=0.6, facts=[card.request])
    if "value" in rows[0] and "group_key" not in rows[0]:
        text = _aggregate_sentence(a, rows[0].get("value"), who, plural, card.request)
        named = [r for r in (p.listing.data.get("rows", []) if p.listing else []) if isinstance(r, dict)]
        if named and str(rows[0].get("value")) == str(len(named)):  # every one counted, named
            text = f"{text[:-1]}: {join([_listed(r, []) for r in named], len(named))}."
        elif named and a.filter is not None and a.filter.total and len(named) < LISTED:  # every one added up, named
            text = f"{text[:-1]}: {join([_listed(r, [a.filter.total]) for r in named], len(named))}."
        return _result(" ".join([*lines, text]), sources, sources[-1:] or [], confidence=0.85, facts=[text])
    if "group_key" in rows[0]:
        tops = [f"{r.get('group_key')} ({r.get('value')})" for r in rows[:3]]
        text = f"{tops[0]} has the most" + (f", then {join(tops[1:])}." if len(tops) > 1 else ".")
        return _result(text, [], [], confidence=0.85, facts=[text])
    if a.attr in ATTRS:
        attrs = [x for x in (a.attr, *a.also) if any(r.get(x) not in (None, "", []) for r in rows)]
        shown = [attribute_sentence(attr, r, kind) for r in rows[:ATTRIBUTE_ROWS] for attr in attrs
                 if r.get(attr) not in (None, "", [])]
        # a value recorded for none of them is said once, not once per row
        unrecorded = [f"The catalog does not record the {x.replace('_', ' ')} of {who or 'these'}."
                      for x in (a.attr, *a.also) if x not in attrs]
        if not attrs and not lines:  # only what is not recorded: the records are found, the question is not answered
            return _result(" ".join(unrecorded), [*sources, *refs], [], confidence=0.6,
                           facts=[f"{NOT_RECORDED}{x}" for x in unrecorded])
        shown += unrecorded
        text = " ".join([*lines, *shown])
    elif a.attr == "franchise_works" and not a.rank:
        what = {"movie": "film", "ova": "OVA", "special": "special"}.get(a.fmt or "", a.counted)
        what += "s" if len(rows) > 1 and what != a.counted else ""
        shown = [f"{r.get('name')} ({r.get('year')})" if r.get("year") else str(r.get("name"))
                 for r in rows[:LISTED_ROWS]]
        text = " ".join([*lines, f"The {who} franchise has {len(rows)} {what} in the catalog: "
                                 f"{join(shown, LISTED_ROWS)}."])
    elif a.attr == "first_episode":
        which = "first episode" if a.episode == 1 else f"episode {a.episode}"
        shown = [f'The {which} of {who} is "{r.get("name")}".' for r in rows[:1]]
        text = " ".join([*lines, *shown])
    elif (a.filter is not None and a.filter.rank is not None) or (a.attr == "franchise_works" and a.rank):
        # "which finished TV anime has the most episodes": the first, with the runners-up as evidence
        ranked = a.filter.rank if a.filter is not None and a.filter.rank else a.rank
        assert ranked is not None
        fld, direction = ranked
        what = {"episode_count": "episodes", "volumes": "volumes"}.get(fld, "")
        shown = [_listed(r, [fld] if what else []) for r in rows]
        if what:
            lead = f"{rows[0].get('name')} has the {'most' if direction == 'desc' else 'fewest'} {what}"
        else:
            lead = f"{rows[0].get('name')} is the {'oldest' if direction == 'asc' else 'newest'}"
        lead += f" ({_facts(rows[0], [fld] if what else [])})"
        said = re.sub(r"(?:, )?\w+ >= 0\b", "", _conditions(card.request)).replace("(, ", "(")
        scope = f"among {plural} matching {said}" if said not in ("()", "in the catalog") else f"among the {plural}"
        if a.filter is None:
            works = _FORMAT_PLURAL.get(a.fmt or "", "works")
            scope = f"among the {who} franchise's {works}"
        text = " ".join([*lines, f"{lead} {scope}" + (f"; then {join(shown[1:])}." if len(shown) > 1 else ".")])
    else:
        # each match with its year and the counts its conditions are on ("Brotherhood (2009, 64 episodes)")
        counted = [f for f in ("episode_count", "volumes") if f in card.request or (a.filter and f in a.filter.shown)]
        shown = [_listed(r, counted) for r in rows[:LISTED_ROWS]]
        more = f", the first {len(shown)} of them" if len(rows) > len(shown) else ""
        text = " ".join([*lines, f"{len(rows)} {plural} match {_conditions(card.request)}{more}: "
                                 f"{join(shown, LISTED_ROWS)}."])
    return _result(text, [*sources, *refs], refs, confidence=0.9, facts=shown[:_FACTS],
                   citations=[str(r.get("name")) for r in rows[:_CITATIONS]])


def _facts(row: dict[str, Any], counted: list[str]) -> str:
    """A row's year and the counts asked of it: "2009, 64 episodes"."""
    facts = [str(row.get("year") or row.get("founded") or "")]
    facts += [f"{row[f]} {'episode' if f == 'episode_count' else 'volume'}{'' if row[f] == 1 else 's'}"
              for f in counted if row.get(f)]
    return ", ".join(x for x in facts if x)


def _listed(row: dict[str, Any], counted: list[str]) -> str:
    facts = _facts(row, counted)
    return f"{row.get('name')} ({facts})" if facts else str(row.get("name"))


_FORMAT_PLURAL = {"movie": "films", "tv": "TV series", "ova": "OVAs", "special": "specials"}
_OPS = {" eq ": " = ", " lt ": " < ", " lte ": " <= ", " gt ": " > ", " gte ": " >= ", " contains ": " has ",
        " in ": " in "}


def _conditions(request: str) -> str:
    """A query's conditions as a reader writes them: "(year < 2010, studio = 'Madhouse')"."""
    where = request.split(" where ", 1)[1] if " where " in request else ""
    for op, sign in _OPS.items():
        where = where.replace(op, sign)
    return f"({where.replace(' and ', ', ')})" if where else "in the catalog"


def _aggregate_sentence(a: Analysis, value: Any, who: str, plural: str, request: str) -> str:
    if a.filter is not None and a.filter.total:
        unit = "episodes" if a.filter.total == "episode_count" else "volumes"
        return f"Together, the {plural} matching {_conditions(request)} have {value} {unit}."
    if a.filter is not None:
        return f"The catalog has {value} {plural} matching {_conditions(request)}."
    if a.attr == "sum_episodes":
        if ("," in who or " and " in who) and a.fmt == "tv":
            return f"Together, the TV series among {who} have {value} episodes."
        if "," in who or " and " in who:
            return f"Together, {who} have {value} episodes."
        return f"{who} has {value} episodes." if who else f"Together they have {value} episodes."
    if a.attr == "count_studio":
        return f"{who} animated {value} anime in the catalog."
    if a.attr == "count_author":
        return f"{who} is credited on {value} manga."
    if a.attr == "sum_volumes" and a.finished is not None:
        return f"Together, the {'finished' if a.finished else 'ongoing'} manga among {who} have {value} volumes."
    if a.attr == "sum_volumes":
        return f"Together, {who} have {value} volumes."
    if a.attr == "sum_franchise":
        return f"Together, the {who} franchise's {_FORMAT_PLURAL.get(a.fmt or '', 'works')} have {value} episodes."
    if a.attr == "count_franchise":
        return f"The {who} franchise has {value} {_FORMAT_PLURAL.get(a.fmt or '', a.counted)}."
    if a.attr == "count_characters":
        return f"{who} has {value} characters in the catalog."
    return f"The count is {value} ({request})."
