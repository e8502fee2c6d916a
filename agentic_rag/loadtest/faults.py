"""Faults under load (issue 15): clients ask while dependencies fail, then every answer is judged.

A :class:`FaultRun` keeps ``clients`` closed-loop clients asking questions at ``POST /v1/search_ai`` and
probes ``/readyz`` throughout. It runs a baseline phase, then each :class:`Fault` in turn: inject it, keep
the load on until the service is clean again (ready, and a few seconds of answers with no dependency
failure in them) or a time limit passes. What a fault does is the caller's coroutine, so nothing here
knows Ray (:mod:`agentic_rag.serve.faults` kills replicas); PostgreSQL is reached for its own
faults and for the truth about runs.

:func:`judge` then checks what a client and an operator would: no 5xx but 503; every 503 with
``Retry-After``, and with the trajectory id wherever the run was recorded; every 200 stored in full;
degraded answers that say what failed in our own words, while ``/readyz`` says so too; concurrent
resumes of one clarification resolved exactly once; no run left ``running`` once the sweep has passed.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from agentic_rag.dsn import to_url

__all__ = ["CHECKS", "Fault", "FaultRun", "Outcome", "Phase", "Probe", "Verdict", "judge", "markdown",
           "terminate_backends"]

# A warning that says a dependency failed (the loop's own words, orchestrator/state.py failure_text)
DEPENDENCY_FAILED = re.compile(r"unavailable|did not answer in time|could not be looked up| failed\b")
# Text of a library, a host or a process, which must stay in the server's log
LEAKED = re.compile(r"Traceback|[a-z][A-Za-z]*Error\b|Exception\b|actor[ _]?id|SERVE_|\bray\.|psycopg|asyncpg|"
                    r"qdrant_client|127\.0\.0\.1|port=|pid=")
READY_LAG_S = 1.0  # how soon after a degraded answer /readyz must say so (probes go every 0.5 s)
MESSAGE_CHARS = 300  # characters of a transport error's message an outcome keeps
QUOTED_CHARS = 200  # characters of a leaked text a failure quotes
SEQS_SHOWN = 10  # event seqs a failure about gaps shows
LIES_REPORTED = 10  # degraded answers under a ready /readyz reported one by one
CLARIFY_QUESTION = "Tell me about Naruto"  # two strong readings in the demo catalog: the anime and the character
RUNNING_SQL = "SELECT id::text FROM trajectories WHERE tenant = $1 AND status = 'running'"
BY_REQUEST_SQL = "SELECT request_id, id::text, status FROM trajectories WHERE tenant = $1"
ABANDONED_SQL = """
    SELECT extract(epoch FROM created_at)::float8, extract(epoch FROM finished_at)::float8
    FROM trajectories WHERE tenant = $1 AND status = 'abandoned'"""
TERMINATE_SQL = """
    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()"""

Inject = Callable[[], Awaitable[str]]
# What judge() checks, each a list of problems in the verdict
CHECKS = {
    "status": "no 5xx but 503, and every request answered",
    "retry_after": "every 503 carries Retry-After",
    "trajectory_id": "every 503 of a run that was recorded carries its trajectory id",
    "leak": "no library, host or process text reaches the client",
    "stored": "every 200 is stored in full (GET /v1/trajectories/{id})",
    "degraded": "an answer whose steps failed says so",
    "readiness": "/readyz is unready while answers are degraded",
    "resume": "concurrent resumes of one clarification: one 200, the rest 409",
    "running": "no run left running once the sweep has passed",
    "hang": "no request outlasts the run's deadline and the API's grace",
}


@dataclass(frozen=True, slots=True)
class Fault:
    """A named failure; ``inject`` causes it and says what it did (the replica killed, backends terminated).

    ``whole``, when given, says whether what the fault broke is whole again (every replica replaced), beyond the
    clean answers and readiness every fault waits for; ``min_s``: the fault is not called recovered sooner (what it
    breaks may go unnoticed that long); ``extra_s``: how much longer than the run's bound it may take."""

    name: str
    inject: Inject
    whole: Callable[[], bool] | None = None
    min_s: float = 0.0
    extra_s: float = 0.0


