"""A JSON schema by meaning, not by bytes: what lets a client's rewrite of our schema match our type.

Clients rewrite a schema before they send it. The official ``openai`` client's
``chat.completions.parse(response_format=Model)`` sends ``openai.lib._pydantic.to_strict_json_schema(Model)``:
pydantic's schema with every property listed in ``required``, ``additionalProperties: false`` on every
object that does not say, ``default: null`` dropped, each ``$ref`` that has sibling keywords (a field's
description beside its model's ``$ref``) inlined, and a one-member ``allOf`` merged. Other tools write a
nullable field as ``type: ["string", "null"]`` or ``nullable: true`` where pydantic writes ``anyOf`` with
``{"type": "null"}``, or ``enum: [x]`` where pydantic writes ``const``.

:func:`canonical_schema` undoes all of these: references resolved, annotations dropped (titles,
descriptions, defaults, examples), nullable and type lists written as one ``anyOf``, unions and enums as
sorted sets, keywords that cannot apply to a node's type dropped, and objects in the strict form (every
property required, ``additionalProperties: false`` unless the schema says otherwise). The last is a
choice for our use: a server that answers with a full dump of a pydantic model (every field, nothing
else) satisfies the schema and its strict form alike, so the two are one format to it.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from agentic_rag.logs import QUOTED_INPUT_MAX

# Keywords that describe a schema without constraining what it accepts (``discriminator`` is OpenAPI's
# hint for a union, which JSON Schema ignores); ``$defs`` goes once every reference is resolved.
ANNOTATIONS = frozenset({
    "title", "description", "default", "examples", "$comment", "deprecated", "readOnly", "writeOnly",
    "$schema", "$id", "$defs", "definitions", "discriminator",
})
_NUMERIC = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
# The keywords that constrain values of one type only: on a node of another single type they say nothing.
_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format", "contentEncoding", "contentMediaType"}),
    "number": _NUMERIC,
    "integer": _NUMERIC,
    "array": frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains", "minContains",
                        "maxContains", "unevaluatedItems"}),
    "object": frozenset({"properties", "required", "additionalProperties", "patternProperties", "minProperties",
                         "maxProperties", "propertyNames", "dependentRequired", "dependentSchemas",
                         "unevaluatedProperties"}),
}
_ALL_TYPE_KEYWORDS = frozenset().union(*_TYPE_KEYWORDS.values())
_NUMBER_VALUED = _NUMERIC | {"minLength", "maxLength", "minItems", "maxItems", "minContains", "maxContains",
                             "minProperties", "maxProperties"}
_SUBSCHEMA = ("items", "additionalProperties", "contains", "propertyNames", "not", "if", "then", "else",
              "unevaluatedItems", "unevaluatedProperties")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_SUBSCHEMA_LISTS = ("prefixItems", "anyOf", "oneOf", "allOf")
MAX_NODES = 50_000  # subschemas one canonical form may hold: references could otherwise expand exponentially


def canonical_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema``'s canonical form (see the module docstring); ``schema`` itself is left as it is.

    Raises ``ValueError`` for a schema whose form cannot be written: a reference that does not resolve, or more
    than :data:`MAX_NODES` subschemas once references are expanded."""
    try:
        out = _Canon(schema).schema(schema, frozenset())
    except RecursionError:
        raise ValueError("the schema is nested too deeply") from None
    assert isinstance(out, dict)
    return out


