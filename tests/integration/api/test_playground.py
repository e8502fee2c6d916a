"""The web playground in a real browser: Debian's headless Chromium, driven by Selenium, against the GraphQL
backend over uvicorn with the agent behind a real SearchAI gRPC server (the runtime of test_graphql.py).

Everything runs on the session's event loop; the browser's blocking calls go to a worker thread so the loop
keeps serving the page while the browser waits. Screenshots go to ``tests/artifacts/playground/`` (ignored by
git); the finished relation run also goes to ``docs/playground.png`` when that file is missing or
``PLAYGROUND_DOCS_SHOT=1`` asks for a new one (a test run leaves the committed one alone otherwise).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest
import uvicorn
from PIL import Image
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from agentic_rag.api.graphql import create_app
from agentic_rag.api.grpc.proto import searchai_pb2_grpc as pb_grpc
from agentic_rag.api.grpc.service import SearchAIApi, SearchAIServicer
from agentic_rag.api.service import LocalAgentService
from agentic_rag.catalog.ids import entity_id
from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.runtime import Runtime, build_orchestrator
from agentic_rag.settings import Settings
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool
from tests.support.gated import GatedService

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ROOT = Path(__file__).resolve().parents[3]
ARTIFACTS = ROOT / "tests" / "artifacts" / "playground"
DOCS_SHOT = ROOT / "docs" / "playground.png"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
                       reason="needs Debian's chromium and chromium-driver (/usr/bin/chromium, /usr/bin/chromedriver): "
                              "apt-get install chromium chromium-driver"),
]

LUFFY, NAMI = str(entity_id("character", "monkey-d-luffy")), str(entity_id("character", "nami"))
KEY = "playground-test-key"
SUGGESTIONS = """const list = document.querySelector("#suggestions");
  return {q: list.dataset.q || "", shown: !list.hidden,
          hits: [...list.querySelectorAll(".suggestion")].map((s) => ({id: s.dataset.id, text: s.textContent}))}"""
SHOWN = """return {state: document.querySelector("#run-state").textContent,
                 errors: document.querySelector("#errors").textContent,
                 stages: [...document.querySelectorAll("#stages .event")].map((e) => e.textContent.slice(0, 120))}"""
T = TypeVar("T")


class Stack:
    """SearchAI over gRPC and the GraphQL backend over uvicorn, both on local ports."""

    def __init__(self, settings: Settings, service: LocalAgentService, pool: Pool) -> None:
        self.grpc = grpc.aio.server()
        pb_grpc.add_SearchAIServicer_to_server(  # type: ignore[no-untyped-call]  # generated, untyped
            SearchAIServicer(SearchAIApi(service, settings)), self.grpc)
        self.grpc_port = self.grpc.add_insecure_port("127.0.0.1:0")
        self.app = create_app(settings, f"127.0.0.1:{self.grpc_port}", pool=pool)
        self.http = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning",
                                                  lifespan="off"))
        self.url = ""

    async def __aenter__(self) -> Stack:
        await self.grpc.start()
        self.serving = asyncio.create_task(self.http.serve())
        while not self.http.started:  # noqa: ASYNC110 (uvicorn has a flag for this, not an event)
            await asyncio.sleep(0.02)
        self.url = f"http://127.0.0.1:{self.http.servers[0].sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *_: object) -> None:
        self.http.should_exit = True
        await self.serving
        await self.app.state.backend.close()
        await self.grpc.stop(None)


@pytest.fixture(scope="module")
def service(pool: Pool, qdrant: VectorStore, embedder: Embedder, settings: Settings) -> GatedService:
    orchestrator, store = build_orchestrator(settings, pool, qdrant, embedder)
    return GatedService(Runtime(settings, pool, qdrant, embedder, store, orchestrator), hold_after=4, opened=True)


@pytest.fixture(scope="module")
async def stack(service: GatedService, pool: Pool, settings: Settings) -> AsyncIterator[Stack]:
    async with Stack(settings, service, pool) as running:
        yield running


@pytest.fixture(scope="module")
def driver() -> Iterator[webdriver.Chrome]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run",
                "--disable-background-networking", "--disable-extensions", "--window-size=1280,1000",
                "--force-device-scale-factor=1", "--lang=en-US"):
        options.add_argument(arg)
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    browser.set_page_load_timeout(30)
    try:
        yield browser
    finally:
        browser.quit()


class Page:
    """The browser, from async code: each blocking call runs in a worker thread while the loop serves it."""

    def __init__(self, driver: WebDriver, url: str) -> None:
        self.driver = driver
        self.url = url

    async def do(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(fn, *args)

    async def wait(self, condition: Callable[[WebDriver], T], seconds: float = 90) -> T:
        try:
            wait = WebDriverWait(self.driver, seconds, poll_frequency=0.1,
                                 ignored_exceptions=(NoSuchElementException, StaleElementReferenceException))
            return await asyncio.to_thread(wait.until, condition)
        except TimeoutException:
            shown = await self.do(self.driver.execute_script, SHOWN)
            path = await self.shot("timed-out", full=True)
            raise AssertionError(f"timed out after {seconds} s; the page shows {shown} (see {path})") from None

    async def suggestions(self, q: str) -> list[dict[str, str]]:
        """The suggestions once the list answers ``q`` (read in one call: the list is redrawn as one types)."""
        shown = await self.wait(lambda d: (s := d.execute_script(SUGGESTIONS))["q"] == q and s["shown"] and s)
        hits: list[dict[str, str]] = shown["hits"]
        return hits

    async def open(self, path: str = "/") -> None:
        await self.do(self.driver.get, self.url + path)
        await self.wait(lambda d: d.execute_script("return document.readyState") == "complete")

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def text(self, css: str) -> str:
        return str(self.driver.execute_script(f"return document.querySelector({css!r}).textContent"))

    async def ask(self, question: str) -> None:
        def submit() -> None:
            box = self.find("#question")
            box.clear()
            box.send_keys(question)
            self.find("#ask").click()
        await self.do(submit)

    async def finished(self) -> str:
        """Waits for the run's result and returns its state."""
        await self.wait(lambda d: self.find("#result").is_displayed()
                        and self.text("#run-state") not in ("running", "continuing"))
        return self.text("#run-state")

    async def shot(self, name: str, *, full: bool = False, also: Path | None = None) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"

        def take() -> None:
            size = self.driver.get_window_size()
            if full:  # the whole page, not just the window
                height = self.driver.execute_script("return document.documentElement.scrollHeight")
                self.driver.set_window_size(size["width"], int(height) + 140)
            try:
                assert self.driver.save_screenshot(str(path))
                if also is not None:
                    assert self.driver.save_screenshot(str(also))
            finally:
                if full:
                    self.driver.set_window_size(size["width"], size["height"])
        await self.do(take)
        print(f"screenshot: {path}")
        return path


