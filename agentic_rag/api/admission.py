"""Admission per API key: how many runs a key may hold at once, and how fast it may start new ones.

Every front door that starts runs (the HTTP API, SearchAI over gRPC and so GraphQL, MCP's tools) asks
:meth:`Admission.slot` before a run and gives the slot back when its response has been sent. A key over its
bound gets :class:`TooManyRuns` (HTTP 429 with ``Retry-After``, gRPC ``RESOURCE_EXHAUSTED``), so one tenant
flooding the service is told to slow down while the others keep their share; the per-process limit
(``max_inflight_runs``, 503) still guards the process itself.

The counts must hold across replicas, so they live in one place: PostgreSQL, which every replica reaches
already and which survives any replica (migration 0019: a slot row per run being served, a GCRA timestamp
per key, both written by one function under the key's advisory lock). A library limiter was considered: the
well-kept async ones (``limits``, ``aiolimiter``) keep their state in memory or in Redis, MongoDB or
memcached, none of which this system runs; PostgreSQL costs one short statement to enter and one to leave. A key
refused for its rate is refused by each replica on its own until the time the store gave (no run of it could be
admitted before then anyway), so a flood costs the database one statement per replica per refusal period.
A slot whose holder died lapses at the run's deadline and a margin.

A key is known by its id, never by itself (:func:`key_id`): ``k-`` and 12 hex digits of its SHA-256, or
``anonymous`` for the callers without one, who share one tenant. Limits and metrics use the id.
"""

from __future__ import annotations

import contextvars
import hashlib
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from prometheus_client import Counter

from agentic_rag.errors import AgenticRagError, ErrorKind, Unavailable
from agentic_rag.settings import KeyLimit, Settings
from agentic_rag.storage.retry import DATABASE_FAILURES, with_connection
from agentic_rag.storage.sql import Pool, Query

__all__ = ["ANONYMOUS", "CALLER", "Admission", "Limits", "TooManyRuns", "key_id"]

log = logging.getLogger(__name__)

ANONYMOUS = "anonymous"
HOLD_MARGIN_S = 30.0  # a slot outlives its run's deadline by this much (the API's grace and the reply)
TIMEOUT_S = 2.0  # one admission statement; past it the door answers 503, as for any store that does not answer
# The key id of the caller whose request this is, as its front door identified it; read where the run starts
# (gRPC's run, MCP's tools), in the request's own context.
CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("agentic_rag_caller", default=ANONYMOUS)

ADMIT_SQL = Query("SELECT * FROM agentic_rag_admit(:key, :slot, :max_runs, :rate, :burst, :hold_s)")
LEAVE_SQL = Query("DELETE FROM admission_slots WHERE id = :slot")


def key_id(key: str | None) -> str:
    """How limits, metrics and logs name a key: never the key itself."""
    if key is None:
        return ANONYMOUS
    return "k-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:12]


