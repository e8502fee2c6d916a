"""``agentic-rag chat``: a conversation in the terminal, in-process or against a server (``--url``).

Each line is a turn of one conversation: a follow-up is read in the light of the turns before it ("who directed
Death Note?" then "what else did he direct?"). A clarification's choices are numbered: type the number, or say which
in words. ``/new`` starts a new conversation, ``/quit`` (or Ctrl-D) leaves. Lines are edited and recalled with
readline; the history is kept in ``~/.agentic_rag_history``.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any

import httpx
import typer

from agentic_rag.cli._app import app, console, fail, load_settings, with_dev_database
from agentic_rag.orchestrator.runtime import open_runtime
from agentic_rag.protocol import AgentResponse

HISTORY = Path.home() / ".agentic_rag_history"
HISTORY_LINES = 1000
PROMPT = "you> "
TIMEOUT_S = 120.0


class Turn:
    """What one turn came back with: the answer, and where the conversation stands."""

    def __init__(self, response: AgentResponse, trajectory_id: uuid.UUID, conversation_id: uuid.UUID | None,
                 turn: int | None) -> None:
        self.response = response
        self.trajectory_id = trajectory_id
        self.conversation_id = conversation_id
        self.turn = turn


Ask = Callable[[str, uuid.UUID | None], Awaitable[Turn]]
Resume = Callable[[uuid.UUID, int], Awaitable[Turn]]


@contextlib.asynccontextmanager
async def _in_process(tenant: str) -> AsyncIterator[tuple[Ask, Resume]]:
    settings = await asyncio.to_thread(with_dev_database, load_settings())
    async with open_runtime(settings) as rt:
        async def ask(question: str, conversation: uuid.UUID | None) -> Turn:
            r = await rt.orchestrator.run(question, tenant=tenant, conversation_id=conversation)
            return Turn(r.response, r.trajectory_id, r.conversation_id, r.turn)

        async def resume(trajectory: uuid.UUID, choice: int) -> Turn:
            r = await rt.orchestrator.resume(trajectory, choice, tenant=tenant)
            return Turn(r.response, r.trajectory_id, r.conversation_id, r.turn)

        yield ask, resume


@contextlib.asynccontextmanager
async def _remote(url: str, tenant: str) -> AsyncIterator[tuple[Ask, Resume]]:
    async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=TIMEOUT_S, headers={"X-Tenant": tenant}) as http:
        async def turn_of(resp: httpx.Response) -> Turn:
            if resp.status_code >= 400:
                try:
                    message = resp.json()["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    message = resp.text[:300]
                raise RuntimeError(f"the server answered {resp.status_code}: {message}")
            body = resp.json()
            cid = body.get("conversation_id")
            return Turn(AgentResponse.model_validate(body["response"]), uuid.UUID(body["trajectory_id"]),
                        uuid.UUID(cid) if cid else None, body.get("turn"))

        async def ask(question: str, conversation: uuid.UUID | None) -> Turn:
            payload: dict[str, Any] = {"question": question}
            if conversation is not None:
                payload["conversation_id"] = str(conversation)
            return await turn_of(await http.post("/v1/search_ai", json=payload))

        async def resume(trajectory: uuid.UUID, choice: int) -> Turn:
            return await turn_of(await http.post(f"/v1/search_ai/{trajectory}/clarify", json={"choice": choice}))

        yield ask, resume


def _readline() -> None:
    """Line editing and a kept history, where the platform has readline."""
    try:
        import readline
    except ImportError:  # pragma: no cover - every platform we ship on has it
        return
    with contextlib.suppress(OSError):
        readline.read_history_file(HISTORY)
    readline.set_history_length(HISTORY_LINES)
    import atexit

    atexit.register(lambda: _save_history(readline))


def _save_history(readline: Any) -> None:
    with contextlib.suppress(OSError):
        readline.write_history_file(HISTORY)


def _show(t: Turn) -> None:
    r = t.response
    style = {"answered": "green", "needs_clarification": "yellow", "blocked": "red"}.get(r.status, "magenta")
    console.print(f"[bold {style}]bot>[/] {r.answer}", highlight=False)
    if r.clarification is not None and r.clarification.choices:
        for i, c in enumerate(r.clarification.choices, start=1):
            console.print(f"  [bold]{i}[/] {c.label}", highlight=False)
        console.print("  (type a number, or say which)", style="dim")


async def _chat(session: contextlib.AbstractAsyncContextManager[tuple[Ask, Resume]]) -> None:
    loop = asyncio.get_running_loop()
    async with session as (ask, resume):
        conversation: uuid.UUID | None = None
        waiting: Turn | None = None  # the last turn, when it offered choices
        console.print("A conversation: ask, then follow up. /new starts anew, /quit or Ctrl-D leaves.", style="dim")
        while True:
            try:
                line = (await loop.run_in_executor(None, input, PROMPT)).strip()
            except EOFError:
                console.print()
                return
            if not line:
                continue
            if line in ("/quit", "/exit"):
                return
            if line == "/new":
                conversation, waiting = None, None
                console.print("(a new conversation)", style="dim")
                continue
            try:
                offered = waiting.response.clarification.choices if waiting and waiting.response.clarification \
                    else []
                if line.isdigit() and waiting is not None and 1 <= int(line) <= len(offered):
                    t = await resume(waiting.trajectory_id, int(line) - 1)
                else:
                    t = await ask(line, conversation)
            except Exception as exc:  # one failed turn is said; the conversation goes on
                console.print(f"[red]error:[/] {exc}", highlight=False)
                continue
            conversation = t.conversation_id or conversation
            waiting = t if t.response.clarification is not None else None
            _show(t)


@app.command()
def chat(
    url: Annotated[str | None, typer.Option(help="A server to talk to (e.g. http://localhost:8000); "
                                                 "default: in-process.")] = None,
    tenant: Annotated[str, typer.Option(help="Whose conversation this is.")] = "default",
) -> None:
    """Hold a conversation in the terminal: follow-ups are read in the light of earlier turns."""
    _readline()
    session = _remote(url, tenant) if url else _in_process(tenant)
    try:
        asyncio.run(_chat(session))
    except KeyboardInterrupt:
        console.print()
    except Exception as exc:
        raise fail(exc) from None
