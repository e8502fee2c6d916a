"""Forms: what a small model fills in instead of a whole contract (``RAG_PROMPT_STYLE=compact``).

A 135M-parameter model cannot be trusted to write a ``NextStep`` of a dozen nested fields or an answer
sentence: it wanders inside free strings and copies its example. So each role call becomes a short form
whose every field is a choice among what the call was shown, and code expands the filled form into the
role's contract:

- **rewrite**: the retrieval mode only; the question and the linked names stand as they are.
- **select**: one step, named in the words a person would use ("studio that animated Dororo (anime)"):
  a relation of a shown entity (the relations its type has, from the catalog's edge vocabulary), a
  comparison or connection of two named ones, the details of one (its record's values and its story), a
  search of one kind of entity by the question's words, or finish (only once something was found). With
  ``RAG_TRANSFORMERS_CHOICE=likelihood`` the transformers backend scores this closed choice's options whole,
  calibrated against the same call without the question.
- **draft**: the entities that answer (among a step's findings, not the entity a one-relation step
  started from), each by its label or a step's findings as one pick ("those marked main in step 1");
  the heuristic's writer says them in sentences (:func:`~agentic_rag.planners.heuristic.picks.write`),
  never the context's own lines ("animated_by: Sunrise (studio)").
- **grade**: the indexes of the relevant items.
- **validate**: sufficient or not.

Entities are named by label, their name and type ("Sunrise (studio)", in the order
:func:`~agentic_rag.planners.llm.prompts.refs_of` lists them): words a small model can match against the question,
where a number or an id means nothing to it. The prompt is plain text (the question, the linked names, what
the question's words ask for as the reader makes of them (:func:`asked_text`), what each step found, no ids,
no JSON state), after a few worked examples given as earlier chat turns.
Every decision stays the model's; code only spells it out, and the expanded contract is validated like any
model output. A form nobody could fill (nothing to pick) is still valid JSON the contract accepts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentic_rag.models.base import Message
from agentic_rag.planners.heuristic.picks import write
from agentic_rag.planners.heuristic.writer import draft
from agentic_rag.protocol import (
    NAME_FIELD,
    DraftAnswer,
    EntityLinks,
    EntityRef,
    GraphIntent,
    NextStep,
    QueryRewrite,
    SearchIntent,
    SufficiencyReport,
)
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis, Hop
from agentic_rag.protocol.roles import (
    ContextCard,
    DraftInput,
    GradeInput,
    RewriteInput,
    RoleInput,
    SelectInput,
    ValidateInput,
)
from agentic_rag.protocol.vocabulary import EDGE_TYPES, EDGE_WORDS
from agentic_rag.understanding.reading import reading_of

MAX_ENTRIES = 40  # entities one form may name (linked candidates first, then the cards' entities)
MAX_LINKED = 4  # readings of one mention shown
MAX_ANSWER_PICKS = 6
LINE_CHARS = 220  # a context line as a form shows it
MAX_LINES = 14  # lines of one card shown
LABEL_NAME_CHARS = 80  # characters of an entity's name in its label
SNIPPET_CHARS = 150  # characters of an item's snippet a grade form shows
# the limits of the contracts the forms expand into, read from them
_REWRITE_MENTIONS = max_len(QueryRewrite, "mentions")
_REWRITE_MENTION = max_len(QueryRewrite, "mentions", item=True)
_REWRITTEN = max_len(QueryRewrite, "rewritten_query")
_RATIONALE = min(max_len(model, "rationale") for model in (NextStep, GraphIntent, SearchIntent))
_QUERY = max_len(SearchIntent, "query")
_MISSING = max_len(SufficiencyReport, "missing", item=True)

SEARCHABLE = ("anime", "manga", "character", "person", "studio", "franchise")
# The relations each entity type has (its outgoing edges), in vocabulary order.
RELATIONS: dict[str, list[str]] = {}
for _e in EDGE_TYPES:
    for _t in _e.src:
        RELATIONS.setdefault(_t, []).append(_e.name)
_ID_MARK = re.compile(r"\s*\[id [0-9a-f-]{36}\]|,\s*id [0-9a-f-]{36}(?=\))")  # "[id ...]"; "(anime, id ...)"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Entry:
    """One entity a form can name: by its label, the name the context shows plus its type."""

    entity_type: str
    id: str
    label: str
    name: str = ""  # the whole name (a label cuts it)


_TAIL = re.compile(r"\s*\([^()]*\)\s*$")


def entries(inp: RoleInput, refs: list[tuple[str, str]]) -> dict[str, Entry]:
    """Label -> entity, for the refs the call was shown. A label is the entity's name and type ("Cowboy Bebop
    (anime)"): words a small model can match against the question, where a number means nothing to it."""
    names: dict[str, str] = {}
    years: dict[str, int] = {}
    for card in getattr(inp, "cards", []):
        for e in card.entities:
            names.setdefault(e.ref.id, _TAIL.sub("", e.name) or e.name)
    if inp.links is not None:
        for m in inp.links.mentions:
            for c in m.candidates:
                names[c.entity.id] = c.name
                if c.year:
                    years[c.entity.id] = c.year
    if isinstance(inp, GradeInput):
        for item in inp.items:
            names.setdefault(item.entity.ref.id, _TAIL.sub("", item.entity.name) or item.entity.name)
    book: dict[str, Entry] = {}
    for n, (t, i) in enumerate(refs[:MAX_ENTRIES], start=1):
        label = f"{names.get(i, t)[:LABEL_NAME_CHARS]} ({t})"
        if label in book:  # two of one name and type: the year tells them apart, else its place in the list
            label = f"{names.get(i, t)[:LABEL_NAME_CHARS]} ({t}, {years[i]})" if i in years else f"{label} #{n}"
            if label in book:
                label = f"{label} #{n}"
        book[label] = Entry(t, i, label, names.get(i, ""))
    return book