@dataclass(slots=True)
class Outcome:
    """One request as the client saw it (wall-clock seconds)."""

    kind: str  # ask, clarify
    request_id: str
    started: float
    ended: float
    status: int  # 0: no HTTP answer at all (connection lost, client timeout)
    retry_after: str | None = None
    error: dict[str, Any] | None = None  # a non-200's error object
    body: dict[str, Any] | None = None  # a 200's body

    @property
    def degraded(self) -> bool:
        """A 200 whose answer says a dependency failed."""
        warnings = (self.body or {}).get("response", {}).get("warnings", [])
        return self.status == 200 and any(DEPENDENCY_FAILED.search(w) for w in warnings)

    @property
    def clean(self) -> bool:
        return self.status == 200 and not self.degraded


@dataclass(frozen=True, slots=True)
class Probe:
    """One ``/readyz`` answer and the span it reflects."""

    sent: float
    received: float
    ready: bool
    checks: dict[str, bool]


@dataclass(slots=True)
class Phase:
    """A fault (or the baseline) and what the service did until it was clean again."""

    name: str
    injected_at: float
    note: str = ""
    ended_at: float = 0.0
    recovered: bool = False
    recovery_s: float = 0.0
    outcomes: list[Outcome] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)

    @property
    def unready_s(self) -> float:
        return sum(p.received - p.sent for p in self.probes if not p.ready) + _gaps(self.probes)


def _gaps(probes: list[Probe]) -> float:
    # the time between an unready probe and the next one counts as unready too
    return sum(max(0.0, b.sent - a.received) for a, b in itertools.pairwise(probes) if not a.ready)


async def terminate_backends(dsn: str) -> str:
    """Terminate every other backend of the app's database (what a failover or an operator's kill does)."""
    conn = await asyncpg.connect(to_url(dsn), timeout=5)
    try:
        killed = await conn.fetchval(TERMINATE_SQL)
    finally:
        await conn.close()
    return f"{killed} backend(s) terminated"


