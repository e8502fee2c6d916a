"""Schemas compared by meaning: a client's rewrite of a role's schema is that role's schema, and nothing else is."""

from __future__ import annotations

import copy
from typing import Any, Literal

import pytest
from openai.lib._pydantic import to_strict_json_schema
from pydantic import BaseModel, Field

from agentic_rag.models.base import schema_for
from agentic_rag.models.schema_match import MAX_NODES, canonical_schema, schema_key
from agentic_rag.protocol import QueryRewrite, SufficiencyReport
from agentic_rag.protocol.roles import ROLES

OUTPUT_TYPES = list(ROLES)


@pytest.mark.parametrize("output_type", OUTPUT_TYPES, ids=lambda t: t.__name__)
def test_the_official_clients_strict_schema_means_the_type(output_type: type[BaseModel]) -> None:
    strict = to_strict_json_schema(output_type)  # what client.chat.completions.parse(response_format=T) sends
    assert schema_key(strict) == schema_key(schema_for(output_type))
    # and it is no other role's type
    assert [t for t in OUTPUT_TYPES if schema_key(schema_for(t)) == schema_key(strict)] == [output_type]


def test_canonical_form_leaves_its_input_alone() -> None:
    schema = schema_for(QueryRewrite)
    before = copy.deepcopy(schema)
    canonical_schema(schema)
    assert schema == before


class _Hinted(SufficiencyReport):
    """A validator's report with an optional closed field, for the spellings of a nullable enum."""

    hint: Literal["qdrant_search", "pg_graph"] | None = Field(None, description="An optional hint.")


def _sufficiency(**properties: Any) -> dict[str, Any]:
    schema = copy.deepcopy(schema_for(_Hinted))
    schema["properties"].update(properties)
    return schema


def test_other_spellings_of_the_same_schema_match() -> None:
    hint: dict[str, Any] = {"enum": ["qdrant_search", "pg_graph"], "type": "string"}
    reversed_hint = {**hint, "enum": hint["enum"][::-1]}
    via_ref = _sufficiency(hint={"anyOf": [{"$ref": "#/$defs/Hint"}, {"type": "null"}],
                                 "description": "another description"})
    via_ref["$defs"] = {"Hint": hint}
    variants = {
        "type list": _sufficiency(hint={"type": ["string", "null"], "enum": ["pg_graph", "qdrant_search", None]}),
        "nullable": _sufficiency(hint={**hint, "nullable": True}),
        "reordered": {**_sufficiency(hint={"anyOf": [{"type": "null"}, reversed_hint]}),
                      "required": ["rationale", "sufficient"]},
        "allOf, 300.0": _sufficiency(rationale={"allOf": [{"type": "string", "maxLength": 300.0}], "title": "Why"}),
        "$ref beside a description": via_ref,
    }
    want = schema_key(schema_for(_Hinted))
    assert {name: schema_key(v) == want for name, v in variants.items()} == dict.fromkeys(variants, True)


def _changed(**properties: Any) -> dict[str, Any]:
    schema = copy.deepcopy(schema_for(QueryRewrite))
    for name, sub in properties.items():
        if sub is None:
            del schema["properties"][name]
        else:
            schema["properties"][name] = sub
    return schema


@pytest.mark.parametrize("variant", [
    _changed(rationale={"type": "string", "maxLength": 301}),  # a bound moved
    _changed(rationale={"type": "integer"}),  # another type
    _changed(rationale=None),  # a property less
    _changed(extra={"type": "string"}),  # a property more
    _changed(retrieval_mode={"enum": ["vector", "graph"], "type": "string"}),  # an option less
    {**schema_for(QueryRewrite), "additionalProperties": True},  # anything else allowed
], ids=["bound", "type", "fewer", "more", "enum", "open"])
def test_a_schema_that_means_something_else_does_not_match(variant: dict[str, Any]) -> None:
    assert schema_key(variant) != schema_key(schema_for(QueryRewrite))


def test_schemas_that_cannot_be_written_out_are_value_errors() -> None:
    with pytest.raises(ValueError, match="does not resolve"):
        canonical_schema({"$ref": "#/$defs/Missing"})
    with pytest.raises(ValueError, match="only local"):
        canonical_schema({"$ref": "https://example.com/schema.json"})
    # each level doubles the tree: 2**30 subschemas once expanded
    defs = {f"L{i}": {"anyOf": [{"$ref": f"#/$defs/L{i + 1}"}, {"$ref": f"#/$defs/L{i + 1}"}]} for i in range(30)}
    defs["L30"] = {"type": "string"}
    with pytest.raises(ValueError, match=str(MAX_NODES)):
        canonical_schema({"$defs": defs, "$ref": "#/$defs/L0"})


def test_a_recursive_schema_has_a_canonical_form() -> None:
    tree = {"$defs": {"Node": {"type": "object", "properties": {"children": {"type": "array",
                                                                            "items": {"$ref": "#/$defs/Node"}}}}},
            "$ref": "#/$defs/Node"}
    assert canonical_schema(tree)["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
