"""The SearchAI gRPC API over a fake service, through a real in-process grpc.aio server and client (no Ray)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import grpc
import pytest

from agentic_rag.api.grpc.proto import searchai_pb2 as pb
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.grpc.service import MATCH_TIERS, STATUSES, SearchAIApi, SearchAIServicer
from agentic_rag.api.service import NotAwaitingClarification, ServiceUnavailable
from agentic_rag.orchestrator.conversations import ConversationBusy, ConversationFull, ConversationNotFound
from agentic_rag.orchestrator.loop import ClarificationError, RunResult
from agentic_rag.orchestrator.trajectory import TrajectoryNotFound
from agentic_rag.protocol import AgentResponse, EntityRef, RunBudget
from agentic_rag.protocol.contracts import ResponseStatus
from agentic_rag.retrievers.typeahead import MatchTier, TypeaheadHit, TypeaheadQuery
from agentic_rag.settings import Settings

LUFFY = EntityRef(entity_type="character", id=str(uuid.UUID(int=1)))
NAMI = EntityRef(entity_type="character", id=str(uuid.UUID(int=2)))
TID = uuid.UUID(int=99)
CID = uuid.UUID(int=77)
REPO = Path(__file__).resolve().parents[3]
PROTO = REPO / "agentic_rag" / "api" / "grpc" / "proto" / "searchai.proto"


def _result(status: str = "answered", request_id: str = "r") -> RunResult:
    raw: dict[str, Any] = {
        "answer": "Luffy and Nami are crewmates.", "status": status, "confidence": 0.9,
        "result_entities": [LUFFY.model_dump(), NAMI.model_dump()], "source_entities": [LUFFY.model_dump()],
        "evidence": {"paths": [{"nodes": [LUFFY.model_dump(), NAMI.model_dump()], "rels": ["teammate"]}],
                     "facts": ["Nami navigates for Luffy's crew."], "termination_reason": "sufficient"},
        "citations": ["Monkey D. Luffy"], "warnings": ["a warning"],
    }
    if status == "needs_clarification":
        raw["clarification"] = {"question": "Which one?", "choices": [
            {"label": "Luffy (character)", "entity": LUFFY.model_dump()},
            {"label": "Nami (character)", "entity": NAMI.model_dump()}]}
    return RunResult(trajectory_id=TID, request_id=request_id, response=AgentResponse.model_validate(raw), turns=2,
                     latency_ms=12.5, timings={"qdrant_ms": 3.0}, mode="agentic")


@dataclass
class FakeService:
    """Records calls; raises ``fail`` when set; a run waits for ``gate`` when set."""

    fail: Exception | None = None
    gate: asyncio.Event | None = None
    calls: list[tuple[str, Any]] = field(default_factory=list)
    budgets: list[RunBudget | None] = field(default_factory=list)
    conversations: list[uuid.UUID | None] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: bool = False

    async def _maybe(self) -> None:
        self.started.set()
        if self.fail is not None:
            raise self.fail
        if self.gate is not None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise

    async def search(self, q: TypeaheadQuery) -> list[TypeaheadHit]:
        self.calls.append(("search", q))
        await self._maybe()
        return [TypeaheadHit(entity=LUFFY, name="Monkey D. Luffy", matched="Luffy", match="fuzzy", popularity=90)]

    async def ask(self, question: str, *, mode: str, tenant: str, request_id: str, sink: Any = None,
                  image: bytes | None = None, budget: RunBudget | None = None,
                  conversation_id: uuid.UUID | None = None) -> RunResult:
        self.calls.append(("ask", (question, mode, tenant, request_id)))
        self.conversations.append(conversation_id)
        self.budgets.append(budget)
        if sink is not None:  # what the loop writes first, as the sink receives it
            await sink({"seq": 1, "stage": "rewrite", "type": "decision", "latency_ms": 1.5,
                        "payload": {"rewrite": {"entities": [LUFFY.id]}, "trajectory": TID}, "trajectory_id": TID})
            await sink({"seq": 2, "stage": "retrieve", "type": "action", "latency_ms": None,
                        "payload": {"intents": 1}})
        await self._maybe()
        result = _result("needs_clarification" if "Naruto" in question else "answered", request_id)
        return dataclasses.replace(result, conversation_id=conversation_id or CID, turn=2 if conversation_id else 1)

    async def resume(self, trajectory_id: uuid.UUID, choice: int | str, *, tenant: str, request_id: str,
                     sink: Any = None, budget: RunBudget | None = None) -> RunResult:
        self.calls.append(("resume", (trajectory_id, choice, tenant)))
        self.budgets.append(budget)
        await self._maybe()
        return _result(request_id=request_id)

    async def trajectory(self, trajectory_id: uuid.UUID, *, tenant: str) -> None:
        return None

    async def entities(self, refs: list[EntityRef]) -> list[dict[str, Any]]:
        return []

    async def ready(self) -> dict[str, bool]:
        return {}


@dataclass
class RecordingContext:
    code: grpc.StatusCode | None = None
    details: str = ""
    metadata: list[tuple[str, str]] = field(default_factory=list)

    def set_code(self, code: grpc.StatusCode) -> None:
        self.code = code

    def set_details(self, details: str) -> None:
        self.details = details

    def invocation_metadata(self) -> list[tuple[str, str]]:
        return self.metadata


@dataclass
class Client:
    stub: Any
    service: FakeService


async def _serve(service: FakeService, settings: Settings) -> AsyncIterator[Client]:
    server = grpc.aio.server()
    pb_grpc.add_SearchAIServicer_to_server(SearchAIServicer(SearchAIApi(service, settings)), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            yield Client(pb_grpc.SearchAIStub(channel), service)
    finally:
        await server.stop(None)


@pytest.fixture
async def client() -> AsyncIterator[Client]:
    async for c in _serve(FakeService(), Settings()):
        yield c


async def _code(call: Any) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    return raised.value.code(), raised.value.details() or ""


def test_every_status_and_match_tier_has_a_wire_value() -> None:
    assert set(STATUSES) == set(get_args(ResponseStatus))
    assert set(MATCH_TIERS) == set(get_args(MatchTier))


async def test_ask_answers_with_everything_the_http_api_returns(client: Client) -> None:
    reply = await client.stub.Ask(pb.AskRequest(question="  How is Luffy related to Nami?  ", request_id="req-1"))
    assert reply.status == pb.STATUS_ANSWERED and reply.mode == pb.MODE_AGENTIC
    assert reply.trajectory_id == str(TID) and reply.request_id == "req-1"
    assert [(e.entity_type, e.id) for e in reply.result_entities] == [("character", LUFFY.id), ("character", NAMI.id)]
    [path] = reply.evidence.paths
    assert [n.id for n in path.nodes] == [LUFFY.id, NAMI.id] and list(path.rels) == ["teammate"]
    assert reply.evidence.termination_reason == "sufficient" and list(reply.citations) == ["Monkey D. Luffy"]
    assert reply.confidence == pytest.approx(0.9) and reply.turns == 2 and dict(reply.timings) == {"qdrant_ms": 3.0}
    assert not reply.HasField("clarification")
    # the question as the HTTP API's model normalises it; mode and tenant defaulted
    assert client.service.calls == [("ask", ("How is Luffy related to Nami?", "agentic", "default", "req-1"))]


async def test_request_id_comes_from_the_request_then_the_metadata_then_a_new_one(client: Client) -> None:
    by_metadata = await client.stub.Ask(pb.AskRequest(question="q", mode=pb.MODE_LINEAR, tenant="team_a"),
                                        metadata=(("request_id", "from-metadata"),))
    assert by_metadata.request_id == "from-metadata"
    assert client.service.calls[-1] == ("ask", ("q", "linear", "team_a", "from-metadata"))
    fresh = await client.stub.Ask(pb.AskRequest(question="q"), metadata=(("request_id", "bad id!"),))
    assert len(fresh.request_id) == 32


async def test_a_conversation_goes_on_by_its_id(client: Client) -> None:
    first = await client.stub.Ask(pb.AskRequest(question="who directed Death Note?"))
    assert (first.conversation_id, first.turn) == (str(CID), 1)
    follow = await client.stub.Ask(pb.AskRequest(question="what else did he direct?",
                                                 conversation_id=first.conversation_id))
    assert (follow.conversation_id, follow.turn) == (str(CID), 2)
    assert client.service.conversations == [None, CID]


async def test_a_clarification_round_trip(client: Client) -> None:
    asked = await client.stub.Ask(pb.AskRequest(question="Tell me about Naruto"))
    assert asked.status == pb.STATUS_NEEDS_CLARIFICATION
    assert [c.label for c in asked.clarification.choices] == ["Luffy (character)", "Nami (character)"]
    done = await client.stub.Clarify(pb.ClarifyRequest(trajectory_id=asked.trajectory_id, index=0))
    assert done.status == pb.STATUS_ANSWERED
    await client.stub.Clarify(pb.ClarifyRequest(trajectory_id=asked.trajectory_id, entity_id=NAMI.id.upper()))
    # index 0 is a choice (a oneof member set to its default still counts); an entity id is normalised
    assert [c[1][1] for c in client.service.calls if c[0] == "resume"] == [0, NAMI.id]


async def test_a_run_takes_the_budget_its_request_gives(client: Client) -> None:
    await client.stub.Ask(pb.AskRequest(question="q"))
    await client.stub.Ask(pb.AskRequest(question="q", budget=pb.RunBudget(max_turns=1, deadline_ms=5000)))
    await client.stub.Ask(pb.AskRequest(question="q", budget=pb.RunBudget()))  # every limit the server's
    updates = [u async for u in client.stub.AskStream(pb.AskRequest(question="q", budget=pb.RunBudget(
        max_failed_steps=2)))]
    await client.stub.Clarify(pb.ClarifyRequest(trajectory_id=str(TID), index=0, budget=pb.RunBudget(max_turns=2)))
    assert updates[-1].reply.status == pb.STATUS_ANSWERED
    assert client.service.budgets == [None, RunBudget(max_turns=1, deadline_ms=5000), RunBudget(),
                                      RunBudget(max_failed_steps=2), RunBudget(max_turns=2)]
    # out of range: refused with the field named, before the service hears of it
    code, details = await _code(client.stub.Ask(pb.AskRequest(question="q", budget=pb.RunBudget(max_turns=99))))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "budget.max_turns" in details
    code, details = await _code(client.stub.Clarify(pb.ClarifyRequest(trajectory_id=str(TID), index=0,
                                                                      budget=pb.RunBudget(deadline_ms=5))))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "budget.deadline_ms" in details
    assert len(client.service.budgets) == 5


async def test_ask_stream_sends_each_event_as_written_then_the_reply(client: Client) -> None:
    updates = [u async for u in client.stub.AskStream(pb.AskRequest(question="How is Luffy related to Nami?"))]
    assert [u.WhichOneof("update") for u in updates] == ["event", "event", "reply"]
    first, second = updates[0].event, updates[1].event
    assert (first.seq, first.stage, first.type, first.latency_ms) == (1, "rewrite", "decision", 1.5)
    assert json.loads(first.payload_json) == {"rewrite": {"entities": [LUFFY.id]}, "trajectory": str(TID)}
    assert first.trajectory_id == str(TID)  # a client that loses the stream knows which run to read
    assert (second.seq, second.latency_ms, second.trajectory_id) == (2, 0.0, "")
    assert updates[-1].reply.status == pb.STATUS_ANSWERED and updates[-1].reply.trajectory_id == str(TID)


async def test_a_stream_that_fails_ends_with_its_status_after_what_it_sent() -> None:
    async for client in _serve(FakeService(fail=ServiceUnavailable("postgres at 10.0.0.5 is down")), Settings()):
        seen: list[str] = []
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            async for update in client.stub.AskStream(pb.AskRequest(question="q")):
                seen.append(update.WhichOneof("update"))
        assert seen == ["event", "event"]  # the run had written these before the store failed
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE and "10.0.0.5" not in (raised.value.details() or "")
        bad = client.stub.ClarifyStream(pb.ClarifyRequest(trajectory_id="not-a-uuid", index=0))
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            [u async for u in bad]
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_a_client_that_leaves_a_stream_cancels_its_run() -> None:
    gate = asyncio.Event()
    service = FakeService(gate=gate)
    async for client in _serve(service, Settings()):
        call = client.stub.AskStream(pb.AskRequest(question="q"))
        first = await call.read()
        assert first.event.seq == 1
        await asyncio.wait_for(service.started.wait(), 5)
        call.cancel()
        for _ in range(50):  # the server learns of it asynchronously
            if service.cancelled:
                break
            await asyncio.sleep(0.05)
        assert service.cancelled  # the run waiting on the gate was cancelled, not left to run on


async def test_search_maps_hits_and_defaults_the_limit(client: Client) -> None:
    reply = await client.stub.Search(pb.SearchRequest(q="lufy", types=["character"]))
    [hit] = reply.hits
    assert (hit.entity.id, hit.name, hit.match, hit.popularity) == (LUFFY.id, "Monkey D. Luffy",
                                                                     pb.MATCH_TIER_FUZZY, 90)
    [(_, q)] = client.service.calls
    assert (q.q, q.types, q.limit) == ("lufy", ["character"], 10)


@pytest.mark.parametrize(("method", "request_", "needle"), [
    ("Ask", pb.AskRequest(question=""), "question"),
    ("Ask", pb.AskRequest(question="   "), "question"),
    ("Ask", pb.AskRequest(question="x" * 2001), "question"),
    ("Ask", pb.AskRequest(question="nul \x00"), "NUL"),
    ("Ask", pb.AskRequest(question="q", mode=7), "mode"),
    ("Ask", pb.AskRequest(question="q", tenant="no spaces"), "tenant"),
    ("Ask", pb.AskRequest(question="q", request_id="bad id!"), "request_id"),
    ("Ask", pb.AskRequest(question="q", conversation_id="not-a-uuid"), "conversation_id"),
    ("Search", pb.SearchRequest(q=""), "q"),
    ("Search", pb.SearchRequest(q="x", types=["planet"]), "types"),
    ("Search", pb.SearchRequest(q="x", limit=51), "limit"),
    ("Clarify", pb.ClarifyRequest(trajectory_id="nope", index=0), "trajectory_id"),
    ("Clarify", pb.ClarifyRequest(trajectory_id=str(TID)), "choice"),
    ("Clarify", pb.ClarifyRequest(trajectory_id=str(TID), index=10), "choice"),
    ("Clarify", pb.ClarifyRequest(trajectory_id=str(TID), entity_id="Naruto"), "choice"),
])
async def test_bad_input_is_invalid_argument_and_never_reaches_the_service(
        client: Client, method: str, request_: Any, needle: str) -> None:
    code, details = await _code(getattr(client.stub, method)(request_))
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert needle in details and "Traceback" not in details
    assert client.service.calls == []


@pytest.mark.parametrize(("failure", "code"), [
    (TrajectoryNotFound("trajectory x not found"), grpc.StatusCode.NOT_FOUND),
    (ConversationNotFound("conversation x not found"), grpc.StatusCode.NOT_FOUND),
    (ConversationBusy("another turn of conversation x is still running"), grpc.StatusCode.FAILED_PRECONDITION),
    (ConversationFull("conversation x holds its limit"), grpc.StatusCode.FAILED_PRECONDITION),
    (NotAwaitingClarification("trajectory x is not waiting"), grpc.StatusCode.FAILED_PRECONDITION),
    (ClarificationError("choice 7 is not one of the offered choices"), grpc.StatusCode.INVALID_ARGUMENT),
    (ServiceUnavailable("postgres at 10.0.0.5: connection refused"), grpc.StatusCode.UNAVAILABLE),
    (RuntimeError("a bug with secrets in it"), grpc.StatusCode.INTERNAL),
])
async def test_service_failures_become_status_codes(failure: Exception, code: grpc.StatusCode) -> None:
    async for c in _serve(FakeService(fail=failure), Settings()):
        got, details = await _code(c.stub.Clarify(pb.ClarifyRequest(trajectory_id=str(TID), index=1)))
        assert got == code
        # internals (hosts, a bug's message) stay in the log
        assert "10.0.0.5" not in details and "secrets" not in details
        assert (await _code(c.stub.Search(pb.SearchRequest(q="x"))))[0] == code


async def test_runs_over_the_limit_are_unavailable_at_once() -> None:
    gate = asyncio.Event()
    async for c in _serve(FakeService(gate=gate), Settings(max_inflight_runs=1)):
        first = asyncio.ensure_future(c.stub.Ask(pb.AskRequest(question="q")))
        await c.service.started.wait()
        code, details = await _code(c.stub.Ask(pb.AskRequest(question="q")))
        assert code == grpc.StatusCode.UNAVAILABLE and "limit" in details
        gate.set()
        assert (await first).status == pb.STATUS_ANSWERED
        assert (await c.stub.Ask(pb.AskRequest(question="q"))).status == pb.STATUS_ANSWERED, "the slot is free"


async def test_a_run_past_its_deadline_is_deadline_exceeded() -> None:
    api = SearchAIApi(FakeService(gate=asyncio.Event()), Settings())
    api._timeout_s = 0.2  # the loop's deadline plus its grace period, shortened for the test
    context = RecordingContext()
    reply = await api.ask(pb.AskRequest(question="q"), context)
    assert context.code == grpc.StatusCode.DEADLINE_EXCEEDED and "did not finish" in context.details
    assert reply == pb.AskReply()


async def test_api_keys_are_required_when_configured() -> None:
    async for c in _serve(FakeService(), Settings(api_keys=["s3cret"])):
        assert (await _code(c.stub.Search(pb.SearchRequest(q="x"))))[0] == grpc.StatusCode.UNAUTHENTICATED
        wrong = (("authorization", "Bearer nope"),)
        assert (await _code(c.stub.Search(pb.SearchRequest(q="x"), metadata=wrong)))[0] == \
            grpc.StatusCode.UNAUTHENTICATED
        assert c.service.calls == []
        for metadata in ((("authorization", "Bearer s3cret"),), (("x-api-key", "s3cret"),)):
            assert len((await c.stub.Search(pb.SearchRequest(q="x"), metadata=metadata)).hits) == 1


def test_the_committed_modules_are_generated_from_the_proto(tmp_path: Path) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc")
    rel = PROTO.relative_to(REPO)
    argv = ["protoc", f"-I{REPO}", f"--python_out={tmp_path}", f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}", str(rel)]
    assert protoc.main(argv) == 0
    for name in ("searchai_pb2.py", "searchai_pb2.pyi", "searchai_pb2_grpc.py"):
        fresh = (tmp_path / rel.parent / name).read_text(encoding="utf-8")
        assert fresh == (PROTO.parent / name).read_text(encoding="utf-8"), f"regenerate {name} (see {rel})"