def _label_of(book: dict[str, Entry]) -> dict[str, str]:
    return {e.id: label for label, e in book.items()}


def linked_text(links: EntityLinks | None, book: dict[str, Entry]) -> str:
    """The names the question mentions and what each may be."""
    if links is None or not links.mentions:
        return "Names in the question: none found in the catalog."
    label = _label_of(book)
    lines = ["Names in the question:"]
    for m in links.mentions:
        shown = [c for c in m.candidates[:MAX_LINKED] if c.entity.id in label]
        lines.append(f'- "{m.text}": ' + "; ".join(
            label[c.entity.id] + (f" from {c.year}" if c.year else "") for c in shown))
    return "\n".join(lines)


# What a question's words ask for, as the reader (:func:`~agentic_rag.understanding.reading.read`: cue words,
# and the sentence encoder's nearest exemplars where no cue word says it) makes of them, in the words the
# steps use. A small model matches a step against this line far better than against the question's own
# phrasing; which entity, which reading of a name, what order, when to stop and what answers stay its own.
ATTR_WORDS: dict[str, str] = {
    "year": "details of {x}: year", "episode_count": "details of {x}: episode count",
    "volumes": "details of {x}: volumes", "magazine": "details of {x}: magazine",
    "founded": "details of {x}: year founded", "format": "details of {x}: format", "status": "details of {x}: status",
    "genres": "details of {x}: genres", "first_episode": "episode titles of {x}",
    "count_studio": "anime animated by {x}, how many", "count_author": "works of {x}, how many",
    "count_franchise": "works in {x}, how many", "franchise_works": "works in {x}",
    "sum_franchise": "works in {x}, episodes added up", "count_characters": "characters of {x}, how many",
    "sum_episodes": "details of {x}: episode counts added up", "sum_volumes": "details of {x}: volumes added up",
    "count": "how many",
}
COMPARED_WORDS = {"year": "year", "end_year": "year it ended", "episode_count": "episode count",
                  "volumes": "volumes", "studios": "studios"}


def _hop_words(hop: Hop, x: str) -> str:
    # a step's words up to their gloss ("staff of {x}: director, ..." -> "staff of {x}"), for each relation,
    # then the kinds of entity it keeps ("(anime)") and the credits or roles it asks for ("(director)")
    said = [STEP_WORDS[e].split(":")[0].split(",")[0].format(x=x) for e in hop.edges if e in STEP_WORDS]
    words = " or ".join(dict.fromkeys(said)) or f"what is related to {x}"
    for kept in (hop.node_types, tuple(r.replace("_", " ") for r in hop.roles[:2])):
        words += f" ({', '.join(kept)})" if kept else ""
    return words


