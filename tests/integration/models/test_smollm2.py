"""A real instruct model end to end: SmolLM2-135M-Instruct fetched from its PyPI wheel, read from GGUF by the
transformers backend, constrained by xgrammar, playing the rewrite role through the structured generator.

The fetch is cached under ``data_dir/models``: after the first session it downloads nothing. The tests are
short (one load of about 20 s, a few constrained generations, one loop run of a few seconds) so they run in
``scripts/test``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel, Field

from agentic_rag.api.openai import create_app
from agentic_rag.eval.syntax import card_syntax
from agentic_rag.models.base import CallShape, StructuredGenerator, schema_for
from agentic_rag.models.packaged import PACKAGED, fetch, fetched, resolve_model
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.orchestrator.loop import Orchestrator
from agentic_rag.planners.factory import text_backend
from agentic_rag.planners.heuristic import HeuristicModel
from agentic_rag.planners.llm.prompts import MAX_OUTPUT_TOKENS, render, shaper
from agentic_rag.protocol import QueryRewrite
from agentic_rag.protocol.roles import RewriteInput
from agentic_rag.settings import Settings

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def smollm2(settings: Settings) -> TransformersBackend:
    fetch("smollm2", settings)
    said: list[str] = []
    again = fetch("smollm2", settings, on_progress=said.append)  # the second fetch downloads nothing
    assert said == [f"smollm2: already fetched at {again.path}"]
    backend_settings = settings.model_copy(update={"planner_backend": "transformers", "planner_model": "smollm2",
                                                   "transformers_constraint": "xgrammar"})
    backend = text_backend(backend_settings, "planner")
    assert isinstance(backend, TransformersBackend)
    return backend


def test_the_fetched_model_is_recorded_and_resolved(smollm2: TransformersBackend, settings: Settings) -> None:
    model = fetched("smollm2", settings)
    assert model is not None and model.sha256 == PACKAGED["smollm2"].sha256
    directory, gguf = resolve_model("smollm2", settings)
    assert (directory / str(gguf)).stat().st_size == PACKAGED["smollm2"].size
    assert smollm2.name == "transformers:smollm2" and smollm2.constraint == "xgrammar"
    assert int(smollm2.model.num_parameters()) > 100_000_000  # the GGUF dequantized to a real 135M model


def test_an_unknown_or_unfetched_name_says_what_to_do(settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="known: smollm2"):
        fetch("no-such-model", settings)
    with pytest.raises(FileNotFoundError, match="agentic-rag models fetch smollm2"):
        resolve_model("smollm2", settings.model_copy(update={"data_dir": tmp_path}))
    directory, gguf = resolve_model(str(tmp_path / "no-such-dir"), settings)  # not a name: a directory
    assert gguf is None
    with pytest.raises(FileNotFoundError, match="model directory not found"):
        TransformersBackend(directory)


async def test_smollm2_writes_a_valid_rewrite(smollm2: TransformersBackend) -> None:
    question = "which studio animated death note?"  # the full prompt: about 35 s a question here
    messages = render(RewriteInput(question=question), QueryRewrite)
    done = await smollm2.complete(messages, QueryRewrite.model_json_schema(),
                                  max_tokens=MAX_OUTPUT_TOKENS["rewrite"], temperature=0.0)
    assert done.prompt_tokens > 100 and done.completion_tokens > 0
    json.loads(done.text)  # the grammar keeps it JSON, whatever the model wanted
    gen = await StructuredGenerator(smollm2, max_attempts=2).generate_shaped(
        CallShape(messages=messages, schema=schema_for(QueryRewrite)), QueryRewrite,
        max_tokens=MAX_OUTPUT_TOKENS["rewrite"])
    assert isinstance(gen.output, QueryRewrite)
    assert gen.usage.completion_tokens > 0 and gen.usage.attempts <= 2


async def test_smollm2_plans_a_whole_run_through_compact_forms(smollm2: TransformersBackend,
                                                                orchestrator: Orchestrator) -> None:
    """The planner's calls (rewrite, select, draft) are SmolLM2's own, each valid on the first or second try,
    none left to the heuristic; the studio it finds is the catalog's answer."""
    planner = StructuredGenerator(smollm2, max_attempts=2, shape=shaper("compact"))
    o = Orchestrator(orchestrator.settings.model_copy(update={"agent_deadline_ms": 120_000}), planner=planner,
                     validator=HeuristicModel(), fallback=HeuristicModel(), retrieval=orchestrator.retrieval,
                     store=orchestrator.store, policy=orchestrator.policy)
    result = await o.run("which studio animated death note", tenant="smollm2-test")
    assert not [w for w in result.response.warnings if "used the heuristic" in w]
    assert result.response.status == "answered" and "Madhouse" in result.response.answer
    assert result.timings["planner_llm_ms"] > 0
    # the model picked the studio; the writer said it (issue 37, 7): a sentence, not the card's line
    assert result.response.answer == "Death Note was animated by Madhouse."