class TooManyRuns(AgenticRagError):
    """A key over its own bound: it holds as many runs as it may, or starts them faster than its rate."""

    kind: ErrorKind = "too_many_requests"

    def __init__(self, message: str, *, key: str, reason: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.key = key
        self.reason = reason
        self.retry_after_s = retry_after_s

    @property
    def retry_after(self) -> str:
        """Whole seconds, as ``Retry-After`` takes them (at least 1)."""
        return str(max(1, math.ceil(self.retry_after_s)))


class AdmissionUnavailable(Unavailable):
    """The admission store did not answer: the run is refused with a 503, as when any store is down."""


@dataclass(frozen=True, slots=True)
class _Refused:
    until: float  # time.monotonic()
    message: str


@dataclass(frozen=True, slots=True)
class Limits:
    """One key's bounds, its own over the defaults."""

    max_runs: int
    rate_per_s: float | None
    burst: int

    @classmethod
    def of(cls, key: str, settings: Settings) -> Limits:
        own = settings.key_limits.get(key, KeyLimit())
        rate = own.rate_per_s if own.rate_per_s is not None else settings.key_rate_per_s
        burst = own.burst or settings.key_burst or max(1, math.ceil(rate or 1))
        max_runs = own.max_runs or settings.key_max_runs or max(1, settings.max_inflight_runs // 2)
        return cls(max_runs=max_runs, rate_per_s=rate, burst=burst)


class Admission:
    """The per-key bounds over one PostgreSQL pool. Counters (registered by the app that exposes metrics):
    :attr:`collectors`."""

    def __init__(self, pool: Pool, settings: Settings) -> None:
        self._pool = pool
        self._settings = settings
        self._hold_s = settings.agent_deadline_ms / 1000 + HOLD_MARGIN_S
        self._limits: dict[str, Limits] = {}
        self._refused: dict[str, _Refused] = {}  # keys over their rate: refused here until the time the store gave
        self.decisions = Counter("agentic_rag_admission", "Runs asked for by API key id and how each was decided "
                                 "(admitted, runs: the key held its bound, rate: it asked too fast).",
                                 ["key", "outcome"], registry=None)

    @property
    def collectors(self) -> Sequence[Counter]:
        return (self.decisions,)

    def limits(self, key: str) -> Limits:
        if (found := self._limits.get(key)) is None:
            found = self._limits[key] = Limits.of(key, self._settings)
        return found

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        """Hold one of ``key``'s run slots for the block; :class:`TooManyRuns` when it may not have one now,
        :class:`AdmissionUnavailable` when PostgreSQL does not answer."""
        limits = self.limits(key)
        refused = self._refused.get(key)
        if refused is not None and time.monotonic() < refused.until:
            # over its rate, no run of this key can be admitted before the time the store gave: a flood is
            # refused here, and never reaches PostgreSQL (the state is unchanged by a refusal, so this is exact)
            self.decisions.labels(key, "rate").inc()
            raise TooManyRuns(refused.message, key=key, reason="rate", retry_after_s=refused.until - time.monotonic())
        slot = uuid.uuid4()
        params = {"key": key, "slot": slot, "max_runs": limits.max_runs, "rate": limits.rate_per_s,
                  "burst": limits.burst, "hold_s": self._hold_s}
        try:  # a retry after a lost reply finds its slot already taken (the function inserts it once)
            row = await with_connection(self._pool, lambda conn: ADMIT_SQL.fetchrow(conn, params),
                                        attempts=self._settings.retry_attempts, timeout_s=TIMEOUT_S)
        except DATABASE_FAILURES as exc:
            raise AdmissionUnavailable(f"admission store unavailable: {exc or type(exc).__name__}") from exc
        assert row is not None  # the function always returns its one row
        if not row["admitted"]:
            self.decisions.labels(key, row["reason"]).inc()
            what = (f"{row['held']} runs in flight, its bound" if row["reason"] == "runs"
                    else f"more than {limits.rate_per_s:g} runs a second (burst {limits.burst})")
            message = f"too many requests for this API key ({what}); retry after the Retry-After seconds"
            retry_after_s = float(row["retry_after_s"])
            if row["reason"] == "rate":
                self._refused[key] = _Refused(time.monotonic() + retry_after_s, message)
            raise TooManyRuns(message, key=key, reason=row["reason"], retry_after_s=retry_after_s)
        self.decisions.labels(key, "admitted").inc()
        try:
            yield
        finally:
            await self._leave(slot)

    async def _leave(self, slot: uuid.UUID) -> None:
        try:
            await with_connection(self._pool, lambda conn: LEAVE_SQL.execute(conn, {"slot": slot}),
                                  attempts=self._settings.retry_attempts, timeout_s=TIMEOUT_S)
        except DATABASE_FAILURES as exc:
            # the slot lapses by itself at its expiry: until then it counts against its key
            log.warning("could not give an admission slot back (it lapses within %g s): %s", self._hold_s, exc)