def _asked(a: Analysis) -> str:
    names = [f'"{m}"' for m in a.mentions]
    if a.intent == "compare" and len(names) >= 2:
        by = COMPARED_WORDS.get(a.compare_field or "", "")
        return COMPARE_WORDS.format(x=names[0], y=names[1]) + (f" by {by}" if by else "")
    if a.intent == "relation" and len(names) >= 2:
        shared = " or ".join(dict.fromkeys(e for h in a.hops for e in h.edges))
        return CONNECTION_WORDS.format(x=names[0], y=names[1]) + (f": {shared} in common" if shared else "")
    if a.recommend is not None:
        like = SIMILAR_WORDS.format(t=a.recommend.entity_type, x=" and ".join(names) or "the wish")
        return like + (f" ({a.recommend.wish})" if a.recommend.wish else "")
    if not names:
        return "a search by description" if a.described or a.filter is not None else ""
    parts = []
    for n, hop in enumerate(a.hops):
        x = names[0] if n == 0 else "that"
        parts.append(f"every {' or '.join(hop.edges)} of {x}, in order" if hop.kind == "k_hop" else _hop_words(hop, x))
    if a.attr is not None:
        parts.append(ATTR_WORDS.get(a.attr, "details of {x}").format(x=names[0] if not parts else "that"))
    return ", then ".join(parts or [DETAILS_WORDS.split(":")[0].format(x=names[0])])


def asked_text(a: Analysis) -> str | None:
    """The line saying what the question asks for ("The words ask for: studio that animated "dororo""), or
    None when its words say nothing the steps could do."""
    parts = [p for p in (_asked(x) for x in (a, *a.more)) if p]
    return "The words ask for: " + "; and ".join(dict.fromkeys(parts)) if parts else None


ANSWER_LINE_CHARS = 600  # a context line as an answer quotes it


def _named(text: str, labels: dict[str, str]) -> str:
    """``text`` with every id in it written as the entity's label ("?" for one the call was not shown)."""
    return _UUID.sub(lambda u: labels.get(u.group(0), "?"), text)


def _short(line: str, limit: int = LINE_CHARS) -> str:
    return line if len(line) <= limit else line[: limit - 3] + "..."


def card_lines(card: ContextCard, labels: dict[str, str], limit: int = LINE_CHARS,
               most: int = MAX_LINES) -> list[tuple[str | None, str]]:
    """A card's findings as short lines, each with the id of the entity it is about (if one): its summary
    without ids, or its entities when the summary was cut to fit."""
    out: list[tuple[str | None, str]] = []
    if not card.summary.strip():
        return [(e.ref.id, f"- {labels.get(e.ref.id, e.name)}" + (f" ({e.detail})" if e.detail else ""))
                for e in card.entities[:most]]
    for line in card.summary.splitlines()[1: most + 1] or card.summary.splitlines()[:1]:
        ids = _UUID.findall(line)
        text = _ID_MARK.sub("", line)
        text = _named(text, labels).strip()
        if text:
            out.append((ids[0] if ids else None, _short(" ".join(text.split()), limit)))
    return out


IMAGE_TEXT = "The user attached an image: a search whose text is the question searches by the image."


def found_text(cards: list[ContextCard], book: dict[str, Entry]) -> str:
    image = [IMAGE_TEXT] if any(c.source == "request" for c in cards) else []
    cards = [c for c in cards if c.source != "request"]  # what came with the question, not a step
    if not cards:
        return "\n".join([*image, "Found so far: nothing yet."])
    labels = _label_of(book)
    parts = [*image, "Found so far:"]
    for n, card in enumerate(cards, start=1):
        lines = card_lines(card, labels)
        request = _named(card.request, labels)
        parts.append(f"Step {n}, {request}:" if lines else f"Step {n}, {request}: nothing found.")
        parts += [f"  {text}" for _, text in lines]
    return "\n".join(parts)