@pytest.fixture
async def page(driver: webdriver.Chrome, stack: Stack) -> AsyncIterator[Page]:
    await asyncio.to_thread(driver.set_window_size, 1280, 1000)
    yield Page(driver, stack.url)
    errors = [e for e in await asyncio.to_thread(driver.get_log, "browser") if e.get("level") == "SEVERE"]
    assert not errors, errors  # no script error, no failed request, during the test


async def test_typing_a_partial_name_suggests_entities_with_their_type_and_tier(page: Page) -> None:
    await page.open("/")  # redirects to the playground
    assert page.driver.current_url == f"{page.url}/graphql/playground/"
    assert page.driver.title == "agentic-rag playground"

    search = await page.do(page.find, "#search")
    await page.do(search.send_keys, "lufy")
    first = (await page.suggestions("lufy"))[0]
    assert first["id"] == LUFFY and all(w in first["text"] for w in ("Luffy", "character", "fuzzy")), first
    await page.shot("typeahead-typo")

    await page.do(search.clear)
    await page.do(search.send_keys, "one pie")  # a prefix of a title
    hits = await page.suggestions("one pie")
    assert any("One Piece" in h["text"] and "anime" in h["text"] and "prefix" in h["text"] for h in hits), hits
    await page.shot("typeahead-prefix")

    await page.do(search.clear)
    await page.do(search.send_keys, "lufy")
    assert (await page.suggestions("lufy"))[0]["id"] == LUFFY
    await page.do(search.send_keys, Keys.ARROW_DOWN, Keys.ENTER)  # pick it with the keyboard
    picked = await page.wait(lambda d: page.all(f'#picked .card[data-id="{LUFFY}"]'))
    assert "One Piece" in picked[0].text and not page.find("#suggestions").is_displayed()


