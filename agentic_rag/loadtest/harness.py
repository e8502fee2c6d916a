"""Run a load test: the sampler and the locust worker as child processes, then their records as one run.

The sampler starts first, so the replica timeline has the service at rest before the load, and keeps
sampling after it for the cool-down, so scaling back in is on record too; the cool-down ends early once
every deployment is back to its replica count from before the load.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from agentic_rag.errors import AgenticRagError
from agentic_rag.loadtest.plan import LoadPlan
from agentic_rag.loadtest.records import LoadTestRun, ReplicaSample, ReplicaTimeline, StepRecord, read_jsonl
from agentic_rag.loadtest.serve_sampler import REPLICAS_FILE, STATUS_FILE

RAW = "raw"
RUN_FILE = "run.json"
STEPS_FILE = "steps.jsonl"  # written by the worker
SAMPLER_START_S = 30.0  # joining a Ray cluster takes a few seconds; longer than this, go on without waiting
LEAD_IN_S = 3.0  # samples of the service at rest before the load starts


class HarnessError(AgenticRagError, RuntimeError):
    """The load could not be generated (the worker failed or overran its time bound)."""


def _python_module(module: str, *args: str | Path) -> list[str]:
    return [sys.executable, "-m", module, *(str(a) for a in args)]


def _at_rest(samples: list[ReplicaSample], baseline: dict[str, int]) -> bool:
    """Every deployment is back to its count from before the load, with no replica starting or stopping."""
    last = next((s for s in reversed(samples) if s.replicas), None)
    if last is None or not last.replicas:
        return False
    return all(set(states) <= {"RUNNING"} and states.get("RUNNING", 0) <= baseline.get(name, 0)
               for name, states in last.replicas.items())


def run(plan: LoadPlan, out: Path, *, ray_address: str = "auto", interval_s: float = 1.0, cooldown_s: float = 60.0,
        say: Callable[[str], None] = print, dsn: str | None = None) -> LoadTestRun:
    """Generate the plan's load against ``plan.url``, sample Serve throughout (and the app's database, ``dsn``,
    when given), and return the recorded run.

    Raw records go to ``out/raw`` (``run.json`` holds the whole run, from which a report can be rebuilt).
    """
    raw = out / RAW
    raw.mkdir(parents=True, exist_ok=True)
    for stale in (STEPS_FILE, REPLICAS_FILE, STATUS_FILE, RUN_FILE):
        (raw / stale).unlink(missing_ok=True)
    plan_path = raw / "plan.json"
    plan_path.write_text(plan.model_dump_json(indent=2), encoding="utf-8")
    started = time.time()
    sampler = subprocess.Popen(_python_module("agentic_rag.loadtest.serve_sampler", "--out", raw, "--url", plan.url,
                                              "--ray-address", ray_address, "--interval", str(interval_s),
                                              *(("--dsn", dsn) if dsn else ())))
    try:
        status = _wait_for_sampler(raw, sampler)
        if status.get("available"):
            time.sleep(LEAD_IN_S)
        else:
            say(f"replica counts unavailable: {status.get('reason') or 'the sampler did not start'}")
        try:
            worker = subprocess.run(_python_module("agentic_rag.loadtest.worker", "--plan", plan_path, "--out", raw),
                                    timeout=plan.time_bound_s(), check=False)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"the load generator overran its time bound ({plan.time_bound_s():.0f} s)") from None
        if worker.returncode != 0:
            raise HarnessError(f"the load generator failed (exit status {worker.returncode}); see its output above")
        load_ended = time.time()
        if status.get("available") and cooldown_s > 0:
            _cool_down(raw, cooldown_s, say)
    finally:
        # SIGINT, not SIGTERM: the sampler is a Ray driver, and Ray reports a SIGTERM as a crash on stderr
        sampler.send_signal(signal.SIGINT)
        try:
            sampler.wait(timeout=15)
        except subprocess.TimeoutExpired:
            sampler.kill()
            sampler.wait()
    result = LoadTestRun(plan=plan, started=started, load_ended=load_ended, finished=time.time(),
                         steps=read_jsonl(raw / STEPS_FILE, StepRecord), replicas=_timeline(raw))
    (raw / RUN_FILE).write_text(result.model_dump_json(), encoding="utf-8")
    return result


def load_run(out: Path) -> LoadTestRun:
    """A run recorded earlier under ``out`` (its ``raw/run.json``)."""
    path = out / RAW / RUN_FILE
    try:
        return LoadTestRun.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"no recorded run at {path}: {exc}") from exc


def _wait_for_sampler(raw: Path, sampler: subprocess.Popen[bytes]) -> dict[str, object]:
    deadline = time.monotonic() + SAMPLER_START_S
    path = raw / STATUS_FILE
    while time.monotonic() < deadline and sampler.poll() is None:
        if path.exists():
            try:
                status: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
                return status
            except ValueError:  # caught half written
                pass
        time.sleep(0.2)
    return {"available": False, "reason": "the sampler did not report in time" if sampler.poll() is None
            else f"the sampler exited with status {sampler.returncode}"}


def _cool_down(raw: Path, cooldown_s: float, say: Callable[[str], None]) -> None:
    samples = read_jsonl(raw / REPLICAS_FILE, ReplicaSample)
    baseline = next((s for s in samples if s.replicas), None)
    if baseline is None or not baseline.replicas:
        return
    at_rest = {name: states.get("RUNNING", 0) for name, states in baseline.replicas.items()}
    say(f"load done; sampling replicas for up to {cooldown_s:g} s while the service scales back in ...")
    deadline = time.monotonic() + cooldown_s
    while time.monotonic() < deadline:
        time.sleep(2.0)
        if _at_rest(read_jsonl(raw / REPLICAS_FILE, ReplicaSample), at_rest):
            say("every deployment is back to its replica count from before the load")
            time.sleep(3.0)  # a few samples of the rest state for the plot
            return


def _timeline(raw: Path) -> ReplicaTimeline:
    samples = read_jsonl(raw / REPLICAS_FILE, ReplicaSample)
    try:
        status = json.loads((raw / STATUS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        status = {"available": False, "reason": "the sampler did not start"}
    read_serve = any(s.replicas for s in samples)
    reason = status.get("reason")
    if status.get("available") and not read_serve:
        reason = "Ray answered, but Serve reported no running application"
    return ReplicaTimeline(available=bool(status.get("available")) and read_serve, reason=reason, samples=samples)
