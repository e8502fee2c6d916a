"""Structured queries as data: the safe form of text-to-SQL (the contract; SQL lives in the compiler).

A model fills a :class:`StructuredQuery` whose every field name and operator comes from the closed
vocabulary below; ``agentic_rag.retrievers.dsl`` compiles it to SQL from fixed fragments with every
value bound as a parameter. Validation here is complete: a query that validates always compiles.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, StringConstraints, model_validator

from agentic_rag.protocol.base import ProtocolModel, Rationale
from agentic_rag.protocol.vocabulary import ENTITY_TYPES, EntityType

Kind = Literal["numeric", "text", "text_array", "bool", "date", "link"]
Op = Literal["eq", "ne", "lt", "lte", "gt", "gte", "in", "contains", "ilike_prefix", "ilike_substring"]
AggOp = Literal["count", "avg", "min", "max", "sum"]
FieldName = Literal[
    "title", "year", "end_year", "episode_count", "format", "status", "genres", "popularity", "finished",
    "studio", "staff", "franchise", "character", "volumes", "magazine", "author", "name", "anime", "manga",
    "number", "season", "aired", "founded",
]
OrderField = FieldName | Literal["value", "group_key"]




@dataclass(frozen=True, slots=True)
class FieldSpec:
    """What a query may do with a field: its kind (which ops apply) and whether it can be grouped by."""

    kind: Kind
    group: bool = False


def _f(kind: Kind, group: bool = False) -> FieldSpec:
    return FieldSpec(kind, group)


_YEARS = {"year": _f("numeric", True), "end_year": _f("numeric", True)}
_WORK = {"genres": _f("text_array", True), "popularity": _f("numeric"), "finished": _f("bool", True),
         "franchise": _f("link", True)}
# The vocabulary: entity type -> queryable field -> spec. "link" fields match a related entity's name.
FIELDS: dict[EntityType, dict[str, FieldSpec]] = {
    "anime": {"title": _f("text"), **_YEARS, "episode_count": _f("numeric"), "format": _f("text", True),
              "status": _f("text", True), **_WORK, "studio": _f("link", True), "staff": _f("link", True),
              "character": _f("link", True)},
    "manga": {"title": _f("text"), **_YEARS, "volumes": _f("numeric"), "status": _f("text", True),
              "magazine": _f("text", True), **_WORK, "author": _f("link", True), "character": _f("link", True)},
    "character": {"name": _f("text"), "popularity": _f("numeric"), "anime": _f("link", True),
                  "manga": _f("link", True)},
    "episode": {"number": _f("numeric"), "title": _f("text"), "season": _f("numeric", True), "aired": _f("date"),
                "anime": _f("text", True)},
    "studio": {"name": _f("text"), "founded": _f("numeric", True), "popularity": _f("numeric"),
               "anime": _f("link", True)},
    "person": {"name": _f("text"), "popularity": _f("numeric"), "anime": _f("link", True),
               "manga": _f("link", True)},
    "franchise": {"name": _f("text"), "popularity": _f("numeric")},
}
assert set(FIELDS) == set(ENTITY_TYPES)
# The field that holds a record's name, per entity type that has one (an episode is named by its anime and number)
NAME_FIELD: dict[EntityType, str] = {"anime": "title", "manga": "title", "character": "name", "studio": "name",
                                     "person": "name", "franchise": "name"}
assert all(FIELDS[t][f].kind == "text" for t, f in NAME_FIELD.items())
assert {f for cols in FIELDS.values() for f in cols} == set(get_args(FieldName))

OPS_BY_KIND: dict[Kind, tuple[Op, ...]] = {
    "numeric": ("eq", "ne", "lt", "lte", "gt", "gte", "in"),
    "date": ("eq", "ne", "lt", "lte", "gt", "gte"),
    "text": ("eq", "ne", "in", "ilike_prefix", "ilike_substring"),
    "link": ("eq", "ne", "in", "ilike_prefix", "ilike_substring"),
    "text_array": ("contains", "in"),
    "bool": ("eq", "ne"),
}
Scalar = (
    bool | Annotated[int, Field(ge=-(10**9), le=10**9)]
    | Annotated[float, Field(ge=-1e9, le=1e9, allow_inf_nan=False)]
    | Annotated[str, StringConstraints(min_length=1, max_length=200)]
)
Value = Scalar | Annotated[list[Scalar], Field(min_length=1, max_length=50)]
_FIELDS_DOC = "; ".join(f"{t}: {', '.join(cols)}" for t, cols in FIELDS.items())


class Condition(ProtocolModel):
    """One filter; all conditions of a query are ANDed."""

    field: FieldName = Field(description=f"Field to filter on; it must belong to entity_type. {_FIELDS_DOC}.")
    op: Op = Field(description=(
        "eq/ne: equal/not equal (text is case-insensitive). lt/lte/gt/gte: numeric or date (YYYY-MM-DD) "
        "fields. in: value is a list; matches any (on genres: has any). contains: genres has the value "
        "(a list: has all). ilike_prefix / ilike_substring: text starts with / contains the value. "
        "studio, staff, author, franchise, character, anime, manga match by related name or title."
    ))
    value: Value = Field(description="The value: a number, text, true/false, or a list for op=in.")


class Aggregate(ProtocolModel):
    """Compute one number over the matching rows (per group when group_by is set)."""

    op: AggOp = Field(description="count rows, or avg/min/max/sum of a numeric field.")
    field: FieldName | None = Field(None, description="Numeric field to aggregate; omit for count.")


class OrderKey(ProtocolModel):
    """One sort key."""

    field: OrderField = Field(description="A field of entity_type; for aggregate queries 'value' or 'group_key'.")
    direction: Literal["asc", "desc"] = Field("asc", description="Sort direction.")


class StructuredQuery(ProtocolModel):
    """A catalog query as data: filter, count, average or rank entities of one type. No SQL."""

    rationale: Rationale = Field(description="Short operational reason for this query (for logs).")
    entity_type: EntityType = Field(description="The kind of entity to query.")
    where: list[Condition] = Field(default_factory=list, max_length=8, description="Conditions, ANDed.")
    aggregate: Aggregate | None = Field(None, description="Return an aggregate instead of entity rows.")
    group_by: FieldName | None = Field(
        None, description="Aggregate per value of this field (counts rows when aggregate is omitted).")
    order_by: list[OrderKey] = Field(default_factory=list, max_length=3, description="Sort keys, in order.")
    limit: int = Field(20, ge=1, le=100, description="Most rows (or groups) returned.")

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, data: Any) -> Any:
        # Runs on raw input so that a field unknown to every entity type is still reported with the
        # fields allowed for *this* entity type, rather than as a bare literal mismatch.
        if not isinstance(data, dict) or data.get("entity_type") not in FIELDS:
            return data
        named: list[tuple[str, Any, tuple[str, ...]]] = [("group_by", data.get("group_by"), ())]
        orderable: tuple[str, ...] = ("value", "group_key")
        for key, extra in (("where", ()), ("order_by", orderable)):
            items = data.get(key)
            for i, item in enumerate(items if isinstance(items, list) else []):
                if isinstance(item, dict):
                    named.append((f"{key}[{i}].field", item.get("field"), extra))
        if isinstance(data.get("aggregate"), dict):
            named.append(("aggregate.field", data["aggregate"].get("field"), ()))
        for where, name, extra in named:
            if isinstance(name, str) and name not in FIELDS[data["entity_type"]] and name not in extra:
                raise ValueError(_unknown(data["entity_type"], name, where, extra))
        return data

    @model_validator(mode="after")
    def _fits_entity(self) -> StructuredQuery:
        cols = FIELDS[self.entity_type]
        for i, c in enumerate(self.where):
            _check_condition(self.entity_type, i, c)
        agg, grouped = self.aggregate, self.aggregate is not None or self.group_by is not None
        if agg is not None:
            if agg.field is None and agg.op != "count":
                raise ValueError(f"aggregate op {agg.op!r} needs a numeric field: {_kinds(self.entity_type)}")
            if agg.field is not None and _col(self.entity_type, agg.field, "aggregate.field").kind != "numeric":
                raise ValueError(f"aggregate.field must be numeric; numeric fields of {self.entity_type}: "
                                 f"{_kinds(self.entity_type)}")
        if self.group_by is not None and not _col(self.entity_type, self.group_by, "group_by").group:
            allowed = ", ".join(f for f, c in cols.items() if c.group)
            raise ValueError(f"{self.entity_type} cannot be grouped by {self.group_by!r}; groupable: {allowed}")
        for i, k in enumerate(self.order_by):
            if grouped:
                if k.field not in ("value", "group_key") or (k.field == "group_key" and self.group_by is None):
                    raise ValueError(f"order_by[{i}]: aggregate queries sort by 'value' or (with group_by) "
                                     f"'group_key', not {k.field!r}")
            elif k.field in ("value", "group_key") or _col(self.entity_type, k.field, "order_by").kind in (
                    "link", "text_array"):
                sortable = ", ".join(f for f, c in cols.items() if c.kind not in ("link", "text_array"))
                raise ValueError(f"order_by[{i}]: cannot sort {self.entity_type} by {k.field!r}; "
                                 f"sortable: {sortable}")
        return self


def _unknown(entity_type: str, name: str, where: str, extra: tuple[str, ...] = ()) -> str:
    allowed = ", ".join([*FIELDS[entity_type], *extra])  # type: ignore[index]
    return f"{where}: {entity_type} has no field {name!r}; allowed fields for {entity_type}: {allowed}"


def _col(entity_type: EntityType, name: str, where: str) -> FieldSpec:
    col = FIELDS[entity_type].get(name)
    if col is None:
        raise ValueError(_unknown(entity_type, name, where))
    return col


def _kinds(entity_type: EntityType) -> str:
    return ", ".join(f for f, c in FIELDS[entity_type].items() if c.kind == "numeric")


_SCALAR_TYPES: dict[Kind, tuple[type, ...]] = {
    "numeric": (int, float), "text": (str,), "link": (str,), "text_array": (str,), "date": (str,), "bool": (bool,),
}


def _check_condition(entity_type: EntityType, i: int, c: Condition) -> None:
    col, at = _col(entity_type, c.field, f"where[{i}].field"), f"where[{i}] ({c.field} {c.op})"
    if c.op not in OPS_BY_KIND[col.kind]:
        raise ValueError(f"{at}: {c.field!r} is a {col.kind} field; its ops are {', '.join(OPS_BY_KIND[col.kind])}")
    many = isinstance(c.value, list)
    if c.op == "in" and not many:
        raise ValueError(f"{at}: op 'in' takes a list of values")
    if many and c.op not in ("in", "contains"):
        raise ValueError(f"{at}: a list value needs op 'in'")
    values = c.value if isinstance(c.value, list) else [c.value]
    want = _SCALAR_TYPES[col.kind]
    for v in values:
        if not isinstance(v, want) or (isinstance(v, bool) and bool not in want):
            raise ValueError(f"{at}: {c.field!r} takes {'/'.join(t.__name__ for t in want)} values, got {v!r}")
        if isinstance(v, str) and "\x00" in v:
            raise ValueError(f"{at}: text values cannot contain NUL characters")
        if col.kind == "date":
            try:
                dt.date.fromisoformat(str(v))
            except ValueError:
                raise ValueError(f"{at}: dates are written YYYY-MM-DD, got {v!r}") from None


VALUE_SHOWN = 60  # characters of a string value a described query shows
DESCRIBED_MAX = 2000  # characters of a query described in words (the callers cut it again to their own field)


def fmt_value(v: Any) -> str:
    """A condition's value as a short readable literal (a long list or string is cut)."""
    if isinstance(v, list):
        more = f", ... {len(v) - 5} more" if len(v) > 5 else ""
        return "[" + ", ".join(fmt_value(x) for x in v[:5]) + more + "]"
    if isinstance(v, str):
        return repr(v if len(v) <= VALUE_SHOWN else v[: VALUE_SHOWN - 3] + "...")
    return str(v)


def describe(q: StructuredQuery) -> str:
    """The query in words, for summaries and logs."""
    out: str = q.entity_type
    if q.aggregate is not None or q.group_by is not None:
        agg = q.aggregate or Aggregate(op="count")
        out = f"{agg.op}({agg.field or '*'}) of {q.entity_type}"
        out += f" per {q.group_by}" if q.group_by else ""
    if q.where:
        out += " where " + " and ".join(f"{c.field} {c.op} {fmt_value(c.value)}" for c in q.where)
    return out if len(out) <= DESCRIBED_MAX else out[: DESCRIBED_MAX - 3] + "..."
