"""GraphQL types of what the lanes answer: typeahead hits, an agent run's result, a trajectory and its events.

An agent's answer arrives as SearchAI's ``AskReply``; its entity references become typed entities that the
request's loaders hydrate from PostgreSQL (the ids of every result, source, path and choice of one response
in one statement per type).
"""

from __future__ import annotations

import datetime as dt
import enum
import json
from typing import Annotated, Any

import strawberry
from strawberry.scalars import JSON

from agentic_rag.api.graphql.entities import Entity, EntityRef, EntityType, Info, entities_of
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.orchestrator.conversations import Conversation as StoredConversation
from agentic_rag.orchestrator.trajectory import Trajectory as StoredTrajectory
from agentic_rag.orchestrator.trajectory import TrajectoryEvent
from agentic_rag.retrievers.typeahead import TypeaheadHit

__all__ = ["MODES", "Mode", "RunEvent", "RunUpdate", "SearchAiResult", "SearchHit", "Trajectory"]


@strawberry.enum(description="How the agent answers.")
class Mode(enum.Enum):
    AGENTIC = "agentic"  # the loop until the context suffices
    LINEAR = "linear"  # retrieve once, answer once (for evaluation)


MODES: dict[Mode, pb.Mode] = {Mode.AGENTIC: pb.MODE_AGENTIC, Mode.LINEAR: pb.MODE_LINEAR}
MODES_BACK: dict[int, Mode] = {pb.MODE_AGENTIC: Mode.AGENTIC, pb.MODE_LINEAR: Mode.LINEAR,
                               pb.MODE_UNSPECIFIED: Mode.AGENTIC}


@strawberry.enum(description="How a run ended.")
class Status(enum.Enum):
    ANSWERED = "answered"
    NOT_FOUND = "not_found"
    BEST_EFFORT = "best_effort"
    NEEDS_CLARIFICATION = "needs_clarification"
    BLOCKED = "blocked"


STATUSES: dict[int, Status] = {
    pb.STATUS_ANSWERED: Status.ANSWERED, pb.STATUS_NOT_FOUND: Status.NOT_FOUND,
    pb.STATUS_BEST_EFFORT: Status.BEST_EFFORT, pb.STATUS_NEEDS_CLARIFICATION: Status.NEEDS_CLARIFICATION,
    pb.STATUS_BLOCKED: Status.BLOCKED,
}


@strawberry.enum(description="How a typeahead hit matched: the exact name, a prefix, or a near spelling.")
class MatchTier(enum.Enum):
    EXACT = "exact"
    PREFIX = "prefix"
    FUZZY = "fuzzy"


def _ref(ref: pb.EntityRef) -> EntityRef:
    return EntityRef(entity_type=EntityType(ref.entity_type), id=strawberry.ID(ref.id))


@strawberry.type(description="One typeahead match.")
class SearchHit:
    ref: EntityRef = strawberry.field(description="Which entity matched.")
    name: str = strawberry.field(description="The entity's primary name.")
    matched: str = strawberry.field(description="The name or alias that matched.")
    match: MatchTier
    popularity: int

    @strawberry.field(description="The entity itself, with its fields and relations.")
    async def entity(self, info: Info) -> Entity | None:
        found: Entity | None = await self.ref.entity(info)
        return found

    @classmethod
    def of(cls, hit: TypeaheadHit) -> SearchHit:
        return cls(ref=EntityRef(entity_type=EntityType(hit.entity.entity_type), id=strawberry.ID(hit.entity.id)),
                   name=hit.name, matched=hit.matched, match=MatchTier(hit.match), popularity=hit.popularity)


@strawberry.type(description="A relationship chain: rels[i] joins nodes[i] to nodes[i + 1].")
class EvidencePath:
    nodes: list[EntityRef]
    rels: list[str]


