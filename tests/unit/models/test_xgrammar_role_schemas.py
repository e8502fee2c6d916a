"""Every role schema, as the vLLM backend sends it, compiles under xgrammar and holds the contract's bounds.

xgrammar is vLLM's default structured-outputs backend and a CPU library, so the grammar vLLM would build on a GPU is
built here, with the options vLLM passes when ``disable_any_whitespace`` is set (compact separators, no free
whitespace). For each role: a valid output (compact, as pydantic writes it) is accepted, and each way a model could
break the contract (an extra key, a malformed id, a number out of range, a step whose action and intent disagree)
is refused by the grammar *and* by the pydantic model, so decoding under it never yields what the loop would reject.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import xgrammar as xgr
from pydantic import BaseModel, ValidationError
from xgrammar.testing import _is_grammar_accept_string

from agentic_rag.models.base import schema_for
from agentic_rag.models.schemas import xgrammar_schema
from agentic_rag.protocol import (
    DocumentGrade,
    DraftAnswer,
    EntityRef,
    GradeReport,
    GraphIntent,
    NextStep,
    QueryRewrite,
    SearchFilters,
    SearchIntent,
    SufficiencyReport,
)
from agentic_rag.protocol.roles import ROLES

ID = "2f1c8a8e-6b4e-4c1e-9d55-0a3f3c2b7e11"
REF = EntityRef(entity_type="character", id=ID)
VALID: dict[str, list[BaseModel]] = {
    "QueryRewrite": [QueryRewrite(rewritten_query="Which anime is Monkey D. Luffy in?", needs_external_context=True,
                                  retrieval_mode="hybrid", mentions=["Luffy"], rationale="a character named")],
    "NextStep": [
        NextStep(action="qdrant_search", rationale="find him", search_intent=SearchIntent(
            rationale="by name", entity_type="character", query="Luffy", filters=SearchFilters(id=[ID]))),
        NextStep(action="pg_graph", rationale="his anime", graph_intent=GraphIntent(
            rationale="neighbors", query_type="k_hop", start=REF, max_hops=2)),
        NextStep(action="finish", rationale="enough"),
    ],
    "DraftAnswer": [DraftAnswer(answer="Luffy is in One Piece.", source_entities=[REF], result_entities=[REF],
                                citations=["One Piece"], confidence=0.5)],
    "GradeReport": [GradeReport(grades=[DocumentGrade(index=0, relevant=True),
                                        DocumentGrade(index=7, relevant=False)])],
    "SufficiencyReport": [SufficiencyReport(sufficient=False, rationale="no anime yet", missing=["the anime"])],
}
# (role, a valid output's JSON -> an output that breaks the contract)
BROKEN: list[tuple[str, str, Any]] = [
    *[(name, "an extra key", lambda s: '{"note":"x",' + s[1:]) for name in VALID],
    ("NextStep", "a malformed id", lambda s: s.replace(ID, ID[:-1] + "g")),
    ("NextStep", "an id one digit short", lambda s: s.replace(ID, ID[:-1])),
    ("DraftAnswer", "a malformed id", lambda s: s.replace(ID, "x" + ID[1:])),
    ("GradeReport", "an index past its maximum", lambda s: s.replace('"index":7', '"index":200')),
    ("GradeReport", "a negative index", lambda s: s.replace('"index":7', '"index":-1')),
    ("NextStep", "hops past the cap", lambda s: s.replace('"max_hops":2', '"max_hops":7')),
    ("NextStep", "zero hops", lambda s: s.replace('"max_hops":2', '"max_hops":0')),
    ("NextStep", "a search step with the graph action",
     lambda s: s.replace('"action":"qdrant_search"', '"action":"pg_graph"')),
    ("NextStep", "a finish that carries an intent", lambda s: s.replace('"action":"pg_graph"', '"action":"finish"')),
    ("NextStep", "an action outside the allowlist", lambda s: s.replace('"action":"finish"', '"action":"sql"')),
    ("QueryRewrite", "a retrieval mode outside the allowlist",
     lambda s: s.replace('"retrieval_mode":"hybrid"', '"retrieval_mode":"web"')),
    ("QueryRewrite", "an empty query", lambda s: re.sub(r'"rewritten_query":"[^"]*"', '"rewritten_query":""', s)),
    ("SufficiencyReport", "a rationale over its length",
     lambda s: s.replace('"rationale":"no anime yet"', '"rationale":"' + "x" * 301 + '"')),
]


@pytest.fixture(scope="module")
def grammars() -> dict[str, xgr.Grammar]:
    # vLLM's xgrammar backend, with disable_any_whitespace (what VLLMBackend configures for xgrammar)
    return {t.__name__: xgr.Grammar.from_json_schema(json.dumps(xgrammar_schema(schema_for(t))), any_whitespace=False,
                                                     separators=(",", ":"), strict_mode=True)
            for t in ROLES}


def test_every_role_is_covered() -> None:
    assert set(VALID) == {t.__name__ for t in ROLES}


def _strings(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        own = [node] if node.get("type") == "string" else []
        return own + [s for v in node.values() for s in _strings(v)]
    return [s for v in node for s in _strings(v)] if isinstance(node, list) else []


@pytest.mark.parametrize("output_type", list(ROLES), ids=lambda t: t.__name__)
def test_no_string_has_both_a_pattern_and_a_length_bound(output_type: type[BaseModel]) -> None:
    # vLLM refuses such a schema under xgrammar (its has_xgrammar_unsupported_json_features); the rewrite drops the
    # length bound where the pattern fixes the length anyway
    for node in _strings(xgrammar_schema(schema_for(output_type))):
        assert not ({"pattern", "format"} & node.keys() and {"minLength", "maxLength"} & node.keys()), node


def _ordered(value: Any, schema: dict[str, Any], defs: dict[str, Any]) -> Any:
    """``value`` with every object's keys in the order its schema lists them: xgrammar (as vLLM runs it) holds a
    model to that order, which pydantic's own dump of a rewritten schema (NextStep's variants) does not follow."""
    if "$ref" in schema:
        return _ordered(value, defs[schema["$ref"].rsplit("/", 1)[1]], defs)
    for branch in schema.get("anyOf", []):
        props = branch.get("properties", {})
        if isinstance(value, dict) and set(value) <= set(props) and all(
                value.get(k) == p["const"] for k, p in props.items() if "const" in p):
            return _ordered(value, branch, defs)
        if not isinstance(value, dict) and branch.get("type") != "object" and "$ref" not in branch:
            return _ordered(value, branch, defs) if "items" in branch else value
    if isinstance(value, dict):
        props = schema.get("properties", {})
        return {k: _ordered(value[k], props[k], defs) for k in props if k in value}
    if isinstance(value, list) and "items" in schema:
        return [_ordered(v, schema["items"], defs) for v in value]
    return value


def text_of(output: BaseModel) -> str:
    """``output`` as compact JSON in its schema's key order: what a model decoding under the grammar writes."""
    schema = xgrammar_schema(schema_for(type(output)))
    ordered = _ordered(output.model_dump(mode="json"), schema, schema.get("$defs", {}))
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)


