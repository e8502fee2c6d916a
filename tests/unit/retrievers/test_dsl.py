"""Structured queries: validation against the allowlists, compiled SQL, and injection safety."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentic_rag.protocol import FIELDS, OPS_BY_KIND, Condition, StructuredQuery
from agentic_rag.protocol.query import describe
from agentic_rag.protocol.vocabulary import ENTITY_TYPES
from agentic_rag.retrievers.dsl import QueryResult, _summarise, compile_query, like_escape
from tests.support.dsl import cond, q


def render(query: StructuredQuery) -> tuple[str, list[Any]]:
    return compile_query(query)


def errors_of(**kw: Any) -> str:
    with pytest.raises(ValidationError) as exc:
        q(**kw)
    return str(exc.value)


# -- validation ---------------------------------------------------------------------------------------


def test_unknown_field_lists_the_allowed_fields_for_that_entity_type() -> None:
    msg = errors_of(entity_type="anime", where=[cond("budget", "eq", 1)])
    assert "anime has no field 'budget'" in msg
    assert "allowed fields for anime: title, year, end_year, episode_count" in msg and "studio" in msg
    # A field of another entity type is just as unknown here.
    msg = errors_of(entity_type="studio", where=[cond("volumes", "gt", 3)])
    assert "studio has no field 'volumes'" in msg and "allowed fields for studio: name, founded" in msg
    assert "where[0].field" in msg


def test_unknown_field_is_reported_everywhere_a_field_is_named() -> None:
    assert "group_by" in errors_of(entity_type="manga", group_by="studio")
    assert "aggregate.field" in errors_of(entity_type="studio", aggregate={"op": "avg", "field": "episode_count"})
    msg = errors_of(entity_type="person", order_by=[{"field": "year"}])
    assert "order_by[0].field" in msg and "allowed fields for person: name, popularity" in msg


def test_prebuilt_conditions_are_checked_against_the_entity_type_too() -> None:
    with pytest.raises(ValidationError, match="allowed fields for franchise: name, popularity"):
        StructuredQuery(rationale="r", entity_type="franchise", where=[Condition(field="year", op="gt", value=1)])


@pytest.mark.parametrize(("field", "op", "value", "expected"), [
    ("year", "ilike_prefix", "19", "'year' is a numeric field; its ops are eq, ne, lt, lte, gt, gte, in"),
    ("title", "gt", "A", "'title' is a text field"),
    ("genres", "eq", "action", "'genres' is a text_array field; its ops are contains, in"),
    ("title", "contains", "Death", "'title' is a text field"),
    ("studio", "lt", "Madhouse", "'studio' is a link field"),
    ("finished", "gt", True, "'finished' is a bool field; its ops are eq, ne"),
])
def test_op_must_fit_the_field_kind(field: str, op: str, value: Any, expected: str) -> None:
    assert expected in errors_of(entity_type="anime", where=[cond(field, op, value)])


@pytest.mark.parametrize(("c", "expected"), [
    (cond("year", "in", 2010), "op 'in' takes a list"),
    (cond("year", "eq", [2010, 2011]), "a list value needs op 'in'"),
    (cond("year", "eq", "2010"), "'year' takes int/float values, got '2010'"),
    (cond("year", "eq", True), "'year' takes int/float values, got True"),
    (cond("title", "eq", 5), "'title' takes str values, got 5"),
    (cond("title", "in", ["Naruto", 3]), "got 3"),
    (cond("finished", "eq", "yes"), "'finished' takes bool values"),
    (cond("title", "eq", "a\x00b"), "NUL"),
])
def test_values_must_fit_the_field_kind(c: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(entity_type="anime", where=[c])


def test_dates_are_iso() -> None:
    assert "YYYY-MM-DD" in errors_of(entity_type="episode", where=[cond("aired", "gt", "last year")])
    q(entity_type="episode", where=[cond("aired", "gt", "2004-10-05")])


@pytest.mark.parametrize("kw", [
    {"where": [cond("title", "eq", "x" * 201)]},
    {"where": [cond("title", "in", ["x"] * 51)]},
    {"where": [cond("title", "eq", "")]},
    {"where": [cond("year", "in", [])]},
    {"where": [cond("year", "gt", 10**10)]},
    {"where": [cond("popularity", "gt", float("nan"))]},
    {"where": [cond("popularity", "lt", float("inf"))]},
    {"where": [cond("year", "gt", 2000)] * 9},
    {"order_by": [{"field": "year"}] * 4},
    {"rationale": "x" * 301},
    {"limit": 0},
    {"limit": 101},
    {"sql": "SELECT 1"},
    {"where": [{**cond("year", "gt", 2000), "raw": "1=1"}]},
    {"order_by": [{"field": "year", "direction": "sideways"}]},
    {"where": [cond("year", "between", [1, 2])]},
])
def test_bounds_and_closed_vocabularies(kw: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        q(entity_type="anime", **kw)


def test_bounds_accept_the_edges() -> None:
    q(entity_type="anime", limit=1)
    q(entity_type="anime", limit=100, where=[cond("title", "in", ["x" * 200] * 50)] * 8,
      order_by=[{"field": "year"}] * 3, rationale="r" * 300)


@pytest.mark.parametrize(("kw", "expected"), [
    ({"aggregate": {"op": "avg"}}, "needs a numeric field"),
    ({"aggregate": {"op": "sum", "field": "title"}}, "aggregate.field must be numeric"),
    ({"group_by": "title"}, "cannot be grouped by 'title'; groupable: year, end_year, format"),
    ({"aggregate": {"op": "count"}, "order_by": [{"field": "year"}]}, "sort by 'value'"),
    ({"aggregate": {"op": "count"}, "order_by": [{"field": "group_key"}]}, "with group_by"),
    ({"order_by": [{"field": "value"}]}, "cannot sort anime by 'value'"),
    ({"order_by": [{"field": "genres"}]}, "cannot sort anime by 'genres'"),
    ({"order_by": [{"field": "studio"}]}, "cannot sort anime by 'studio'"),
])
def test_aggregates_grouping_and_ordering(kw: dict[str, Any], expected: str) -> None:
    assert expected in errors_of(entity_type="anime", **kw)


# -- compiled SQL -------------------------------------------------------------------------------------


def test_filter_by_studio_and_year() -> None:
    text, params = render(q(entity_type="anime", where=[cond("studio", "eq", "Madhouse"), cond("year", "gt", 2010)]))
    assert text.startswith("SELECT t.id::text AS id, 'anime' AS entity_type, t.title AS name, t.year AS \"year\"")
    assert ("FROM anime t WHERE EXISTS (SELECT 1 FROM anime_studio lj JOIN studio l ON l.id = lj.studio_id "
            "WHERE lj.anime_id = t.id AND lower(l.name) = lower($1)) AND t.year > $2::float8 "
            "ORDER BY t.popularity DESC, t.title, t.id LIMIT $3") in text
    assert params == ["Madhouse", 2010, 20]


def test_not_by_a_studio_is_not_exists() -> None:
    text, _ = render(q(entity_type="anime", where=[cond("studio", "ne", "Madhouse")]))
    assert "WHERE NOT EXISTS (SELECT 1 FROM anime_studio lj" in text and "lower(l.name) = lower($1)" in text


def test_count_per_studio() -> None:
    text, params = render(q(entity_type="anime", group_by="studio", aggregate={"op": "count"}, limit=10))
    assert text == (
        "SELECT g.k AS group_key, count(*) AS value, count(*) AS n, count(*) OVER () AS total FROM anime t "
        "JOIN LATERAL (SELECT DISTINCT l.name AS k FROM anime_studio lj JOIN studio l ON l.id = lj.studio_id "
        "WHERE lj.anime_id = t.id) AS g ON true GROUP BY 1 "
        "ORDER BY value DESC NULLS LAST, group_key ASC NULLS LAST LIMIT $1"
    )
    assert params == [10]
    # group_by alone means count
    assert render(q(entity_type="anime", group_by="studio", limit=10))[0] == text


def test_average_without_groups() -> None:
    text, params = render(q(entity_type="anime", aggregate={"op": "avg", "field": "episode_count"},
                            where=[cond("studio", "eq", "Bones")]))
    assert text.startswith("SELECT round(avg(t.episode_count)::numeric, 2) AS value, count(*) AS n FROM anime t WHERE")
    assert "LIMIT" not in text and params == ["Bones"]


def test_group_by_array_unnests_and_order_keys_are_output_columns() -> None:
    text, _ = render(q(entity_type="manga", group_by="genres", aggregate={"op": "max", "field": "volumes"},
                       order_by=[{"field": "group_key", "direction": "asc"}]))
    assert "FROM manga t CROSS JOIN LATERAL unnest(t.genres) AS g(k)" in text
    assert "max(t.volumes) AS value" in text
    assert 'ORDER BY "group_key" ASC NULLS LAST, group_key ASC NULLS LAST' in text


def test_array_and_text_ops() -> None:
    text, params = render(q(entity_type="anime", where=[
        cond("genres", "contains", "Mecha"), cond("genres", "contains", ["action", "drama"]),
        cond("genres", "in", ["sports", "mecha"]), cond("title", "in", ["Naruto", "Bleach"]),
    ]))
    assert "lower($1) = ANY(t.genres)" in text
    assert "t.genres @> (SELECT array_agg(lower(v)) FROM unnest($2::text[]) AS v)" in text
    assert "t.genres && (SELECT array_agg(lower(v)) FROM unnest($3::text[]) AS v)" in text
    assert "lower(t.title) IN (SELECT lower(v) FROM unnest($4::text[]) AS v)" in text
    assert params[1] == ["action", "drama"]


def test_like_patterns_escape_metacharacters() -> None:
    assert like_escape("50%_off\\") == "50\\%\\_off\\\\"
    text, params = render(q(entity_type="anime", where=[cond("title", "ilike_prefix", "100%_"),
                                                        cond("title", "ilike_substring", "a\\b")]))
    assert "t.title ILIKE $1 ESCAPE '\\'" in text
    assert params[0] == "100\\%\\_%" and params[1] == "%a\\\\b%"


def test_episode_rows_join_their_anime() -> None:
    text, params = render(q(entity_type="episode", where=[cond("anime", "eq", "Bleach"),
                                                          cond("aired", "lt", "2005-01-01")],
                       order_by=[{"field": "number", "direction": "desc"}]))
    assert "FROM episode t JOIN anime a ON a.id = t.anime_id WHERE lower(a.title) = lower($1)" in text
    assert "t.aired < $2::date" in text and "ORDER BY t.number DESC NULLS LAST, a.title, t.number" in text
    assert params[1] == dt.date(2005, 1, 1)  # a date goes in as one


def test_mixed_numeric_lists_bind_one_element_type() -> None:
    _, params = render(q(entity_type="anime", where=[cond("year", "in", [2006, 2011.5])]))
    assert params[0] == [2006.0, 2011.5] and all(isinstance(v, float) for v in params[0])


def test_describe() -> None:
    assert describe(q(entity_type="anime", group_by="studio", where=[cond("year", "gt", 2010)])) == (
        "count(*) of anime per studio where year gt 2010")


def test_summaries_stay_within_their_bound() -> None:
    big = q(entity_type="anime", where=[cond("title", "in", ["x" * 200] * 50)] * 8, limit=100)
    assert len(describe(big)) <= 2000
    rows = [{"id": f"00000000-0000-0000-0000-{i:012d}", "entity_type": "anime", "name": "y" * 200,
             "genres": ["z" * 40] * 8, "year": 2000} for i in range(100)]
    summary = _summarise(big, rows, 500)
    assert len(summary) <= 8000 and summary.endswith("more line(s) in the structured result.")
    QueryResult(summary=summary, rows=rows, count=100, total=500, params_bound=9)
    assert _summarise(big, [], 0).startswith("No anime matched: anime where title in ['xxx")


# -- JSON schema ---------------------------------------------------------------------------------------


def test_json_schema_is_bounded_everywhere() -> None:
    schema = StructuredQuery.model_json_schema()
    seen = {"string": 0, "array": 0, "number": 0, "object": 0}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")
            return
        if not isinstance(node, dict):
            return
        kind = node.get("type")
        if kind == "string" and "enum" not in node and "const" not in node:
            seen["string"] += 1
            assert "maxLength" in node, f"unbounded string at {path}"
        if kind == "array":
            seen["array"] += 1
            assert "maxItems" in node, f"unbounded array at {path}"
        if kind in ("integer", "number"):
            seen["number"] += 1
            assert "minimum" in node and "maximum" in node, f"unbounded number at {path}"
        if kind == "object" and "properties" in node:
            seen["object"] += 1
            assert node.get("additionalProperties") is False, f"open object at {path}"
        for key, value in node.items():
            walk(value, f"{path}.{key}")

    walk(schema, "$")
    assert all(seen.values()), seen  # the walk really visited each kind of node


def test_json_schema_accepts_valid_and_rejects_unknown_vocabulary() -> None:
    schema = StructuredQuery.model_json_schema()
    good = {"rationale": "r", "entity_type": "anime", "where": [cond("studio", "eq", "Madhouse")],
            "aggregate": {"op": "count"}, "group_by": "year", "order_by": [{"field": "value", "direction": "desc"}]}
    jsonschema.validate(good, schema)
    q(**{k: v for k, v in good.items() if k != "rationale"})
    for bad in ({**good, "entity_type": "song"}, {**good, "where": [cond("studio", "regex", ".*")]},
                {**good, "where": [cond("budget", "eq", 1)]}, {**good, "extra": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    assert "anime: title, year" in json.dumps(schema)  # field docs per entity type reach the model


# -- property: values never reach the SQL text -----------------------------------------------------------

INJECTIONS = [
    "'; DROP TABLE anime; --", "\" OR 1=1 --", "' OR ''='", "Robert'); DROP TABLE students;--",
    "); SELECT pg_sleep(10); --", "%(p0)s", "%(limit)s", "{}", "{x}", "$1", ":p0", "\\'; --", "\\\\", "%%", "__%",
    "1; DELETE FROM edge", "*/ SELECT 1 /*", "E'\\x27'", "$$; DROP TABLE anime; $$", "Hunter x Hunter",
    "ñandú 漢字 ☃ \U0001f600", "lower(", "t.title", "anime",
]
# Injection-looking values that are also pieces of the fixed SQL text, so they do occur in it.
ECHOES = {"$1", "lower(", "t.title", "anime"}
texts = st.one_of(
    st.sampled_from(INJECTIONS),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=200),
)
numbers = st.one_of(st.integers(-(10**9), 10**9), st.floats(-1e9, 1e9, allow_nan=False, allow_infinity=False))
SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "numeric": numbers, "text": texts, "link": texts, "text_array": texts, "bool": st.booleans(),
    "date": st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31)).map(dt.date.isoformat),
}


@st.composite
def conditions(draw: st.DrawFn, entity_type: str) -> dict[str, Any]:
    field = draw(st.sampled_from(sorted(FIELDS[entity_type])))  # type: ignore[index]
    kind = FIELDS[entity_type][field].kind  # type: ignore[index]
    op = draw(st.sampled_from(OPS_BY_KIND[kind]))
    many = op == "in" or (op == "contains" and draw(st.booleans()))
    value = draw(st.lists(SCALARS[kind], min_size=1, max_size=50) if many else SCALARS[kind])
    return cond(field, op, value)


@st.composite
def queries(draw: st.DrawFn) -> dict[str, Any]:
    entity_type = draw(st.sampled_from(ENTITY_TYPES))
    cols = FIELDS[entity_type]
    numeric = [f for f, c in cols.items() if c.kind == "numeric"]
    groupable = [f for f, c in cols.items() if c.group]
    data: dict[str, Any] = {
        "rationale": draw(st.text(max_size=300)), "entity_type": entity_type,
        "where": draw(st.lists(conditions(entity_type), max_size=8)), "limit": draw(st.integers(1, 100)),
    }
    mode = draw(st.sampled_from(["rows", "aggregate", "group"] if groupable else ["rows", "aggregate"]))
    sort_fields = [f for f, c in cols.items() if c.kind not in ("link", "text_array")]
    if mode != "rows":
        op = draw(st.sampled_from(["count", "avg", "min", "max", "sum"]))
        field = draw(st.sampled_from(numeric) if op != "count" else st.none() | st.sampled_from(numeric))
        data["aggregate"] = {"op": op, "field": field}
        sort_fields = ["value"]
    if mode == "group":
        data["group_by"] = draw(st.sampled_from(groupable))
        if draw(st.booleans()):
            del data["aggregate"]
        sort_fields = ["value", "group_key"]
    data["order_by"] = draw(st.lists(st.fixed_dictionaries(
        {"field": st.sampled_from(sort_fields), "direction": st.sampled_from(["asc", "desc"])}), max_size=3))
    return data


def scrub(value: Any) -> Any:
    """The same value shape with every value replaced by a fixed filler of its type."""
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return 0
    return "2000-01-01" if re.fullmatch(r"\d{4}-\d\d-\d\d", value) else "zzz"


def atoms(value: Any) -> list[Any]:
    return [a for v in value for a in atoms(v)] if isinstance(value, list) else [value]


@settings(max_examples=400, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
@given(queries())
def test_values_are_always_bound_never_rendered(data: dict[str, Any]) -> None:
    query = StructuredQuery.model_validate(data)  # the strategy only builds valid queries
    text, params = render(query)
    # Placeholders and params match one to one, numbered in order.
    assert sorted({int(n) for n in re.findall(r"\$(\d+)", text)}) == list(range(1, len(params) + 1))
    # The SQL text does not depend on any value: only on the query's shape.
    shape = {**data, "where": [{**c, "value": scrub(c["value"])} for c in data["where"]]}
    fixed, _ = render(StructuredQuery.model_validate(shape))
    assert text == fixed
    bound_text = [a for a in atoms(params) if isinstance(a, str)]
    bound_other = [a for a in atoms(params) if not isinstance(a, str)]
    for i, c in enumerate(query.where):
        for v in atoms(c.value):
            if isinstance(v, str):
                # No value reaches the SQL, unless it is a piece of the fixed text (a keyword, a column).
                assert len(v) < 3 or v not in text or v in fixed
                if v in INJECTIONS and v not in ECHOES:
                    assert v not in text
                if c.op in ("ilike_prefix", "ilike_substring"):
                    assert like_escape(v) in params[i]
                elif FIELDS[query.entity_type][c.field].kind == "date":
                    assert dt.date.fromisoformat(v) in bound_other  # bound as a date
                else:
                    assert v in bound_text
            else:
                assert v in bound_other
