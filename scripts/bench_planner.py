"""A real model against the heuristic as planner and validator, side by side in one run (issue 13).

    .venv/bin/python scripts/bench_planner.py --per-type 2 --configs heuristic/heuristic,smollm2/heuristic

For each configuration ``planner/validator`` (``heuristic`` or ``smollm2``, the packaged SmolLM2-135M-Instruct
through the transformers backend under xgrammar), the same questions run through the in-process loop, one at
a time: a stratified sample of ``--per-type`` questions of each type from each set (demo, holdout, the held
half of the generated stress set, the hand-written typed set), the same sample for every configuration.
One warm-up question first (weights, schema compilation), not counted.

Every call a model gets is recorded where the loop makes it: valid on the first try, valid after a
correction, or failed (no valid output after its attempts, or over the time limit) and decided by the
heuristic instead (the loop's fallback, counted). Prints markdown tables: accuracy per set and per type,
the role calls, tokens, and latency per run (p50, p95). ``--card names`` leaves out the line saying what the
question's words ask for (docs/architecture.md), to measure what it adds.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import random
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import track

from agentic_rag.eval import EvalQuestion, compute_report, load_questions, resolve_gold, run_eval
from agentic_rag.eval.answers import write_answers
from agentic_rag.eval.metrics import percentile
from agentic_rag.eval.stress import SplitChoice, build_stress_set, write_stress_set
from agentic_rag.models.base import Generation, GenerationError, StructuredModel, T
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.planners.llm import forms
from agentic_rag.protocol.roles import ROLES, RoleInput
from agentic_rag.settings import Settings

DATA = Path(__file__).resolve().parents[1] / "agentic_rag" / "eval" / "data"
console = Console(stderr=True)


@dataclass
class Calls:
    """What one role's calls did under one configuration."""

    n: int = 0
    first_try: int = 0
    after_retry: int = 0
    failed: int = 0
    cut_off: int = 0  # cancelled when the run's deadline passed (the loop answers from what it has)
    prompt_tokens: list[int] = field(default_factory=list)
    completion_tokens: list[int] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)


class Recorded:
    """A model whose every call is counted (the loop's timeout cancels a slow one: that counts as failed)."""

    def __init__(self, inner: StructuredModel, calls: dict[str, Calls]) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = calls

    async def generate(self, role_input: RoleInput, output_type: type[T], *, max_tokens: int = 512,
                       temperature: float = 0.0) -> Generation[T]:
        c = self.calls[ROLES[output_type][0]]
        c.n += 1
        t0 = time.perf_counter()
        try:
            gen = await self.inner.generate(role_input, output_type, max_tokens=max_tokens, temperature=temperature)
        except asyncio.CancelledError:  # the run's deadline ended it: no verdict on the model's output
            c.cut_off += 1
            raise
        except (GenerationError, TimeoutError):
            c.failed += 1
            c.latency_ms.append((time.perf_counter() - t0) * 1000)
            raise
        c.latency_ms.append((time.perf_counter() - t0) * 1000)
        c.prompt_tokens.append(gen.usage.prompt_tokens)
        c.completion_tokens.append(gen.usage.completion_tokens)
        if gen.usage.attempts <= 1:
            c.first_try += 1
        else:
            c.after_retry += 1
        return gen


def sample(per_type: int, seed: int, split: SplitChoice = "held") -> dict[str, list[EvalQuestion]]:
    """The same stratified sample of every set for every configuration (``split``: the stress set's templates
    never tuned on, or the half to tune against)."""
    stress = Path(tempfile.mkdtemp()) / f"stress_{split}.jsonl"
    write_stress_set(stress, build_stress_set(split=split))
    rng = random.Random(seed)
    out: dict[str, list[EvalQuestion]] = {}
    for name, path in (("demo", DATA / "demo.jsonl"), ("holdout", DATA / "holdout.jsonl"), ("stress", stress),
                       ("typed", DATA / "typed.jsonl")):
        by_type: dict[str, list[EvalQuestion]] = defaultdict(list)
        for q in load_questions(path):
            by_type[q.type].append(q)
        out[name] = [q for t in sorted(by_type) for q in rng.sample(by_type[t], min(per_type, len(by_type[t])))]
    return out


def settings_for(config: str, deadline_ms: int, timeout_ms: int, choice: str = "decode") -> Settings:
    planner, validator = config.split("/")
    extra: dict[str, Any] = {}
    for role, model in (("planner", planner), ("validator", validator)):
        if model == "heuristic":
            extra[f"{role}_backend"] = "heuristic"
        else:
            extra[f"{role}_backend"], extra[f"{role}_model"] = "transformers", model
    return Settings(transformers_constraint="xgrammar", agent_deadline_ms=deadline_ms, generation_max_attempts=2,
                    generation_timeout_ms=timeout_ms, transformers_choice=choice, **extra)


async def run_config(config: str, sets: dict[str, list[EvalQuestion]], deadline_ms: int,
                     timeout_ms: int, choice: str = "decode", answers: Path | None = None) -> dict[str, Any]:
    settings = settings_for(config, deadline_ms, timeout_ms, choice)
    calls: dict[str, Calls] = defaultdict(Calls)
    async with open_runtime(settings) as rt:
        orch = rt.orchestrator
        orch.planner = Recorded(orch.planner, calls)
        orch.validator = Recorded(orch.validator, calls)
        warm = next(iter(sets.values()))[0]
        await orch.run(warm.question, mode="agentic", tenant="bench")
        calls.clear()
        reports: dict[str, Any] = {}
        latencies: list[float] = []
        for name, qs in sets.items():
            async with rt.pool.acquire() as conn:
                gold = await resolve_gold(conn, qs, source="demo" if name in ("demo", "holdout") else None)
            outcomes = await run_eval(qs, functools.partial(orch.run, mode="agentic", tenant="bench"), concurrency=1,
                                      progress=True, console=console)
            latencies += [o.latency_ms for o in outcomes]
            if answers is not None:
                write_answers(answers / f"{config.replace('/', '-')}_{name}.jsonl", outcomes)
            reports[name] = compute_report(outcomes, gold, mode=config)
    return {"reports": reports, "calls": dict(calls), "latencies": latencies}


