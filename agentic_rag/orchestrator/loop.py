"""The agent loop (ARCHITECTURE.md steps 1-11) as an explicit, bounded state machine.

guard in -> rewrite -> clarify -> [select -> retrieve -> grade -> observe -> draft -> validate]* ->
guard out, inside a turn budget and a wall-clock deadline. Models only ever return typed contracts;
every decision, action and observation is a trajectory event written as the run goes, and every run
ends with a valid :class:`~agentic_rag.protocol.AgentResponse`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from opentelemetry.trace import Span, get_current_span
from pydantic import BaseModel

from agentic_rag import tracing
from agentic_rag.errors import ErrorKind, InvalidInput
from agentic_rag.logs import ERROR_TEXT_MAX, request_context
from agentic_rag.models.base import GenerationError, ModelUnavailable, StructuredModel
from agentic_rag.orchestrator import stages
from agentic_rag.orchestrator.cards import from_image
from agentic_rag.orchestrator.clarify import clarification, readings_to_weigh, same_answer
from agentic_rag.orchestrator.conversations import (
    Claim,
    ConversationBusy,
    ConversationFull,
    ConversationNotFound,
    ConversationStore,
    ConversationStoreError,
)
from agentic_rag.orchestrator.guards import GuardPolicy, check_input, check_output
from agentic_rag.orchestrator.retrieval import Retrieval
from agentic_rag.orchestrator.state import (
    QUESTION_MAX,
    TIMING_KEYS,
    AttachedImage,
    Budget,
    RunState,
    blocked,
    clarifying,
    dependency_of,
    failure_text,
    lacking_only,
    new_request_id,
    not_found,
    response_from,
)
from agentic_rag.orchestrator.trajectory import (
    MAX_QUERY_CHARS,
    EventType,
    Recorder,
    TrajectoryError,
    TrajectoryNotFound,
    TrajectoryNotWaiting,
    TrajectoryStore,
)
from agentic_rag.planners.llm.prompts import MAX_OUTPUT_TOKENS
from agentic_rag.protocol import (
    AgentResponse,
    Clarification,
    ClarificationChoice,
    DraftAnswer,
    GradeReport,
    Mode,
    NextStep,
    QueryRewrite,
    RunBudget,
    SearchFilters,
    SearchIntent,
    SufficiencyReport,
    TerminationReason,
)
from agentic_rag.protocol.base import SHORT_TEXT_MAX
from agentic_rag.protocol.conversation import MAX_ANSWERS, MAX_CHOICES, MAX_SUBJECTS, Named, PastTurn
from agentic_rag.protocol.limits import max_len
from agentic_rag.protocol.reading import Analysis
from agentic_rag.protocol.roles import (
    DraftInput,
    GradeInput,
    GradeItem,
    RewriteInput,
    RoleInput,
    SelectInput,
    ValidateInput,
    role_of,
)
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.settings import Settings
from agentic_rag.understanding.followup import resolve, unanchored
from agentic_rag.understanding.reading import read, settled
from agentic_rag.understanding.unknown import only_scope

log = logging.getLogger(__name__)
T = TypeVar("T", bound=BaseModel)
EventSink = Callable[[dict[str, Any]], Awaitable[None]]


class ClarificationError(InvalidInput):
    """A resume that cannot proceed: the trajectory is not waiting, or the choice is not one offered."""

    kind: ErrorKind = "invalid_choice"


class NotAwaitingClarification(ClarificationError):
    """The trajectory exists but is not waiting for a clarification: it ended otherwise (abandoned included),
    or another resume claimed it first."""

    kind: ErrorKind = "conflict"


def _not_waiting(trajectory_id: uuid.UUID, status: str) -> NotAwaitingClarification:
    why = {
        "running": "another request is resuming it",
        "abandoned": "it was abandoned (the process running it stopped before it finished); ask the question again",
    }.get(status, f"it ended with status {status}")
    return NotAwaitingClarification(f"trajectory {trajectory_id} is not waiting for a clarification: {why}")


@dataclass(slots=True)
class RunResult:
    """One finished run: the response, and where its trajectory is."""

    trajectory_id: uuid.UUID
    request_id: str
    response: AgentResponse
    turns: int
    latency_ms: float
    timings: dict[str, float]
    mode: Mode
    degraded: tuple[str, ...] = ()  # the dependencies that failed a step (readiness checks: postgres, qdrant, models)
    conversation_id: uuid.UUID | None = None  # the conversation the run was a turn of (None: it could not be kept)
    turn: int | None = None  # ... and which turn, from 1


class Orchestrator:
    """Runs questions through the loop. Holds no per-run state, so one instance serves many runs at once."""

    def __init__(self, settings: Settings, *, planner: StructuredModel, validator: StructuredModel,
                 fallback: StructuredModel, retrieval: Retrieval, store: TrajectoryStore, policy: GuardPolicy,
                 conversations: ConversationStore | None = None) -> None:
        self.settings = settings
        self.planner = planner
        self.validator = validator
        self.retrieval = retrieval
        self.store = store
        self.policy = policy
        self.fallback = fallback  # when a model fails after its retries, the stage still decides
        # conversations live beside the trajectories, in the same database
        self.conversations = conversations or ConversationStore(store.pool, settings)

    async def run(self, question: str, *, mode: Mode = "agentic", request_id: str | None = None,
                  session_id: str | None = None, tenant: str = "default", sink: EventSink | None = None,
                  trajectory_id: uuid.UUID | None = None, budget: RunBudget | None = None,
                  image: bytes | None = None, conversation_id: uuid.UUID | None = None) -> RunResult:
        """Answer one question. Raises only when the trajectory cannot be persisted (or on cancellation), or for
        a ``budget`` over the server's limits (``InvalidInput``, before anything is recorded).

        ``conversation_id``: the conversation this question follows up (its earlier turns are read with it);
        None starts a new one, whose id the result carries. An unknown, expired or another tenant's id raises
        ``ConversationNotFound``, one with a turn still running ``ConversationBusy``, one at its turn limit
        ``ConversationFull``, all before anything is recorded.

        ``image``: an image attached to the question, already verified where the request came in
        (:func:`~agentic_rag.models.images.read_request_image`); a card tells the planner it is there, and every
        search by meaning is searched by it too. The trajectory keeps its size and a hash, never its bytes.

        ``trajectory_id``: the id to record the run under, when the caller has given it one already (the
        Ingress does, so that a client whose run's process died still learns which run to read). ``budget``:
        limits lower than the settings' for this run (turns, deadline, failed steps)."""
        request_id = request_id or new_request_id()
        limits = Budget.of(self.settings, budget)
        trajectory_id = trajectory_id or uuid.uuid4()
        attributes = {"agentic_rag.trajectory_id": str(trajectory_id), "agentic_rag.request_id": request_id,
                      "agentic_rag.mode": mode, "agentic_rag.tenant": tenant,
                      "agentic_rag.conversation_id": str(conversation_id) if conversation_id else None}
        with request_context(request_id), tracing.span("run", attributes) as span:
            t0 = time.perf_counter()
            claim = await self.conversations.claim(conversation_id, tenant=tenant, trajectory_id=trajectory_id,
                                                   deadline_ms=limits.deadline_ms)
            try:
                result = await self._run(question, claim, mode=mode, request_id=request_id, session_id=session_id,
                                         tenant=tenant, sink=sink, trajectory_id=trajectory_id, limits=limits,
                                         image=image, t0=t0)
            except BaseException:
                await _release(self.conversations, claim, trajectory_id)
                raise
            _traced(span, result)
            return result

    async def _run(self, question: str, claim: Claim, *, mode: Mode, request_id: str, session_id: str | None,
                   tenant: str, sink: EventSink | None, trajectory_id: uuid.UUID, limits: Budget, image: bytes | None,
                   t0: float) -> RunResult:
        started, conversation_ms = t0, (time.perf_counter() - t0) * 1000  # the run's time counts its claim
        t0 = time.perf_counter()
        verdict = check_input(self.policy, question)
        guard_ms = (time.perf_counter() - t0) * 1000
        if self.settings.trace_content:  # the question as the guard left it: PII reaches no trace either
            get_current_span().set_attribute("agentic_rag.question", verdict.text[:QUESTION_MAX])
        # the trajectory keeps the redacted question: PII never reaches the database
        rec = await self.store.start(query=verdict.text[:MAX_QUERY_CHARS], request_id=request_id, tenant=tenant,
                                     session_id=session_id, mode=mode, trajectory_id=trajectory_id,
                                     trace_id=tracing.current_trace_id())
        state = RunState(question=verdict.text[:QUESTION_MAX], mode=mode, budget=limits,
                         image=AttachedImage.of(image) if image is not None else None,
                         conversation=claim.context if claim.context.turns else None, started=started)
        state.timings["guard_ms"] += guard_ms
        state.timings["conversation_ms"] += conversation_ms
        run = RunContext(self, rec, state, sink, claim=claim, tenant=tenant, asked=verdict.text)
        if state.image is not None:
            state.cards.append(from_image(state.image.note()))
            await run.event("request", "observation", {"image": state.image.note()})
        for d in verdict.decisions:
            await run.event("guard_input", "guard", d.event())
            if d.action != "allow":
                state.warn(f"input guard: {d.detail}")
        if verdict.blocked:
            reasons = [d.detail for d in verdict.decisions if d.action == "block"]
            return await run.finish(blocked(state, reasons))
        return await run.execute(None)

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str = "default",
                     request_id: str | None = None, sink: EventSink | None = None,
                     budget: RunBudget | None = None) -> RunResult:
        """Continue a run that asked for clarification, with the user's choice (an index or an entity id).

        Raises ``TrajectoryNotFound``, ``NotAwaitingClarification`` (of concurrent resumes, on any number of
        processes, all but one), or ``ClarificationError`` for a choice that was not offered."""
        request_id = request_id or new_request_id()
        limits = Budget.of(self.settings, budget)
        attributes = {"agentic_rag.trajectory_id": str(trajectory_id), "agentic_rag.request_id": request_id,
                      "agentic_rag.tenant": tenant}
        with request_context(request_id, str(trajectory_id)), tracing.span("resume", attributes) as span:
            result = await self._resume(trajectory_id, choice, tenant=tenant, request_id=request_id, sink=sink,
                                        limits=limits)
            _traced(span, result)
            return result

    async def _resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                      sink: EventSink | None, limits: Budget) -> RunResult:
        traj = await self.store.get(trajectory_id, tenant=tenant)
        if traj is None:
            raise TrajectoryNotFound(f"trajectory {trajectory_id} not found")
        if traj.status != "needs_clarification" or not traj.final_response:
            raise _not_waiting(trajectory_id, traj.status)
        offered = AgentResponse.model_validate(traj.final_response).clarification
        assert offered is not None  # a needs_clarification response always carries one
        picked = _pick(offered.choices, choice)
        state = RunState(question=traj.query[:QUESTION_MAX], mode="agentic", budget=limits)
        mention: str | None = None
        asked_with_image = False
        for e in traj.events:
            # the trajectory keeps an image's size and hash, never its bytes: the resumed run cannot search by it
            asked_with_image |= e.stage == "request" and "image" in e.payload
            if e.stage == "rewrite" and e.type == "decision" and "rewrite" in e.payload:
                state.rewrite = QueryRewrite.model_validate(e.payload["rewrite"])
            if e.stage == "clarify" and e.type == "decision" and isinstance(e.payload.get("mention"), str):
                mention = e.payload["mention"]
        try:  # the claim: the read above may be stale by now
            rec = await self.store.reopen(trajectory_id, tenant=tenant)
        except TrajectoryNotWaiting as exc:
            raise _not_waiting(trajectory_id, exc.status) from None
        # the run was a turn of a conversation: the choice is its next turn (when the conversation can take one)
        claim = await self._continue(trajectory_id, tenant, limits)
        try:
            run = RunContext(self, rec, state, sink, claim=claim, tenant=tenant, asked=picked.label)
            if asked_with_image:
                state.warn(IMAGE_NOT_RESUMED)
            await run.event("clarify", "decision", {"chosen": picked.model_dump(mode="json"),
                                                    "request_id": request_id})
            return await run.execute(picked, mention)
        except BaseException:
            if claim is not None:
                await _release(self.conversations, claim, trajectory_id)
            raise

    async def _continue(self, trajectory_id: uuid.UUID, tenant: str, limits: Budget) -> Claim | None:
        """A hold on the conversation whose turn ``trajectory_id`` was; None when it was none's, or the
        conversation has since expired, filled or moved on to another running turn (the choice is answered all
        the same, outside it)."""
        conversation = await self.conversations.of_trajectory(trajectory_id, tenant=tenant)
        if conversation is None:
            return None
        try:
            return await self.conversations.claim(conversation, tenant=tenant, trajectory_id=trajectory_id,
                                                  deadline_ms=limits.deadline_ms)
        except (ConversationNotFound, ConversationBusy, ConversationFull) as exc:
            log.info("the resumed run is answered outside its conversation: %s", exc)
            return None