def _choice(values: list[str]) -> dict[str, Any]:
    return {"type": "string", "enum": values}


def _obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


# -- the forms ---------------------------------------------------------------------------------------------

Expand = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Form:
    """A small model's call: its prompt, the schema of its form, and how a filled form becomes the contract."""

    messages: list[Message]
    schema: dict[str, Any]
    expand: Expand
    calibration: list[Message] | None = None  # the call without its question (see TextBackend.complete)


def rewrite_form(inp: RewriteInput) -> tuple[dict[str, Any], Expand]:
    modes = ["graph", "vector", "hybrid"] + ([] if inp.links and inp.links.mentions else ["none"])
    schema = _obj({"mode": _choice(modes)})
    mentions = [m.text[:_REWRITE_MENTION] for m in inp.links.mentions][:_REWRITE_MENTIONS] if inp.links else []

    def expand(f: dict[str, Any]) -> dict[str, Any]:
        return {"rewritten_query": " ".join(inp.question.split())[:_REWRITTEN] or "?",
                "needs_external_context": f["mode"] != "none", "retrieval_mode": f["mode"],
                "mentions": mentions, "rationale": "retrieval mode chosen by the model"}

    return schema, expand


def _done(cards: list[ContextCard]) -> tuple[set[tuple[str, str]], set[str]]:
    """The steps already taken: (start id, relation) of every one-relation hop, and the ids read by id."""
    hops = {(str(c.data.get("start")), str(c.data["edge_types"][0])) for c in cards
            if c.source == "pg_graph" and c.data.get("kind") == "neighbors"
            and len(c.data.get("edge_types") or []) == 1}
    read = {str(i) for c in cards if c.source == "qdrant_search" and len(c.data.get("ids") or []) == 1
            for i in c.data["ids"]}
    hops |= {(str(i), "similar") for c in cards if c.source == "similar" for i in c.data.get("like") or []}
    return hops, read


# A step as a form names it: the words a person would use for what the relation finds ("{x}": the entity's
# label). A small model matches these against the question far better than relation names it never saw.
STEP_WORDS: dict[str, str] = {name: w.step for name, w in EDGE_WORDS.items()}  # the vocabulary's words
_RELATION_ORDER = list(STEP_WORDS)  # the order a form lists an entity's steps in: the common questions first
# Relations a form does not offer: what a comparison or a connection finds as well (a shared studio, staff or
# franchise; co-stars), or that people rarely ask for. Each option costs the model a scoring pass.
UNOFFERED = frozenset({"summary", "summarized_by", "parent_story", "spinoff_of", "same_studio", "shared_staff",
                       "shares_franchise", "co_appears"})
DETAILS_WORDS = "details of {x}: year, episode count, genres, story"
COMPARE_WORDS = "compare {x} and {y}"
CONNECTION_WORDS = "link between {x} and {y}"
FINISH_WORDS = "finish: the steps so far answer it"
SEARCH_WORDS = "search the {t}s by description"  # the question's own words, searched by meaning
SIMILAR_WORDS = "{t} like {x}: recommendations"  # a similar step from one shown entity
SIMILAR_FROM = ("anime", "manga", "franchise", "studio", "person")  # what a recommendation may start from
MAX_STEPS = 40  # steps one select form offers
MAX_PAIRS = 3  # comparisons and connections offered (between the top readings of different mentions)


def _step_order(inp: SelectInput, book: dict[str, Entry]) -> list[Entry]:
    """The entities whose steps a form lists, most likely first: the best reading of each mention, what the
    latest step found, the other readings, then everything else the cards hold."""
    by_id = {e.id: e for e in book.values()}
    first = [m.candidates[0].entity.id for m in inp.links.mentions if m.candidates] if inp.links else []
    latest = [e.ref.id for e in inp.cards[-1].entities] if inp.cards else []
    order = [*first, *latest, *(e.id for e in book.values())]
    return [by_id[i] for i in dict.fromkeys(order) if i in by_id]


