"""JSON-schema rewrites for the constraint engines: each accepts a subset of what the original schema accepts.

Constrained decoding engines each support a different slice of JSON Schema. Rather than let an engine
silently ignore a keyword (and so let through a value the protocol rejects), each gets a schema it fully
enforces: :func:`xgrammar_schema` for xgrammar (vLLM's default engine, and the transformers backend's),
:func:`outlines_schema` for outlines_core's regex engine.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

from agentic_rag.protocol.base import UUID_PATTERN

# One JSON string character as outlines_core writes it, and one that is not whitespace (see below).
_CHAR = r'(?:[^"\\\x00-\x1F\x7F-\x9F]|\\["\\/bfnrt])'
_NONSPACE_CHAR = r'(?:[^\s"\\\x00-\x1F\x7F-\x9F]|\\["\\/])'
_UNBOUNDED = re.compile(r"[*+]|\{\d+,\}")
_DATA_KEYS = frozenset({"enum", "const", "default", "examples"})  # values, not schemas
# name -> schema: a property may be called "default" or "enum" and its value is still a schema
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
# A bounded number becomes this many evenly spaced values (0.00, 0.01, ... 1.00 for a confidence).
_NUMBER_STEPS = 100
_MAX_ENUM = 1001


def outlines_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same JSON schema, rewritten where outlines_core would otherwise accept values it forbids.

    outlines_core (0.2.x) ignores ``minimum``/``maximum`` (a ``limit`` of 0 or a confidence of 7
    would pass) and ignores ``pattern`` when a length is also given (a UUID field would accept any
    36 characters). So: a bounded integer becomes the ``enum`` of its values, a bounded number the
    ``enum`` of ``_NUMBER_STEPS + 1`` evenly spaced values, a fixed-length pattern drops the
    redundant lengths, and a required string (``minLength >= 1``) must start with a non-space
    character, since the protocol strips whitespace before checking ``min_length``. Each rewrite
    accepts a subset of what the original accepts, so output stays valid against the original.

    One more subset: outlines_core compiles the whole schema into one regular expression, and a list
    whose items are a union of large objects (``NextStep.also``, up to three more search, graph or
    query intents) multiplies it past what its DFA can hold. Regex-based decoding therefore gets
    ``also`` as an empty list: such a model plans one intent a turn, which the loop handles the
    same way. Grammar-based backends (xgrammar in vLLM) keep the batch.
    """
    return _single_steps(_lower(schema))  # type: ignore[no-any-return]