async def test_a_relation_question_streams_its_stages_then_the_answer_cards_and_path(
        page: Page, service: GatedService) -> None:
    await page.open("/graphql/playground/")
    service.gate.clear()  # the run waits after its 4th event until the browser has been looked at
    service.held.clear()
    try:
        await page.ask("How is Luffy related to Nami?")
        await page.wait(lambda d: len(page.all("#stages .event")) >= service.hold_after)
        assert service.held.is_set() and not page.find("#result").is_displayed()
        assert page.text("#run-state") == "running" and page.find("#ask").get_attribute("disabled") is not None
        assert [e.get_attribute("data-seq") for e in page.all("#stages .event")] == ["1", "2", "3", "4"]
        await page.shot("relation-streaming")
    finally:
        service.gate.set()

    assert await page.finished() == "answered"
    stages = [e.get_attribute("data-stage") for e in page.all("#stages .event")]
    assert [int(str(e.get_attribute("data-seq"))) for e in page.all("#stages .event")] == list(
        range(1, len(stages) + 1))
    assert {"link", "retrieve", "draft", "final"} <= set(stages), stages
    retrieved = [e.text for e in page.all('#stages .event.observation[data-stage="retrieve"]')]
    assert retrieved and all(" result" in t for t in retrieved), retrieved
    assert page.text("#verdict").startswith("Validator: ")
    assert page.text("#answer").strip() and "answered" in page.text("#status-line")

    cards = {c.get_attribute("data-id"): c.text for c in page.all("#cards .card")}
    assert LUFFY in cards and NAMI in cards and "One Piece" in cards[LUFFY] and "character" in cards[NAMI]
    nodes = {n.get_attribute("data-id") for n in page.all("#graph svg g.node")}
    assert {LUFFY, NAMI} <= nodes
    assert page.all("#graph svg g.edge line") and all(t.text for t in page.all("#graph svg g.edge text"))
    assert page.all("#timings tr")
    link = page.find("#trajectory-link")
    tid = str(link.get_attribute("href")).rsplit("=", 1)[1]
    docs = not DOCS_SHOT.exists() or os.environ.get("PLAYGROUND_DOCS_SHOT") == "1"
    await page.shot("relation-answered", full=True, also=DOCS_SHOT if docs else None)
    if docs:
        print(f"screenshot: {DOCS_SHOT}")

    await page.do(link.click)  # the stored trajectory, as the store has it
    await page.wait(lambda d: page.find("#trajectory").is_displayed()
                    and len(page.all("#trajectory-events .event")) == len(stages))
    assert "How is Luffy related to Nami?" in page.text("#trajectory-summary")
    assert tid in page.text("#trajectory-id") and f'"id": "{tid}"' in page.text("#trajectory-json")
    await page.shot("relation-trajectory")


async def test_a_clarification_is_answered_with_a_button_and_the_run_goes_on(page: Page) -> None:
    await page.open("/graphql/playground/")
    await page.ask("Tell me about Naruto")
    assert await page.finished() == "needs clarification"
    assert page.find("#clarification").is_displayed() and page.text("#clarification-question")
    choices = page.all("#choices button.choice")
    assert len(choices) >= 2
    await page.shot("clarification-asked")

    character = next(c for c in choices if "character" in c.text)
    chosen = character.get_attribute("data-id")
    asked_events = len(page.all("#stages .event"))
    await page.do(character.click)
    assert await page.finished() == "answered"
    assert chosen in {c.get_attribute("data-id") for c in page.all("#cards .card")}
    assert not page.find("#clarification").is_displayed()
    events = page.all("#stages .event")
    assert len(events) > asked_events  # the resumed run's events, streamed below the first ones
    assert any(e.get_attribute("data-stage") == "clarify" and "chosen" in e.text for e in events[asked_events:])
    await page.shot("clarification-answered", full=True)


