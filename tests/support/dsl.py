"""Shorthand for structured queries, shared by the DSL's unit and integration tests."""

from __future__ import annotations

from typing import Any

from agentic_rag.protocol import StructuredQuery


def q(**kw: Any) -> StructuredQuery:
    """A structured query of ``kw`` (with a rationale), validated as the planner's would be."""
    return StructuredQuery.model_validate({"rationale": "test", **kw})


def cond(field: str, op: str, value: Any) -> dict[str, Any]:
    """One condition of a query's ``where``, as JSON."""
    return {"field": field, "op": op, "value": value}