def _pct(a: int, b: int) -> str:
    return f"{a / b:.1%}" if b else "–"


PLANNER_ROLES = ("rewrite", "select", "draft")


def _modelled(config: str, role: str) -> bool:
    """Whether a real model plays ``role`` in ``config`` (planner/validator)."""
    return config.split("/")[0 if role in PLANNER_ROLES else 1] != "heuristic"


def tables(results: dict[str, dict[str, Any]], sets: dict[str, list[EvalQuestion]]) -> str:
    configs = list(results)
    lines = ["| set | n | " + " | ".join(configs) + " |", "|:---|---:|" + "---:|" * len(configs)]
    for name, qs in sets.items():
        cells = [f"{results[c]['reports'][name].overall.accuracy:.1%}" for c in configs]
        lines.append(f"| {name} | {len(qs)} | " + " | ".join(cells) + " |")
    types = sorted({t for r in results.values() for rep in r["reports"].values() for t in rep.per_type})
    lines += ["", "| type (all sets) | " + " | ".join(configs) + " |", "|:---|" + "---:|" * len(configs)]
    for t in types:
        cells = []
        for c in configs:
            n = sum(rep.per_type[t].n for rep in results[c]["reports"].values() if t in rep.per_type)
            ok = sum(rep.per_type[t].correct for rep in results[c]["reports"].values() if t in rep.per_type)
            cells.append(_pct(ok, n))
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    lines += ["", "| configuration | role | calls | valid first try | valid after retry | fell back | "
              "cut off by the run's deadline | prompt tokens (mean) | completion tokens (mean) | call p50 ms |",
              "|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in configs:
        for role, k in sorted(results[c]["calls"].items()):
            if _modelled(c, role):
                pt = statistics.mean(k.prompt_tokens) if k.prompt_tokens else 0
                ct = statistics.mean(k.completion_tokens) if k.completion_tokens else 0
                p50 = percentile(k.latency_ms, 50) or 0
                done = k.n - k.cut_off  # calls that ended with a verdict on the output
                lines.append(f"| {c} | {role} | {done} | {_pct(k.first_try, done)} | {_pct(k.after_retry, done)} | "
                             f"{_pct(k.failed, done)} | {k.cut_off} | {pt:.0f} | {ct:.0f} | {p50:.0f} |")
    lines += ["", "| configuration | runs | p50 s per run | p95 s per run | model calls | calls per run |",
              "|:---|---:|---:|---:|---:|---:|"]
    for c in configs:
        lat = results[c]["latencies"]
        model_calls = sum(k.n for role, k in results[c]["calls"].items() if _modelled(c, role))
        p50, p95 = (percentile(lat, 50) or 0) / 1000, (percentile(lat, 95) or 0) / 1000
        lines.append(f"| {c} | {len(lat)} | {p50:.1f} | {p95:.1f} | {model_calls} | "
                     f"{model_calls / max(len(lat), 1):.1f} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--per-type", type=int, default=2, help="Questions of each type from each set.")
    ap.add_argument("--configs", default="heuristic/heuristic,smollm2/heuristic,heuristic/smollm2,smollm2/smollm2")
    ap.add_argument("--deadline-ms", type=int, default=60_000, help="Wall-clock limit of one run.")
    ap.add_argument("--timeout-ms", type=int, default=30_000, help="Limit on one model call.")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--sets", default="demo,holdout,stress,typed")
    ap.add_argument("--failures", type=Path, help="Also write every incorrect question (per configuration) here.")
    ap.add_argument("--choice", choices=("decode", "likelihood"), default="decode",
                    help="How a real model fills a closed form (RAG_TRANSFORMERS_CHOICE).")
    ap.add_argument("--stress-split", choices=("held", "tune"), default="held",
                    help="The stress set's half: templates never tuned on (held), or the half to tune against.")
    ap.add_argument("--card", choices=("asked", "names"), default="asked",
                    help="What a small model's prompt says of the question: the names and what its words ask for "
                         "(the default), or the names only (to measure what the line adds).")
    ap.add_argument("--questions", help="Whole question files (comma-separated) instead of the sample of --sets.")
    ap.add_argument("--answers", type=Path, help="Also write every question's outcome into this folder.")
    args = ap.parse_args()
    if args.card == "names":
        forms.asked_text = lambda question, links: None  # the prompt's card without the reader's line
    wanted = args.sets.split(",")
    if args.questions:
        sets = {Path(f).stem: load_questions(Path(f)) for f in args.questions.split(",")}
    else:
        sets = {k: v for k, v in sample(args.per_type, args.seed, args.stress_split).items() if k in wanted}
    if args.answers:
        args.answers.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    for config in track(args.configs.split(","), description="configurations", console=console):
        results[config] = asyncio.run(run_config(config, sets, args.deadline_ms, args.timeout_ms, args.choice,
                                                 args.answers))
        console.print(Counter({r: k.n for r, k in results[config]["calls"].items()}))
    print(tables(results, sets))
    if args.failures:
        asked = {q.id: q.question for qs in sets.values() for q in qs}
        rows = [{"config": c, "set": name, "question": asked.get(f.id, ""), **f.model_dump()}
                for c, r in results.items() for name, rep in r["reports"].items() for f in rep.failures]
        args.failures.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))


if __name__ == "__main__":
    main()