async def test_a_conversation_is_a_thread_of_turns_and_starts_anew_on_request(page: Page) -> None:
    await page.open("/graphql/playground/")
    await page.ask("who directed Death Note?")
    assert await page.finished() == "answered"
    assert page.find("#thread").is_displayed() and len(page.all("#turns .turn")) == 1
    conversation = page.text("#conversation-id")
    await page.ask("what else did he direct?")  # a follow-up: "he" is the director the first answer named
    assert await page.finished() == "answered"
    await page.wait(lambda d: len(page.all("#turns .turn")) == 2)
    turns = page.all("#turns .turn")
    assert "what else did he direct?" in turns[1].text and "Attack on Titan" in turns[1].text
    assert page.text("#conversation-id") == conversation  # the same conversation, its second turn
    assert turns[1].find_element(By.CSS_SELECTOR, "a").get_attribute("href").endswith(
        f"#trajectory={page.driver.execute_script('return run.trajectoryId')}")
    await page.shot("conversation-thread", full=True)
    await page.do(page.find("#new-conversation").click)
    assert not page.find("#thread").is_displayed() and page.all("#turns .turn") == []
    await page.ask("what else did he direct?")  # nothing earlier now: no director to point at
    await page.finished()
    assert "Tetsurō Araki" not in page.text("#answer")
    assert page.text("#conversation-id") != conversation


async def test_a_picture_goes_with_the_question_and_the_server_says_what_it_thinks_of_it(page: Page,
                                                                                          tmp_path: Path) -> None:
    picture = tmp_path / "cover.png"
    Image.new("RGB", (64, 48), (30, 120, 200)).save(picture)
    await page.open("/graphql/playground/")
    await page.do(page.find("#image").send_keys, str(picture))  # what choosing a file does
    await page.ask("what anime is this from?")
    # this server has no image model: the picture reached SearchAI, which refuses it before any run
    error = await page.wait(lambda d: page.all("#errors .error"))
    assert "image search is not configured" in error[0].text
    await page.shot("picture-refused")
    # without the picture, the same form asks as before
    await page.do(page.find("#image-clear").click)
    await page.ask("Which anime is Luffy in?")
    assert await page.finished() == "answered"
    assert not page.all("#errors .error")


async def test_keys_errors_and_a_narrow_screen(driver: webdriver.Chrome, service: GatedService, pool: Pool,
                                               settings: Settings) -> None:
    keyed = settings.model_copy(update={"api_keys": [KEY]})
    async with Stack(keyed, service, pool) as stack:
        page = Page(driver, stack.url)
        await page.do(driver.set_window_size, 390, 900)  # a phone
        await page.open("/graphql/playground/")
        await page.ask("Which anime is Luffy in?")
        error = await page.wait(lambda d: page.all("#errors .error"))
        assert "unauthorized" in error[0].text and "a valid API key is required" in error[0].text
        assert page.text("#run-state") == "failed"
        await page.shot("narrow-unauthorized")

        def give_key() -> None:
            page.find("#connection summary").click()
            page.find("#api-key").send_keys(KEY)
        await page.do(give_key)
        # a question the server echoes back (the trajectory's query): shown as text, never as markup
        await page.ask('Which anime is <img src=x id="injected" onerror="document.title=1">Luffy</img> in?')
        await page.finished()
        assert not page.all("#errors .error")
        tid = str(page.find("#trajectory-link").get_attribute("href")).rsplit("=", 1)[1]
        await page.do(page.find("#trajectory-link").click)
        await page.wait(lambda d: "<img" in page.text("#trajectory-summary"))
        assert not page.all("#injected") and driver.title == "agentic-rag playground"
        assert tid in page.text("#trajectory-json")
        # nothing wider than the screen: the page does not scroll sideways
        overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, overflow
        await page.shot("narrow-answered", full=True)
        await asyncio.to_thread(driver.get_log, "browser")  # drops the 401 above, logged as a failed request
