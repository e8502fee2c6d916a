"""The heuristic planner's draft role: an answer built only from the cards, with ids and citations."""

from __future__ import annotations

from agentic_rag.models.heuristic.context import Resolution, resolve, step_cards
from agentic_rag.models.heuristic.intent import analyze
from agentic_rag.models.roles import CardEntity, ContextCard, DraftInput
from agentic_rag.protocol import DraftAnswer, EntityRef, Evidence, GraphPath

REL_WORDS = {"features": "characters", "staff": "staff", "animated_by": "studio", "family": "family",
             "adapted_from": "source manga", "adapted_into": "anime adaptations", "appears_in": "appears in"}


def _names(entities: list[CardEntity]) -> str:
    shown = [f"{e.name}" + (f" ({e.detail})" if e.detail and "matched by" not in e.detail else "")
             for e in entities[:12]]
    more = f", and {len(entities) - 12} more" if len(entities) > 12 else ""
    return ", ".join(shown) + more


def _result(text: str, sources: list[EntityRef], results: list[EntityRef], *, confidence: float,
            paths: list[GraphPath] | None = None, facts: list[str] | None = None,
            citations: list[str] | None = None) -> DraftAnswer:
    return DraftAnswer(
        answer=text[:2000], source_entities=list(dict.fromkeys(sources))[:50],
        result_entities=list(dict.fromkeys(results))[:50], confidence=confidence,
        evidence=Evidence(paths=(paths or [])[:10], facts=[f[:200] for f in (facts or [])][:20]),
        citations=[c[:200] for c in (citations or [])][:20],
    )


def draft(inp: DraftInput) -> DraftAnswer:
    a = analyze(inp.question)
    cards = inp.cards
    mentions = inp.rewrite.mentions or a.mentions
    found = [resolve(cards, m) for m in mentions]
    missing = [r.mention for r in found if r.entity is None]
    if a.intent in ("studio_works", "count_by_studio", "episode_count", "year"):
        return _from_query(inp, a.intent, found)
    if missing or not found:
        what = ", ".join(missing) or inp.question
        return _result(f"I could not find {what} in the catalog.", [], [], confidence=0.1,
                       facts=[f"no catalog entity matched {m}" for m in missing])
    ents = [r.entity for r in found if r.entity is not None]
    first = ents[0]
    if a.intent in ("relation", "compare"):
        kind = "path" if a.intent == "relation" else "compare"
        done = step_cards(cards, "pg_graph", kind)
        if not done:
            return _result(f"Found {_names(ents)}; their {kind} is not retrieved yet.", [e.ref for e in ents],
                           [], confidence=0.2)
        card = done[-1]
        if card.count == 0:
            return _result(f"No connection between {first.name} and {ents[1].name} was found within the "
                           f"traversal limits.", [e.ref for e in ents], [e.ref for e in ents], confidence=0.4,
                           citations=[e.name for e in ents])
        text = card.summary.split("\n", 1)[-1].replace("- ", "").replace("\n", "; ") if kind == "compare" else \
            "; ".join(line[2:].split(" [end id")[0] for line in card.summary.splitlines()[1:4])
        lead = f"{first.name} and {ents[1].name}: " if kind == "path" else ""
        return _result(lead + text, [e.ref for e in card.entities] or [e.ref for e in ents],
                       [e.ref for e in ents], confidence=0.85, paths=card.paths,
                       facts=[line[2:] for line in card.summary.splitlines()[1:8]],
                       citations=[e.name for e in ents])
    return _neighbors_answer(inp, a.intent, first, cards)


def _neighbors_answer(inp: DraftInput, intent: str, first: CardEntity, cards: list[ContextCard]) -> DraftAnswer:
    if intent == "appears_in":
        fetched = [c for c in cards if c.source == "qdrant_search" and c.data.get("ids")]
        graph = step_cards(cards, "pg_graph", "neighbors")
        works = (fetched[-1].entities if fetched else graph[-1].entities[1:] if graph else [])
        if not works:
            return _result(f"Found {first.name}, but not yet the anime they appear in.", [first.ref], [first.ref],
                           confidence=0.3)
        return _result(f"{first.name} appears in {_names(works)}.", [first.ref, *(w.ref for w in works)],
                       [w.ref for w in works], confidence=0.9, citations=[first.name, *(w.name for w in works)],
                       facts=[f"{first.name} appears in {w.name}" for w in works])
    done = [c for c in cards if c.source == "pg_graph"]
    if intent == "lookup" or not done:
        snippet = next((str(r.get("snippet", "")) for c in cards for r in c.data.get("rows", [])
                        if isinstance(r, dict) and r.get("id") == first.ref.id), "")
        return _result(f"{first.name}: {snippet}" if snippet else first.name, [first.ref], [first.ref],
                       confidence=0.8 if intent == "lookup" else 0.3, citations=[first.name])
    card = done[-1]
    others = [e for e in card.entities if e.ref != first.ref]
    edge = (card.data.get("edge_types") or [""])[0]
    if not others:
        return _result(f"The catalog records no {REL_WORDS.get(edge, edge)} for {first.name}.", [first.ref],
                       [first.ref], confidence=0.6, citations=[first.name])
    label = {"sequel": "The sequels of {x}, in order", "prequel": "What comes before {x}, nearest first",
             "features": "Characters of {x}", "staff": "Staff credited on {x}", "animated_by": "{x} was animated by",
             "family": "Family of {x}", "adapted_from": "{x} is adapted from",
             "adapted_into": "{x} was adapted into"}.get(edge, "Related to {x}").format(x=first.name)
    return _result(f"{label}: {_names(others)}.", [first.ref, *(e.ref for e in others)], [e.ref for e in others],
                   confidence=0.85, paths=card.paths, citations=[first.name, *(e.name for e in others)])


def _from_query(inp: DraftInput, intent: str, found: list[Resolution]) -> DraftAnswer:
    done = step_cards(inp.cards, "pg_query")
    if not done:
        return _result("The structured query has not run yet.", [], [], confidence=0.1)
    card = done[-1]
    rows = [r for r in card.data.get("rows", []) if isinstance(r, dict)]
    if not rows:
        return _result(f"Nothing in the catalog matched: {card.request}.", [], [], confidence=0.5)
    refs = [e.ref for e in card.entities]
    if intent == "count_by_studio":
        return _result(f"{rows[0].get('value')} anime in the catalog ({card.request}).", [], [], confidence=0.85,
                       facts=[card.summary[:200]])
    if intent in ("episode_count", "year"):
        r = rows[0]
        field = "episode_count" if intent == "episode_count" else "year"
        value = r.get(field)
        if value is None:
            return _result(f"The catalog does not record the {field.replace('_', ' ')} of {r.get('name')}.",
                           refs[:1], refs[:1], confidence=0.5, citations=[str(r.get("name"))])
        text = (f"{r.get('name')} has {value} episodes." if intent == "episode_count"
                else f"{r.get('name')} first aired in {value}.")
        return _result(text, refs[:1], refs[:1], confidence=0.9, citations=[str(r.get("name"))], facts=[text])
    names = ", ".join(f"{r.get('name')} ({r.get('year')})" for r in rows[:20])
    return _result(f"{card.request}: {names}.", refs, refs, confidence=0.85,
                   citations=[str(r.get("name")) for r in rows[:20]])
