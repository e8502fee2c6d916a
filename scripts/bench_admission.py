"""Admission per API key under a flood: does a modest tenant keep its latency while another floods?

    .venv/bin/python scripts/bench_admission.py [--config configs/local.yaml] [--calm-rate 4] [--share 4]
        [--flood 10] [--duration 60] [--warmup 10]

The Serve app is deployed with two API keys. The flooder's key has its share set (``--share`` runs a second and
as many runs at once, ``key_limits``); the calm key has the defaults. The calm tenant asks the demo questions at
``--calm-rate`` a second (open loop) alone, then again while the flooder asks ``--flood`` times its share, open
loop, never backing off on a 429. Each tenant is a locust worker process of its own (the load-test harness's,
``agentic_rag.loadtest.worker``). Prints one Markdown table: each tenant's requests, p50 and p95 of its answered
runs, its answers by status, and the calm tenant's p95 together over alone (the issue's bound: 1.5x, with no 429
or 503 for it, and 429s, never 5xx, for the flooder).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from agentic_rag.api.admission import key_id
from agentic_rag.eval import load_demo_questions
from agentic_rag.eval.metrics import percentile
from agentic_rag.loadtest.plan import LoadPlan, Step
from agentic_rag.loadtest.records import RequestSample, StepRecord
from agentic_rag.serve import launch
from agentic_rag.settings import KeyLimit

FLOOD_KEY, CALM_KEY = "bench-flood-key", "bench-calm-key"
TIMEOUT_S = 60.0


def plan(url: str, key: str, tenant: str, rate: float, users: int, warmup_s: float, duration_s: float,
         questions: list[str]) -> LoadPlan:
    return LoadPlan(url=url, steps=[Step(mode="open", users=users, rate=rate)], warmup_s=warmup_s,
                    duration_s=duration_s, max_requests=1_000_000, timeout_s=TIMEOUT_S, questions=questions,
                    typeahead=["death"], typeahead_share=0.0, api_key=key, tenant=tenant)


def start_worker(p: LoadPlan, out: Path) -> subprocess.Popen[bytes]:
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(p.model_dump_json(), encoding="utf-8")
    return subprocess.Popen([sys.executable, "-m", "agentic_rag.loadtest.worker", "--plan", str(out / "plan.json"),
                             "--out", str(out)], stderr=subprocess.DEVNULL)


def samples_of(out: Path) -> list[RequestSample]:
    lines = (out / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    return [s for line in lines for s in StepRecord.model_validate(json.loads(line)).samples]


def row(name: str, samples: list[RequestSample]) -> tuple[str, float]:
    answered = [s.latency_ms for s in samples if s.status_code == 200]
    p95 = percentile(answered, 95) or 0.0
    codes = Counter(s.status_code for s in samples)
    by_code = ", ".join(f"{c}: {n}" for c, n in sorted(codes.items()))
    return (f"| {name} | {len(samples)} | {percentile(answered, 50) or 0:.0f} | {p95:.0f} | {by_code} |", p95)


def main(config: Path, calm_rate: float, share: float, flood: float, warmup_s: float, duration_s: float) -> int:
    questions = [q.question for q in load_demo_questions()]
    limits = {key_id(FLOOD_KEY): KeyLimit(rate_per_s=share, max_runs=max(1, round(share))).model_dump()}
    cfg = launch.load_config(config, args={"api_keys": [FLOOD_KEY, CALM_KEY], "key_limits": limits,
                                           "log_level": "WARNING"})
    launch.start_ray(log_to_driver=False)
    try:
        launch.deploy(cfg)
        launch.wait_until_running(cfg, timeout_s=300)
        url = launch.app_url(cfg)
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            calm_users = max(2, round(calm_rate * 2))
            flood_users = max(4, round(share * flood * 2))
            # a short warm-up of both, so neither measured phase pays for first calls
            for w in (start_worker(plan(url, CALM_KEY, "calm", calm_rate, calm_users, 0, 5, questions),
                                   root / "warm-calm"),
                      start_worker(plan(url, FLOOD_KEY, "flood", share, flood_users, 0, 5, questions),
                                   root / "warm-flood")):
                w.wait()
            time.sleep(2)
            alone = start_worker(plan(url, CALM_KEY, "calm", calm_rate, calm_users, warmup_s, duration_s, questions),
                                 root / "alone")
            alone.wait()
            time.sleep(2)
            calm = start_worker(plan(url, CALM_KEY, "calm", calm_rate, calm_users, warmup_s, duration_s, questions),
                                root / "calm")
            flooder = start_worker(plan(url, FLOOD_KEY, "flood", share * flood, flood_users, warmup_s, duration_s,
                                        questions), root / "flood")
            calm.wait()
            flooder.wait()
            lines = ["| tenant, phase | requests | p50 ms | p95 ms | answers by HTTP status |",
                     "|---|---:|---:|---:|---|"]
            alone_row, alone_p95 = row(f"calm alone ({calm_rate:g}/s)", samples_of(root / "alone"))
            calm_samples = samples_of(root / "calm")
            flood_samples = samples_of(root / "flood")
            calm_row, calm_p95 = row(f"calm with the flood ({calm_rate:g}/s)", calm_samples)
            flood_row, _ = row(f"flooder ({share * flood:g}/s = {flood:g}x its share of {share:g}/s)", flood_samples)
            lines += [alone_row, calm_row, flood_row]
            ratio = calm_p95 / alone_p95 if alone_p95 else float("inf")
            calm_refused = sum(s.status_code in (429, 503) for s in calm_samples)
            flood_5xx = sum(s.status_code >= 500 or s.status_code == 0 for s in flood_samples)
            flood_429 = sum(s.status_code == 429 for s in flood_samples)
            print("\n".join(lines))
            print(f"\ncalm p95 with the flood / alone: **{ratio:.2f}x** (bound 1.5x); calm 429/503: {calm_refused}; "
                  f"flooder 429: {flood_429}, 5xx or no answer: {flood_5xx}")
            met = ratio <= 1.5 and calm_refused == 0 and flood_429 > 0 and flood_5xx == 0
            print("met" if met else "NOT met")
            return 0 if met else 1
    finally:
        launch.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, default=launch.DEFAULT_CONFIG)
    parser.add_argument("--calm-rate", type=float, default=4.0, help="The calm tenant's requests a second.")
    parser.add_argument("--share", type=float, default=4.0,
                        help="The flooder's share: its key's rate (runs a second) and runs at once.")
    parser.add_argument("--flood", type=float, default=10.0, help="How many times its share the flooder asks.")
    parser.add_argument("--duration", type=float, default=60.0, help="Measured seconds of each phase.")
    parser.add_argument("--warmup", type=float, default=10.0, help="Unmeasured seconds before each phase.")
    a = parser.parse_args()
    sys.exit(main(a.config, a.calm_rate, a.share, a.flood, a.warmup, a.duration))
