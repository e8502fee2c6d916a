"""Prompts per role (seed 001 section 5: background, steps, output instructions), from template files.

A prompt is a system message (the role's template) and a user message holding the role input as a
JSON state block, plus the output schema. Each role has a token budget; when the context cards do
not fit, the oldest cards' summaries are shortened first (their ids are always kept), so the most
recent findings are never the ones lost.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from typing import Any, Literal, cast

from pydantic import BaseModel

from agentic_rag.models.base import CallShape, Message, Shaper, schema_for
from agentic_rag.models.roles import ROLE_OF_INPUT, ROLES, GradeInput, Role, RoleInput, SelectInput
from agentic_rag.models.schemas import MAX_REF_CHOICES, narrow, token_bound
from agentic_rag.protocol import EntityLinks

# Approximate budgets in tokens (4 characters a token is close for English and JSON).
TOKEN_BUDGET: dict[Role, int] = {"rewrite": 1024, "select": 4096, "draft": 4096, "grade": 3072, "validate": 4096}
CHARS_PER_TOKEN = 4
# Most tokens a role's output may take (every contract is bounded; these leave room for its JSON).
MAX_OUTPUT_TOKENS: dict[Role, int] = {"rewrite": 384, "select": 768, "draft": 1024, "grade": 512, "validate": 384}
STATE_OPEN, STATE_CLOSE = "<state>\n```json\n", "\n```\n</state>"
_STATE = re.compile(r"<state>\n```json\n(.*?)\n```\n</state>", re.DOTALL)


# Compact prompts (``RAG_PROMPT_STYLE=compact``, for small models): no schema in the prompt (the grammar
# holds the model to it), one worked example per role, the linked names as a short card, smaller budgets.
COMPACT_BUDGET: dict[Role, int] = {"rewrite": 384, "select": 1280, "draft": 1280, "grade": 768, "validate": 1024}
PromptStyle = Literal["full", "compact"]
MAX_CARD_CANDIDATES = 3  # readings of one mention shown in the compact linking card
COMPACT_CARD_ENTITIES = 12  # entities of one context card a compact prompt lists


@cache
def template(role: Role, style: PromptStyle = "full") -> str:
    folder = resources.files("agentic_rag.models").joinpath("prompts")
    if style == "compact":
        return folder.joinpath("compact", f"{role}.md").read_text(encoding="utf-8").strip()
    background = folder.joinpath("_background.md").read_text(encoding="utf-8").strip()
    return folder.joinpath(f"{role}.md").read_text(encoding="utf-8").replace("{background}", background).strip()


def linking_card(links: EntityLinks | None) -> str:
    """The names a question mentions and what each may be, one line each, for a small model to read."""
    if links is None or not links.mentions:
        return "Linked: nothing in the question matched a catalog name."
    lines = ["Linked:"]
    for m in links.mentions:
        shown = m.candidates[:MAX_CARD_CANDIDATES]
        names = [c.name for c in shown]
        # a year only where it tells two readings apart: numbers invite a small model to repeat them
        lines.append(f'- "{m.text}" = ' + " | ".join(
            f"{c.entity.entity_type} {c.name}{f' ({c.year})' if c.year and names.count(c.name) > 1 else ''} "
            f"id={c.entity.id}" for c in shown))
    if links.asks:
        lines.append("The question asks about: " + " or ".join(dict.fromkeys(a.label for a in links.asks[:2])))
    return "\n".join(lines)


def refs_of(role_input: RoleInput) -> list[tuple[str, str]]:
    """Every (entity_type, id) a role call is shown: the linked candidates first, then the cards' entities,
    paths and rows, then the items to grade. What a model may name in its output, and nothing else."""
    out: list[tuple[str, str]] = []
    if role_input.links is not None:
        out += [(c.entity.entity_type, c.entity.id) for m in role_input.links.mentions for c in m.candidates]
    for card in getattr(role_input, "cards", []):
        out += [(e.ref.entity_type, e.ref.id) for e in card.entities]
        out += [(n.entity_type, n.id) for p in card.paths for n in p.nodes]
    if isinstance(role_input, GradeInput):
        out += [(i.entity.ref.entity_type, i.entity.ref.id) for i in role_input.items]
    return list(dict.fromkeys(out))


def _state(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _fit(data: dict[str, Any], budget_chars: int) -> dict[str, Any]:
    """Shorten card summaries, oldest first, until the state fits the budget."""
    cards = data.get("cards")
    if not cards:
        return data
    for keep in (2000, 600, 200, 0):
        if len(_state(data)) <= budget_chars:
            break
        for card in cards[:-1] if len(cards) > 1 else cards:
            if len(card["summary"]) > keep:
                card["summary"] = card["summary"][:keep] + ("..." if keep else "")
            if len(_state(data)) <= budget_chars:
                break
    return data


def render(role_input: RoleInput, output_type: type[BaseModel], style: PromptStyle = "full") -> list[Message]:
    """Chat messages for one role call."""
    role = ROLE_OF_INPUT[type(role_input)]
    if ROLES[output_type][0] != role:
        raise ValueError(f"{type(role_input).__name__} is the input of {role}, which does not produce "
                         f"{output_type.__name__}")
    if style == "compact":
        system = template(role, "compact")
        card = linking_card(role_input.links)
        budget = COMPACT_BUDGET[role] * CHARS_PER_TOKEN - len(system) - len(card) - 100
        data = role_input.model_dump(mode="json", exclude_none=True, exclude={"links"})
        for card in data.get("cards", []):  # what a card says in words, and the first entities it found
            card.pop("data", None)
            card.pop("paths", None)
            card["entities"] = card.get("entities", [])[:COMPACT_CARD_ENTITIES]
        state = _fit(data, max(budget, 1000))
        user = (f"{card}\n\nInput:\n{STATE_OPEN}{_state(state)}{STATE_CLOSE}\n\n"
                f"Reply with one {output_type.__name__} JSON object.")
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]
    system = template(role)
    schema = json.dumps(output_type.model_json_schema(), separators=(",", ":"))
    budget = TOKEN_BUDGET[role] * CHARS_PER_TOKEN - len(system) - len(schema) - 200
    state = _fit(role_input.model_dump(mode="json", exclude_none=True), max(budget, 2000))
    user = (f"Input:\n{STATE_OPEN}{_state(state)}{STATE_CLOSE}\n\n"
            f"Output schema ({output_type.__name__}):\n{schema}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def read_state(messages: list[Message]) -> tuple[Role, dict[str, Any]]:
    """The role and the state block of the last user message (how the heuristic model reads a prompt)."""
    for message in reversed(messages):
        if message["role"] == "user":
            match = _STATE.search(message["content"])
            if match:
                system = next((m["content"] for m in messages if m["role"] == "system"), "")
                role = next((r for r in ROLES_BY_TASK if ROLES_BY_TASK[r] in system), None)
                if role is None:
                    raise ValueError("the system message names no known role")
                return role, json.loads(match.group(1))
    raise ValueError("no state block in the messages")


ROLES_BY_TASK: dict[Role, str] = {
    "rewrite": "## Your task: rewrite", "select": "## Your task: choose the next step",
    "draft": "## Your task: draft the answer", "grade": "## Your task: grade retrieved items",
    "validate": "## Your task: judge sufficiency",
}


_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_HANDLE = re.compile(r'"#\d{1,3}"')


def shaper(style: PromptStyle) -> Shaper:
    """How a text model puts each call (see :class:`~agentic_rag.models.base.CallShape`): in ``style``, decoding
    held to the entities the call was shown (:func:`~agentic_rag.models.schemas.narrow`), at most the tokens
    that schema can take. Messages that are not a role call (no state block) keep the full schema."""

    def shape(messages: list[Message], output_type: type[BaseModel]) -> CallShape:
        try:
            role, state = read_state(messages)
            inp = cast(RoleInput, ROLES[output_type][1].model_validate(state))
        except (ValueError, KeyError):
            return CallShape(messages=messages, schema=schema_for(output_type))
        if ROLES[output_type][0] != role:
            return CallShape(messages=messages, schema=schema_for(output_type))
        compact = style == "compact"
        refs = refs_of(inp)[:MAX_REF_CHOICES]
        if compact:  # a small model names an entity by a short handle ("#3"), not by 36 characters of UUID
            handles = {i: f"#{n}" for n, (_, i) in enumerate(refs, start=1)}
            schema = narrow(schema_for(output_type), [(t, handles[i]) for t, i in refs], compact=True)
        else:
            handles = {}
            schema = narrow(schema_for(output_type), refs)
        if isinstance(inp, SelectInput) and not inp.cards and "anyOf" in schema:
            # nothing retrieved yet: finishing now can only answer "not found", so it is not offered
            schema = {**schema, "anyOf": [v for v in schema["anyOf"]
                                          if v.get("properties", {}).get("action", {}).get("const") != "finish"]}
        if not compact:
            return CallShape(messages=messages, schema=schema, max_tokens=token_bound(schema))
        shown = [Message(role=m["role"], content=_UUID.sub(lambda u: handles.get(u.group(0), "?"), m["content"]))
                 for m in render(inp, output_type, "compact")]
        ids = {f'"{h}"': f'"{i}"' for i, h in handles.items()}

        def restore(text: str) -> str:
            return _HANDLE.sub(lambda h: ids.get(h.group(0), h.group(0)), text)

        return CallShape(messages=shown, schema=schema, max_tokens=token_bound(schema), restore=restore)

    return shape
