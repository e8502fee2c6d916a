"""What crosses a deployment handle: our failures survive the trip as themselves; nothing untrusted is taken as is."""

from __future__ import annotations

import pickle
import uuid
from typing import Any

import pytest
from pydantic import ValidationError
from ray.exceptions import RayActorError, RayTaskError
from ray.serve.handle import DeploymentResponse

from agentic_rag.api.service import NotAwaitingClarification
from agentic_rag.errors import AgenticRagError, InvalidInput
from agentic_rag.models.base import GenerationError, ModelOverloaded, ModelUnavailable
from agentic_rag.orchestrator.loop import ClarificationError, RunResult
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryNotFound
from agentic_rag.protocol import (
    MAX_BATCH,
    AgentResponse,
    EntityLinks,
    EntityRef,
    GraphIntent,
    LinkCandidate,
    LinkedMention,
    NextStep,
    QueryRewrite,
    RetrievalResult,
    SearchIntent,
    StructuredQuery,
)
from agentic_rag.protocol.roles import ROLE_TYPES, ROLES, RewriteInput
from agentic_rag.retrievers.dsl import QueryResult
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.serve.models import PlannerReplica, gpu_request_problem
from agentic_rag.serve.wire import (
    HandleModel,
    HandleRetrieval,
    RunReply,
    ok,
    settle,
    unwrap,
)
from agentic_rag.settings import Settings


def test_the_roles_by_name_are_exactly_the_role_contracts() -> None:
    assert {out for out, _ in ROLE_TYPES.values()} == set(ROLES)
    assert all(ROLES[out] == (role, inp) for role, (out, inp) in ROLE_TYPES.items())


FAILURES = [
    GenerationError("NextStep", 3, ["bad json"], "{"),
    ModelUnavailable("planner: the vLLM engine died", retryable=False),
    ModelOverloaded("planner is over its queue"),
    RetrievalError("pg_graph", "timeout", "graph k_hop ran past its time limit"),
    ClarificationError("choice 7 is not one of the offered choices"),
    NotAwaitingClarification("trajectory x is not waiting for a clarification"),
    TrajectoryNotFound("trajectory x not found"),
    TrajectoryError("trajectory store unavailable"),
]


def _fields(exc: BaseException) -> dict[str, Any]:
    return {k: v for k, v in vars(exc).items() if not k.startswith("__")}


class RaisingResponse(DeploymentResponse):  # type: ignore[misc]
    """What a handle call gives when the replica's method raised: awaiting it raises Ray's dual error (a
    RayTaskError that is also an instance of the cause's class), built the way Ray builds it."""

    def __init__(self, cause: BaseException) -> None:  # nothing of Serve's behind it
        # the cause crosses processes pickled, as Ray sends it
        self._error = RayTaskError("handle_request", "Traceback ... (replica internals)",
                                   pickle.loads(pickle.dumps(cause))).as_instanceof_cause()

    def __await__(self):  # type: ignore[no-untyped-def]
        raise self._error
        yield


@pytest.mark.parametrize("exc", FAILURES)
async def test_a_failure_a_replica_raises_is_raised_in_the_caller_as_itself(exc: AgenticRagError) -> None:
    with pytest.raises(AgenticRagError) as raised:
        await settle(RaisingResponse(exc), "Replica.method")
    assert type(raised.value) is type(exc)
    assert str(raised.value) == str(exc)
    assert _fields(raised.value) == _fields(exc)
    assert not isinstance(raised.value, RayTaskError)  # Ray's text (tracebacks, addresses) is left behind


async def test_a_bug_in_a_replica_stays_rays_error() -> None:
    with pytest.raises(RayTaskError):
        await settle(RaisingResponse(RuntimeError("a bug")), "Replica.method")


def _subclasses(cls: type[AgenticRagError]) -> set[type[AgenticRagError]]:
    found = set(cls.__subclasses__())
    return found.union(*(_subclasses(c) for c in found))


def test_every_error_of_ours_pickles_with_its_fields() -> None:
    # the modules that define them are imported above (directly or through the deployments)

    # Ray's dual classes (RayTaskError(X), made as errors cross) are subclasses too: only ours are checked
    classes = {c for c in _subclasses(AgenticRagError) if c.__module__.startswith("agentic_rag.")}
    assert len(classes) >= 20
    for cls in classes:
        exc = cls.__new__(cls)
        exc.args = ("what went wrong",)
        vars(exc).update({"source": "pg_graph", "trajectory_id": uuid.uuid4(), "attempts": 2})
        back = pickle.loads(pickle.dumps(exc))
        assert type(back) is cls and back.args == exc.args and _fields(back) == _fields(exc), cls


@pytest.mark.parametrize("raw", [{"value": 1, "extra": 2}, {"error": {"kind": "generation", "message": "x"}}, [1]])
def test_malformed_replies_are_refused(raw: Any) -> None:
    with pytest.raises(ValidationError):
        unwrap(raw)


