"""What crosses a deployment handle: typed failures survive the trip, and nothing untrusted is taken as is."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from pydantic import ValidationError

from agentic_rag.deployments.models import PlannerReplica
from agentic_rag.deployments.service import NotAwaitingClarification
from agentic_rag.deployments.wire import OUTPUT_TYPES, RunReply, failure_of, ok, raise_failure, unwrap
from agentic_rag.models.base import GenerationError
from agentic_rag.models.prompts import render
from agentic_rag.models.roles import ROLES, RewriteInput
from agentic_rag.orchestrator.loop import ClarificationError, RunResult
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryNotFound
from agentic_rag.protocol import AgentResponse, EntityLinks, EntityRef, LinkCandidate, LinkedMention, QueryRewrite
from agentic_rag.retrievers.errors import RetrievalError


def test_output_types_are_exactly_the_role_contracts() -> None:
    assert set(OUTPUT_TYPES.values()) == set(ROLES)


@pytest.mark.parametrize("exc", [
    GenerationError("NextStep", 3, ["bad json"], "{"),
    RetrievalError("pg_graph", "timeout", "graph k_hop ran past its time limit"),
    ClarificationError("choice 7 is not one of the offered choices"),
    NotAwaitingClarification("trajectory x is not waiting for a clarification"),
    TrajectoryNotFound("trajectory x not found"),
    TrajectoryError("trajectory store unavailable"),
])
def test_expected_failures_are_reraised_as_their_own_type(exc: Exception) -> None:
    failure = failure_of(exc)
    assert failure is not None
    with pytest.raises(type(exc)) as raised:
        raise_failure(failure.model_validate(failure.model_dump(mode="json")))
    assert type(raised.value) is type(exc)
    assert str(raised.value) == str(exc)
    if isinstance(exc, RetrievalError):
        assert isinstance(raised.value, RetrievalError)
        assert (raised.value.source, raised.value.kind) == ("pg_graph", "timeout")


def test_a_timeout_is_a_retrieval_failure_only_where_a_source_is_named() -> None:
    assert failure_of(TimeoutError()) is None
    failure = failure_of(TimeoutError(), source="pg_query")
    assert failure is not None and failure.cause == "timeout"
    assert failure_of(RuntimeError("a bug")) is None  # travels as a Ray error, never dressed up as expected


@pytest.mark.parametrize("raw", [{"value": 1, "extra": 2}, {"error": {"kind": "nonsense", "message": "x"}}, [1]])
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


async def test_model_replica_answers_only_allowlisted_types_with_valid_messages() -> None:
    replica = PlannerReplica({"planner_backend": "heuristic", "log_level": "WARNING"})
    luffy = LinkCandidate(entity=EntityRef(entity_type="character", id="00000000-0000-4000-8000-000000000001"),
                          name="Monkey D. Luffy", matched="Luffy", match="alias")
    links = EntityLinks(mentions=[LinkedMention(text="Luffy", start=15, end=20, candidates=[luffy])])
    messages = render(RewriteInput(question="Which anime is Luffy in?", links=links), QueryRewrite)
    reply = unwrap(await replica.generate(messages, "QueryRewrite", 256, 0.0))
    assert QueryRewrite.model_validate(reply["output"]).mentions == ["Luffy"]
    for bad in ("os.system", "BaseModel", ["QueryRewrite"]):
        with pytest.raises(ValueError, match="not an output type"):
            unwrap(await replica.generate(messages, bad, 256, 0.0))
    with pytest.raises(ValueError):
        unwrap(await replica.generate([{"role": "root", "content": "x"}], "QueryRewrite", 256, 0.0))
    with pytest.raises(ValueError):
        unwrap(await replica.generate(messages, "QueryRewrite", 10**9, 0.0))
