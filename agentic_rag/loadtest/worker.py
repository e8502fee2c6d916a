"""The locust worker process: runs a plan's steps one after another and records every request.

``python -m agentic_rag.loadtest.worker --plan PLAN.json --out DIR`` writes one
:class:`~agentic_rag.loadtest.records.StepRecord` per line to ``DIR/steps.jsonl``, progress to stderr.

Each step: start the users (a locust ``LocalRunner``), warm up, reset locust's statistics and open the
measured window, close it after the duration (or at ``max_requests`` answers), then stop the users
gracefully so that every request sent in the window is followed to its answer (up to the request
timeout; the rest are counted as cut off).
"""

# locust patches the standard library with gevent when imported, which must happen before anything
# imports ssl (pydantic does not; httpx and asyncpg do, and nothing here imports them)
import locust  # noqa: F401

# isort: split

import argparse
import logging
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from locust.env import Environment
from locust.exception import CatchResponseError

from agentic_rag.loadtest.plan import LoadPlan, Step
from agentic_rag.loadtest.records import RequestSample, StepRecord
from agentic_rag.loadtest.workload import user_class

STEPS_FILE = "steps.jsonl"
PROGRESS_EVERY_S = 10.0
log = logging.getLogger("agentic_rag.loadtest")


def error_kind(exception: BaseException, response: Any) -> str:
    """A short, stable name for a failure: ``http_503:overloaded``, ``timeout``, ``connection_refused``, ..."""
    if isinstance(exception, CatchResponseError):
        return str(exception) or "failed"
    status = int(getattr(response, "status_code", 0) or 0)
    if status:
        try:
            kind = response.json()["error"]["type"]  # the API's error body (http_errors.py)
        except (ValueError, KeyError, TypeError, AttributeError):
            kind = None
        return f"http_{status}:{kind}" if isinstance(kind, str) else f"http_{status}"
    if isinstance(exception, socket.timeout | TimeoutError) or "timed out" in str(exception):
        return "timeout"
    if isinstance(exception, ConnectionRefusedError):
        return "connection_refused"
    if isinstance(exception, ConnectionError):
        return "connection_error"
    return type(exception).__name__


class Recorder:
    """Collects one step's requests by the phase they were sent in; closes the window at ``max_requests``."""

    def __init__(self, max_requests: int) -> None:
        self.max_requests = max_requests
        self.phase = "warmup"
        self.sent = 0  # requests sent in the measured window
        self.warmup: list[RequestSample] = []
        self.samples: list[RequestSample] = []
        self.full = threading.Event()  # gevent's: locust has patched threading

    def on_send(self) -> str:
        if self.phase == "measure":
            self.sent += 1
        return self.phase

    def on_request(self, name: str, response_time: float, response: Any, context: dict[str, Any],
                   exception: BaseException | None, start_time: float | None = None, **_: Any) -> None:
        phase = context.get("phase")
        if phase not in ("warmup", "measure") or name not in ("search_ai", "search"):
            return
        sample = RequestSample(
            lane=name, start=start_time if start_time is not None else time.time() - response_time / 1000,
            latency_ms=max(float(response_time), 0.0), ok=exception is None,
            error=None if exception is None else error_kind(exception, response),
            status_code=int(getattr(response, "status_code", 0) or 0),
            run_status=context.get("run_status"), turns=context.get("turns"), timings=context.get("timings") or {},
        )
        if phase == "warmup":
            self.warmup.append(sample)
            return
        self.samples.append(sample)
        if len(self.samples) >= self.max_requests:
            self.full.set()


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run_step(plan: LoadPlan, step: Step) -> StepRecord:
    """One step from the users' start to the last measured answer."""
    rec = Recorder(plan.max_requests)
    env = Environment(user_classes=[user_class(plan, step, rec)], host=plan.url,
                      stop_timeout=plan.timeout_s + 1.0)
    env.events.request.add_listener(rec.on_request)
    runner = env.create_local_runner()
    started = time.time()
    _progress(f"[{step.label}] {step.users} users" + (f", {step.rate:g} req/s" if step.rate else "") +
              f": warm-up {plan.warmup_s:g} s, then {plan.duration_s:g} s measured")
    # within about a second (locust advises against spawning over 100 a second): the warm-up covers the ramp
    runner.start(step.users, spawn_rate=min(step.users, 100))
    time.sleep(plan.warmup_s)
    runner.stats.reset_all()  # locust's own statistics (not ours) exclude the warm-up too
    rec.phase = "measure"
    window_start = time.time()
    deadline = window_start + plan.duration_s
    while (left := deadline - time.time()) > 0 and not rec.full.is_set():
        rec.full.wait(min(left, PROGRESS_EVERY_S))
        if not rec.full.is_set() and deadline - time.time() > 1:
            errors = sum(not s.ok for s in rec.samples)
            _progress(f"[{step.label}] +{time.time() - window_start:.0f} s: {len(rec.samples)} answered, "
                      f"{errors} errors")
    rec.phase = "after"
    window_end = time.time()
    runner.stop()  # waits up to stop_timeout for each user's request in flight, then kills the rest
    runner.quit()
    ended = time.time()
    record = StepRecord(
        step=step, started=started, window_start=window_start, window_end=window_end, ended=ended,
        ended_early=f"max_requests ({plan.max_requests}) reached" if rec.full.is_set() else None,
        cut_off=max(rec.sent - len(rec.samples), 0), samples=rec.samples, warmup=rec.warmup,
    )
    errors = sum(not s.ok for s in rec.samples) + record.cut_off
    _progress(f"[{step.label}] done: {len(rec.samples)} measured in {record.window_s:.1f} s, {errors} errors")
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run a load-test plan with locust.")
    parser.add_argument("--plan", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    plan = LoadPlan.model_validate_json(args.plan.read_text(encoding="utf-8"))
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / STEPS_FILE).open("w", encoding="utf-8") as f:
        for step in plan.steps:
            f.write(run_step(plan, step).model_dump_json() + "\n")
            f.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
