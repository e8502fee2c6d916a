"""What one run knows as it goes, and how it turns into the final response.

The state is plain data owned by one run. Step keys make loop detection exact: two intents are the
same step when they are equal apart from their rationale, whatever the model wrote around them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field, replace

from agentic_rag.errors import InvalidInput
from agentic_rag.protocol import (
    AgentResponse,
    BatchIntent,
    Clarification,
    DraftAnswer,
    EntityLinks,
    EntityRef,
    Evidence,
    GraphIntent,
    Mode,
    QueryRewrite,
    ResponseStatus,
    RunBudget,
    SearchIntent,
    SimilarIntent,
    SufficiencyReport,
    TerminationReason,
)
from agentic_rag.protocol.base import SHORT_TEXT_MAX
from agentic_rag.protocol.conversation import ConversationContext
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.roles import ContextCard, RewriteInput, StepSource, StepStatus
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.settings import Settings

# link_ms is all of linking; asks_ms the part of it that embedded the question (what is asked by meaning)
TIMING_KEYS = ("link_ms", "asks_ms", "planner_llm_ms", "validator_llm_ms", "qdrant_ms", "pg_graph_ms", "pg_query_ms",
               "similar_ms", "conversation_ms", "rewrite_ms",
               "clarify_ms", "guard_ms", "trajectory_ms", "total_ms")
DESCRIBED_INTENT_MAX = 300  # characters of an intent described in words (the planner's tried list, logs, warnings)
QUOTED_QUESTION = 300  # characters of the question a not-found answer quotes back
REASONS_SHOWN = 500  # characters of the policy reasons a blocked answer gives
QUESTION_MAX = max_len(RewriteInput, "question")  # the question every role's input carries
_ANSWER = max_len(AgentResponse, "answer")
_WARNINGS = max_len(AgentResponse, "warnings")
_FACT = max_len(Evidence, "facts", item=True)


def failure_text(who: str, exc: BaseException) -> str:
    """What failed, in our own bounded words: never the dependency's own message (hosts, actor ids, traces),
    which goes to the server's log instead."""
    if isinstance(exc, RetrievalError) and exc.source == "embedder":
        who = "the embedding model"
    if isinstance(exc, TimeoutError) or (isinstance(exc, RetrievalError) and exc.reason == "timeout"):
        return f"{who} did not answer in time"
    if isinstance(exc, RetrievalError):
        return f"{who} is unavailable"
    return f"{who} failed"


# The readiness check (/readyz) a failed step counts against, by the failing store (RetrievalError.source)
# or else by the step's executor
READINESS_CHECKS = {"qdrant": "qdrant", "qdrant_search": "qdrant", "embedder": "models", "postgres": "postgres",
                    "pg_graph": "postgres", "pg_query": "postgres", "similar": "qdrant"}


def dependency_of(source: str, exc: BaseException) -> str:
    """Which dependency (a readiness check: postgres, qdrant, models) failed a step of ``source``."""
    store = exc.source if isinstance(exc, RetrievalError) else source
    return READINESS_CHECKS.get(store, READINESS_CHECKS.get(source, "postgres"))


def step_key(intent: BatchIntent) -> str:
    """A canonical key of an intent: equal keys are the same retrieval, whatever the rationale says (or whether
    the run's image was attached to it: one run has one image)."""
    data = intent.model_dump(mode="json", exclude={"rationale", "image_query"})
    return f"{type(intent).__name__}:{json.dumps(data, sort_keys=True, separators=(',', ':'))}"


def describe(intent: BatchIntent) -> str:
    """A short readable form of an intent, for the planner's ``tried`` list and for logs."""
    if isinstance(intent, SearchIntent):
        what = f"ids {','.join(i[:8] for i in intent.filters.id[:3])}" if intent.filters.id else repr(intent.query)
        if intent.image_query is not None and not intent.filters.id:
            what = "the image" if intent.query is None else f"the image and {what}"
        return f"qdrant_search {intent.entity_type} {what}"[:DESCRIBED_INTENT_MAX]
    if isinstance(intent, GraphIntent):
        end = f" -> {intent.end.id[:8]}" if intent.end else ""
        edges = f" via {','.join(intent.edge_types)}" if intent.edge_types else ""
        return f"pg_graph {intent.query_type} {intent.start.id[:8]}{end}{edges}"[:DESCRIBED_INTENT_MAX]
    if isinstance(intent, SimilarIntent):
        like = f"like {','.join(r.id[:8] for r in intent.like[:3])}" if intent.like else ""
        wish = f" {intent.query!r}" if intent.query is not None else ""
        return f"similar {intent.entity_type} {like}{wish}".rstrip()[:DESCRIBED_INTENT_MAX]
    return f"pg_query {intent.entity_type} {len(intent.where)} condition(s)"[:DESCRIBED_INTENT_MAX]


def source_of(intent: BatchIntent) -> StepSource:
    if isinstance(intent, SearchIntent):
        return "qdrant_search"
    if isinstance(intent, SimilarIntent):
        return "similar"
    return "pg_graph" if isinstance(intent, GraphIntent) else "pg_query"


