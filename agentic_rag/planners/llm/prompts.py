"""Prompts per role (background, steps, output instructions), from the template files in templates/.

A prompt is a system message (the role's template) and a user message holding the role input as a
JSON state block, plus the output schema. Each role has a token budget; when the context cards do
not fit, the oldest cards' summaries are shortened first (their ids are always kept), so the most
recent findings are never the ones lost.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from agentic_rag.models.base import CallShape, Message, Shaper, schema_for
from agentic_rag.models.schemas import MAX_REF_CHOICES, narrow, token_bound
from agentic_rag.planners.heuristic.picks import write
from agentic_rag.planners.llm.forms import expander, form_for
from agentic_rag.protocol import DraftAnswer
from agentic_rag.protocol.roles import DraftInput, GradeInput, Role, RoleInput, SelectInput, role_of

# Approximate budgets in tokens (4 characters a token is close for English and JSON).
TOKEN_BUDGET: dict[Role, int] = {"rewrite": 1024, "select": 4096, "draft": 4096, "grade": 3072, "validate": 4096}
CHARS_PER_TOKEN = 4
# Most tokens a role's output may take (every contract is bounded; these leave room for its JSON).
MAX_OUTPUT_TOKENS: dict[Role, int] = {"rewrite": 384, "select": 768, "draft": 1024, "grade": 512, "validate": 384}
STATE_OPEN, STATE_CLOSE = "<state>\n```json\n", "\n```\n</state>"
# what a role input holds for code, not for the model: the reader's analysis (a compact form says it in words)
NOT_SHOWN = {"reading"}


# Compact prompts (``RAG_PROMPT_STYLE=compact``, for small models): the role's call becomes a short form
# (agentic_rag.planners.llm.forms) under a template whose worked examples become earlier chat turns; no schema, no JSON.
PromptStyle = Literal["full", "compact"]


@cache
def template(role: Role, style: PromptStyle = "full") -> str:
    folder = resources.files("agentic_rag.planners.llm").joinpath("templates")
    if style == "compact":
        return folder.joinpath("compact", f"{role}.md").read_text(encoding="utf-8").strip()
    background = folder.joinpath("_background.md").read_text(encoding="utf-8").strip()
    return folder.joinpath(f"{role}.md").read_text(encoding="utf-8").replace("{background}", background).strip()


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


@cache
def _schema_text(output_type: type[BaseModel]) -> str:
    return json.dumps(schema_for(output_type), separators=(",", ":"))


def _state(data: dict[str, Any]) -> str:
    try:  # pydantic's encoder (Rust): a prompt is rendered for every role call, and this was most of it
        return pydantic_core.to_json(data).decode()
    except PydanticSerializationError:  # a lone surrogate (UTF-8 cannot hold it): the stdlib's encoder keeps it
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def _state_text(role_input: RoleInput, budget_chars: int | None) -> str:
    """The role input as the state block's JSON, within ``budget_chars`` (None: whole): written once when it fits
    (the usual case), else shortened by :func:`_fit`."""
    try:
        text = role_input.model_dump_json(exclude_none=True, exclude=NOT_SHOWN)
    except PydanticSerializationError:
        text = None
    if text is not None and (budget_chars is None or len(text) <= budget_chars):
        return text
    data = role_input.model_dump(mode="json", exclude_none=True, exclude=NOT_SHOWN)
    return _state(data if budget_chars is None else _fit(data, budget_chars))


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


def _budget(role: Role, output_type: type[BaseModel]) -> int:
    """Characters the state block of a full-style prompt may take: the role's token budget less the rest."""
    return max(TOKEN_BUDGET[role] * CHARS_PER_TOKEN - len(template(role)) - len(_schema_text(output_type)) - 200, 2000)


def render(role_input: RoleInput, output_type: type[BaseModel], *, fit: bool = True) -> list[Message]:
    """Chat messages for one role call (the full style; a compact call is a form, see :func:`shaper`).

    ``fit``: shorten the state to the full-style prompt's budget (the oldest cards' summaries first), as
    :func:`shaper` does for a full-style model; ``fit=False``: the whole state."""
    role = role_of(role_input, output_type)
    system = template(role)
    schema = _schema_text(output_type)
    state = _state_text(role_input, _budget(role, output_type) if fit else None)
    user = (f"Input:\n{STATE_OPEN}{state}{STATE_CLOSE}\n\n"
            f"Output schema ({output_type.__name__}):\n{schema}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def written(inp: DraftInput) -> Callable[[str], str]:
    """A full-style draft as the writer says it: the model's ``result_entities`` and confidence are its choice,
    the words are :func:`~agentic_rag.planners.heuristic.picks.write`'s (a model copies its cards' lines).
    Text that is no DraftAnswer is left as it is: validation says why, and the correction quotes it."""

    def restore(text: str) -> str:
        try:
            model = DraftAnswer.model_validate_json(text)
        except ValueError:
            return text
        return write(inp, model.result_entities, confidence=model.confidence).model_dump_json()

    return restore


def shaper(style: PromptStyle) -> Shaper:
    """How a text model puts each role call (see :class:`~agentic_rag.models.base.CallShape`), from its typed
    input. Full: :func:`render`, the state fitted to the role's budget, decoding held to the entities the call
    was shown (:func:`~agentic_rag.models.schemas.narrow`), at most the tokens that schema can take, a draft's
    words written from its picks (:func:`written`). Compact: the call's form
    (:mod:`agentic_rag.planners.llm.forms`), from the whole input, expanded into the contract."""

    def shape(inp: RoleInput, output_type: type[BaseModel]) -> CallShape:
        role = role_of(inp, output_type)
        refs = refs_of(inp)[:MAX_REF_CHOICES]
        if style == "compact":
            form = form_for(inp, refs, template(role, "compact"))
            return CallShape(messages=form.messages, schema=form.schema, max_tokens=token_bound(form.schema),
                             restore=expander(form), calibration=form.calibration)
        messages = render(inp, output_type)  # the state fitted to the prompt's budget
        schema = narrow(schema_for(output_type), refs)
        if isinstance(inp, SelectInput) and not inp.cards and "anyOf" in schema:
            # nothing retrieved yet: finishing now can only answer "not found", so it is not offered
            schema = {**schema, "anyOf": [v for v in schema["anyOf"]
                                          if v.get("properties", {}).get("action", {}).get("const") != "finish"]}
        return CallShape(messages=messages, schema=schema, max_tokens=token_bound(schema),
                         restore=written(inp) if isinstance(inp, DraftInput) else str)

    return shape
