"""The heuristic planner's draft role: an answer built only from the cards, with ids and citations.

It reads the same :func:`~agentic_rag.models.heuristic.progress.progress` as the planner: while
steps are pending the draft says so (no result entities, so the validator asks for more); a name
that matched nothing is an explicit not-found; otherwise the answer states the chain it followed
("X appears in Y; Y was animated by Z") and the values it read.
"""

from __future__ import annotations

from typing import Any

from agentic_rag.models.heuristic.context import bare
from agentic_rag.models.heuristic.progress import Progress, progress
from agentic_rag.models.roles import CardEntity, DraftInput
from agentic_rag.protocol import DraftAnswer, EntityRef, Evidence, GraphPath
from agentic_rag.understanding.plan import Analysis
from agentic_rag.understanding.reading import read

EDGE_WORDS = {"features": "characters", "staff": "staff", "animated_by": "studio", "animated": "anime",
              "adapted_from": "source manga", "adapted_into": "anime adaptations", "appears_in": "appears in",
              "sequel": "sequels, in order", "prequel": "prequels, nearest first", "worked_on": "works",
              "student_of": "mentors", "family": "family", "romantic": "partners"}
ATTR_WORDS = {"year": "first aired in", "episode_count": "episodes", "volumes": "volumes", "magazine": "magazine",
              "founded": "founded", "format": "format", "status": "status"}


def _result(text: str, sources: list[EntityRef], results: list[EntityRef], *, confidence: float,
            paths: list[GraphPath] | None = None, facts: list[str] | None = None,
            citations: list[str] | None = None) -> DraftAnswer:
    return DraftAnswer(
        answer=text[:2000], source_entities=list(dict.fromkeys(sources))[:50],
        result_entities=list(dict.fromkeys(results))[:50], confidence=confidence,
        evidence=Evidence(paths=(paths or [])[:10], facts=[f[:200] for f in (facts or [])][:20]),
        citations=[c[:200] for c in (citations or [])][:20],
    )


def _list(entities: list[CardEntity], details: dict[str, str]) -> str:
    # the type is shown too: a manga and its anime often share a name
    shown = [f"{bare(e.name)} ({e.ref.entity_type}" + (f", {details[e.ref.id]})" if details.get(e.ref.id) else ")")
             for e in entities[:15]]
    return ", ".join(shown) + (f", and {len(entities) - 15} more" if len(entities) > 15 else "")


def draft(inp: DraftInput) -> DraftAnswer:
    a = read(inp.question, inp.links)
    p = progress(a, inp.cards)
    if p.missing:
        # no facts and no entities: the loop ends with an explicit not-found, never a guess
        return _result(f"I could not find {', '.join(p.missing)} in the catalog.", [], [], confidence=0.1)
    if p.pending:
        return _result("The context does not answer the question yet.", [], [], confidence=0.2)
    if a.filter is not None:
        return _query_answer(a, p, [])
    ents = [r.entity for r in p.found if r.entity is not None]
    if not ents:
        return _result("I could not find anything in the catalog that the question names.", [], [], confidence=0.1)
    if a.intent in ("relation", "compare"):
        return _pair(a, p, ents)
    chain = [ents[0], *(e for level in p.levels for e in level)]
    sources = [e.ref for e in chain]
    lines: list[str] = []
    current = [ents[0]]
    for hop, level in zip(a.hops, p.levels, strict=False):
        what = EDGE_WORDS.get(hop.edges[0], hop.edges[0])
        if hop.roles:
            what = " / ".join(r.replace("_", " ") for r in hop.roles[:2])
        if not level:
            lines.append(f"The catalog records no {what} for {', '.join(bare(e.name) for e in current)}.")
            break
        lines.append(f"{' / '.join(bare(e.name) for e in current[:4])} -> {what}: {_list(level, p.details)}.")
        current = level
    if a.hops and (len(p.levels) < len(a.hops) or not p.levels[-1]):
        return _result(" ".join(lines), sources, [ents[0].ref], confidence=0.6, citations=[ents[0].name])
    if p.card is not None:
        return _query_answer(a, p, lines, sources)
    final = current
    if a.attr == "count":
        lines.append(f"That is {len(final)} in total.")
    if not a.hops:
        snippet = _snippet(inp, ents[0])
        lines.append(f"{bare(ents[0].name)}: {snippet}" if snippet else bare(ents[0].name))
    return _result(" ".join(lines), sources, [e.ref for e in final], confidence=0.85,
                   citations=[bare(e.name) for e in chain][:20], facts=lines[:20])