@dataclass(frozen=True, slots=True)
class Budget:
    """The limits one run keeps: the server's settings, lowered where the request asked (:class:`RunBudget`)."""

    max_turns: int
    deadline_ms: int
    max_failed_steps: int

    @classmethod
    def of(cls, settings: Settings, asked: RunBudget | None = None) -> Budget:
        """The server's limits, or lower ones asked for; asking for more than the server allows is refused."""
        ceiling = cls(settings.agent_max_turns, settings.agent_deadline_ms, settings.agent_max_failed_steps)
        wanted: dict[str, int] = asked.model_dump(exclude_none=True) if asked is not None else {}
        over = [f"{name} {value} is over this server's {getattr(ceiling, name)}" for name, value in wanted.items()
                if value > getattr(ceiling, name)]
        if over:
            raise InvalidInput(f"budget: {'; '.join(over)}")
        return replace(ceiling, **wanted)


IMAGE_HASH_CHARS = 16  # hex characters of the image's SHA-256 a trajectory keeps to tell images apart


@dataclass(frozen=True, slots=True)
class AttachedImage:
    """The image that came with the question (verified where the request came in), as searches carry it
    (``image_query``: base64); what a trajectory keeps of it is :meth:`note`, never the bytes."""

    query: str
    size: int
    sha256: str

    @classmethod
    def of(cls, data: bytes) -> AttachedImage:
        return cls(query=base64.b64encode(data).decode("ascii"), size=len(data),
                   sha256=hashlib.sha256(data).hexdigest()[:IMAGE_HASH_CHARS])

    def note(self) -> dict[str, int | str]:
        return {"bytes": self.size, "sha256": self.sha256}


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.casefold().split()).strip(" ?.!") == " ".join(b.casefold().split()).strip(" ?.!")


@dataclass(slots=True)
class RunState:
    """Everything one run has learned so far."""

    question: str
    mode: Mode
    budget: Budget
    image: AttachedImage | None = None  # the image attached to the question, searched with every meaning search
    conversation: ConversationContext | None = None  # the earlier turns, when the question is a follow-up
    asked_mention: str | None = None  # the ambiguous name a clarification asked about
    # names a follow-up's restatement spelled out, each the entity the conversation meant (its linking is narrowed)
    pinned: dict[str, EntityRef] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)
    links: EntityLinks | None = None  # the names the question mentions (entity linking, before any model)
    reading: Analysis | None = None  # what its words ask: read once, after linking, and handed to every role
    rewrite: QueryRewrite | None = None
    rewrites_seen: list[str] = field(default_factory=list)
    cards: list[ContextCard] = field(default_factory=list)
    executed: set[str] = field(default_factory=set)
    tried: list[str] = field(default_factory=list)
    last_step: StepStatus | None = None
    missing: list[str] = field(default_factory=list)
    turn: int = 0
    turns_used: int = 0
    failed_steps: int = 0
    errors: int = 0  # intents whose executor failed (not: found nothing)
    degraded: set[str] = field(default_factory=set)  # the dependencies that failed a step (readiness checks)
    repeats: int = 0
    draft: DraftAnswer | None = None
    drafted_cards: int = -1  # how many cards the current draft saw
    report: SufficiencyReport | None = None
    warnings: list[str] = field(default_factory=list)
    timings: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))

    @property
    def max_turns(self) -> int:
        return self.budget.max_turns

    def card(self) -> ConversationContext | None:
        """The conversation as every role's input carries it (bounded for a prompt), when this is a follow-up."""
        return self.conversation.brief() if self.conversation is not None else None

    def warn(self, text: str) -> None:
        # cut to the response's bound here: one long warning must not fail the whole run's response
        text = text.strip()[:SHORT_TEXT_MAX]
        if text not in self.warnings:
            self.warnings.append(text)

    def attach_image(self, intent: BatchIntent) -> BatchIntent:
        """``intent`` as it runs: a search by meaning (not a fetch by id) carries the question's image, if any.
        A query that only restates the question (or its rewrite) says nothing about the picture: the search is
        then by the image alone; other words are searched too, fused with the image (the image card says so)."""
        if self.image is None or not isinstance(intent, SearchIntent) or intent.filters.id:
            return intent
        query = intent.query
        asked = [self.question, *([self.rewrite.rewritten_query] if self.rewrite else [])]
        if query is not None and any(_same_text(query, q) for q in asked):
            query = None
        return intent.model_copy(update={"image_query": self.image.query, "query": query})

    def known_ids(self) -> set[str]:
        """Every entity id the context holds: the only ids an answer may name."""
        ids = {e.ref.id for c in self.cards for e in c.entities}
        ids |= {n.id for c in self.cards for p in c.paths for n in p.nodes}
        return ids

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1000


