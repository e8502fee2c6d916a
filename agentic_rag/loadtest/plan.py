"""What a load test runs: its steps (closed-loop concurrency levels or open-loop arrival rates) and query mix.

A plan is written as JSON by the command and read by the locust worker, so it holds plain data only:
the questions themselves, not a question file.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.protocol import Mode

if TYPE_CHECKING:  # the worker reads plans; it must not import asyncpg (and ssl) before locust patches
    from agentic_rag.eval.questions import EvalQuestion

LoopMode = Literal["closed", "open"]
# the two lanes of the API, as the worker names its requests (and the report its rows)
Lane = Literal["search_ai", "search"]
LANES: tuple[Lane, ...] = ("search_ai", "search")


class Step(BaseModel):
    """One load level. Closed loop: ``users`` clients, each sending its next request when the last one answers.

    Open loop: requests arrive at ``rate`` per second in total, from a pool of ``users`` clients each sending
    one request per ``users / rate`` seconds at a random phase (a client whose request outlasts its interval
    sends the next at once, so the pool must exceed rate x latency for arrivals to stay independent of the
    service).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: LoopMode
    users: int = Field(ge=1, le=10_000, description="Concurrent clients (closed loop: the concurrency).")
    rate: float | None = Field(None, gt=0, description="Open loop only: requests per second, all clients together.")

    @property
    def level(self) -> float:
        """The x of this step on the report's plots: concurrency (closed) or offered rate (open)."""
        return float(self.users) if self.mode == "closed" else float(self.rate or 0.0)

    @property
    def label(self) -> str:
        return f"c{self.users}" if self.mode == "closed" else f"r{self.rate:g}"


class LoadPlan(BaseModel):
    """Everything the locust worker needs, bounded in time and in count."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(description="Base URL of the service, e.g. http://127.0.0.1:8000.")
    steps: list[Step] = Field(min_length=1)
    warmup_s: float = Field(ge=0, description="Per step: load before measuring; those requests are not counted.")
    duration_s: float = Field(gt=0, description="Per step: the measured window.")
    max_requests: int = Field(ge=1, description="Per step: the measured window ends early at this many requests.")
    timeout_s: float = Field(gt=0, description="Per request; also how long a step's last requests may drain.")
    questions: list[str] = Field(min_length=1, description="search_ai questions, drawn uniformly at random.")
    typeahead: list[str] = Field(min_length=1, description="search queries (prefixes, names, typos).")
    typeahead_share: float = Field(ge=0, le=0.95, description="Fraction of requests sent to the typeahead lane.")
    run_mode: Mode = "agentic"
    seed: int = 0
    api_key: str | None = Field(None, repr=False, description="Sent as Authorization: Bearer on every request.")
    tenant: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$", description="Sent as X-Tenant.")

    def headers(self) -> dict[str, str]:
        """What every request of this plan carries: its key and its tenant, where it has them."""
        return {**({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}),
                **({"X-Tenant": self.tenant} if self.tenant else {})}

    def time_bound_s(self) -> float:
        """The longest the worker may take: every step's warm-up, window and drain, plus start-up slack."""
        return len(self.steps) * (self.warmup_s + self.duration_s + self.timeout_s + 5.0) + 30.0


def parse_levels(text: str, *, kind: type[int] | type[float] = int) -> list[float]:
    """``"1,8,32"`` as numbers, in the order given; each must be positive."""
    out: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            value = kind(part)
        except ValueError:
            raise ValueError(f"{part!r} is not a number (give a comma-separated list, e.g. 1,8,32)") from None
        if value <= 0:
            raise ValueError(f"levels must be positive, got {part}")
        out.append(float(value))
    if not out:
        raise ValueError("give at least one level")
    return out


def typeahead_queries(names: Iterable[str], *, seed: int = 0) -> list[str]:
    """What people type into a search box for these names: a short prefix, the whole name, and a typo.

    A typo drops one inner letter ("lufy" for "luffy"): it exercises the fuzzy fallback, which costs
    more than a prefix match (docs/benchmarks.md, retrieval).
    """
    rng = random.Random(seed)
    out: list[str] = []
    for name in dict.fromkeys(n.strip() for n in names if n.strip()):
        low = name.lower()
        out.append(low[: rng.randint(3, 6)] if len(low) > 3 else low)
        out.append(name)
        if len(low) >= 5:
            cut = rng.randint(1, len(low) - 2)
            out.append(low[:cut] + low[cut + 1:])
    return out


def mix_from(questions: list[EvalQuestion], *, seed: int = 0) -> tuple[list[str], list[str]]:
    """The questions of an eval set, and typeahead queries made from the entity names they mention."""
    names = [g.name for q in questions for g in q.gold_entities]
    typeahead = typeahead_queries(names, seed=seed) or ["one piece", "lufy", "naru"]
    return [q.question for q in questions], typeahead
