"""The contracts of the loop's stages: steps the planner picks, results, drafts, judgments, responses.

Every model here is what a stage emits or consumes: the planner and validator models are
constrained to these JSON schemas, so the field descriptions are written for them. Every string
and list has a ``max_length`` so that constrained decoding always terminates, every number has
bounds, and every vocabulary is a closed ``Literal``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    Field,
    GetJsonSchemaHandler,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from agentic_rag.protocol.base import (
    AnswerText,
    Confidence,
    EntityRef,
    Genre,
    ProtocolModel,
    QueryText,
    Rationale,
    ShortText,
    SummaryText,
    Uuid,
    Year,
)
from agentic_rag.protocol.query import StructuredQuery
from agentic_rag.protocol.vocabulary import AnimeFormat, EdgeTypeName, EntityType

# An image_query's bound: about 10 MiB of base64 (settings.image_max_bytes bounds the decoded image below it).
IMAGE_QUERY_MAX = 14 * 2**20

# agentic: the loop; linear: retrieve once, answer once (the baseline the loop is evaluated against)
Mode = Literal["agentic", "linear"]
RetrievalMode = Literal["vector", "graph", "hybrid", "none"]
StepAction = Literal["qdrant_search", "pg_graph", "pg_query", "similar", "finish"]
GraphQueryType = Literal["neighbors", "k_hop", "path", "compare"]
ResponseStatus = Literal["answered", "not_found", "best_effort", "needs_clarification", "blocked"]
TerminationReason = Literal[
    "sufficient", "fast_path", "max_turns", "deadline", "zero_results", "loop_detected", "blocked",
    "no_retrieval_needed", "linear", "failed_steps", "clarification",
]


class SearchFilters(ProtocolModel):
    """Structured payload filters for a Qdrant search. All optional, ANDed."""

    id: list[Uuid] = Field(
        default_factory=list, max_length=50,
        description="Fetch exactly these entities by UUID (no semantic search). Use ids from context.",
    )
    year_min: Year | None = Field(None, description="Only entities from this year or later.")
    year_max: Year | None = Field(None, description="Only entities from this year or earlier.")
    format: list[AnimeFormat] = Field(
        default_factory=list, max_length=5, description="Anime formats to keep (tv, movie, ova, ona, special)."
    )
    genres: list[Genre] = Field(
        default_factory=list, max_length=8, description="Keep entities having any of these genres."
    )
    anime_id: Uuid | None = Field(
        None, description="Keep only children of this anime (its episodes or characters)."
    )
    franchise_id: Uuid | None = Field(None, description="Keep only works of this franchise.")

    @model_validator(mode="after")
    def _year_range(self) -> SearchFilters:
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise ValueError(f"year_min ({self.year_min}) is after year_max ({self.year_max})")
        return self


# Which collections carry the payload field each filter reads.
FILTER_APPLIES_TO: dict[str, tuple[str, ...]] = {
    "year_min": ("anime", "manga", "episode", "studio"),
    "year_max": ("anime", "manga", "episode", "studio"),
    "format": ("anime",),
    "genres": ("anime", "manga"),
    "anime_id": ("episode", "character"),
    "franchise_id": ("anime", "manga"),
}


class SearchIntent(ProtocolModel):
    """One semantic lookup in one Qdrant collection, or a fetch by id when filters.id is set."""

    rationale: Rationale = Field(description="Short operational reason for this step (for logs), no reasoning.")
    entity_type: EntityType = Field(description="The collection to search: one entity type.")
    query: QueryText | None = Field(
        None, description="Text to search for semantically. May be omitted only when filters.id is set."
    )
    image_query: str | None = Field(
        None, min_length=1, max_length=IMAGE_QUERY_MAX,
        description="URL or base64 of an image. If provided, triggers visual similarity search (hybrid with the "
                    "text if query is also present, or image-only).")
    filters: SearchFilters = Field(default_factory=SearchFilters, description="Structured constraints.")
    limit: int = Field(10, ge=1, le=50, description="How many results to return.")
    match: Literal["hybrid", "semantic"] = Field(
        "hybrid", description="hybrid: catalog names and meaning fused (for a name); semantic: by meaning and by "
                              "the words of each entry's synopsis, never by name (for a description or a whole "
                              "question, which is never a name).")
    quote: bool = Field(
        False, description="With filters.id and a query: each record also carries the sentences of its description "
                           "nearest in meaning to the query (what an explanation quotes).")

    @model_validator(mode="after")
    def _query_or_ids(self) -> SearchIntent:
        if self.query is None and self.image_query is None and not self.filters.id:
            raise ValueError("a search needs a query, or filters.id to fetch entities by id (or an image_query to "
                             "search by picture)")
        for name, types in FILTER_APPLIES_TO.items():
            if getattr(self.filters, name) not in (None, []) and self.entity_type not in types:
                raise ValueError(f"filters.{name} applies to {' and '.join(types)} searches, "
                                 f"not {self.entity_type}")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # "a query, or filters.id" as schema: a model always writes a query (fetching by id it still
        # says what it looks for; code may omit it). Which filters apply to which entity type stays a
        # validator rule: one schema variant per type made regex-compiled decoders (outlines) several
        # times slower to prepare, for a mistake the correction retry fixes. A model never writes an image:
        # the image comes with the request, so image_query is null in what a model may emit (a string of
        # megabytes would also be a regex no decoder compiles).
        flat = dict(handler.resolve_ref_schema(handler(core_schema)))
        props = dict(flat["properties"])
        query = next(s for s in props["query"]["anyOf"] if s.get("type") != "null")
        props["query"] = {**query, "description": props["query"]["description"]}
        props["image_query"] = {"type": "null", "description": "Always null: an image comes with the request."}
        return {**flat, "properties": props, "required": [*flat.get("required", []), "query"]}


class GraphFilters(ProtocolModel):
    """Optional constraints on the nodes a graph primitive returns."""

    year_min: Year | None = Field(None, description="Drop works before this year.")
    year_max: Year | None = Field(None, description="Drop works after this year.")
    node_types: list[EntityType] = Field(
        default_factory=list, max_length=7, description="Return only nodes of these types (empty: all)."
    )


class GraphLimits(ProtocolModel):
    """Safety limits. The executor clamps them again server-side whatever is asked."""

    max_results: int = Field(50, ge=1, le=500, description="Most nodes or paths returned.")
    max_fanout_per_hop: int = Field(50, ge=1, le=500, description="Most neighbors expanded per node per hop.")


class GraphIntent(ProtocolModel):
    """One bounded graph primitive over PostgreSQL: neighbors, k_hop, path or compare."""

    rationale: Rationale = Field(description="Short operational reason for this traversal (for logs).")
    query_type: GraphQueryType = Field(
        description=(
            "neighbors: one hop from start. k_hop: up to max_hops from start. path: shortest explanation "
            "chains from start to end. compare: structured differences and overlap of start and end."
        )
    )
    start: EntityRef = Field(description="Start node; its id must come from retrieved context.")
    end: EntityRef | None = Field(None, description="End node; required for path and compare.")
    max_hops: int = Field(3, ge=1, le=6, description="Traversal depth (hard-capped server-side).")
    edge_types: list[EdgeTypeName] = Field(
        default_factory=list, max_length=12,
        description="Relations to traverse (empty: all). E.g. sequel, adapted_from, appears_in, family, ally.",
    )
    filters: GraphFilters = Field(default_factory=GraphFilters, description="Constraints on returned nodes.")
    limits: GraphLimits = Field(default_factory=GraphLimits, description="Result and fanout limits.")

    @model_validator(mode="after")
    def _endpoints(self) -> GraphIntent:
        if self.query_type in ("path", "compare"):
            if self.end is None:
                raise ValueError(f"query_type={self.query_type!r} requires an end node")
            if self.end == self.start:
                raise ValueError(f"query_type={self.query_type!r} needs two different nodes")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # "end is required for path and compare" as schema: a variant with an end, one without
        flat = handler.resolve_ref_schema(handler(core_schema))
        props = flat["properties"]
        end = next(s for s in props["end"]["anyOf"] if s.get("type") != "null")
        required = flat.get("required", [])
        one = {**props, "query_type": {**props["query_type"], "enum": ["neighbors", "k_hop"]}, "end": {"type": "null"}}
        two = {**props, "query_type": {**props["query_type"], "enum": ["path", "compare"]},
               "end": {**end, "description": props["end"]["description"]}}
        return {"title": "GraphIntent", "description": flat.get("description", ""), "anyOf": [
            {"type": "object", "title": "GraphIntent[from one node]", "additionalProperties": False,
             "required": required, "properties": one},
            {"type": "object", "title": "GraphIntent[between two nodes]", "additionalProperties": False,
             "required": [*required, "end"], "properties": two},
        ]}


WorkType = Literal["anime", "manga"]
SIMILAR_LIKE_MAX = 5  # examples one recommendation starts from
SIMILAR_LIMIT_MAX = 20  # picks one recommendation returns


class SimilarFilters(ProtocolModel):
    """What the picks must be (the wishes a recommendation states as facts). All optional, ANDed."""

    year_min: Year | None = Field(None, description="Only works from this year or later (\"from the 2010s\").")
    year_max: Year | None = Field(None, description="Only works from this year or earlier (\"before 2010\").")
    format: list[AnimeFormat] = Field(
        default_factory=list, max_length=5, description="Anime formats to keep (\"a movie\": movie); anime only.")
    genres: list[Genre] = Field(default_factory=list, max_length=8, description="Keep works having any of these.")
    finished: bool | None = Field(None, description="true: only finished works; false: only running ones.")
    # at most 1,000: a bound a constrained decoder can hold (a bounded integer is decoded as the enum of its values)
    max_length: int | None = Field(
        None, ge=1, le=1000, description="Most episodes (anime) or volumes (manga): \"short\" is about 13 or 10.")
    min_length: int | None = Field(
        None, ge=1, le=1000, description="Fewest episodes (anime) or volumes (manga): \"long\" is about 50 or 30.")

    @model_validator(mode="after")
    def _year_range(self) -> SimilarFilters:
        if self.year_min is not None and self.year_max is not None and self.year_min > self.year_max:
            raise ValueError(f"year_min ({self.year_min}) is after year_max ({self.year_max})")
        if self.min_length is not None and self.max_length is not None and self.min_length > self.max_length:
            raise ValueError(f"min_length ({self.min_length}) is above max_length ({self.max_length})")
        return self


class SimilarIntent(ProtocolModel):
    """A recommendation: works of one type like the examples (and the wish text), fused from Qdrant's
    recommendation query over the examples' vectors and the catalog graph's shared studio, staff, creator and
    genres. The examples' own franchises (and those of ``exclude``) are left out unless asked."""

    rationale: Rationale = Field(description="Short operational reason for this step (for logs).")
    entity_type: WorkType = Field(description="What to recommend: anime or manga.")
    like: list[EntityRef] = Field(
        default_factory=list, max_length=SIMILAR_LIKE_MAX,
        description="The examples, ids from context: works (anime, manga), or a studio or person whose works are "
                    "meant. Empty when only the wish text says what is wanted.")
    query: QueryText | None = Field(
        None, description="The wish in words (\"dark and brutal\", \"a journey, bittersweet\"); null if none.")
    filters: SimilarFilters = Field(default_factory=SimilarFilters, description="What the picks must be.")
    exclude: list[Uuid] = Field(
        default_factory=list, max_length=10,
        description="Ids of works not wanted (\"not Demon Slayer\"); their franchises are left out too.")
    include_franchise: bool = Field(
        False, description="true only when the question asks for the examples' own franchise (\"other seasons\").")
    limit: int = Field(5, ge=1, le=SIMILAR_LIMIT_MAX, description="How many picks to return.")

    @model_validator(mode="after")
    def _something_to_go_on(self) -> SimilarIntent:
        if not self.like and self.query is None:
            raise ValueError("a recommendation needs examples (like) or a wish (query)")
        if self.filters.format and self.entity_type != "anime":
            raise ValueError("filters.format applies to anime recommendations, not manga")
        return self

    def asked(self) -> str:
        """What it asks, whatever its rationale says: its card keeps it, so a planner can tell this step ran."""
        return self.model_dump_json(exclude={"rationale"})