def _snippet(inp: DraftInput, entity: CardEntity) -> str:
    return next((str(r.get("snippet", "")) for c in inp.cards for r in c.data.get("rows", [])
                 if isinstance(r, dict) and r.get("id") == entity.ref.id), "")


def _pair(a: Analysis, p: Progress, ents: list[CardEntity]) -> DraftAnswer:
    card = p.card
    x, y = bare(ents[0].name), bare(ents[1].name)
    if card is None:
        return _result(f"{x} and {y} are the same entry.", [ents[0].ref], [ents[0].ref], confidence=0.6)
    if card.count == 0:
        return _result(f"No connection between {x} and {y} was found within the traversal limits.",
                       [e.ref for e in ents], [e.ref for e in ents], confidence=0.4, citations=[x, y])
    meta: dict[str, Any] = card.data.get("meta", {})
    if a.intent == "relation":
        facts = [str(f) for f in meta.get("facts", [])]
        chains = [line[2:].split(" [end id")[0] for line in card.summary.splitlines()[1:]
                  if line.startswith("- ") and "-->" in line]
        text = f"{x} and {y}: " + "; ".join(chains[:6]) + (". " + "; ".join(facts) + "." if facts else ".")
        return _result(text, [e.ref for e in card.entities] or [e.ref for e in ents], [e.ref for e in ents],
                       confidence=0.85, paths=card.paths, facts=facts or chains[:8], citations=[x, y])
    left, right = meta.get("a", {}), meta.get("b", {})
    fields = [a.compare_field] if a.compare_field and a.compare_field in left else [
        f for f in left if f not in ("name", "id")]
    parts = []
    for f in fields:
        va, vb = left.get(f), right.get(f)
        shown = f"{f.replace('_', ' ')}: {_fmt(va)} vs {_fmt(vb)} ({x} vs {y})"
        if isinstance(va, int | float) and isinstance(vb, int | float) and va != vb:
            shown += f" ({x if va > vb else y} has the larger value)"
        parts.append(shown)
    return _result("; ".join(parts) + ".", [e.ref for e in ents], [e.ref for e in ents], confidence=0.85,
                   facts=parts, citations=[x, y])


def _fmt(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(str(x) for x in v) or "none"
    return "unknown" if v is None else str(v)


def _query_answer(a: Analysis, p: Progress, lines: list[str], sources: list[EntityRef] | None = None) -> DraftAnswer:
    card = p.card
    assert card is not None
    sources = sources or []
    rows = [r for r in card.data.get("rows", []) if isinstance(r, dict)]
    refs = [e.ref for e in card.entities]
    if not rows:
        text = " ".join([*lines, f"Nothing in the catalog matched ({card.request})."])
        if a.attr and a.attr.startswith(("count", "sum")):
            text = " ".join([*lines, f"The count is 0 ({card.request})."])
        return _result(text, sources, sources[:1], confidence=0.6, facts=[card.request])
    if "value" in rows[0] and "group_key" not in rows[0]:
        value = rows[0].get("value")
        what = "episodes in total" if a.attr == "sum_episodes" else "in the catalog"
        text = " ".join([*lines, f"{value} {what} ({card.request})."])
        return _result(text, sources, sources[-1:] or [], confidence=0.85, facts=[text])
    if "group_key" in rows[0]:
        tops = [f"{r.get('group_key')} ({r.get('value')})" for r in rows[:3]]
        text = f"Most: {tops[0]}; then {', '.join(tops[1:])}." if len(tops) > 1 else f"Most: {tops[0]}."
        return _result(text, [], [], confidence=0.85, facts=[text])
    shown = []
    for r in rows[:30]:
        if a.attr in ATTR_WORDS:
            v = r.get(a.attr)
            if a.attr in ("episode_count", "volumes"):
                shown.append(f"{r.get('name')} has {_fmt(v)} {ATTR_WORDS[a.attr]}")
            elif a.attr == "year":
                shown.append(f"{r.get('name')} first aired in {_fmt(v)}")
            else:
                shown.append(f"{r.get('name')}: {ATTR_WORDS[a.attr]} {_fmt(v)}")
        elif a.attr == "first_episode":
            shown.append(f"The first episode is \"{r.get('name')}\"")
        else:
            shown.append(f"{r.get('name')} ({r.get('year')})")
    text = " ".join([*lines, "; ".join(shown) + "."])
    return _result(text, [*sources, *refs], refs, confidence=0.9, facts=shown[:20],
                   citations=[str(r.get("name")) for r in rows[:20]])
