"""The GraphQL schema: typeahead, the agent over gRPC SearchAI, clarification, trajectories, and a run's stream.

- ``search`` is the typeahead lane, straight from PostgreSQL over the backend's pool (no model, no hop).
- ``searchAi`` and ``clarify`` call SearchAI's ``Ask`` and ``Clarify`` over gRPC.
- ``trajectory`` reads the trajectory store, for the caller's tenant only.
- ``searchAiRun`` and ``clarifyRun`` (subscriptions) are ``searchAi`` and ``clarify`` as they happen, over
  SearchAI's ``AskStream`` and ``ClarifyStream``: each trajectory event as the loop writes it, then the result.
  A subscriber that leaves cancels the call, and the run with it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Annotated, Any

import strawberry
from graphql import GraphQLError
from pydantic import ValidationError
from strawberry.extensions import SchemaExtension
from strawberry.types import ExecutionContext

from agentic_rag.api.graphql.context import Context
from agentic_rag.api.graphql.entities import (
    ENTITY_CLASSES,
    MAX_PAGE,
    Entity,
    EntityType,
    Info,
    Limit,
    entities_of,
    page,
)
from agentic_rag.api.graphql.errors import ClientError, MaskInternalErrors, from_validation, is_client_error
from agentic_rag.api.graphql.limits import limits
from agentic_rag.api.graphql.results import (
    MODES,
    Conversation,
    Mode,
    RunEvent,
    RunUpdate,
    SearchAiResult,
    SearchHit,
    Trajectory,
)
from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.http.models import AskRequest
from agentic_rag.models.images import InvalidImage, decode_base64
from agentic_rag.orchestrator.conversations import ConversationStore, ConversationStoreError
from agentic_rag.orchestrator.trajectory import TrajectoryError
from agentic_rag.protocol import RunBudget
from agentic_rag.retrievers.typeahead import TypeaheadQuery, typeahead
from agentic_rag.settings import Settings
from agentic_rag.storage.retry import DATABASE_FAILURES, with_connection

__all__ = ["build_schema"]

Question = Annotated[str, strawberry.argument(description="The question, 1 to 2000 characters.")]
ImageArg = Annotated[str | None, strawberry.argument(description=(
    "An image the question is about (\"what anime is this from?\"): base64, or a base64 data URL. SearchAI checks "
    "it before the run (an error without an image model on the server, or for an image over its bounds)."))]


@strawberry.input(description="A reference to a catalog entity.")
class EntityRefInput:
    entity_type: EntityType
    id: strawberry.ID


@strawberry.input(description="Lower limits for one run than the server's (a limit left out is the server's; over "
                              "the server's own is an error).")
class RunBudgetInput:
    max_turns: int | None = strawberry.field(default=None, description="1 to 32 turns.")
    deadline_ms: int | None = strawberry.field(default=None, description="100 to 600000 ms of wall-clock time.")
    max_failed_steps: int | None = strawberry.field(
        default=None, description="1 to 16 steps that find nothing before the run ends as not found.")


BudgetArg = Annotated[RunBudgetInput | None, strawberry.argument(description="Lower limits for this run.")]
ConversationArg = Annotated[strawberry.ID | None, strawberry.argument(description=(
    "The conversation this question follows up (a conversationId an earlier answer gave); left out, a new one. "
    "Unknown, expired or another tenant's: a not_found error; a turn of it still running, or at its turn limit: "
    "a conflict error."))]


def _budget(budget: RunBudgetInput | None) -> pb.RunBudget | None:
    """The budget as SearchAI takes it, checked here against the same contract as HTTP's (SearchAI checks it against
    the server's limits)."""
    if budget is None:
        return None
    try:
        checked = RunBudget(max_turns=budget.max_turns, deadline_ms=budget.deadline_ms,
                            max_failed_steps=budget.max_failed_steps)
    except ValidationError as exc:
        raise from_validation(exc, prefix="budget.") from None
    return pb.RunBudget(**checked.model_dump(exclude_none=True))


