"""The report's plots as PNG files: latency and throughput against load, replicas and runs in flight over time.

Drawn with matplotlib's object API (``Figure`` and its Agg canvas, never ``pyplot``), so no global figure
state or GUI backend is involved.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from agentic_rag.loadtest.records import LoadTestRun
from agentic_rag.loadtest.stats import Knee, StepSummary, client_in_flight

LATENCY_PNG = "latency_vs_load.png"
THROUGHPUT_PNG = "throughput_vs_load.png"
REPLICAS_PNG = "replicas_over_time.png"
IN_FLIGHT_PNG = "in_flight_over_time.png"
STAGES_PNG = "stages_by_step.png"
RESOURCES_PNG = "resources_over_time.png"
SIZE = (8.0, 4.5)
DPI = 110


def _x_label(steps: list[StepSummary]) -> str:
    return "concurrent clients (closed loop)" if steps[0].mode == "closed" else "offered requests/s (open loop)"


def _load_axis(ax: Axes, steps: list[StepSummary], knee: Knee | None) -> None:
    levels = [s.level for s in steps]
    if len(levels) > 1 and max(levels) / min(levels) >= 8:
        ax.set_xscale("log", base=2)
    ax.set_xticks(levels, [f"{v:g}" for v in levels])
    ax.set_xlabel(_x_label(steps))
    ax.grid(True, alpha=0.3)
    if knee is not None:
        ax.axvline(knee.level, color="grey", linestyle=":", label=f"knee ({knee.label})")


def _save(fig: Figure, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)


def _seconds(ms: list[float | None]) -> list[float]:
    return [v / 1000 if v is not None else float("nan") for v in ms]


def latency_plot(steps: list[StepSummary], knee: Knee | None, path: Path) -> None:
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    levels = [s.level for s in steps]
    for key, style in (("p50_ms", "o-"), ("p95_ms", "s-"), ("p99_ms", "^-")):
        ys = [getattr(s.lanes["search_ai"].latency, key) for s in steps]
        ax.plot(levels, _seconds(ys), style, label=f"search_ai {key.removesuffix('_ms')}")
    ys = [s.lanes["search"].latency.p95_ms for s in steps]
    if any(y is not None for y in ys):
        ax.plot(levels, _seconds(ys), "x--", label="search (typeahead) p95")
    _load_axis(ax, steps, knee)
    ax.set_ylabel("latency (s)")
    ax.set_title("Latency against load")
    ax.legend()
    _save(fig, path)


def throughput_plot(steps: list[StepSummary], knee: Knee | None, path: Path) -> None:
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    levels = [s.level for s in steps]
    ax.plot(levels, [s.throughput_rps for s in steps], "o-", label="all requests/s")
    ax.plot(levels, [s.lanes["search_ai"].ok_rps for s in steps], "s-", label="search_ai runs/s (ok)")
    _load_axis(ax, steps, knee)
    if knee is not None:
        ax.annotate(f"peak {knee.peak_rps:.1f} runs/s", (knee.peak_level, knee.peak_rps), textcoords="offset points",
                    xytext=(0, 8), ha="center", fontsize=8)
    ax.set_ylabel("throughput (1/s)")
    ax.set_title("Throughput against load")
    if any(s.errors for s in steps):
        ax2 = ax.twinx()
        ax2.plot(levels, [100 * s.error_rate for s in steps], "r^:", label="error rate (%)")
        ax2.set_ylabel("error rate (%)", color="r")
        ax2.legend(loc="lower right")
    ax.legend(loc="upper left")
    _save(fig, path)


def _shade_steps(ax: Axes, run: LoadTestRun) -> None:
    t0 = run.started
    for i, rec in enumerate(run.steps):
        ax.axvspan(rec.started - t0, rec.window_start - t0, color="orange", alpha=0.08,
                   label="warm-up" if i == 0 else None)
        ax.axvspan(rec.window_start - t0, rec.window_end - t0, color="green", alpha=0.08,
                   label="measured" if i == 0 else None)
        ax.text(rec.window_start - t0, 1.0, f" {rec.step.label}", transform=ax.get_xaxis_transform(), va="top",
                fontsize=8)
    ax.axvline(run.load_ended - t0, color="grey", linestyle=":", label="load ends")
    ax.set_xlabel("seconds since the test started")
    ax.grid(True, alpha=0.3)


def _legend_below(ax: Axes) -> None:
    # below the axes, clear of the lines and of the step labels along the top
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=3, frameon=False)


def replicas_plot(run: LoadTestRun, path: Path) -> None:
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    t0 = run.started
    timeline = run.replicas
    if not timeline.available:
        ax.text(0.5, 0.5, f"replica counts unavailable:\n{timeline.reason or ''}", ha="center", va="center",
                transform=ax.transAxes, wrap=True)
    read = [s for s in timeline.samples if s.replicas is not None]
    steady: list[str] = []
    for name in timeline.deployments():
        ts = [s.t - t0 for s in read]
        running = [s.running(name) or 0 for s in read]
        # RUNNING plus STARTING: the count Serve decided on, ahead of the replicas being up
        wanted = [n + (s.replicas or {}).get(name, {}).get("STARTING", 0) for s, n in zip(read, running, strict=True)]
        if len(set(wanted)) <= 1 and len(set(running)) <= 1:
            steady.append(f"{name} {running[0] if running else 0}")
            continue
        (line,) = ax.step(ts, running, where="post", linewidth=2, label=f"{name} RUNNING")
        ax.step(ts, wanted, where="post", linestyle="--", color=line.get_color(), alpha=0.6,
                label=f"{name} RUNNING + STARTING")
    if steady:  # flat lines would hide one another; name them instead
        ax.text(0.01, 0.02, "unchanged: " + ", ".join(steady), transform=ax.transAxes, fontsize=7, wrap=True)
    ax.set_ylim(bottom=0)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _shade_steps(ax, run)
    ax.set_ylabel("replicas")
    ax.set_title("Replicas per deployment (read from Serve)")
    _legend_below(ax)
    _save(fig, path)


def in_flight_plot(run: LoadTestRun, path: Path) -> None:
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    t0 = run.started
    gauge = [(s.t - t0, s.runs_in_flight) for s in run.replicas.samples if s.runs_in_flight is not None]
    if gauge:
        ax.plot([t for t, _ in gauge], [v for _, v in gauge], label="runs in flight (server /metrics)")
    runs = [s for rec in run.steps for s in (*rec.warmup, *rec.samples) if s.lane == "search_ai"]
    if runs:
        end = max(run.load_ended, max(s.end for s in runs))
        grid = [t0 + i * 0.5 for i in range(int((end - t0) / 0.5) + 2)]
        ax.plot([t - t0 for t in grid], client_in_flight(runs, grid), alpha=0.7,
                label="search_ai outstanding (client)")
    _shade_steps(ax, run)
    ax.set_ylabel("runs")
    ax.set_title("Agent runs in flight")
    _legend_below(ax)
    _save(fig, path)


def stages_plot(steps: list[StepSummary], path: Path) -> None:
    fig = Figure(figsize=SIZE)
    ax = fig.add_subplot()
    stages = [k for k in dict.fromkeys(k for s in steps for k in s.stages) if k != "total_ms"]
    width = 0.8 / max(len(stages), 1)
    for i, stage in enumerate(stages):
        xs = [j + i * width for j in range(len(steps))]
        ys = [(s.stages[stage].p95_ms or 0.0) if stage in s.stages else 0.0 for s in steps]
        ax.bar(xs, ys, width=width, label=stage.removesuffix("_ms"))
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(steps))], [s.label for s in steps])
    ax.set_ylabel("p95 per run (ms)")
    ax.set_title("Per-stage latency of agent runs (p95, runs that entered the stage)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    _save(fig, path)


def resources_plot(run: LoadTestRun, path: Path) -> None:
    """Memory and descriptors of Serve's processes, and the database's connections, over the test: what a soak
    must show flat (or accounted for)."""
    fig = Figure(figsize=(SIZE[0], SIZE[1] * 1.6))
    memory_ax, fds_ax = fig.subplots(2, 1, sharex=True)
    t0 = run.started
    samples = run.replicas.samples
    read = [s for s in samples if s.memory_mb]
    for name in sorted({k for s in read for k in s.memory_mb or {}}):
        memory_ax.plot([s.t - t0 for s in read], [(s.memory_mb or {}).get(name, 0.0) for s in read], label=name)
    memory_ax.set_ylabel("resident memory (MB)")
    memory_ax.set_title("Serve's processes: memory, descriptors; the database's connections")
    if not read:
        memory_ax.text(0.5, 0.5, "no process samples (the sampler reads /proc on the service's machine)",
                       ha="center", va="center", transform=memory_ax.transAxes)
    fds = [s for s in samples if s.open_fds]
    for name in sorted({k for s in fds for k in s.open_fds or {}}):
        fds_ax.plot([s.t - t0 for s in fds], [(s.open_fds or {}).get(name, 0) for s in fds], label=f"{name} fds")
    connections = [s for s in samples if s.db_connections is not None]
    if connections:
        fds_ax.plot([s.t - t0 for s in connections], [s.db_connections for s in connections], color="black",
                    linestyle="--", label="database connections")
    fds_ax.set_ylabel("open descriptors / connections")
    for ax in (memory_ax, fds_ax):
        _shade_steps(ax, run)
    memory_ax.set_xlabel("")
    memory_ax.legend(fontsize=7, ncol=4, loc="lower left")
    _legend_below(fds_ax)
    _save(fig, path)


def draw_all(run: LoadTestRun, steps: list[StepSummary], knee: Knee | None, out: Path) -> list[str]:
    """Every plot into ``out``; returns their file names."""
    latency_plot(steps, knee, out / LATENCY_PNG)
    throughput_plot(steps, knee, out / THROUGHPUT_PNG)
    replicas_plot(run, out / REPLICAS_PNG)
    in_flight_plot(run, out / IN_FLIGHT_PNG)
    stages_plot(steps, out / STAGES_PNG)
    resources_plot(run, out / RESOURCES_PNG)
    return [LATENCY_PNG, THROUGHPUT_PNG, REPLICAS_PNG, IN_FLIGHT_PNG, STAGES_PNG, RESOURCES_PNG]