def _model_attributes(name: str, who: str, role: str) -> dict[str, Any]:
    backend, _, model = name.partition(":")  # "transformers:smollm2", "heuristic"
    return {"gen_ai.operation.name": "chat", "gen_ai.request.model": model or backend, "agentic_rag.backend": backend,
            "agentic_rag.role": who, "agentic_rag.output": role}


def _usage_attributes(usage: Any) -> dict[str, Any]:
    return {"agentic_rag.attempts": usage.attempts, "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens}


def _traced(span: Span, result: RunResult) -> None:
    """The run's span says how it ended (what a trace view lists runs by)."""
    r = result.response
    span.set_attributes({"agentic_rag.status": r.status, "agentic_rag.termination": r.evidence.termination_reason,
                         "agentic_rag.turns": result.turns, "agentic_rag.degraded": list(result.degraded)})
    if result.conversation_id is not None:
        span.set_attribute("agentic_rag.conversation_id", str(result.conversation_id))


async def _release(store: ConversationStore, claim: Claim, trajectory_id: uuid.UUID) -> None:
    """Give up a failed run's hold on its conversation, without letting a failed write hide the run's error."""
    try:
        await asyncio.shield(store.release(claim, trajectory_id=trajectory_id))
    except Exception as exc:
        log.warning("could not release conversation %s: %s", claim.conversation_id, exc)


QUESTION_CARD = 500  # a question as a context card keeps it (protocol.base.QueryText)
# what a card adds to a name ("Tetsurō Araki (person)", "Death Note (anime, 2006)"), not a name's own ("(2011)")
_LABEL = re.compile(r"\s+\((?:anime|manga|character|person|studio|franchise|episode)\b[^()]*\)$")

IMAGE_NOT_RESUMED = ("the question's image is not kept across a clarification: the resumed run searches by the "
                     "chosen entity and the question's words")


def _model_failure(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return "did not answer in time"
    if isinstance(exc, ModelUnavailable):  # its engine failed or died, or its deployment did not take the call
        return "is unavailable"
    return "gave no valid output"


def _pick(choices: list[ClarificationChoice], choice: int | str) -> ClarificationChoice:
    for i, c in enumerate(choices):
        if choice == i or choice == c.entity.id:
            return c
    valid = ", ".join(f"{i} ({c.label})" for i, c in enumerate(choices))
    raise ClarificationError(f"choice {choice!r} is not one of the offered choices: {valid}")


class RunContext:
    """One run's stages over its state. Created per run, never shared."""

    def __init__(self, o: Orchestrator, rec: Recorder, state: RunState, sink: EventSink | None, *,
                 claim: Claim | None = None, tenant: str = "default", asked: str = "") -> None:
        self.o = o
        self.s = state
        self.rec = rec
        self.sink = sink
        self.settings = o.settings
        self.claim = claim  # the conversation this run is a turn of
        self.tenant = tenant
        self.asked = asked or state.question  # the question as asked (before a follow-up was resolved)
        self._usage: dict[str, Any] = {}

    # -- recording ----------------------------------------------------------------------------------

    @property
    def retrieval(self) -> Retrieval:
        return self.o.retrieval

    async def event(self, stage: str, type_: EventType, payload: dict[str, Any],
                    latency_ms: float | None = None) -> None:
        t0 = time.perf_counter()
        seq = await self.rec.event(stage, type_, payload, latency_ms=latency_ms)
        self.s.timings["trajectory_ms"] += (time.perf_counter() - t0) * 1000
        # the trajectory is the record of every event; the log has one line a run (finish), these at DEBUG
        log.debug("%s %s", stage, type_, extra={"stage": stage, "event": type_, "seq": seq})
        if self.sink is not None:
            await self.sink({"seq": seq, "stage": stage, "type": type_, "payload": payload,
                             "latency_ms": latency_ms, "trajectory_id": self.rec.trajectory_id})

    async def flush(self) -> None:
        t0 = time.perf_counter()
        await self.rec.flush()
        self.s.timings["trajectory_ms"] += (time.perf_counter() - t0) * 1000

    async def finish(self, response: AgentResponse) -> RunResult:
        s = self.s
        s.timings["total_ms"] = s.elapsed_ms()
        timings = {k: round(s.timings.get(k, 0.0), 3) for k in TIMING_KEYS}
        await self.event("final", "decision", {"status": response.status,
                                               "termination": response.evidence.termination_reason,
                                               "turns": s.turns_used, "timings": timings})
        t0 = time.perf_counter()
        await self.rec.finish(status=response.status, response=response.model_dump(mode="json"), timings=timings)
        self.s.timings["trajectory_ms"] += (time.perf_counter() - t0) * 1000
        log.info("run %s: %s after %d turn(s) in %.0f ms", self.rec.trajectory_id, response.status, s.turns_used,
                 timings["total_ms"], extra={"event": "finish", "status": response.status})
        kept = await self._keep_turn(response)
        return RunResult(trajectory_id=self.rec.trajectory_id, request_id=self.rec.request_id, response=response,
                         turns=s.turns_used, latency_ms=timings["total_ms"], timings=timings, mode=s.mode,
                         degraded=tuple(sorted(s.degraded)),
                         conversation_id=self.claim.conversation_id if kept and self.claim else None,
                         turn=self.claim.seq if kept and self.claim else None)

    async def _keep_turn(self, response: AgentResponse) -> bool:
        """Add this run to its conversation as its next turn (releasing the conversation); whether it was kept. The
        answer stands either way: a conversation store that fails, or a claim that lapsed, only loses the turn."""
        if self.claim is None:
            return False
        if not self.asked.strip() or not self.s.question.strip():
            # nothing readable was asked (a question of control characters only, which the guard strips): there is
            # no turn to keep, and the conversation is given back
            with contextlib.suppress(ConversationStoreError):
                await self.o.conversations.release(self.claim, trajectory_id=self.rec.trajectory_id)
            return False
        card = turn_card(self.asked, self.s, response)
        try:
            kept = await self.o.conversations.add(self.claim, trajectory_id=self.rec.trajectory_id,
                                                  tenant=self.tenant, question=self.asked, standalone=self.s.question,
                                                  card=card)
        except ConversationStoreError as exc:
            log.warning("the turn was not added to conversation %s: %s", self.claim.conversation_id, exc)
            return False
        if not kept:
            log.warning("the turn was not added to conversation %s: its hold lapsed and another turn took it",
                        self.claim.conversation_id)
        return kept

    # -- the run --------------------------------------------------------------------------------------

    async def execute(self, chosen: ClarificationChoice | None, mention: str | None = None) -> RunResult:
        s = self.s
        deadline_ms = s.budget.deadline_ms
        deadline = asyncio.timeout(deadline_ms / 1000)
        try:
            try:
                async with deadline:
                    response = await self._loop(chosen, mention)
            except TimeoutError:
                if not deadline.expired():
                    raise
                s.warn(f"deadline of {deadline_ms} ms reached; answered from what was found")
                await self.event("budget", "guard", {"rule": "deadline", "ms": deadline_ms})
                response = await self._best_effort("deadline", model_ok=False)
            response = await self._guard_output(response)
            return await self.finish(response)
        except TrajectoryError:
            self.o.store.unsettled(self.rec.trajectory_id)  # closed as failed once the store answers again
            raise
        except BaseException as exc:
            # record why the run stopped, without letting a failed write hide the original error
            status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "failed"
            try:
                await asyncio.shield(self._abort(status, exc))
            except Exception as write_error:
                log.warning("could not record the %s run: %s", status, write_error)
            raise

    async def _abort(self, status: str, exc: BaseException) -> None:
        if status == "failed":
            log.error("the run failed", exc_info=exc)
        async with asyncio.timeout(5):  # the trajectory is the client's to read: the error's text stays in the log
            await self.event("final", "error", {"status": status, "error": type(exc).__name__})
            await self.rec.finish(status=status, response=None, timings={"total_ms": self.s.elapsed_ms()})

    async def _link(self) -> None:
        """Entity linking, before any model: every planner and clarification read the same names."""
        s = self.s
        t0 = time.perf_counter()
        try:
            with tracing.span("link") as span:
                s.links, s.reading = await self.o.retrieval.link(s.question, s.timings)
                span.set_attributes({"agentic_rag.mentions": len(s.links.mentions),
                                     "agentic_rag.unknown": len(s.links.unknown or ())})
        except RetrievalError as exc:
            s.degraded.add(dependency_of("postgres", exc))
            what = failure_text("the catalog's name index", exc)
            log.warning("entity linking failed (%s)", what, exc_info=exc)
            s.warn(f"the names in the question could not be looked up: {what}")
            await self.event("link", "error", {"error": what})
            return
        finally:
            s.timings["link_ms"] += (time.perf_counter() - t0) * 1000
        await self.event("link", "observation", {"mentions": [
            {"text": m.text, "candidates": [f"{c.name} ({c.entity.entity_type}, {c.match})" for c in m.candidates[:5]]}
            for m in s.links.mentions], **({"unknown": s.links.unknown} if s.links.unknown else {})},
            latency_ms=s.timings["link_ms"])

    async def _loop(self, chosen: ClarificationChoice | None, mention: str | None) -> AgentResponse:
        s = self.s
        if s.conversation is not None and chosen is None and s.links is None:
            followed = await self._follow_up()
            if isinstance(followed, AgentResponse):
                return followed
            chosen, mention = followed
        if s.links is None:
            await self._link()
            self._pin()
        if s.reading is None:  # linking failed: the words are read all the same
            s.reading = read(s.question, None)
        if s.rewrite is None:
            s.rewrite = await self._rewrite([])
        if chosen is not None:
            s.reading = settled(s.reading, mention, chosen.entity.entity_type)  # ("how long is X?" "the manga")
            # fetched under the ambiguous name itself, so the planner reads it as what that name means
            intent = SearchIntent(rationale="the entity the user chose", entity_type=chosen.entity.entity_type,
                                  query=mention[:max_len(SearchIntent, "query")] if mention else None,
                                  filters=SearchFilters(id=[chosen.entity.id]), limit=1)
            await stages.retrieve(self, [intent])
        elif (s.conversation is None or not s.conversation.turns) and \
                (ask := unanchored(s.question, s.links, s.reading)) is not None:
            # a first question that only points ("when did it end?"): there is nothing before it to point at
            await self.event("clarify", "decision", {"unanchored": ask})
            return clarifying(s, Clarification(question=ask[:SHORT_TEXT_MAX], choices=[]))
        elif s.links is not None and s.links.unknown and only_scope(s.question, s.links.mentions, s.links.unknown):
            # every name the catalog has is only where the question is set ("In JJK, what is Higuruma's domain?"):
            # what the catalog holds answers none of it, and an answer about the setting would pass for one
            await self.event("unknown", "decision", {"unknown": s.links.unknown, "only_scope": True})
            return lacking_only(s)
        elif s.mode == "agentic" and self.settings.agent_clarify and s.rewrite.needs_external_context:
            t0 = time.perf_counter()
            # a question that names something the catalog lacks is answered by saying so: which of a known name's
            # readings was meant beside it changes nothing worth a question ("did Hayao Miyazaki work on frieren")
            asked = clarification(s.reading, s.links, s.question) if s.links is not None and not s.links.unknown \
                else None
            s.timings["clarify_ms"] += (time.perf_counter() - t0) * 1000
            if asked is not None and await self._needless(asked[0], asked[1]):
                asked = None
            if asked is not None:
                clarification_, mention_ = asked
                s.asked_mention = mention_
                await self.event("clarify", "decision", {"clarification": clarification_.model_dump(mode="json"),
                                                         "mention": mention_})
                return clarifying(s, clarification_)
        no_retrieval = not s.rewrite.needs_external_context or s.rewrite.retrieval_mode == "none"
        if no_retrieval and (direct := await self._judge()) is not None:  # a direct answer, still validated
            return response_from(s, direct, "answered", "no_retrieval_needed")
        for turn in range(s.turn, s.max_turns):
            with tracing.span("turn", {"agentic_rag.turn": turn + 1}):
                decided = await self._turn(turn)
            if decided is not None:
                return decided
        s.warn(f"turn budget of {s.max_turns} reached; this is the best answer from what was found")
        await self.event("budget", "guard", {"rule": "max_turns", "turns": s.max_turns})
        return await self._best_effort("max_turns")

    async def _turn(self, turn: int) -> AgentResponse | None:
        """One turn: select a step, run it, and judge what the run has; the response when the run ends here, None
        when it goes on to the next turn."""
        s = self.s
        await self.flush()  # what the run decided before this turn, in one round trip
        s.turn, s.turns_used = turn, turn + 1
        step = await self._select()
        if step.action == "finish":
            return await self._finish_now()
        if not await stages.run_step(self, step):
            return await self._best_effort("loop_detected") if s.repeats >= 2 else None
        if s.failed_steps >= s.budget.max_failed_steps:
            s.warn(f"{s.failed_steps} steps found nothing")
            return await self._best_effort("failed_steps")
        if s.mode == "linear":
            draft = await self._draft()
            return response_from(s, draft, "answered" if draft.result_entities else "best_effort", "linear")
        if turn == 0 and self._fast_path_applies():
            draft = await self._draft()
            if draft.result_entities:
                await self.event("validate", "decision", {"fast_path": True})
                return response_from(s, draft, "answered", "fast_path")
        if (sufficient := await self._judge()) is not None:
            return response_from(s, sufficient, "answered", "sufficient")
        return None

    async def _follow_up(self) -> AgentResponse | tuple[ClarificationChoice | None, str | None]:
        """A follow-up restated to stand alone from the conversation's last turns
        (:mod:`~agentic_rag.understanding.followup`): the question the run then answers, or the choice a reply in
        words made of the last turn's clarification; or a question back when what it points at is nowhere earlier."""
        s = self.s
        assert s.conversation is not None
        await self._link()  # the reply's own names: a new topic keeps them
        t0 = time.perf_counter()
        f = resolve(s.question, s.links, s.conversation, read)
        s.timings["rewrite_ms"] += (time.perf_counter() - t0) * 1000
        await self.event("rewrite", "decision", {
            "followup": s.question, "standalone": f.text, "resolved": f.how,
            "conversation": {"id": str(self.claim.conversation_id) if self.claim else None,
                             "turn": self.claim.seq if self.claim else None, "history": len(s.conversation.turns)},
            **({"choice": f.choice} if f.choice is not None else {})})
        if f.ask is not None:
            return clarifying(s, Clarification(question=f.ask[:SHORT_TEXT_MAX], choices=[]))
        if f.changed:
            s.question, s.links, s.reading, s.pinned = f.text[:QUESTION_MAX], None, None, f.pinned
        elif f.pinned:  # the reply stands as asked, a name in it read as the conversation meant it
            s.pinned = f.pinned
            self._pin()
        last = s.conversation.last()
        if f.choice is not None and last is not None:
            picked = last.choices[f.choice]
            return ClarificationChoice(label=picked.name, entity=picked.ref), f.mention
        return None, None

    def _pin(self) -> None:
        """A name the follow-up's restatement spelled out links to the one entity the conversation meant by it
        (when linking found it among the name's readings): no clarification between readings already settled."""
        s = self.s
        if not s.pinned or s.links is None:
            return
        mentions = []
        for m in s.links.mentions:
            ref = s.pinned.get(m.text)
            kept = [c for c in m.candidates if ref is not None and c.entity.id == ref.id]
            mentions.append(m.model_copy(update={"candidates": kept}) if kept else m)
        s.links = s.links.model_copy(update={"mentions": mentions})
        s.reading = read(s.question, s.links)

    async def _needless(self, asked: Clarification, mention: str) -> bool:
        """Whether a clarification's readings all answer the question alike ("is death note finished?": the anime
        and the manga both are), read off their records, which the run then goes on from."""
        s = self.s
        assert s.reading is not None
        readings = readings_to_weigh(s.reading, asked)
        if not readings:
            return False
        query = mention[:max_len(SearchIntent, "query")]
        cards = await stages.retrieve(self, [
            SearchIntent(rationale="a reading of an ambiguous name", entity_type=r.entity_type, query=query,
                         filters=SearchFilters(id=[r.id]), limit=1) for r in readings])
        rows = [r for c in cards for r in c.data.get("rows", []) if isinstance(r, dict)]
        alike = same_answer(s.reading, rows, len(readings))
        await self.event("clarify", "decision", {"needless": alike, "mention": mention})
        return alike

    # -- stages ---------------------------------------------------------------------------------------

    async def call(self, who: Literal["planner", "validator"], inp: RoleInput, output_type: type[T], stage: str,
                   *, model_ok: bool = True) -> T:
        """One role call, bounded in time; a failed model falls back to the heuristic with a warning. A span of
        the stage's name holds it and says which model decided (and which failed before it); each model's call is
        a ``model`` span of its own under it, with its attempts and tokens."""
        with tracing.span(stage, {"agentic_rag.role": who}) as span:
            output = await self._call(who, inp, output_type, stage, model_ok=model_ok)
            span.set_attribute("agentic_rag.model", self._usage["model"])
            if "failed_model" in self._usage:
                span.set_attribute("agentic_rag.failed_model", self._usage["failed_model"])
            return output

    async def _call(self, who: Literal["planner", "validator"], inp: RoleInput, output_type: type[T], stage: str,
                    *, model_ok: bool = True) -> T:
        model = self.o.planner if who == "planner" else self.o.validator
        role = role_of(inp, output_type)  # a text model's shaper renders the input in its own prompt style
        t0 = time.perf_counter()
        try:
            if not model_ok:
                raise TimeoutError("no time left for a model call")
            with tracing.span("model", _model_attributes(model.name, who, role)) as span:
                async with asyncio.timeout(self.settings.generation_timeout_ms / 1000):
                    gen = await model.generate(inp, output_type, max_tokens=MAX_OUTPUT_TOKENS[role])
                span.set_attributes(_usage_attributes(gen.usage))
            usage = gen.usage
            output = gen.output
            decided_by = model.name if model_ok else self.o.fallback.name
            failed: str | None = None
        except (GenerationError, ModelUnavailable, TimeoutError) as exc:
            if model_ok:
                log.warning("%s: the %s model failed", stage, who, exc_info=exc)
                self.s.warn(f"{stage}: the {who} model {_model_failure(exc)}; used the heuristic")
                # what each attempt said is the trajectory's to keep (GenerationError carries it for that)
                await self.event(stage, "error", {"model": model.name, "error": str(exc)[:ERROR_TEXT_MAX],
                                                  "fallback": self.o.fallback.name})
            with tracing.span("model", _model_attributes(self.o.fallback.name, who, role)) as span:
                gen = await self.o.fallback.generate(inp, output_type)
                span.set_attributes(_usage_attributes(gen.usage))
            usage, output = gen.usage, gen.output
            # the usage names what decided: the heuristic, and which model failed before it
            decided_by, failed = self.o.fallback.name, model.name if model_ok else None
        finally:
            self.s.timings[f"{who}_llm_ms"] += (time.perf_counter() - t0) * 1000
        self._usage = {"model": decided_by, "attempts": usage.attempts,
                       "prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        if failed is not None:
            self._usage["failed_model"] = failed
        return output

    async def _rewrite(self, history: list[str]) -> QueryRewrite:
        t0 = time.perf_counter()
        inp = RewriteInput(question=self.s.question, links=self.s.links, reading=self.s.reading, history=history[-8:],
                           conversation=self.s.card())
        rw = await self.call("planner", inp, QueryRewrite, "rewrite")
        await self.event("rewrite", "decision", {"rewrite": rw.model_dump(mode="json"), "usage": self._usage},
                         latency_ms=(time.perf_counter() - t0) * 1000)
        return rw

    async def rewrite_again(self) -> None:
        """Too few relevant results: rewrite with history; stop rewriting when a rewrite repeats."""
        s = self.s
        assert s.rewrite is not None
        s.rewrites_seen.append(s.rewrite.rewritten_query)
        again = await self._rewrite(s.rewrites_seen)
        if again.rewritten_query in s.rewrites_seen:
            await self.event("grade", "decision", {"rewrite": "repeated; keeping the current query"})
            return
        s.rewrite = again

    async def _select(self) -> NextStep:
        s = self.s
        assert s.rewrite is not None
        t0 = time.perf_counter()
        inp = SelectInput(question=s.question, links=s.links, reading=s.reading, conversation=s.card(),
                          rewrite=s.rewrite, cards=s.cards, last_step=s.last_step,
                          missing=s.missing[:max_len(SelectInput, "missing")],
                          tried=s.tried[-20:], turn=s.turn, max_turns=s.max_turns)
        step = await self.call("planner", inp, NextStep, "select")
        await self.event("select", "decision", {
            "turn": s.turn, "action": step.action, "rationale": step.rationale,
            "intents": [i.model_dump(mode="json") for i in step.intents()], "usage": self._usage,
        }, latency_ms=(time.perf_counter() - t0) * 1000)
        return step

    async def grade(self, items: list[GradeItem]) -> GradeReport:
        s = self.s
        t0 = time.perf_counter()
        inp = GradeInput(question=s.question, links=s.links, reading=s.reading, conversation=s.card(),
                         items=items[:stages.GRADE_ITEMS])
        report = await self.call("validator", inp, GradeReport, "grade")
        await self.event("grade", "decision", {
            "items": len(items), "relevant": [g.index for g in report.grades if g.relevant], "usage": self._usage,
        }, latency_ms=(time.perf_counter() - t0) * 1000)
        return report

    async def _draft(self, *, model_ok: bool = True) -> DraftAnswer:
        s = self.s
        assert s.rewrite is not None
        if s.draft is not None and s.drafted_cards == len(s.cards):
            return s.draft
        t0 = time.perf_counter()
        inp = DraftInput(question=s.question, links=s.links, reading=s.reading, conversation=s.card(),
                         rewrite=s.rewrite, cards=s.cards)
        draft = await self.call("planner", inp, DraftAnswer, "draft", model_ok=model_ok)
        s.draft, s.drafted_cards, s.report = draft, len(s.cards), None
        await self.event("draft", "decision", {
            "confidence": draft.confidence, "result_entities": [e.id for e in draft.result_entities],
            "source_entities": len(draft.source_entities), "answer_chars": len(draft.answer), "usage": self._usage,
        }, latency_ms=(time.perf_counter() - t0) * 1000)
        return draft

    async def _judge(self) -> DraftAnswer | None:
        """Draft from the current cards, then let the validator judge it: the draft if sufficient, else None."""
        s = self.s
        assert s.rewrite is not None
        draft = await self._draft()
        if s.report is None:
            t0 = time.perf_counter()
            s.report = await self.call("validator", ValidateInput(question=s.question, links=s.links, reading=s.reading,
                                                                        conversation=s.card(),
                                                                  rewrite=s.rewrite,
                                                                  draft=draft, cards=s.cards),
                                       SufficiencyReport, "validate")
            await self.event("validate", "decision", {
                "sufficient": s.report.sufficient, "missing": s.report.missing, "rationale": s.report.rationale,
                "usage": self._usage,
            }, latency_ms=(time.perf_counter() - t0) * 1000)
        if not s.report.sufficient:
            s.missing = list(s.report.missing)
            return None
        return draft

    def _fast_path_applies(self) -> bool:
        """Seed 001 10.1: one name, looked up by vector search, found: no validator round trip needed."""
        s = self.s
        assert s.rewrite is not None
        found = [c for c in s.cards if c.source != "request"]  # an attached image's card is no step
        return (self.settings.agent_fast_path and s.rewrite.retrieval_mode == "vector"
                and len(s.rewrite.mentions) <= 1 and len(found) == 1 and found[0].source == "qdrant_search"
                and found[0].count > 0)

    async def _finish_now(self) -> AgentResponse | None:
        """The planner says the context answers the question: validate that. A rejected finish ends nothing:
        the loop goes on with what the validator found missing, so the run ends for a reason that happened."""
        s = self.s
        if not any(c.count for c in s.cards):
            return not_found(s, "zero_results")
        if (draft := await self._judge()) is not None:
            return response_from(s, draft, "answered", "sufficient")
        await self.event("select", "decision", {"finish": "rejected by the validator", "missing": s.missing[:8]})
        return None

    async def _best_effort(self, why: TerminationReason, *, model_ok: bool = True) -> AgentResponse:
        s = self.s
        if not any(c.count for c in s.cards):
            return not_found(s, why)
        draft = await self._draft(model_ok=model_ok)
        if not draft.result_entities and not draft.evidence.facts:
            return not_found(s, why)
        return response_from(s, draft, "best_effort", why)

    async def _guard_output(self, response: AgentResponse) -> AgentResponse:
        t0 = time.perf_counter()
        guarded, decisions = check_output(self.o.policy, response, self.s.known_ids())
        self.s.timings["guard_ms"] += (time.perf_counter() - t0) * 1000
        for d in decisions:
            await self.event("guard_output", "guard", d.event())
        return guarded


__all__ = ["ClarificationError", "EventSink", "NotAwaitingClarification", "Orchestrator", "RunResult"]


def turn_card(asked: str, s: RunState, response: AgentResponse) -> PastTurn:
    """The turn as a later follow-up reads it: the question as asked and as read, what it was about (the names
    its reading resolved), what the answer named in order (with the names the steps found them under), and a
    clarification's choices."""
    found = {e.ref.id: (e.ref, _LABEL.sub("", e.name)[:SHORT_TEXT_MAX]) for c in s.cards for e in c.entities}
    # what the answer named, in the order it named them ("the second one" is the second it said), then the
    # results it did not spell out
    order, listed = _named_in(response.answer, {i: name for i, (_, name) in found.items()},
                              {r.id for r in response.result_entities})
    order += [r.id for r in response.result_entities if r.id in found]
    answers = [Named(ref=found[i][0], name=found[i][1], listed=i in listed) for i in dict.fromkeys(order)]
    choices = [Named(ref=c.entity, name=c.label, text=(s.asked_mention or "")[:SHORT_TEXT_MAX] or None)
               for c in (response.clarification.choices if response.clarification else [])]
    return PastTurn(question=asked[:QUESTION_CARD], standalone=s.question[:QUESTION_CARD], status=response.status,
                    subjects=subjects_of(s.reading, s)[:MAX_SUBJECTS], answers=answers[:MAX_ANSWERS],
                    choices=choices[:MAX_CHOICES], answer=response.answer[:SHORT_TEXT_MAX])


# what may stand between two names of one list: their years or roles in brackets, then a comma or "and"
_BETWEEN = re.compile(r"(?:\s*\([^()]{1,40}\))*\s*(?:,\s*(?:and\s+)?|\s+and\s+|\s*;\s*)")


def _named_in(answer: str, names: dict[str, str], results: set[str]) -> tuple[list[str], set[str]]:
    """The ids whose names ``answer`` says, in the order it first says them (a name said only inside a longer one,
    "Death Note" in "Death Note Relight", is not said; a name several entities share is the result's, "Naruto" the
    anime whose episodes were counted, not its manga); and those of its longest list, two names or more said one
    after another ("In order: Attack on Titan, Attack on Titan Season 2 (2017) and ...": "the third one" counts
    there, the name asked included when the list says it)."""
    text = answer.casefold()
    spans = [(m.start(), m.end(), i) for i, name in names.items() if name
             for m in re.finditer(re.escape(name.casefold()), text)]
    shared = {(a, b) for a, b, i in spans if i in results}
    spans = [(a, b, i) for a, b, i in spans if i in results or (a, b) not in shared]
    own = sorted((a, b, i) for a, b, i in spans
                 if not any(a2 <= a and b <= b2 and (b2 - a2) > (b - a) for a2, b2, _ in spans))
    runs: list[list[str]] = []
    for (_, b1, _), (a2, _, i2) in itertools.pairwise([(0, -1, ""), *own]):
        if runs and b1 >= 0 and _BETWEEN.fullmatch(text[b1:a2]):
            runs[-1].append(i2)
        else:
            runs.append([i2])
    longest = max(runs, key=len, default=[])
    return list(dict.fromkeys(i for _, _, i in own)), set(longest) if len(set(longest)) >= 2 else set()


def subjects_of(a: Analysis | None, s: RunState) -> list[Named]:
    """What a question was about: each name its reading resolved, as the reading resolved it (the preferred type),
    with the words that named it; else what linking found first."""
    out: list[Named] = []
    for m in a.mentions if a is not None else []:
        linked = a.linked.get(m, {}) if a is not None else {}
        order = a.types.get(m, ()) if a is not None else ()
        c = next((linked[t] for t in order if t in linked), None) or next(iter(linked.values()), None)
        if c is not None and all(n.ref.id != c.entity.id for n in out):
            out.append(Named(ref=c.entity, name=c.name, text=m[:SHORT_TEXT_MAX]))
    if not out and s.links is not None:
        out = [Named(ref=m.candidates[0].entity, name=m.candidates[0].name, text=m.text)
               for m in s.links.mentions if m.candidates]
    return out
