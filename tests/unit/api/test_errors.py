"""One exception hierarchy, one table: every failure of ours has a kind, and every kind an HTTP and a gRPC status."""

from __future__ import annotations

import uuid
from typing import get_args

import grpc
import pytest
from starlette.exceptions import HTTPException

from agentic_rag.api.errors import STATUSES, ApiError, api_error
from agentic_rag.api.service import ServiceUnavailable
from agentic_rag.errors import AgenticRagError, ErrorKind
from agentic_rag.models.base import GenerationError
from agentic_rag.orchestrator.loop import ClarificationError, NotAwaitingClarification
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryNotFound, TrajectoryNotWaiting
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.storage.qdrant import QdrantStoreInUse


def test_every_kind_has_exactly_one_row() -> None:
    assert set(STATUSES) == set(get_args(ErrorKind))


@pytest.mark.parametrize(("exc", "http", "code"), [
    (ClarificationError("choice 9 was not offered"), 422, grpc.StatusCode.INVALID_ARGUMENT),
    (NotAwaitingClarification("it ended"), 409, grpc.StatusCode.FAILED_PRECONDITION),
    (TrajectoryNotWaiting(uuid.uuid4(), "answered"), 409, grpc.StatusCode.FAILED_PRECONDITION),
    (TrajectoryNotFound("no such trajectory"), 404, grpc.StatusCode.NOT_FOUND),
    (TrajectoryError("insert failed on host db-7"), 503, grpc.StatusCode.UNAVAILABLE),
    (RetrievalError("pg_graph", "timeout", "k_hop ran past its limit"), 503, grpc.StatusCode.UNAVAILABLE),
    (QdrantStoreInUse("/data/qdrant is open in pid 42"), 503, grpc.StatusCode.UNAVAILABLE),
    (GenerationError("NextStep", 3, ["bad json"]), 502, grpc.StatusCode.UNAVAILABLE),
    (ApiError("unauthorized", "a key is required"), 401, grpc.StatusCode.UNAUTHENTICATED),
    (HTTPException(405), 405, grpc.StatusCode.UNIMPLEMENTED),
])
def test_a_failure_maps_to_its_statuses(exc: Exception, http: int, code: grpc.StatusCode) -> None:
    err = api_error(exc)
    assert err is not None
    assert (err.status, err.grpc_code) == (http, code)


def test_an_unavailable_store_is_told_without_its_internals_and_with_retry_after() -> None:
    tid = uuid.uuid4()
    err = api_error(ServiceUnavailable("ActorDiedError at 10.0.0.7", component="the orchestrator", trajectory_id=tid))
    assert err is not None and err.kind == "unavailable" and err.headers == {"Retry-After": "1"}
    assert "10.0.0.7" not in err.message and str(tid) in err.message
    err = api_error(TrajectoryError("insert failed on host db-7"))
    assert err is not None and "db-7" not in err.message and err.message.startswith("the trajectory store")


def test_anything_not_ours_is_a_bug() -> None:
    assert api_error(RuntimeError("a bug")) is None
    assert api_error(ValueError("a bug too")) is None


def test_each_family_keeps_the_builtin_base_callers_catch() -> None:
    assert isinstance(ClarificationError("x"), ValueError)
    assert isinstance(TrajectoryNotFound("x"), LookupError) and isinstance(TrajectoryNotFound("x"), TrajectoryError)
    assert all(issubclass(c, AgenticRagError) for c in (GenerationError, RetrievalError, ServiceUnavailable, ApiError))