def _pairs(inp: SelectInput, book: dict[str, Entry]) -> list[tuple[str, str]]:
    labels = _label_of(book)
    tops = [labels[m.candidates[0].entity.id] for m in inp.links.mentions
            if m.candidates and m.candidates[0].entity.id in labels] if inp.links else []
    tops = list(dict.fromkeys(tops))
    return [(a, b) for n, a in enumerate(tops) for b in tops[n + 1:]][:MAX_PAIRS]


def select_form(inp: SelectInput, book: dict[str, Entry]) -> tuple[dict[str, Any], Expand]:
    """One step, named in words ("studio that animated Dororo (anime)"): the form's only field is the choice
    among the steps the shown entities allow, a closed set a backend can score whole (see
    :func:`~agentic_rag.models.schemas.closed_options`). A step already taken is not offered again (the loop
    would refuse it as a repeat). A search is for a kind of entity; its text is the question itself."""
    hops, read = _done(inp.cards)
    steps: dict[str, dict[str, Any]] = {}  # words -> the filled form they stand for, in the order offered
    for a, b in _pairs(inp, book):
        steps[COMPARE_WORDS.format(x=a, y=b)] = {"step": "compare", "of": a, "with": b}
        steps[CONNECTION_WORDS.format(x=a, y=b)] = {"step": "connection", "of": a, "to": b}
    for e in _step_order(inp, book):
        if e.id not in read:
            steps.setdefault(DETAILS_WORDS.format(x=e.label), {"step": "details", "of": e.label})
        for relation in sorted(RELATIONS.get(e.entity_type, []), key=_RELATION_ORDER.index):
            if (e.id, relation) not in hops and relation not in UNOFFERED:
                steps.setdefault(STEP_WORDS[relation].format(x=e.label),
                                 {"step": "related", "of": e.label, "relation": relation})
        if e.entity_type in SIMILAR_FROM and (e.id, "similar") not in hops:
            t = "manga" if e.entity_type == "manga" else "anime"
            steps.setdefault(SIMILAR_WORDS.format(t=t, x=e.label), {"step": "similar", "of": e.label, "type": t})
    taken = any(c.source != "request" for c in inp.cards)  # an attached image's card is no step
    listed = list(steps)[: MAX_STEPS - len(SEARCHABLE) - (1 if taken else 0)]
    for t in SEARCHABLE:
        steps[SEARCH_WORDS.format(t=t)] = {"step": "search", "type": t, "text": inp.question}
        listed.append(SEARCH_WORDS.format(t=t))
    if taken:
        steps[FINISH_WORDS] = {"step": "finish"}
        listed.append(FINISH_WORDS)
    schema = _obj({"step": _choice(listed)})

    def ref(label: str) -> dict[str, str]:
        return {"entity_type": book[label].entity_type, "id": book[label].id}

    def graph(kind: str, why: str, start: str, end: str | None = None, edges: list[str] | None = None,
              hops: int = 1) -> dict[str, Any]:
        return {"action": "pg_graph", "rationale": why[:_RATIONALE], "graph_intent": {
            "rationale": why[:_RATIONALE], "query_type": kind, "start": ref(start), "end": ref(end) if end else None,
            "max_hops": hops, "edge_types": edges or [], "limits": {"max_results": 50}}}

    def expand(filled: dict[str, Any]) -> dict[str, Any]:
        f = steps.get(filled["step"], filled)
        step = f["step"]
        if step == "related":
            return graph("neighbors", f"{f['relation']} of {f['of']}", f["of"], edges=[f["relation"]])
        if step in ("compare", "connection"):
            other = f["with" if step == "compare" else "to"]
            return graph("compare" if step == "compare" else "path", f"{step} {f['of']} and {other}", f["of"],
                         other, hops=1 if step == "compare" else 3)
        if step == "details":
            e, why = book[f["of"]], f"details of {f['of']}"[:_RATIONALE]
            story = {"rationale": why, "entity_type": e.entity_type,
                     "query": _TAIL.sub("", e.label)[:_QUERY] or e.label, "filters": {"id": [e.id]}, "limit": 1}
            if e.entity_type not in NAME_FIELD or not e.name:
                return {"action": "qdrant_search", "rationale": why, "search_intent": story}
            # the record's own values (episode count, volumes, years, ...) and its story, in one turn
            record = {"rationale": why, "entity_type": e.entity_type, "limit": 5,
                      "where": [{"field": NAME_FIELD[e.entity_type], "op": "eq", "value": e.name[:200]}]}
            return {"action": "pg_query", "rationale": why, "structured_query": record, "also": [story]}
        if step == "similar":
            why = f"{f['type']} like {f['of']}"[:_RATIONALE]
            return {"action": "similar", "rationale": why, "similar_intent": {
                "rationale": why, "entity_type": f["type"], "like": [ref(f["of"])]}}
        if step == "search":
            why = f"search {f['type']} by meaning"
            return {"action": "qdrant_search", "rationale": why, "search_intent": {
                "rationale": why, "entity_type": f["type"], "query": " ".join(f["text"].split())[:_QUERY], "limit": 5}}
        return {"action": "finish", "rationale": "the model judged the context enough"}

    return schema, expand