_PAYLOAD_FOR: dict[str, str | None] = {
    "qdrant_search": "search_intent", "pg_graph": "graph_intent", "pg_query": "structured_query",
    "similar": "similar_intent", "finish": None,
}
_PAYLOADS = ("search_intent", "graph_intent", "structured_query", "similar_intent")
MAX_BATCH = 4  # intents run concurrently in one turn: the step's own payload plus up to three in ``also``

BatchIntent = SearchIntent | GraphIntent | StructuredQuery | SimilarIntent


class NextStep(ProtocolModel):
    """The single bounded action for this turn. Exactly the payload matching the action is present."""

    action: StepAction = Field(
        description=(
            "qdrant_search: semantic lookup or fetch by id. pg_graph: relationship traversal or "
            "comparison over known ids. pg_query: filter, count or aggregate catalog records by their "
            "attributes. similar: recommend works like known ones (\"anime like X\", \"something dark after X\"). "
            "finish: the context already answers the question."
        )
    )
    rationale: Rationale = Field(description="Short operational reason for this step (for logs).")
    search_intent: SearchIntent | None = Field(None, description="Present exactly when action=qdrant_search.")
    graph_intent: GraphIntent | None = Field(None, description="Present exactly when action=pg_graph.")
    structured_query: StructuredQuery | None = Field(None, description="Present exactly when action=pg_query.")
    similar_intent: SimilarIntent | None = Field(None, description="Present exactly when action=similar.")
    also: list[BatchIntent] = Field(
        default_factory=list, max_length=MAX_BATCH - 1,
        description=(
            "Other intents independent of this one (e.g. resolving a second name), run concurrently in the "
            "same turn. Empty when action=finish."
        ),
    )

    @model_validator(mode="after")
    def _consistent(self) -> NextStep:
        wanted = _PAYLOAD_FOR[self.action]
        if wanted is None and self.also:
            raise ValueError("action='finish' must not carry intents in also")
        for payload in _PAYLOADS:
            present = getattr(self, payload) is not None
            if payload == wanted and not present:
                raise ValueError(f"action={self.action!r} requires {payload}")
            if payload != wanted and present:
                raise ValueError(f"action={self.action!r} must not carry {payload}")
        return self

    def intents(self) -> list[BatchIntent]:
        """Every intent this step runs, its own payload first (empty for finish)."""
        own = self.search_intent or self.graph_intent or self.structured_query or self.similar_intent
        return [own, *self.also] if own is not None else []

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # The flat pydantic shape cannot say "payload matches action" in JSON schema; one variant per
        # action can, so a constrained decoder is unable to produce an inconsistent step at all.
        flat = handler.resolve_ref_schema(handler(core_schema))
        props = flat["properties"]
        variants = []
        for action, payload in _PAYLOAD_FOR.items():
            properties: dict[str, Any] = {
                "action": {"const": action, "type": "string"},
                "rationale": props["rationale"],
            }
            required = ["action", "rationale"]
            # finish may carry an empty list at most
            properties["also"] = props["also"] if payload is not None else {"type": "array", "maxItems": 0}
            for other in _PAYLOADS:
                if other == payload:
                    ref = next(s for s in props[other]["anyOf"] if s.get("type") != "null")
                    properties[other] = {**ref, "description": props[other]["description"]}
                    required.append(other)
                else:  # absent or null, never a payload
                    properties[other] = {"type": "null"}
            variants.append({
                "type": "object", "title": f"NextStep[{action}]", "properties": properties,
                "required": required, "additionalProperties": False,
            })
        return {"title": "NextStep", "description": flat.get("description", ""), "anyOf": variants}