class FaultRun:
    """Load, readiness probes and phases against one served app. Use as ``async with``."""

    def __init__(self, url: str, questions: Sequence[str], *, tenant: str, clients: int,
                 request_timeout_s: float = 120.0, probe_interval_s: float = 0.5) -> None:
        self.url = url
        self.tenant = tenant
        self.clients = clients
        self.phases: list[Phase] = []
        self.resumes: list[list[int]] = []
        self.resumed: set[str] = set()  # trajectories resumed: their first answer is no longer their last
        self._questions = itertools.cycle(questions)
        self._ids = itertools.count(1)
        self._probe_interval_s = probe_interval_s
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._http = httpx.AsyncClient(base_url=url, timeout=request_timeout_s,
                                       limits=httpx.Limits(max_connections=clients + 16),
                                       headers={"X-Tenant": tenant})

    async def __aenter__(self) -> FaultRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        await self._http.aclose()

    @property
    def outcomes(self) -> list[Outcome]:
        return [o for p in self.phases for o in p.outcomes]

    # -- load ------------------------------------------------------------------------------------------

    def start(self, name: str = "baseline") -> None:
        """Start the clients and the readiness probe; the first phase is ``name`` (no fault)."""
        self.phases.append(Phase(name, time.time(), note="no fault"))
        self._tasks = [asyncio.create_task(self._client()) for _ in range(self.clients)]
        self._tasks.append(asyncio.create_task(self._probe()))

    async def stop(self) -> None:
        """Stop the load; requests in flight finish first."""
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        if self.phases and not self.phases[-1].ended_at:
            self.phases[-1].ended_at = time.time()

    def _record(self, o: Outcome) -> None:
        # an answer belongs to the phase in which it arrived
        self.phases[-1].outcomes.append(o)

    async def _client(self) -> None:
        while not self._stop.is_set():
            await self.ask(next(self._questions))

    async def ask(self, question: str) -> Outcome:
        rid = f"{self.tenant}-{next(self._ids)}"
        return await self._post("ask", rid, "/v1/search_ai", {"question": question})

    async def clarify(self, trajectory_id: str, choice: int) -> Outcome:
        rid = f"{self.tenant}-{next(self._ids)}"
        return await self._post("clarify", rid, f"/v1/search_ai/{trajectory_id}/clarify", {"choice": choice})

    async def _post(self, kind: str, rid: str, path: str, body: dict[str, Any]) -> Outcome:
        t0 = time.time()
        try:
            r = await self._http.post(path, json=body, headers={"X-Request-ID": rid})
        except httpx.HTTPError as exc:
            error = {"type": type(exc).__name__, "message": str(exc)[:MESSAGE_CHARS]}
            o = Outcome(kind, rid, t0, time.time(), 0, error=error)
        else:
            payload = _json(r)
            o = Outcome(kind, rid, t0, time.time(), r.status_code, r.headers.get("retry-after"),
                        error=payload.get("error") if r.status_code != 200 else None,
                        body=payload if r.status_code == 200 else None)
        self._record(o)
        return o

    async def _probe(self) -> None:
        while not self._stop.is_set():
            t0 = time.time()
            try:
                r = await self._http.get("/readyz", timeout=10)
                checks = _json(r).get("checks") or {}
                probe = Probe(t0, time.time(), r.status_code == 200, {str(k): bool(v) for k, v in checks.items()})
            except httpx.HTTPError:
                probe = Probe(t0, time.time(), False, {})
            self.phases[-1].probes.append(probe)
            await asyncio.sleep(self._probe_interval_s)

    # -- phases ----------------------------------------------------------------------------------------

    async def baseline(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    async def fault(self, fault: Fault, *, min_s: float = 4.0, max_s: float = 60.0, clean_s: float = 3.0) -> Phase:
        """Inject ``fault``, then keep the load on until the service is clean for ``clean_s`` (or ``max_s``)."""
        self.phases[-1].ended_at = time.time()
        phase = Phase(fault.name, time.time())
        self.phases.append(phase)
        phase.note = await fault.inject()
        min_s, max_s = max(min_s, fault.min_s), max_s + fault.extra_s
        while True:
            await asyncio.sleep(0.25)
            now = time.time()
            if now - phase.injected_at >= max_s:
                break
            recent = [o for o in phase.outcomes if o.ended >= now - clean_s]
            ready = bool(phase.probes) and phase.probes[-1].ready
            if now - phase.injected_at >= min_s and ready and recent and all(o.clean for o in recent) and (
                    fault.whole is None or await asyncio.to_thread(fault.whole)):
                phase.recovered = True
                break
        last_bad = max([o.ended for o in phase.outcomes if not o.clean] +
                       [p.received for p in phase.probes if not p.ready], default=phase.injected_at)
        if fault.whole is not None and phase.recovered:  # recovered when whole: the last replica back counts too
            last_bad = max(last_bad, now)
        phase.recovery_s = last_bad - phase.injected_at
        return phase

    async def resume_race(self, contenders: int) -> list[int]:
        """Ask a question that asks back, then resume it ``contenders`` times at once; their statuses."""
        asked = await self.ask(CLARIFY_QUESTION)
        if asked.status != 200 or (asked.body or {}).get("status") != "needs_clarification":
            raise AssertionError(f"{CLARIFY_QUESTION!r} did not ask for a clarification: {asked.status} "
                                 f"{asked.body or asked.error}")
        tid = str((asked.body or {})["trajectory_id"])
        self.resumed.add(tid)
        done = await asyncio.gather(*(self.clarify(tid, 0) for _ in range(contenders)))
        statuses = sorted(o.status for o in done)
        self.resumes.append(statuses)
        return statuses

    # -- after the run ---------------------------------------------------------------------------------

    async def read_back(self, trajectory_id: str) -> tuple[int, dict[str, Any]]:
        r = await self._http.get(f"/v1/trajectories/{trajectory_id}")
        return r.status_code, _json(r)

    async def until_none_running(self, dsn: str, *, limit_s: float) -> tuple[list[str], float]:
        """Poll PostgreSQL until no run of this tenant is ``running`` (or ``limit_s``); those left and the wait."""
        t0 = time.time()
        conn = await asyncpg.connect(to_url(dsn), timeout=5)
        try:
            while True:
                left = [r[0] for r in await conn.fetch(RUNNING_SQL, self.tenant)]
                if not left or time.time() - t0 >= limit_s:
                    return left, time.time() - t0
                await asyncio.sleep(0.5)
        finally:
            await conn.close()

    def dump(self, path: Path) -> None:
        """Every request and probe as JSON lines, by phase (for a closer look than the table)."""
        with path.open("w", encoding="utf-8") as out:
            for p in self.phases:
                for o in p.outcomes:
                    body = o.body or {}
                    out.write(json.dumps({
                        "phase": p.name, "kind": o.kind, "request_id": o.request_id, "started": o.started,
                        "ended": o.ended, "status": o.status, "retry_after": o.retry_after, "error": o.error,
                        "run_status": body.get("status"), "trajectory_id": body.get("trajectory_id"),
                        "warnings": body.get("response", {}).get("warnings"), "degraded": o.degraded}) + "\n")
                for pr in p.probes:
                    out.write(json.dumps({"phase": p.name, "kind": "probe", "started": pr.sent, "ended": pr.received,
                                          "ready": pr.ready, "checks": pr.checks}) + "\n")

    async def recorded_runs(self, dsn: str) -> dict[str, tuple[str, str]]:
        """This tenant's runs in PostgreSQL: request id -> (trajectory id, status)."""
        conn = await asyncpg.connect(to_url(dsn), timeout=5)
        try:
            return {r[0]: (r[1], r[2]) for r in await conn.fetch(BY_REQUEST_SQL, self.tenant)}
        finally:
            await conn.close()

    async def abandoned(self, dsn: str) -> list[tuple[float, float]]:
        """This tenant's runs the sweep closed as abandoned: (started, closed) wall-clock seconds."""
        conn = await asyncpg.connect(to_url(dsn), timeout=5)
        try:
            return [(float(r[0]), float(r[1])) for r in await conn.fetch(ABANDONED_SQL, self.tenant)]
        finally:
            await conn.close()


def _json(r: httpx.Response) -> dict[str, Any]:
    try:
        value = r.json()
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(slots=True)
class Verdict:
    """What :func:`judge` found: the problems (empty when the run passed) and the figures behind them."""

    problems: dict[str, list[str]] = field(default_factory=lambda: {check: [] for check in CHECKS})
    figures: dict[str, Any] = field(default_factory=dict)

    def fail(self, check: str, text: str) -> None:
        if len(self.problems[check]) < 20:
            self.problems[check].append(text)


async def judge(run: FaultRun, dsn: str, *, sweep_limit_s: float, max_request_s: float,
                read_concurrency: int = 8) -> Verdict:
    """Every check of the issue over a finished run (the load stopped)."""
    v = Verdict()
    outcomes = run.outcomes
    recorded = await run.recorded_runs(dsn)
    for o in outcomes:
        if o.ended - o.started > max_request_s:
            v.fail("hang", f"{o.request_id}: answered {o.status} after {o.ended - o.started:.1f} s, over "
                           f"{max_request_s:g} s")
        if o.status == 0:
            v.fail("status", f"{o.request_id}: no HTTP answer ({(o.error or {}).get('type')})")
        elif o.status >= 500 and o.status != 503:
            v.fail("status", f"{o.request_id}: {o.status} {o.error}")
        if o.status == 503:
            if not o.retry_after:
                v.fail("retry_after", f"{o.request_id}: 503 without Retry-After")
            started = recorded.get(o.request_id)
            given = (o.error or {}).get("trajectory_id")
            if o.kind == "ask" and started is not None and given != started[0]:
                v.fail("trajectory_id", f"{o.request_id}: 503 for run {started[0]} (recorded, {started[1]}) carries "
                       f"trajectory id {given!r}")
        texts = [*(o.body or {}).get("response", {}).get("warnings", []), str((o.error or {}).get("message", ""))]
        for text in texts:
            if LEAKED.search(text):
                v.fail("leak", f"{o.request_id}: library text reached the client: {text[:QUOTED_CHARS]!r}")

    gate = asyncio.Semaphore(read_concurrency)

    async def check_stored(o: Outcome) -> None:
        body = o.body or {}
        async with gate:
            status, traj = await run.read_back(str(body["trajectory_id"]))
        if status != 200:
            v.fail("stored", f"{o.request_id}: its trajectory {body['trajectory_id']} reads {status}")
            return
        resumed = body.get("status") == "needs_clarification" and body["trajectory_id"] in run.resumed
        if not resumed and (traj.get("status") != body.get("status") or
                            traj.get("final_response") != body.get("response")):
            v.fail("stored", f"{o.request_id}: trajectory {body['trajectory_id']} is {traj.get('status')}, not "
                   f"what the client got ({body.get('status')}), or its final response differs")
        seqs = [e.get("seq") for e in traj.get("events", [])]
        if seqs != list(range(1, len(seqs) + 1)) or not seqs:
            v.fail("stored", f"{o.request_id}: trajectory events are not 1..n: {seqs[:SEQS_SHOWN]}")
        failed = [e for e in traj.get("events", []) if e.get("type") == "error"]
        if failed and not o.degraded:
            v.fail("degraded", f"{o.request_id}: {len(failed)} step(s) failed but the answer does not say so: "
                   f"{body.get('response', {}).get('warnings')}")

    answered = [o for o in outcomes if o.status == 200 and (o.body or {}).get("trajectory_id")]
    await asyncio.gather(*(check_stored(o) for o in answered))

    # readiness that tells the truth: every degraded answer met an unready probe over its life or within a
    # second of its end (the probe after it)
    probes = [p for phase in run.phases for p in phase.probes]
    lied = [o for o in outcomes if o.degraded and not any(
        not p.ready and p.sent <= o.ended + READY_LAG_S and p.received >= o.started for p in probes)]
    for o in lied[:LIES_REPORTED]:
        warnings = (o.body or {}).get("response", {}).get("warnings")
        v.fail("readiness", f"{o.request_id}: degraded answer ({warnings}) while /readyz said ready")

    for statuses in run.resumes:
        if statuses.count(200) != 1 or any(s != 409 for s in statuses if s != 200):
            v.fail("resume", f"concurrent resumes of one clarification ended {statuses}, not one 200 and the rest 409")

    left, waited = await run.until_none_running(dsn, limit_s=sweep_limit_s)
    if left:
        v.fail("running", f"{len(left)} run(s) still running {waited:.0f} s after the load: {left[:5]}")
    # how long after the fault that cut them off (the first one after they started) the sweep closed them
    closed = [end - min((p.injected_at for p in run.phases if p.injected_at >= start), default=start)
              for start, end in await run.abandoned(dsn)]
    v.figures = {"requests": len(outcomes), "read_back": len(answered), "lied": len(lied), "left_running": len(left),
                 "sweep_wait_s": round(waited, 1), "resumes": run.resumes, "abandoned": len(closed),
                 "abandoned_closed_s": round(max(closed, default=0.0), 1),
                 "started_503": sum(1 for o in outcomes if o.status == 503 and o.request_id in recorded)}
    return v


def _parts(seconds: dict[str, float]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v:g}" for k, v in seconds.items())


def markdown(run: FaultRun, verdict: Verdict) -> str:
    """The run as a Markdown table, one row per phase, and the checks under it."""
    rows = ["| phase | what was done | requests | 200 | of which degraded | 503 | other | recovered in | "
            "/readyz unready |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in run.phases:
        codes = [o.status for o in p.outcomes]
        other = sorted({c for c in codes if c not in (200, 503)})
        rows.append(
            f"| {p.name} | {p.note} | {len(codes)} | {codes.count(200)} | {sum(o.degraded for o in p.outcomes)} | "
            f"{codes.count(503)} | {len(codes) - codes.count(200) - codes.count(503)}"
            f"{' (' + ', '.join(map(str, other)) + ')' if other else ''} | "
            f"{'-' if p.name == 'baseline' else (f'{p.recovery_s:.1f} s' if p.recovered else 'not recovered')} | "
            f"{p.unready_s:.1f} s |")
    f = verdict.figures
    rows += [
        "",
        f"- every 200 read back at GET /v1/trajectories/{{id}}: {f.get('read_back')} of them, stored in full "
        f"unless listed below",
        f"- 503s whose run had been recorded: {f.get('started_503')}, each carrying its trajectory id unless listed",
        f"- concurrent resumes (statuses per clarification): {f.get('resumes')}",
        f"- runs closed as abandoned by the sweep: {f.get('abandoned')}, the last {f.get('abandoned_closed_s')} s "
        f"after the fault that cut them off; left running after the load: {f.get('left_running')} (waited "
        f"{f.get('sweep_wait_s')} s more)",
        f"- degraded answers while /readyz said ready: {f.get('lied')}",
        *([f"- the Embedder's start (s), as deployed: {_parts(f['embedder_start_deployed'])}; its replacement, "
           f"under the load: {_parts(f['embedder_start_replaced'])}; a fault's recovery bound: "
           f"{f.get('recovery_bound_s')} s"] if "embedder_start_deployed" in f else []),
        *(f"- FAILED: {CHECKS[check]}: {len(found)} problem(s)\n" + "\n".join(f"  - {p}" for p in found)
          for check, found in verdict.problems.items() if found),
    ]
    return "\n".join(rows)