def _uuid(value: str, name: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ClientError("validation_error", f"{name}: not a UUID") from None


def _choice(index: int | None, entity_id: strawberry.ID | None) -> int | str:
    if (index is None) == (entity_id is None):
        raise ClientError("validation_error", "give exactly one of index and entityId")
    if index is not None and not 0 <= index <= 9:
        raise ClientError("validation_error", f"index: must be 0 to 9, got {index}")
    return index if index is not None else str(_uuid(str(entity_id), "entityId"))


def _question(question: str, mode: Mode) -> str:
    """The question as the HTTP API accepts it (same model, same limits)."""
    try:
        return AskRequest(question=question, mode=mode.value).question
    except ValidationError as exc:
        raise from_validation(exc) from None


def _image(image: str | None, settings: Settings) -> bytes:
    """The image's bytes to pass on over gRPC (empty: none); only its base64 is read here, SearchAI checks the
    image itself."""
    if image is None:
        return b""
    try:
        return decode_base64(image.strip(), settings.image_max_bytes)
    except InvalidImage as exc:
        raise ClientError("validation_error", f"image: {exc}") from None


async def _ask(info: Info, question: str, mode: Mode, request_id: str, image: str | None,
               budget: RunBudgetInput | None, conversation_id: strawberry.ID | None = None) -> SearchAiResult:
    ctx = info.context
    reply = await ctx.agent.ask(_question(question, mode), MODES[mode], tenant=ctx.tenant, request_id=request_id,
                                credentials=ctx.credentials, image=_image(image, ctx.settings), budget=_budget(budget),
                                conversation_id=_conversation(conversation_id))
    return SearchAiResult.of(reply)


def _conversation(value: strawberry.ID | None) -> uuid.UUID | None:
    return None if value is None else _uuid(str(value), "conversationId")


@strawberry.type
class Query:
    @strawberry.field(description="Typeahead over every entity type: exact names, then prefixes, then near "
                                  "spellings; the most popular first within each.")
    async def search(self, info: Info, q: str, types: list[EntityType] | None = None,
                     limit: Limit = 10) -> list[SearchHit]:
        ctx = info.context
        try:
            query = TypeaheadQuery(q=q, types=[t.value for t in types] if types else None, limit=page(limit))
        except ValidationError as exc:
            raise from_validation(exc) from None
        timeout_s = ctx.settings.query_timeout_ms / 1000
        try:
            hits = await with_connection(ctx.pool, lambda conn: typeahead(conn, query, timeout_s=timeout_s),
                                         attempts=ctx.settings.retry_attempts, timeout_s=timeout_s)
        except DATABASE_FAILURES:
            raise ClientError("unavailable", "the catalog database did not answer; retry shortly") from None
        return [SearchHit.of(h) for h in hits]

    @strawberry.field(description="One entity by type and id; null when there is none.")
    async def entity(self, info: Info, entity_type: EntityType, id: strawberry.ID) -> Entity | None:
        found = await entities_of(info, [(entity_type.value, str(_uuid(str(id), "id")))])
        return found[0] if found else None

    @strawberry.field(description=f"Entities by reference, in the order given (at most {MAX_PAGE}); unknown ones "
                                  "are left out.")
    async def entities(self, info: Info, refs: list[EntityRefInput]) -> list[Entity]:
        if len(refs) > MAX_PAGE:
            raise ClientError("validation_error", f"refs: at most {MAX_PAGE}, got {len(refs)}")
        return await entities_of(info, [(r.entity_type.value, str(_uuid(str(r.id), "refs.id"))) for r in refs])

    @strawberry.field(description="Ask the agent a question in natural language (through SearchAI.Ask).")
    async def search_ai(self, info: Info, question: Question, mode: Mode = Mode.AGENTIC,
                        image: ImageArg = None, budget: BudgetArg = None,
                        conversation_id: ConversationArg = None) -> SearchAiResult:
        return await _ask(info, question, mode, info.context.request_id, image, budget, conversation_id)

    @strawberry.field(description="A conversation's turns, oldest first; null when there is none for this tenant "
                                  "(or it expired).")
    async def conversation(self, info: Info, id: strawberry.ID) -> Conversation | None:
        ctx = info.context
        try:
            found = await ConversationStore(ctx.pool, ctx.settings).get(_uuid(str(id), "id"), tenant=ctx.tenant)
        except ConversationStoreError:
            raise ClientError("unavailable", "the conversation store did not answer; retry shortly") from None
        return None if found is None else Conversation.of(found)

    @strawberry.field(description="A run's trajectory with its events; null when there is none for this tenant.")
    async def trajectory(self, info: Info, id: strawberry.ID) -> Trajectory | None:
        ctx = info.context
        try:
            found = await ctx.store.get(_uuid(str(id), "id"), tenant=ctx.tenant)
        except TrajectoryError:
            raise ClientError("unavailable", "the trajectory store did not answer; retry shortly") from None
        return None if found is None else Trajectory.of(found)


@strawberry.type
class Mutation:
    @strawberry.mutation(description="Answer a run's clarification with the index or the entity id of a choice "
                                     "(through SearchAI.Clarify).")
    async def clarify(self, info: Info, trajectory_id: strawberry.ID, index: int | None = None,
                      entity_id: strawberry.ID | None = None, budget: BudgetArg = None) -> SearchAiResult:
        ctx = info.context
        reply = await ctx.agent.clarify(_uuid(str(trajectory_id), "trajectoryId"), _choice(index, entity_id),
                                        tenant=ctx.tenant, request_id=ctx.request_id, credentials=ctx.credentials,
                                        budget=_budget(budget))
        return SearchAiResult.of(reply)


@strawberry.type
class Subscription:
    @strawberry.subscription(description="Ask the agent and watch the run (through SearchAI.AskStream): each "
                                         "event as the loop writes it, then the result (the same as searchAi's).")
    async def search_ai_run(self, info: Info, question: Question, mode: Mode = Mode.AGENTIC,
                            image: ImageArg = None, budget: BudgetArg = None,
                            conversation_id: ConversationArg = None) -> AsyncGenerator[RunUpdate, None]:
        ctx = info.context
        async for update in _updates(ctx.agent.ask_stream(_question(question, mode), MODES[mode], tenant=ctx.tenant,
                                                          request_id=ctx.request_id, credentials=ctx.credentials,
                                                          image=_image(image, ctx.settings),
                                                          budget=_budget(budget),
                                                          conversation_id=_conversation(conversation_id))):
            yield update

    @strawberry.subscription(description="Answer a run's clarification and watch the resumed run (through "
                                         "SearchAI.ClarifyStream), as searchAiRun.")
    async def clarify_run(self, info: Info, trajectory_id: strawberry.ID, index: int | None = None,
                          entity_id: strawberry.ID | None = None,
                          budget: BudgetArg = None) -> AsyncGenerator[RunUpdate, None]:
        ctx = info.context
        async for update in _updates(ctx.agent.clarify_stream(
                _uuid(str(trajectory_id), "trajectoryId"), _choice(index, entity_id), tenant=ctx.tenant,
                request_id=ctx.request_id, credentials=ctx.credentials, budget=_budget(budget))):
            yield update


async def _updates(stream: AsyncIterator[pb.RunUpdate]) -> AsyncGenerator[RunUpdate, None]:
    async for update in stream:
        yield SearchAiResult.of(update.reply) if update.HasField("reply") else RunEvent.streamed(update.event)


class FreshLoaders(SchemaExtension):
    """Each operation reads through loaders of its own: a WebSocket's context lives as long as the connection,
    and a cache that long would serve stale rows and grow without bound."""

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context.context
        if isinstance(context, Context):
            context.loaders = context.loaders.fresh()
        yield


class Schema(strawberry.Schema):
    """Logs only the errors it masks (with their traceback); a client's mistakes are not the server's news."""

    def process_errors(self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None) -> None:
        super().process_errors([e for e in errors if not is_client_error(e)], execution_context)


def build_schema() -> strawberry.Schema:
    """The schema with its bounds (tokens, aliases, depth, cost) and error masking."""
    extensions: list[Any] = [*limits(max_page=MAX_PAGE), FreshLoaders, MaskInternalErrors]
    return Schema(query=Query, mutation=Mutation, subscription=Subscription, types=list(ENTITY_CLASSES.values()),
                  extensions=extensions)