class QueryRewrite(ProtocolModel):
    """The user's question normalised for retrieval, with the routing decision (which retrieval, if any)."""

    rewritten_query: QueryText = Field(
        description="The question restated precisely, with full entity names where known."
    )
    needs_external_context: bool = Field(description="Whether catalog retrieval is needed before answering.")
    retrieval_mode: RetrievalMode = Field(
        description=(
            "vector: semantic lookup of entities. graph: relationships between known entities. "
            "hybrid: resolve entities, then traverse. none: no retrieval needed."
        )
    )
    mentions: list[ShortText] = Field(
        default_factory=list, max_length=6, description="Entity names mentioned in the question, as written."
    )
    rationale: Rationale = Field(description="Short operational reason (no chain-of-thought).")


class RetrievalResult(ProtocolModel):
    """What a Qdrant search returned, as the loop reads it."""

    summary: SummaryText = Field(description="Readable lines: name, type, year, key description, id.")
    raw_data: list[dict[str, Any]] = Field(
        max_length=200, description="Structured rows with ids, for follow-up steps and hydration."
    )
    count: int = Field(ge=0, description="Number of items found (0 is a valid outcome).")


class GraphPath(ProtocolModel):
    """One explanation chain: nodes in order, and the relation between each consecutive pair."""

    nodes: list[EntityRef] = Field(min_length=1, max_length=8, description="Ordered nodes of the path.")
    rels: list[EdgeTypeName] = Field(max_length=7, description="rels[i] joins nodes[i] to nodes[i+1].")

    @model_validator(mode="after")
    def _shape(self) -> GraphPath:
        if len(self.rels) != len(self.nodes) - 1:
            raise ValueError(f"a path of {len(self.nodes)} nodes needs {len(self.nodes) - 1} rels")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        # "one rel fewer than nodes" as schema: one variant per path length
        flat = handler.resolve_ref_schema(handler(core_schema))
        props = flat["properties"]
        variants = [
            {"type": "object", "title": f"GraphPath[{n}]", "additionalProperties": False, "required": ["nodes", "rels"],
             "properties": {"nodes": {**props["nodes"], "minItems": n, "maxItems": n},
                            "rels": {**props["rels"], "minItems": n - 1, "maxItems": n - 1}}}
            for n in range(1, props["nodes"]["maxItems"] + 1)
        ]
        return {"title": "GraphPath", "description": flat.get("description", ""), "anyOf": variants}


