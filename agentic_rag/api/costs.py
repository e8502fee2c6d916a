"""Where a request's time goes across deployment hops: a ledger of the handle calls one request made.

Each handle call is recorded by its caller with its wall time, and with the time the called replica
reports it spent inside its own method; the difference is what the hop itself cost (routing,
serialization, queueing, both event loops). A replica's reply carries the hops it made in turn, so the
ledger of an Ingress request covers the whole tree of calls. The HTTP app reports it in a
``Server-Timing`` header (``app`` first: the request's time in the app, then one metric per
``Deployment.method``), which browsers' developer tools show and ``scripts/bench_serve.py`` reads.

Ray-free: the HTTP app uses it in-process too (where the ledger stays empty and ``app`` is all there is).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

__all__ = ["Hop", "Ledger", "dump", "ledger", "parse_server_timing", "record", "server_timing"]


@dataclass(slots=True)
class Hop:
    """The calls of one ``Deployment.method`` in a request: how many, their wall time, their time inside."""

    calls: int = 0
    wall_ms: float = 0.0
    inside_ms: float = 0.0

    @property
    def transport_ms(self) -> float:
        return max(self.wall_ms - self.inside_ms, 0.0)


Ledger = dict[str, Hop]
_CURRENT: ContextVar[Ledger | None] = ContextVar("agentic_rag_hops", default=None)
# a metric name in Server-Timing is an HTTP token; ours are Deployment.method
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.]{0,80}$")
_METRIC = re.compile(r'^\s*([A-Za-z][A-Za-z0-9_.]*)\s*;\s*dur=([0-9.]+)'
                     r'(?:\s*;\s*desc="calls=(\d+) inside_ms=([0-9.]+)")?')


@contextmanager
def ledger() -> Iterator[Ledger]:
    """A fresh ledger for the calls made in this context (a request's task and what it awaits)."""
    hops: Ledger = {}
    token = _CURRENT.set(hops)
    try:
        yield hops
    finally:
        _CURRENT.reset(token)


def record(name: str, wall_ms: float, inside_ms: float, nested: Mapping[str, Sequence[float]] | None = None) -> None:
    """One call of ``name`` into the current ledger (none open: nothing is kept), with the hops the callee made."""
    hops = _CURRENT.get()
    if hops is None:
        return
    _add(hops, name, 1, wall_ms, inside_ms)
    for inner, entry in (nested or {}).items():
        # what a replica reports is data: only well-formed names with [calls, wall_ms, inside_ms] are kept
        if _NAME.match(inner) and len(entry) == 3:
            calls, wall, inside = entry
            _add(hops, inner, int(calls), float(wall), float(inside))


def _add(hops: Ledger, name: str, calls: int, wall_ms: float, inside_ms: float) -> None:
    hop = hops.setdefault(name, Hop())
    hop.calls += calls
    hop.wall_ms += wall_ms
    hop.inside_ms += inside_ms


def dump(hops: Ledger) -> dict[str, list[float]]:
    """The wire form a reply carries: ``{name: [calls, wall_ms, inside_ms]}``."""
    return {k: [h.calls, round(h.wall_ms, 3), round(h.inside_ms, 3)] for k, h in hops.items()}


def server_timing(app_ms: float, hops: Ledger) -> str:
    """The ``Server-Timing`` value: ``app;dur=<ms>`` then ``Deployment.method;dur=<wall ms>;desc="calls=<n>
    inside_ms=<ms>"`` per method called."""
    parts = [f"app;dur={app_ms:.2f}"]
    parts += [f'{k};dur={h.wall_ms:.2f};desc="calls={h.calls} inside_ms={h.inside_ms:.2f}"'
              for k, h in sorted(hops.items())]
    return ", ".join(parts)


def parse_server_timing(value: str) -> tuple[float, Ledger]:
    """The app time and the ledger of a ``Server-Timing`` value this module wrote (other metrics are skipped)."""
    app_ms, hops = 0.0, Ledger()
    for part in value.split(","):
        m = _METRIC.match(part)
        if m is None:
            continue
        name, dur = m.group(1), float(m.group(2))
        if name == "app":
            app_ms = dur
        elif m.group(3) is not None:
            hops[name] = Hop(calls=int(m.group(3)), wall_ms=dur, inside_ms=float(m.group(4)))
    return app_ms, hops
