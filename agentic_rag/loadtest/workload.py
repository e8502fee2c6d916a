"""The locust users: clients of the agent lane (``/v1/search_ai``) and the typeahead lane (``/v1/search``).

Imported only by the worker process (:mod:`agentic_rag.loadtest.worker`), after locust has patched the
standard library. Each request's outcome reaches the recorder through locust's ``request`` event; what
the response says about the run (turns, per-stage timings, status) travels in the request's context.
"""

from __future__ import annotations

import itertools
import random
import time
from typing import Any, ClassVar, Protocol

from locust import FastHttpUser
from locust.contrib.fasthttp import ResponseContextManager

from agentic_rag.loadtest.plan import LoadPlan, Step

# a client told to come back later does, but not later than this: a load test that waits out a long
# Retry-After measures nothing
MAX_RETRY_AFTER_S = 5.0
INVALID_BODY = "invalid_body"


class Phases(Protocol):
    def on_send(self) -> str:
        """Count a request as it is sent; say which phase (warmup, measure, after) it belongs to."""
        ...


class ServiceUser(FastHttpUser):
    """One client: a question or a typeahead query per task, as the plan's mix says."""

    abstract = True
    plan: ClassVar[LoadPlan]
    phases: ClassVar[Phases]
    _ids: ClassVar[itertools.count[int]] = itertools.count()

    # open loop: each user sends one request per this many seconds (0: closed loop, the next at once)
    interval_s: ClassVar[float] = 0.0

    def on_start(self) -> None:
        self.rng = random.Random(self.plan.seed * 1_000_003 + next(self._ids))
        # Users spawn together: a random phase within one interval spreads their arrivals evenly. (locust's
        # constant_throughput counts its first interval from the user's creation, so a phase slept here would
        # bunch every user's second request together; hence this pacing of our own.)
        phase = self.rng.uniform(0.0, self.interval_s)
        self.next_at = time.monotonic() + phase
        time.sleep(phase)

    def wait_time(self) -> float:
        """Until this user's next slot: one interval after the last, or at once when a request overran it."""
        if not self.interval_s:
            return 0.0
        now = time.monotonic()
        self.next_at = max(self.next_at + self.interval_s, now)
        return self.next_at - now

    def ask(self) -> None:
        """A question from the mix through the agent loop; turns, timings and status go to the recorder."""
        body = {"question": self.rng.choice(self.plan.questions), "mode": self.plan.run_mode}
        with self.client.post("/v1/search_ai", json=body, name="search_ai", catch_response=True,
                              headers=self.plan.headers(), context={"phase": self.phases.on_send()}) as resp:
            if resp.status_code == 200:
                _record_run(resp)
        self._back_off(resp)

    def search(self) -> None:
        """A typeahead query from the mix."""
        body = {"q": self.rng.choice(self.plan.typeahead)}
        with self.client.post("/v1/search", json=body, name="search", catch_response=True,
                              headers=self.plan.headers(), context={"phase": self.phases.on_send()}) as resp:
            if resp.status_code == 200 and not _json_has(resp, "hits"):
                resp.failure(INVALID_BODY)
        self._back_off(resp)

    def _back_off(self, resp: ResponseContextManager) -> None:
        if resp.status_code == 503:
            try:
                wait = float(str(resp.headers.get("retry-after") or 1.0) if resp.headers else 1.0)
            except ValueError:
                wait = 1.0
            time.sleep(min(max(wait, 0.0), MAX_RETRY_AFTER_S))  # gevent's sleep: locust has patched time


def _json_has(resp: ResponseContextManager, key: str) -> bool:
    try:
        body = resp.json()
    except ValueError:
        return False
    return isinstance(body, dict) and key in body


def _record_run(resp: ResponseContextManager) -> None:
    """Put the run's turns, timings and status into the request's context, or fail a body that lacks them."""
    try:
        body: Any = resp.json()
        turns = int(body["turns"])
        timings = {str(k): float(v) for k, v in body["timings"].items()}
        status = str(body["status"])
    except (ValueError, KeyError, TypeError, AttributeError):
        resp.failure(INVALID_BODY)
        return
    resp.request_meta["context"].update(turns=turns, timings=timings, run_status=status)


def user_class(plan: LoadPlan, step: Step, phases: Phases) -> type[ServiceUser]:
    """The user class of one step: its pacing, its lane weights, the plan's host and timeouts."""
    typeahead = round(plan.typeahead_share * 100)
    attrs: dict[str, Any] = {
        "abstract": False, "host": plan.url, "plan": plan, "phases": phases,
        # open loop: the step's users share its rate, each sending one request per users / rate seconds
        "interval_s": 0.0 if step.mode == "closed" else step.users / (step.rate or 1.0),
        "network_timeout": plan.timeout_s, "connection_timeout": min(plan.timeout_s, 10.0),
        "tasks": {ServiceUser.ask: 100 - typeahead, **({ServiceUser.search: typeahead} if typeahead else {})},
    }
    return type(f"Client{step.label}", (ServiceUser,), attrs)