def _single_steps(node: Any) -> Any:
    if isinstance(node, list):
        return [_single_steps(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: ({name: _single_steps(sub) for name, sub in v.items()} if k in _SCHEMA_MAPS and isinstance(v, dict)
               else v if k in _DATA_KEYS else _single_steps(v)) for k, v in node.items()}
    props = out.get("properties")
    if isinstance(props, dict) and isinstance(props.get("also"), dict) and props["also"].get("type") == "array":
        out["properties"] = {**props, "also": {"type": "array", "maxItems": 0}}
    return out


def _lower(node: Any) -> Any:
    if isinstance(node, list):
        return [_lower(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: _lower(sub) for name, sub in value.items()}
        else:
            out[key] = value if key in _DATA_KEYS else _lower(value)
    kind = out.get("type")
    if kind == "integer" and "minimum" in out and "maximum" in out:
        lo, hi = int(out.pop("minimum")), int(out.pop("maximum"))
        if hi - lo < _MAX_ENUM:
            out["enum"] = list(range(lo, hi + 1))
        else:
            out.update(minimum=lo, maximum=hi)
            # too many values for an enum: cap the digits instead (outlines_core honours maxDigits),
            # so that every number it can write lies inside [lo, hi]; the regex allows a sign, so
            # this needs lo < 0 (as for the query DSL's values, which are within +-10^9)
            digits = len(str(min(hi, -lo))) - (0 if str(min(hi, -lo)).strip("9") == "" else 1)
            if lo < 0 and digits >= 1:
                out["maxDigits"] = digits
    elif kind == "number" and "minimum" in out and "maximum" in out:
        lo_f, hi_f = float(out.pop("minimum")), float(out.pop("maximum"))
        step = (hi_f - lo_f) / _NUMBER_STEPS
        out["enum"] = sorted({round(lo_f + i * step, 6) for i in range(_NUMBER_STEPS + 1)})
    elif kind == "string" and "pattern" in out:
        if not _UNBOUNDED.search(out["pattern"]):  # the pattern bounds the length by itself
            out.pop("minLength", None)
            out.pop("maxLength", None)
    elif kind == "string" and out.get("minLength", 0) >= 1 and "maxLength" in out:
        lo, hi = int(out.pop("minLength")), int(out.pop("maxLength"))
        out["pattern"] = f"^{_NONSPACE_CHAR}{_CHAR}{{{lo - 1},{hi - 1}}}$"
    return out


def xgrammar_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema as xgrammar takes it (in vLLM, and in the transformers backend), accepting no value the
    original rejects.

    vLLM refuses a string with both ``pattern`` and ``minLength``/``maxLength`` under xgrammar
    ("features not supported by xgrammar", xgrammar issue #966). Where an anchored pattern alone
    keeps every match within the lengths (a UUID is exactly 36 characters), the lengths go.

    Known gap: the protocol strips whitespace before checking ``min_length``, so a required string of
    spaces passes the grammar and fails validation (a correction retry follows). Outlines' rewrite moves
    the lengths into a pattern that starts with a visible character; xgrammar 0.2.8 fails to compile that
    pattern with its bounded repetition, and takes a pattern or lengths, not both.
    """
    return _lower_lengths(schema)  # type: ignore[no-any-return]


def _lower_lengths(node: Any, *, names_schemas: bool = False) -> Any:
    if isinstance(node, list):
        return [_lower_lengths(item) for item in node]
    if not isinstance(node, dict):
        return node
    if names_schemas:  # {name: schema} (_SCHEMA_MAPS): every value is a schema, whatever the name
        return {key: _lower_lengths(value) for key, value in node.items()}
    out = {key: value if key in _DATA_KEYS else _lower_lengths(value, names_schemas=key in _SCHEMA_MAPS)
           for key, value in node.items()}
    pattern = out.get("pattern")
    if isinstance(pattern, str) and ("minLength" in out or "maxLength" in out):
        width = _match_width(pattern)
        if width and out.get("minLength", 0) <= width[0] and width[1] <= out.get("maxLength", width[1]):
            out.pop("minLength", None)
            out.pop("maxLength", None)
    return out


def _match_width(pattern: str) -> tuple[int, int] | None:
    """Shortest and longest whole string an anchored pattern (``^...$``, no top-level ``|``) matches."""
    if not (pattern.startswith("^") and pattern.endswith("$")) or "|" in pattern:
        return None
    try:  # the stdlib's own regex parser knows each piece's width
        lo, hi = importlib.import_module("re._parser").parse(pattern).getwidth()
    except Exception:
        return None
    return int(lo), int(hi)


# -- what one call may write ---------------------------------------------------------------------------

_IMPOSSIBLE: dict[str, Any] = {"not": {}}
MAX_REF_CHOICES = 64  # entities one call may name: an enum this long still compiles in milliseconds


def narrow(schema: dict[str, Any], refs: list[tuple[str, str]]) -> dict[str, Any]:
    """The schema one call decodes under: every entity it may name is one it was shown.

    ``refs`` are the (entity_type, id) pairs of the call's input (linked candidates, context cards). An
    entity reference becomes the choice among them, a bare UUID the choice among their ids; a value that
    needs one when there is none cannot be written at all (a step without a known id cannot be a graph
    step), so the grammar offers only what can pass. Every value this schema accepts is accepted by the
    original (references are inlined; the original has no recursion).
    """
    refs = list(dict.fromkeys(refs))[:MAX_REF_CHOICES]
    defs = schema.get("$defs", {})
    choices: dict[str, Any] = {"anyOf": [
        {"type": "object", "additionalProperties": False, "required": ["entity_type", "id"],
         "properties": {"entity_type": {"const": t, "type": "string"}, "id": {"const": i, "type": "string"}}}
        for t, i in refs]} if refs else _IMPOSSIBLE
    ids: dict[str, Any] = {"type": "string", "enum": sorted({i for _, i in refs})} if refs else _IMPOSSIBLE

    def walk(node: Any, name: str = "") -> Any:
        if isinstance(node, list):
            return [walk(item, name) for item in node]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            target = node["$ref"].rsplit("/", 1)[-1]
            if target == "EntityRef":
                return choices
            extra = {k: v for k, v in node.items() if k != "$ref"}
            return walk({**defs[target], **extra}, name)
        if node.get("type") == "string" and node.get("pattern") == UUID_PATTERN:
            return ids
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$defs":
                continue
            if key == "properties" and isinstance(value, dict):
                out[key] = {p: walk(sub, p) for p, sub in value.items()}
            elif key in ("items", "anyOf", "oneOf", "allOf"):
                out[key] = walk(value, name)
            else:
                out[key] = value
        return _prune(out)

    return walk(schema)  # type: ignore[no-any-return]


def _prune(node: dict[str, Any]) -> dict[str, Any]:
    """A node without the branches no value can take; impossible itself when nothing is left."""
    for key in ("anyOf", "oneOf"):
        if key in node:
            kept = [b for b in node[key] if b != _IMPOSSIBLE]
            if not kept:
                return _IMPOSSIBLE
            node = {**node, key: kept}
    props = node.get("properties")
    if isinstance(props, dict):
        required = set(node.get("required", []))
        if any(props[p] == _IMPOSSIBLE for p in required if p in props):
            return _IMPOSSIBLE
        node = {**node, "properties": {p: s for p, s in props.items() if s != _IMPOSSIBLE}}
    if node.get("type") == "array" and node.get("items") == _IMPOSSIBLE:
        if node.get("minItems", 0) > 0:
            return _IMPOSSIBLE
        node = {**node, "items": {"type": "null"}, "maxItems": 0}
    return node


def token_bound(schema: dict[str, Any], *, chars_per_token: float = 2.0) -> int:
    """About the most tokens a value of ``schema`` takes: its longest JSON text over ``chars_per_token``
    (a JSON value of short words averages more than two characters a token), plus the closing token."""
    return int(_max_chars(schema) / chars_per_token) + 8


def _max_chars(node: Any) -> int:
    if not isinstance(node, dict) or node == _IMPOSSIBLE:
        return 0
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max((_max_chars(b) for b in node[key]), default=0)
    if "const" in node:
        return len(json.dumps(node["const"]))
    if "enum" in node:
        return max((len(json.dumps(v)) for v in node["enum"]), default=0)
    kind = node.get("type")
    if kind == "object":
        props = node.get("properties", {})
        return 2 + sum(len(p) + 4 + _max_chars(s) for p, s in props.items())
    if kind == "array":
        return 2 + int(node.get("maxItems", 8)) * (1 + _max_chars(node.get("items", {})))
    if kind == "string":
        return 2 + int(node.get("maxLength", 200))
    if kind in ("integer", "number"):
        return 12
    if kind == "boolean":
        return 5
    return 4


MAX_OPTIONS = 96  # completions a closed schema may have for a backend to score them all


def closed_options(schema: dict[str, Any], limit: int = MAX_OPTIONS) -> list[str] | None:
    """Every text a schema admits, as compact JSON in the order a constrained decoder writes it, when that
    set is small and closed (objects whose properties are all required constants, enums or booleans, or an
    ``anyOf`` of such objects); None otherwise (a free string, an array, a number range, or too many).

    A closed form is a multiple choice: a backend can score each whole completion by its likelihood instead
    of decoding one token at a time (see the transformers backend's ``choice`` setting)."""
    found = _options(schema, limit)
    return None if found is None else [json.dumps(v, ensure_ascii=False, separators=(",", ":")) for v in found]


def _options(node: dict[str, Any], limit: int) -> list[Any] | None:
    if "anyOf" in node:
        out: list[Any] = []
        for variant in node["anyOf"]:
            sub = _options(variant, limit - len(out))
            if sub is None:
                return None
            out += sub
        return out if len(out) <= limit else None
    if "const" in node:
        return [node["const"]]
    if "enum" in node:
        return list(node["enum"]) if len(node["enum"]) <= limit else None
    if node.get("type") == "boolean":
        return [True, False]
    if node.get("type") != "object" or node.get("additionalProperties", True) is not False:
        return None
    props: dict[str, Any] = node.get("properties", {})
    if set(node.get("required", [])) != set(props):
        return None
    combos: list[dict[str, Any]] = [{}]
    for name, sub in props.items():
        values = _options(sub, limit)
        if values is None or len(combos) * len(values) > limit:
            return None
        combos = [{**c, name: v} for c in combos for v in values]
    return combos
