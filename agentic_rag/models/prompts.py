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
from typing import Any

from pydantic import BaseModel

from agentic_rag.models.base import Message
from agentic_rag.models.roles import ROLE_OF_INPUT, ROLES, Role, RoleInput

# Approximate budgets in tokens (4 characters a token is close for English and JSON).
TOKEN_BUDGET: dict[Role, int] = {"rewrite": 1024, "select": 4096, "draft": 4096, "grade": 3072, "validate": 4096}
CHARS_PER_TOKEN = 4
# Most tokens a role's output may take (every contract is bounded; these leave room for its JSON).
MAX_OUTPUT_TOKENS: dict[Role, int] = {"rewrite": 384, "select": 768, "draft": 1024, "grade": 512, "validate": 384}
STATE_OPEN, STATE_CLOSE = "<state>\n```json\n", "\n```\n</state>"
_STATE = re.compile(r"<state>\n```json\n(.*?)\n```\n</state>", re.DOTALL)


@cache
def template(role: Role) -> str:
    folder = resources.files("agentic_rag.models").joinpath("prompts")
    background = folder.joinpath("_background.md").read_text(encoding="utf-8").strip()
    return folder.joinpath(f"{role}.md").read_text(encoding="utf-8").replace("{background}", background).strip()


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


def render(role_input: RoleInput, output_type: type[BaseModel]) -> list[Message]:
    """Chat messages for one role call."""
    role = ROLE_OF_INPUT[type(role_input)]
    if ROLES[output_type][0] != role:
        raise ValueError(f"{type(role_input).__name__} is the input of {role}, which does not produce "
                         f"{output_type.__name__}")
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