@strawberry.type(description="What the answer rests on.")
class Evidence:
    paths: list[EvidencePath] = strawberry.field(description="Relationship chains through the graph.")
    ranked: list[EntityRef] = strawberry.field(description="Ranked result ids (comparisons and lists).")
    facts: list[str] = strawberry.field(description="Facts used, comparisons included.")
    rewritten_query: str | None = strawberry.field(description="The query the loop worked on.")
    termination_reason: str | None = strawberry.field(description="Why the loop stopped.")


@strawberry.type(description="An option offered when a name has several strong readings.")
class ClarificationChoice:
    label: str
    ref: EntityRef


@strawberry.type(description="The question the agent asks back instead of guessing.")
class Clarification:
    question: str
    choices: list[ClarificationChoice] = strawberry.field(
        description="Answer with clarify(trajectoryId, index) or clarify(trajectoryId, entityId).")


@strawberry.type(description="Time spent in one stage of a run, in milliseconds.")
class Timing:
    stage: str
    ms: float


@strawberry.type(description="What the agent answered, with the entities it names as typed objects.")
class SearchAiResult:
    trajectory_id: strawberry.ID = strawberry.field(description="The run's trajectory (see trajectory(id)).")
    request_id: str
    status: Status
    mode: Mode
    answer: str
    confidence: float = strawberry.field(description="0.0 to 1.0.")
    evidence: Evidence
    citations: list[str]
    warnings: list[str]
    clarification: Clarification | None = strawberry.field(
        description="Set exactly when status is NEEDS_CLARIFICATION.")
    turns: int
    latency_ms: float
    timings: list[Timing]
    conversation_id: strawberry.ID | None = strawberry.field(
        description="The conversation the run was a turn of: pass it as conversationId with a follow-up.")
    turn: int | None = strawberry.field(description="Which turn of the conversation this was, from 1.")
    result_refs: list[EntityRef] = strawberry.field(description="What answers the question, as references.")
    source_refs: list[EntityRef] = strawberry.field(description="Everything the answer relies on, as references.")

    @strawberry.field(description="What answers the question.")
    async def result_entities(self, info: Info) -> list[Entity]:
        return await entities_of(info, [(r.entity_type.value, str(r.id)) for r in self.result_refs])

    @strawberry.field(description="Everything the answer relies on.")
    async def source_entities(self, info: Info) -> list[Entity]:
        return await entities_of(info, [(r.entity_type.value, str(r.id)) for r in self.source_refs])

    @classmethod
    def of(cls, reply: pb.AskReply) -> SearchAiResult:
        ev = reply.evidence
        clarification = None
        if reply.HasField("clarification"):
            clarification = Clarification(question=reply.clarification.question, choices=[
                ClarificationChoice(label=c.label, ref=_ref(c.entity)) for c in reply.clarification.choices])
        return cls(
            trajectory_id=strawberry.ID(reply.trajectory_id), request_id=reply.request_id,
            status=STATUSES.get(reply.status, Status.BEST_EFFORT), mode=MODES_BACK.get(reply.mode, Mode.AGENTIC),
            answer=reply.answer, confidence=reply.confidence,
            evidence=Evidence(paths=[EvidencePath(nodes=[_ref(n) for n in p.nodes], rels=list(p.rels))
                                     for p in ev.paths],
                              ranked=[_ref(r) for r in ev.ranked], facts=list(ev.facts),
                              rewritten_query=ev.rewritten_query or None,
                              termination_reason=ev.termination_reason or None),
            citations=list(reply.citations), warnings=list(reply.warnings), clarification=clarification,
            turns=reply.turns, latency_ms=reply.latency_ms,
            timings=[Timing(stage=k, ms=v) for k, v in sorted(reply.timings.items())],
            conversation_id=strawberry.ID(reply.conversation_id) if reply.conversation_id else None,
            turn=reply.turn or None,
            result_refs=[_ref(r) for r in reply.result_entities],
            source_refs=[_ref(r) for r in reply.source_entities],
        )


@strawberry.type(description="One recorded step of a run: a decision, an action, an observation, a guard's "
                             "verdict, or an error.")