def test_run_reply_round_trip() -> None:
    response = AgentResponse.model_validate({
        "answer": "Luffy is in One Piece.", "status": "answered", "confidence": 0.9,
        "evidence": {"termination_reason": "sufficient"},
    })
    result = RunResult(trajectory_id=uuid.uuid4(), request_id="r1", response=response, turns=1, latency_ms=12.5,
                       timings={"total_ms": 12.5}, mode="agentic")
    assert RunReply.model_validate(unwrap(ok(RunReply.of(result)))).result() == result


async def _planner_replica(args: dict[str, Any]) -> PlannerReplica:
    """A PlannerModel replica built as Serve builds one whose constructor is async."""
    replica = PlannerReplica.__new__(PlannerReplica)
    await replica.__init__(args)  # type: ignore[misc]
    return replica


async def test_model_replica_answers_only_its_roles_with_valid_inputs() -> None:
    replica = await _planner_replica({"planner_backend": "heuristic", "log_level": "WARNING"})
    luffy = LinkCandidate(entity=EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001"),
                          name="Monkey D. Luffy", matched="Luffy", match="alias")
    links = EntityLinks(mentions=[LinkedMention(text="Luffy", start=15, end=20, candidates=[luffy])])
    state = RewriteInput(question="Which anime is Luffy in?", links=links).model_dump(mode="json", exclude_none=True)
    reply = unwrap(await replica.generate("rewrite", state, 256, 0.0))
    assert QueryRewrite.model_validate(reply["output"]).mentions == ["Luffy"]
    for bad in ("os.system", "BaseModel", "QueryRewrite", ["rewrite"]):
        with pytest.raises(ValueError, match="not a role"):
            unwrap(await replica.generate(bad, state, 256, 0.0))
    with pytest.raises(ValueError):  # the input of another role, or none
        unwrap(await replica.generate("select", state, 256, 0.0))
    with pytest.raises(ValueError):
        unwrap(await replica.generate("rewrite", [{"role": "user", "content": "x"}], 256, 0.0))
    with pytest.raises(ValueError):
        unwrap(await replica.generate("rewrite", state, 10**9, 0.0))


RAY_TEXT = "The actor died unexpectedly before finishing this task. ip: 10.0.0.7, pid: 4242, " * 50


class DeadResponse(DeploymentResponse):  # type: ignore[misc]
    """What a handle call to a killed replica gives: awaiting it raises Ray's error."""

    def __init__(self) -> None:  # nothing of Serve's behind it
        pass

    def __await__(self):  # type: ignore[no-untyped-def]
        raise RayActorError(error_msg=RAY_TEXT)
        yield

    def cancel(self) -> None:
        pass


class DeadHandle:
    """A deployment handle whose every method's call fails as a dead replica's does."""

    def __getattr__(self, method: str) -> Any:
        return type("Method", (), {"remote": staticmethod(lambda *a, **k: DeadResponse())})()


async def test_a_dead_deployment_is_reported_in_our_words() -> None:
    retrieval = HandleRetrieval(DeadHandle(), DeadHandle(), Settings())  # type: ignore[arg-type]
    start = EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001")
    with pytest.raises(RetrievalError) as info:
        await retrieval.graph(GraphIntent(rationale="r", query_type="neighbors", start=start))
    assert (info.value.source, info.value.reason) == ("postgres", "unavailable")
    assert "GraphRetriever deployment is unavailable" in str(info.value) and "10.0.0.7" not in str(info.value)
    with pytest.raises(ModelUnavailable) as failed:  # which the loop answers with the heuristic
        await HandleModel(DeadHandle(), "PlannerModel").generate(RewriteInput(question="Luffy?"), QueryRewrite)
    assert failed.value.retryable and "10.0.0.7" not in str(failed.value)


def test_a_vllm_replica_without_a_gpu_is_refused() -> None:
    assert gpu_request_problem("vllm", []) is not None
    assert "num_gpus: 1" in (gpu_request_problem("vllm", []) or "")
    assert gpu_request_problem("vllm", ["0"]) is None
    assert gpu_request_problem("heuristic", []) is None and gpu_request_problem("transformers", []) is None


class DeadEngine:
    """A text backend over an engine that has died (what vLLM's AsyncLLM.check_health reports)."""

    name = "dead"
    shut = False

    async def complete(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("not called")

    async def check_health(self) -> None:
        raise RuntimeError("EngineDeadError: the engine process died")

    def shutdown(self) -> None:
        self.shut = True


async def test_the_model_replica_forwards_its_engines_health_and_shuts_it_down() -> None:
    replica = await _planner_replica({"planner_backend": "heuristic", "log_level": "WARNING"})
    assert replica.warm_up == []  # the heuristic holds no weights: nothing to warm up
    await replica.check_health()  # the heuristic has no engine: always healthy
    dead = DeadEngine()
    replica._text = dead  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="engine process died"):
        await replica.check_health()
    replica.__del__()
    assert dead.shut


async def test_a_model_call_whose_input_is_not_its_roles_is_refused_before_the_wire() -> None:
    with pytest.raises(ValueError, match="the rewrite role does not produce NextStep"):
        await HandleModel(DeadHandle(), "PlannerModel").generate(RewriteInput(question="Luffy?"), NextStep)