def _answers(card: ContextCard) -> set[str]:
    """The ids a card can answer with: a one-relation step's neighbors, not the entity it started from."""
    start = card.data.get("start") if card.source == "pg_graph" and card.data.get("kind") == "neighbors" else None
    return {e.ref.id for e in card.entities if e.ref.id != start}


_QUALIFIER = re.compile(r"\) \(([a-z][a-z_ ]{0,38})\)$")  # a line's last parenthesis after a label: "(main)"
GROUP_ALL = "all found by step {k}"
GROUP_MARKED = "those marked {q} in step {k}"
_RESULTS = max_len(DraftAnswer, "result_entities")


def _groups(cards: list[ContextCard], labels: dict[str, str]) -> dict[str, list[tuple[EntityRef, str]]]:
    """A step's findings as one pick ("all found by step 1", "those marked main in step 1"): the answer to a
    question asking for a list (a cast, the works of a studio) is often a whole step, or the part of it its
    lines mark with one qualifier (a role, a staff credit). Steps are numbered as the prompt numbers them."""
    out: dict[str, list[tuple[EntityRef, str]]] = {}
    for k, card in enumerate((c for c in cards if c.source != "request"), start=1):
        answers, refs = _answers(card), {e.ref.id: e.ref for e in card.entities}
        members = [(refs[i], text) for i, text in card_lines(card, labels, ANSWER_LINE_CHARS, most=_RESULTS)
                   if i is not None and i in answers and i in refs]
        if len(members) < 2:
            continue
        out[GROUP_ALL.format(k=k)] = members
        marked: dict[str, list[tuple[EntityRef, str]]] = {}
        for ref, text in members:
            if (q := _QUALIFIER.search(text)) is not None:
                marked.setdefault(q.group(1).replace("_", " "), []).append((ref, text))
        if len(marked) > 1:  # one qualifier on every line marks nothing apart
            out.update({GROUP_MARKED.format(q=q, k=k): m for q, m in marked.items()})
    return out


def draft_form(inp: DraftInput, book: dict[str, Entry]) -> tuple[dict[str, Any], Expand]:
    """The entities that answer: each by its label, or a step's findings as one pick (see :func:`_groups`)."""
    labels = _label_of(book)
    in_cards = set().union(*(_answers(c) for c in inp.cards)) if inp.cards else set()
    groups = _groups(inp.cards, labels)
    pickable = [*groups, *(label for label, e in book.items() if e.id in in_cards)]
    items = _choice(pickable) if pickable else {"type": "null"}
    schema = _obj({"answer": {"type": "array", "items": items, "maxItems": MAX_ANSWER_PICKS if pickable else 0}})

    def expand(f: dict[str, Any]) -> dict[str, Any]:
        picked: list[EntityRef] = []
        for choice in dict.fromkeys(f["answer"]):
            if choice in groups:
                picked += [ref for ref, _ in groups[choice]]
            elif choice in book:
                picked.append(EntityRef(entity_type=book[choice].entity_type, id=book[choice].id))
            else:  # a pick the form never offered: refused, the writer's own choice instead
                return draft(inp).model_dump(mode="json")
        # the model picks what answers; the heuristic's writer says it, so every planner's answer is sentences
        return write(inp, picked).model_dump(mode="json")

    return schema, expand