@pytest.mark.parametrize("question", ["who are luffy's crewmates", "who composed the music of cowboy bebop"])
async def test_whatever_smollm2_picks_the_answer_reads_as_sentences(smollm2: TransformersBackend,
                                                                    orchestrator: Orchestrator, question: str) -> None:
    """SmolLM2 plans and drafts: what it picks is its own, and the answer says it in the writer's sentences,
    never in its cards' notation ("Luffy (character) --teammate--> Nami (character) [end id ...]")."""
    planner = StructuredGenerator(smollm2, max_attempts=2, shape=shaper("compact"))
    o = Orchestrator(orchestrator.settings.model_copy(update={"agent_deadline_ms": 120_000}), planner=planner,
                     validator=HeuristicModel(), fallback=HeuristicModel(), retrieval=orchestrator.retrieval,
                     store=orchestrator.store, policy=orchestrator.policy)
    result = await o.run(question, tenant="smollm2-test")
    assert result.response.answer and not card_syntax(result.response.answer), result.response.answer
    assert result.response.answer.endswith(".")


class Film(BaseModel):
    """A schema of the client's own, not one of the protocol's."""

    title: str = Field(max_length=60)
    year: int = Field(ge=1900, le=2100)
    studio: str = Field(max_length=40)


@pytest.fixture(scope="module")
def served(smollm2: TransformersBackend, serving: Any) -> Iterator[str]:
    """SmolLM2 behind our OpenAI-compatible route: a real uvicorn server on a free loopback port."""
    with serving(create_app({"smollm2": smollm2})) as url:
        yield url


async def test_the_official_client_parses_any_schema_and_counts_real_tokens(
        served: str, smollm2: TransformersBackend) -> None:
    messages = [{"role": "system", "content": "You answer with facts about anime films as JSON."},
                {"role": "user", "content": "Name one anime film, its year and its studio."}]
    async with openai.AsyncOpenAI(base_url=served, api_key="test", max_retries=0) as client:
        resp = await client.beta.chat.completions.parse(  # the client turns Film into a strict JSON schema
            model="smollm2", messages=messages, response_format=Film, max_completion_tokens=160)  # type: ignore[arg-type]
    choice = resp.choices[0]
    assert choice.finish_reason == "stop" and isinstance(choice.message.parsed, Film)
    assert 1900 <= choice.message.parsed.year <= 2100  # the grammar holds integer bounds
    # usage is what the model read and wrote: the rendered prompt's tokens, the completion's tokens
    prompt = smollm2.tokenizer(smollm2.render(messages), add_special_tokens=False)["input_ids"]  # type: ignore[arg-type]
    written = smollm2.tokenizer(choice.message.content or "", add_special_tokens=False)["input_ids"]
    assert resp.usage is not None and resp.usage.prompt_tokens == len(prompt)
    # the tokens sampled under the grammar: at least what the text re-encodes to (a constrained model may split
    # a word a plain encoding would not), at most one per character plus the end-of-text token
    content = choice.message.content or ""
    assert 0 < len(written) <= resp.usage.completion_tokens <= len(content) + 1