def lacking(state: RunState) -> str:
    """What the question names that the catalog does not have, said plainly ("Kizaru is not in the catalog."): an
    answer about the names beside it must not pass for an answer about it. Linking found them
    (``EntityLinks.unknown``); every planner's answer starts with it."""
    names = state.links.unknown if state.links is not None and state.links.unknown else []
    # a group a choice is read by ("which is not one of the Legendary Sannin") is said by its answer ("the catalog
    # has no entry for ..."), not again here
    among = state.reading.among if state.reading is not None else None
    group = among.said.lower() if among is not None and among.group and among.said else ""
    names = [n for n in names if not (group and n.lower() in group)]
    return " ".join(f"{n[:1].upper()}{n[1:]} is not in the catalog." for n in names)


def _after_lacking(state: RunState, answer: str) -> str:
    said = lacking(state)
    return f"{said} {answer}"[:_ANSWER] if said else answer


def response_from(state: RunState, draft: DraftAnswer, status: ResponseStatus, why: TerminationReason) -> AgentResponse:
    """The final response from a draft, with the loop's own evidence and warnings; ``not_found`` when it says only
    what the catalog does not record of the records it found (``DraftAnswer.only_unrecorded``)."""
    rewritten = state.rewrite.rewritten_query if state.rewrite else None
    evidence = draft.evidence.model_copy(update={"rewritten_query": rewritten, "termination_reason": why})
    if draft.only_unrecorded and status in ("answered", "best_effort"):
        # the records are found, what is asked of them is not recorded: said as such (beside a name the catalog lacks
        # too: "Nayuta is not in the catalog. The catalog records no family for Makima." answers nothing asked)
        status = "not_found"
    return AgentResponse(
        answer=_after_lacking(state, draft.answer), status=status, source_entities=draft.source_entities,
        result_entities=draft.result_entities, evidence=evidence, citations=draft.citations,
        confidence=draft.confidence if status == "answered" else min(draft.confidence, 0.5),
        warnings=state.warnings[:_WARNINGS],
    )


def not_found(state: RunState, why: TerminationReason) -> AgentResponse:
    """An explicit not-found answer that says what is missing and what was tried (zero results end a run this way).

    When retrieval failed rather than came back empty, the answer says so: nothing was shown missing.
    """
    if state.errors and not any(c.count for c in state.cards):
        return AgentResponse(
            answer=(f"I could not search the catalog just now ({state.errors} retrieval step(s) failed), so I "
                    f"cannot answer this yet. Please try again."), status="best_effort", confidence=0.0,
            warnings=state.warnings[:_WARNINGS],
            evidence=Evidence(rewritten_query=state.rewrite.rewritten_query if state.rewrite else None,
                              termination_reason=why),
        )
    mentions = state.rewrite.mentions if state.rewrite else []
    missing = state.missing or [f"{m!r}" for m in mentions]
    if missing:
        text = _after_lacking(state, f"I could not find {', '.join(missing[:4])} in the catalog.")
    elif said := lacking(state):  # no name in the question matched any name in the catalog, and these look like names
        text = said
    else:
        text = f"I could not find anything in the catalog matching \"{state.question[:QUOTED_QUESTION]}\"."
    if state.tried:
        text += f" I tried: {'; '.join(state.tried[-4:])}."
    return AgentResponse(
        answer=text[:_ANSWER], status="not_found", confidence=0.0, warnings=state.warnings[:_WARNINGS],
        evidence=Evidence(rewritten_query=state.rewrite.rewritten_query if state.rewrite else None,
                          termination_reason=why, facts=[f"not found: {m}"[:_FACT] for m in missing[:4]]),
    )


def lacking_only(state: RunState) -> AgentResponse:
    """The answer to a question about names the catalog lacks, set in works it has ("In JJK, what is Higuruma's
    domain?"): the missing names said, and that the works around them answer nothing of it."""
    mentions = state.links.mentions if state.links is not None else []
    setting = ", ".join(dict.fromkeys(m.candidates[0].name for m in mentions if m.candidates))
    text = f"{lacking(state)} The catalog has {setting}, but nothing about what the question asks."
    return AgentResponse(
        answer=text[:_ANSWER], status="not_found", confidence=0.0, warnings=state.warnings[:_WARNINGS],
        evidence=Evidence(rewritten_query=state.rewrite.rewritten_query if state.rewrite else None,
                          termination_reason="zero_results",
                          facts=[f"not found: {n}"[:_FACT] for n in (state.links.unknown or [])[:4]]
                          if state.links is not None else []))


def clarifying(state: RunState, clarification: Clarification) -> AgentResponse:
    names = "; ".join(c.label for c in clarification.choices)
    return AgentResponse(
        answer=f"{clarification.question} {names}"[:_ANSWER], status="needs_clarification", confidence=0.0,
        clarification=clarification, warnings=state.warnings[:_WARNINGS],
        evidence=Evidence(rewritten_query=state.rewrite.rewritten_query if state.rewrite else None,
                          termination_reason="clarification"),
    )


def blocked(state: RunState, reasons: list[str]) -> AgentResponse:
    return AgentResponse(
        answer=f"This request was blocked by policy: {'; '.join(reasons)[:REASONS_SHOWN]}.", status="blocked",
        confidence=0.0, warnings=state.warnings[:_WARNINGS], evidence=Evidence(termination_reason="blocked"),
    )


def new_request_id() -> str:
    return uuid.uuid4().hex