@pytest.mark.parametrize("name", list(VALID))
def test_valid_outputs_are_accepted(grammars: dict[str, xgr.Grammar], name: str) -> None:
    output_type = next(t for t in ROLES if t.__name__ == name)
    for output in VALID[name]:
        text = text_of(output)
        assert output_type.model_validate_json(text) == output
        assert _is_grammar_accept_string(grammars[name], text), text


@pytest.mark.parametrize(("name", "what", "brake"), BROKEN, ids=[f"{n}: {w}" for n, w, _ in BROKEN])
def test_a_broken_output_is_refused_by_the_grammar_and_the_contract(grammars: dict[str, xgr.Grammar], name: str,
                                                                    what: str, brake: Any) -> None:
    output_type = next(t for t in ROLES if t.__name__ == name)
    broken = [b for b in (brake(text_of(o)) for o in VALID[name]) if b != o_text(name, b)]
    assert broken, f"{what}: the mutation changed no valid output of {name}"
    for text in broken:
        with pytest.raises(ValidationError):
            output_type.model_validate_json(text)
        assert not _is_grammar_accept_string(grammars[name], text), f"{what}: {text}"


def o_text(name: str, text: str) -> str | None:
    """``text`` if it is one of ``name``'s valid outputs unchanged (the mutation did not apply to it)."""
    return text if text in {text_of(o) for o in VALID[name]} else None
