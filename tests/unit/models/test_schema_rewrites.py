"""The schema rewrites for constraint engines see a property's schema whatever the property is called."""

from __future__ import annotations

from typing import Any

from agentic_rag.models.schemas import outlines_schema, xgrammar_schema

UUID = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


def _schema(prop: str) -> dict[str, Any]:
    """An object whose property ``prop`` is a UUID string with redundant lengths, and a bounded integer."""
    return {"type": "object", "required": [prop], "properties": {
        prop: {"type": "string", "pattern": UUID, "minLength": 36, "maxLength": 36},
        "limit": {"type": "integer", "minimum": 1, "maximum": 3},
    }, "$defs": {"enum": {"type": "string", "pattern": UUID, "maxLength": 36}}}


def test_a_property_named_like_a_data_keyword_is_still_rewritten() -> None:
    for prop in ("id", "default", "enum", "const", "examples"):
        lowered = xgrammar_schema(_schema(prop))
        assert lowered["properties"][prop] == {"type": "string", "pattern": UUID}, prop
        assert lowered["$defs"]["enum"] == {"type": "string", "pattern": UUID}
        outlined = outlines_schema(_schema(prop))
        assert outlined["properties"][prop] == {"type": "string", "pattern": UUID}, prop
        assert outlined["properties"]["limit"] == {"type": "integer", "enum": [1, 2, 3]}


def test_a_data_keyword_keeps_its_value() -> None:
    # a default or an enum is a value, not a schema: it is never rewritten
    schema = {"type": "string", "pattern": UUID, "maxLength": 36,
              "default": {"type": "string", "pattern": UUID, "maxLength": 36}, "enum": [{"maxLength": 1}]}
    lowered = xgrammar_schema(schema)
    assert lowered["default"] == {"type": "string", "pattern": UUID, "maxLength": 36}
    assert lowered["enum"] == [{"maxLength": 1}]