class GraphResult(ProtocolModel):
    """What a graph primitive returned."""

    summary: SummaryText = Field(description="Readable description of the traversal output.")
    paths: list[GraphPath] = Field(default_factory=list, max_length=50)
    node_ids: list[EntityRef] = Field(default_factory=list, max_length=500, description="Unique nodes involved.")
    count: int = Field(ge=0, description="Number of paths or nodes returned (0 is a valid outcome).")
    meta: dict[str, Any] = Field(default_factory=dict, description="Structured extras (comparison, clamps).")


class DocumentGrade(ProtocolModel):
    """Relevance of one retrieved item to the question."""

    index: int = Field(ge=0, le=199, description="Position of the item in the list being graded.")
    relevant: bool = Field(description="True if the item helps answer the question.")


class GradeReport(ProtocolModel):
    """Relevance grades for a batch of retrieved items, all in one call."""

    grades: list[DocumentGrade] = Field(max_length=50, description="One grade per item, by index.")


class Evidence(ProtocolModel):
    """Structured support for an answer, for the UI and for checking."""

    paths: list[GraphPath] = Field(default_factory=list, max_length=10, description="Relationship chains.")
    ranked: list[EntityRef] = Field(default_factory=list, max_length=50, description="Ranked result ids.")
    facts: list[ShortText] = Field(
        default_factory=list, max_length=20, description="Short factual statements taken from the context."
    )
    rewritten_query: QueryText | None = Field(None, description="The query the loop worked on.")
    termination_reason: TerminationReason | None = Field(None, description="Why the loop stopped.")