@functools.lru_cache(maxsize=256)
def _key_of_text(text: str) -> str:
    return json.dumps(canonical_schema(json.loads(text)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def schema_key(schema: dict[str, Any]) -> str:
    """A string equal for two schemas exactly when their canonical forms are equal. Remembers the schemas it
    saw last: a client sends the same few again and again, and a large one takes tens of milliseconds."""
    return _key_of_text(json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False))


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _fits(value: Any, kind: str) -> bool:
    return _json_type(value) == kind or (kind == "number" and _json_type(value) == "integer")


def _value(value: Any) -> Any:
    """A JSON value as compared: 1.0 and 1 are one number."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items()}
    return value


def _sorted_set(items: list[Any]) -> list[Any]:
    keyed = {json.dumps(i, sort_keys=True, ensure_ascii=False): i for i in items}
    return [keyed[k] for k in sorted(keyed)]


def _resolve(root: dict[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        raise ValueError(f"only local references can be resolved, not {ref[:QUOTED_INPUT_MAX]!r}")
    node: Any = root
    for part in ref[1:].lstrip("/").split("/") if ref != "#" else []:
        key = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or key not in node:
            raise ValueError(f"the reference {ref[:QUOTED_INPUT_MAX]!r} does not resolve")
        node = node[key]
    return node


class _Canon:
    """One schema's canonicalisation: its root (what references resolve against) and its node budget."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.nodes = 0

    def schema(self, node: Any, resolving: frozenset[str]) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ValueError(f"the schema expands to more than {MAX_NODES} subschemas")
        if isinstance(node, bool):  # the schemas that accept everything / nothing, as their object forms
            return {} if node else {"not": {}}
        if not isinstance(node, dict):
            return node
        node = dict(node)
        ref = node.pop("$ref", None)
        if isinstance(ref, str):
            if ref in resolving:  # a recursive type: its inner occurrences compare by name
                return {"$ref": ref}
            target = _resolve(self.root, ref)
            # a reference with siblings reads as both; the siblings are annotations in practice (a field's
            # description), and the strict client merges them the same way
            merged = {**target, **node} if isinstance(target, dict) else target
            return self.schema(merged, resolving | {ref})
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            member = all_of[0]
            rest = {k: v for k, v in node.items() if k != "allOf"}
            if not (set(member) & set(rest)) - ANNOTATIONS:  # no keyword on both sides: merging keeps the meaning
                return self.schema({**member, **rest}, resolving)
        for key in ANNOTATIONS:
            node.pop(key, None)
        if node.pop("nullable", False) is True:
            return self.schema({"anyOf": [node, {"type": "null"}]}, resolving)
        types = node.get("type")
        if isinstance(types, list):
            distinct = sorted(set(types))
            if len(distinct) != 1:
                rest = {k: v for k, v in node.items() if k != "type"}
                return self.schema({"anyOf": [{**rest, "type": t} for t in distinct]}, resolving)
            node["type"] = distinct[0]
        return self._keywords(node, resolving)

    def _keywords(self, node: dict[str, Any], resolving: frozenset[str]) -> Any:
        kind = node.get("type")
        if isinstance(node.get("enum"), list):
            values = _sorted_set(_value(node["enum"]))
            if isinstance(kind, str):  # values of another type are never accepted: not listed
                values = [v for v in values if _fits(v, kind)]
            if len(values) == 1:
                del node["enum"]
                node["const"] = values[0]
            else:
                node["enum"] = values
        if "const" in node:
            node["const"] = _value(node["const"])
        elif kind == "null" and "enum" not in node:
            node["const"] = None  # the one value of the type
        if isinstance(kind, str):
            listed = [node["const"]] if "const" in node else node.get("enum")
            # the values listed say the type: {"const": "x", "type": "string"} and {"const": "x"} are one schema
            if isinstance(listed, list) and listed and all(_fits(v, kind) for v in listed):
                del node["type"]
            for key in _ALL_TYPE_KEYWORDS - _TYPE_KEYWORDS.get(kind, frozenset()):
                node.pop(key, None)
        for key in _NUMBER_VALUED & node.keys():
            node[key] = _value(node[key])
        for key in _SUBSCHEMA:
            if key in node:
                node[key] = self.schema(node[key], resolving)
        for key in _SUBSCHEMA_MAPS:
            if isinstance(node.get(key), dict):
                node[key] = {name: self.schema(sub, resolving) for name, sub in node[key].items()}
        for key in _SUBSCHEMA_LISTS:
            if isinstance(node.get(key), list):
                node[key] = [self.schema(sub, resolving) for sub in node[key]]
        if node.get("type") == "object" or "properties" in node:
            # the strict form: every property required, nothing else allowed unless the schema says so
            node["required"] = sorted(set(node.get("properties", {})) | set(node.get("required", [])))
            node.setdefault("additionalProperties", False)
        elif isinstance(node.get("required"), list):
            node["required"] = sorted(set(node["required"]))
        if isinstance(node.get("anyOf"), list):
            members: list[Any] = []
            for member in node["anyOf"]:  # a union of unions is one union
                nested = isinstance(member, dict) and set(member) == {"anyOf"}
                members += member["anyOf"] if nested else [member]
            node["anyOf"] = _sorted_set(members)
            if len(node["anyOf"]) == 1 and len(node) == 1:
                return node["anyOf"][0]
        for key in ("oneOf", "allOf"):
            if isinstance(node.get(key), list):
                node[key] = _sorted_set(node[key])
        return node