def grade_form(inp: GradeInput) -> tuple[dict[str, Any], Expand]:
    indexes = [i.index for i in inp.items]
    items = {"type": "integer", "enum": indexes} if indexes else {"type": "null"}
    schema = _obj({"relevant": {"type": "array", "items": items, "maxItems": len(indexes)}})

    def expand(f: dict[str, Any]) -> dict[str, Any]:
        chosen = set(f["relevant"])
        return {"grades": [{"index": i, "relevant": i in chosen} for i in indexes]}

    return schema, expand


def validate_form(inp: ValidateInput) -> tuple[dict[str, Any], Expand]:
    schema = _obj({"sufficient": {"type": "boolean"}})
    mentions = [m.text for m in inp.links.mentions] if inp.links else []

    def expand(f: dict[str, Any]) -> dict[str, Any]:
        if f["sufficient"]:
            return {"sufficient": True, "rationale": "the model judged the draft sufficient", "missing": []}
        return {"sufficient": False, "rationale": "the model judged the draft insufficient",
                "missing": [f"what the question asks of {' and '.join(mentions)}"[:_MISSING]] if mentions
                else ["an answer to the question"]}

    return schema, expand


def user_text(inp: RoleInput, book: dict[str, Entry]) -> str:
    """The call's input as plain text for a small model."""
    parts = [f"Question: {' '.join(inp.question.split())}", linked_text(inp.links, book)]
    if (asked := asked_text(reading_of(inp))) is not None:
        parts[-1] += "\n" + asked
    if isinstance(inp, (SelectInput, DraftInput, ValidateInput)):
        parts.append(found_text(inp.cards, book))
    if isinstance(inp, SelectInput) and inp.missing:
        parts.append("Still missing: " + "; ".join(inp.missing[:4]))
    if isinstance(inp, ValidateInput):
        parts.append(f"Draft answer: {inp.draft.answer}")
    if isinstance(inp, GradeInput):
        shown = [f"{i.index}: {i.entity.name}" + (f" - {i.snippet[:SNIPPET_CHARS]}" if i.snippet else "")
                 for i in inp.items]
        parts.append("Items:\n" + "\n".join(shown))
    return "\n\n".join(parts)


def form_for(inp: RoleInput, refs: list[tuple[str, str]], template: str) -> Form:
    """The form of one role call: messages, schema, and the expansion into the role's contract."""
    book = entries(inp, refs)
    shape: tuple[dict[str, Any], Expand]
    if isinstance(inp, RewriteInput):
        shape = rewrite_form(inp)
    elif isinstance(inp, SelectInput):
        shape = select_form(inp, book)
    elif isinstance(inp, DraftInput):
        shape = draft_form(inp, book)
    elif isinstance(inp, GradeInput):
        shape = grade_form(inp)
    else:
        shape = validate_form(inp)
    user = user_text(inp, book)
    calibration = None
    if isinstance(inp, SelectInput):  # which step the question makes likely, not which the model likes anyway
        calibration = [*shots(template), Message(role="user", content=re.sub(
            r"^Question: .*$", "Question: N/A", user, count=1, flags=re.MULTILINE))]
    return Form(messages=[*shots(template), Message(role="user", content=user)],
                schema=shape[0], expand=shape[1], calibration=calibration)


def shots(template: str) -> list[Message]:
    """A compact template as chat turns: its instructions, then each worked example (blocks after a ``---``
    line, the last line of each the reply) as a user turn and the assistant's reply."""
    system, *examples = template.split("\n---\n")
    out = [Message(role="system", content=system.strip())]
    for example in examples:
        body, reply = example.strip().rsplit("\n", 1)
        out += [Message(role="user", content=body.strip()), Message(role="assistant", content=reply.strip())]
    return out


def expander(form: Form) -> Callable[[str], str]:
    """The model's text as the contract's JSON (left as it is when it is no filled form: validation says why)."""

    def restore(text: str) -> str:
        try:
            filled = json.loads(text)
        except ValueError:
            return text
        if not isinstance(filled, dict):
            return text
        try:
            return json.dumps(form.expand(filled), ensure_ascii=False)
        except (KeyError, TypeError, IndexError):
            return text

    return restore