NOT_RECORDED = "not recorded: "  # a fact that says what the catalog does not record of a record it has


class DraftAnswer(ProtocolModel):
    """A candidate answer, built only from the retrieved context, before validation."""

    answer: AnswerText = Field(description="The answer in plain language, naming the entities it uses.")
    source_entities: list[EntityRef] = Field(
        default_factory=list, max_length=50, description="Every entity the answer relies on (ids from context)."
    )
    result_entities: list[EntityRef] = Field(
        default_factory=list, max_length=50, description="The entities that answer the question."
    )
    evidence: Evidence = Field(default_factory=Evidence, description="Paths, ranked ids and facts used.")
    citations: list[ShortText] = Field(
        default_factory=list, max_length=20, description="Names or titles of the entities cited."
    )
    confidence: Confidence = Field(description="0.0 to 1.0.")

    @property
    def only_unrecorded(self) -> bool:
        """Whether the draft says only what the catalog does not record of the records it found ("the catalog does
        not record the volumes of X", "records no director for Y"): the question is not answered, the records are
        (``Evidence.facts`` each begin with :data:`NOT_RECORDED`, and nothing answers it)."""
        facts = self.evidence.facts
        return not self.result_entities and bool(facts) and all(f.startswith(NOT_RECORDED) for f in facts)