class Answered(DeploymentResponse):  # type: ignore[misc]
    """A handle call whose replica answered ``value``."""

    def __init__(self, value: Any) -> None:  # nothing of Serve's behind it
        self._value = value

    def __await__(self):  # type: ignore[no-untyped-def]
        return self._answer().__await__()

    async def _answer(self) -> Any:
        return self._value

    def cancel(self) -> None:
        pass


class Recording:
    """A deployment handle that records its calls and answers through ``answer(method, *args)``."""

    def __init__(self, answer: Any) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._answer = answer

    def __getattr__(self, method: str) -> Any:
        def remote(*args: Any) -> Answered:
            self.calls.append((method, args))
            return Answered(self._answer(method, *args))

        return type("Method", (), {"remote": staticmethod(remote)})()


def _search(query: str) -> SearchIntent:
    return SearchIntent(rationale="r", entity_type="anime", query=query)


async def test_a_turns_intents_cross_in_one_call_per_retriever_deployment() -> None:
    """Issue 39: however many intents a turn has, one handle call per deployment; each outcome back in its
    intent's place, a failed one as the error the in-process executor raises, its siblings' results kept."""
    start = EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001")
    found = {"summary": "1 result", "raw_data": [], "count": 1}

    def vector(method: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        assert method == "execute" and [i["kind"] for i in items] == ["search", "search"]
        return ok([{"value": found, "ms": 2.0},
                   {"error": {"source": "qdrant", "reason": "timeout", "message": "too slow"}, "ms": 3.0}])

    def graph(method: str, items: list[dict[str, Any]]) -> dict[str, Any]:
        assert method == "execute" and [i["kind"] for i in items] == ["graph", "query"]
        return ok([{"value": {"result": {"summary": "none", "count": 0},
                              "labels": {}}, "ms": 1.0},
                   {"value": {"summary": "0 rows", "count": 0, "total": 0, "params_bound": 1}, "ms": 1.5}])

    vectors, graphs = Recording(vector), Recording(graph)
    retrieval = HandleRetrieval(vectors, graphs, Settings())  # type: ignore[arg-type]
    intents = [_search("luffy"), GraphIntent(rationale="r", query_type="neighbors", start=start), _search("zoro"),
               StructuredQuery(rationale="r", entity_type="anime")]
    done = await retrieval.execute(intents)
    assert len(vectors.calls) == len(graphs.calls) == 1  # four intents, two hops
    assert isinstance(done[0].found, RetrievalResult) and done[0].found.count == 1 and done[0].ms == 2.0
    assert isinstance(done[1].found, tuple) and done[1].found[0].count == 0
    assert isinstance(done[2].error, RetrievalError) and (done[2].error.source, done[2].error.reason) == (
        "qdrant", "timeout")
    assert isinstance(done[3].found, QueryResult) and done[3].found.params_bound == 1


async def test_a_retriever_replica_runs_each_intent_and_one_failure_fails_alone() -> None:
    from agentic_rag.serve.retrievers import _execute

    async def step(raw: Any) -> Any:
        if raw["n"] == 1:
            raise RetrievalError("postgres", "unavailable", "connection refused")
        if raw["n"] == 2:
            raise KeyError("a bug")
        return {"n": raw["n"]}

    items = [{"kind": "graph", "intent": {"n": n}} for n in range(3)]
    got = unwrap(await _execute(items, "postgres", {"graph": step}))
    assert got[0]["value"] == {"n": 0} and got[0]["error"] is None
    assert got[1]["error"] == {"source": "postgres", "reason": "unavailable", "message": "connection refused"}
    assert got[2]["error"]["reason"] is None and got[2]["error"]["message"].startswith("KeyError")
    with pytest.raises(InvalidInput, match="does not run search intents"):
        await _execute([{"kind": "search", "intent": {}}], "postgres", {"graph": step})
    with pytest.raises(InvalidInput, match="at most"):
        await _execute([{"kind": "graph", "intent": {"n": 0}}] * (MAX_BATCH + 1), "postgres", {"graph": step})


class Refused(Answered):
    """A handle call the replica refused (what settle raises for our own error from a replica)."""

    async def _answer(self) -> Any:
        raise InvalidInput("this deployment does not run graph intents")


async def test_a_deployment_that_refuses_a_turns_call_fails_only_its_own_intents() -> None:
    found = {"summary": "1 result", "raw_data": [], "count": 1}
    vectors = Recording(lambda method, items: ok([{"value": found, "ms": 1.0}]))
    graphs = Recording(lambda method, items: None)
    graphs.__dict__["execute"] = type("Method", (), {"remote": staticmethod(lambda *a: Refused(None))})()
    retrieval = HandleRetrieval(vectors, graphs, Settings())  # type: ignore[arg-type]
    start = EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001")
    done = await retrieval.execute([_search("luffy"), GraphIntent(rationale="r", query_type="neighbors", start=start)])
    assert isinstance(done[0].found, RetrievalResult)
    assert isinstance(done[1].error, InvalidInput) and done[1].found is None