class RunEvent:
    trajectory_id: strawberry.ID
    seq: int = strawberry.field(description="Position in the run, from 1, without gaps.")
    stage: str = strawberry.field(description="The loop stage that wrote it (guard, rewrite, select, retrieve, ...).")
    type: str = strawberry.field(description="thought, action, observation, decision, guard or error.")
    payload: JSON = strawberry.field(description="The event's data.")
    latency_ms: float | None
    created_at: dt.datetime | None = strawberry.field(
        description="When the store recorded it; null on an event streamed as the run writes it.")

    @classmethod
    def of(cls, event: TrajectoryEvent | dict[str, Any]) -> RunEvent:
        e = event if isinstance(event, TrajectoryEvent) else TrajectoryEvent.model_validate(event)
        return cls(trajectory_id=strawberry.ID(str(e.trajectory_id)), seq=e.seq, stage=e.stage, type=e.type,
                   payload=JSON(e.payload), latency_ms=e.latency_ms, created_at=e.created_at)

    @classmethod
    def streamed(cls, e: pb.TrajectoryEvent) -> RunEvent:
        """An event as SearchAI's stream carries it (its payload as a JSON object)."""
        payload = json.loads(e.payload_json or "{}")
        return cls(trajectory_id=strawberry.ID(e.trajectory_id), seq=e.seq, stage=e.stage, type=e.type,
                   payload=JSON(payload if isinstance(payload, dict) else {}), latency_ms=e.latency_ms or None,
                   created_at=None)


@strawberry.type(description="A run as recorded: the question, how it ended, and every event in order.")
class Trajectory:
    id: strawberry.ID
    request_id: str
    query: str
    mode: Mode
    status: str = strawberry.field(description="running until the run ends, then how it ended.")
    final_response: JSON | None = strawberry.field(description="The response the client was given.")
    timings: list[Timing]
    created_at: dt.datetime
    finished_at: dt.datetime | None
    events: list[RunEvent]

    @classmethod
    def of(cls, t: StoredTrajectory) -> Trajectory:
        return cls(id=strawberry.ID(str(t.id)), request_id=t.request_id, query=t.query, mode=Mode(t.mode),
                   status=t.status, final_response=None if t.final_response is None else JSON(t.final_response),
                   timings=[Timing(stage=k, ms=v) for k, v in sorted(t.timings.items())],
                   created_at=t.created_at, finished_at=t.finished_at, events=[RunEvent.of(e) for e in t.events])


@strawberry.type(description="One turn of a conversation.")
class ConversationTurn:
    seq: int = strawberry.field(description="Its place in the conversation, from 1.")
    trajectory_id: strawberry.ID = strawberry.field(description="The run that answered it (see trajectory(id)).")
    question: str = strawberry.field(description="The question as asked.")
    standalone: str = strawberry.field(description="The question as read: what a follow-up pointed at, spelled out.")
    status: str
    answer: str = strawberry.field(description="The start of the answer.")
    created_at: dt.datetime


@strawberry.type(description="A conversation: questions that follow each other up, oldest first.")
class Conversation:
    id: strawberry.ID
    turns: list[ConversationTurn]
    created_at: dt.datetime
    updated_at: dt.datetime
    expires_at: dt.datetime = strawberry.field(description="When it expires unless another turn comes first.")

    @classmethod
    def of(cls, c: StoredConversation) -> Conversation:
        return cls(id=strawberry.ID(str(c.id)), created_at=c.created_at, updated_at=c.updated_at,
                   expires_at=c.expires_at, turns=[ConversationTurn(
                       seq=t.seq, trajectory_id=strawberry.ID(str(t.trajectory_id)), question=t.question,
                       standalone=t.standalone, status=t.status, answer=t.answer, created_at=t.created_at)
                       for t in c.turns])


RunUpdate = Annotated[RunEvent | SearchAiResult, strawberry.union(
    "RunUpdate", description="A run's events as they are recorded, then its result.")]