class SufficiencyReport(ProtocolModel):
    """The validator's judgment: does the context answer the question?"""

    sufficient: bool = Field(description="True if the current context and draft answer the question.")
    rationale: Rationale = Field(description="Short operational reason (no chain-of-thought).")
    missing: list[ShortText] = Field(
        default_factory=list, max_length=8, description="What is still missing, in plain words."
    )


class ClarificationChoice(ProtocolModel):
    """One way to read an ambiguous question."""

    label: ShortText = Field(description="What the user picks, e.g. 'Naruto (anime, 2002)'.")
    entity: EntityRef


class Clarification(ProtocolModel):
    """Asked instead of guessing when a question has several strong readings."""

    question: ShortText = Field(description="What to ask the user.")
    choices: list[ClarificationChoice] = Field(
        max_length=10, description="The readings to pick from (two or more); empty when the answer is words: a "
                                   "follow-up in the same conversation that says what was meant.")


class RunBudget(ProtocolModel):
    """What one run may spend, as a caller asks for it: turns, wall-clock time, and steps that find nothing (the
    loop's counterpart of pydantic-ai's ``UsageLimits``). A limit left out is the server's setting; a request may
    lower a limit, never raise it past the server's (:meth:`agentic_rag.orchestrator.state.Budget.of`)."""

    max_turns: int | None = Field(None, ge=1, le=32, description="Turns (select, retrieve, draft, validate).")
    deadline_ms: int | None = Field(None, ge=100, le=600_000, description="Wall-clock limit of the run.")
    max_failed_steps: int | None = Field(None, ge=1, le=16,
                                         description="Steps that find nothing before the run ends as not found.")


class AgentResponse(ProtocolModel):
    """The final answer presented to the user. Every run ends with one."""

    answer: AnswerText = Field(description="Natural language answer.")
    status: ResponseStatus = Field("answered", description="How the run ended.")
    source_entities: list[EntityRef] = Field(
        default_factory=list, max_length=50, description="Entities used to produce the answer (for hydration)."
    )
    result_entities: list[EntityRef] = Field(
        default_factory=list, max_length=50, description="Primary result entities to display."
    )
    evidence: Evidence = Field(default_factory=Evidence, description="Paths, ranked ids, facts.")
    citations: list[ShortText] = Field(default_factory=list, max_length=20, description="Titles or names used.")
    confidence: Confidence = Field(description="0.0 to 1.0.")
    warnings: list[ShortText] = Field(
        default_factory=list, max_length=50, description="Non-fatal warnings (fallbacks, budget, guards)."
    )
    clarification: Clarification | None = Field(
        None, description="Present exactly when status is needs_clarification."
    )

    @model_validator(mode="after")
    def _clarification_matches_status(self) -> AgentResponse:
        if (self.status == "needs_clarification") != (self.clarification is not None):
            raise ValueError("clarification is present exactly when status='needs_clarification'")
        return self
