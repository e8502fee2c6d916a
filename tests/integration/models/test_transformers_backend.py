"""What is the transformers backend's own, on a real (tiny, random) model: one generation at a time, scoring a
closed form's options, the schema rewrites outlines needs, and building it from settings. What every backend
does (constrained output, token counts, retries, errors) is the conformance suite's (test_conformance.py).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from agentic_rag.models import transformers_backend
from agentic_rag.models.base import Message, schema_for
from agentic_rag.models.schemas import closed_options, outlines_schema
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.planners.factory import text_backend
from agentic_rag.protocol import AgentResponse, SufficiencyReport
from agentic_rag.settings import Settings

# Loads and runs a real (tiny) model: not a unit test.
pytestmark = pytest.mark.integration


@pytest.fixture(scope="session")
def backend(tiny_backend: TransformersBackend) -> TransformersBackend:
    return tiny_backend


def _messages(i: int) -> list[Message]:
    return [{"role": "system", "content": "Reply with one JSON object."},
            {"role": "user", "content": f"Question {i}: which anime did studio {i} animate after {1990 + i}?"}]


async def test_concurrent_calls_run_one_at_a_time(backend: TransformersBackend,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # the torch model's generate, timed from inside its worker thread
    spans: list[tuple[float, float]] = []
    generate = backend.model.generate

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return generate(*args, **kwargs)
        finally:
            spans.append((t0, time.perf_counter()))

    monkeypatch.setattr(backend.model, "generate", timed)
    schema = schema_for(SufficiencyReport)
    done = await asyncio.gather(*(
        backend.complete(_messages(i), schema, max_tokens=512, temperature=0.0) for i in range(4)
    ))
    for d in done:
        SufficiencyReport.model_validate_json(d.text)
    assert len(spans) == 4
    spans.sort()
    # every generation started after the one before it had ended
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), spans


def test_the_factory_builds_the_role_model_from_settings(tiny_model_dir: Path) -> None:
    settings = Settings(planner_backend="transformers", planner_model=str(tiny_model_dir),
                        validator_backend="transformers", transformers_choice="likelihood")
    backend = text_backend(settings, "planner")
    assert isinstance(backend, TransformersBackend)
    assert backend.name == f"transformers:{tiny_model_dir.name}" and backend.choice == "likelihood"
    with pytest.raises(ValueError, match="RAG_VALIDATOR_MODEL must name a local model directory or a fetched"):
        text_backend(settings, "validator")
    with pytest.raises(FileNotFoundError):
        TransformersBackend(tiny_model_dir / "missing")


def test_outlines_schema_tightens_what_outlines_core_ignores() -> None:
    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 6},
        "p": {"type": "number", "minimum": 0.0, "maximum": 1.0},
        "id": {"type": "string", "pattern": "^[0-9a-f]{8}$", "maxLength": 8},
        "free": {"type": "string", "pattern": "^[a-z]*$", "maxLength": 20},
        "q": {"type": "string", "minLength": 1, "maxLength": 500},
        "enum": {"type": "integer", "minimum": 0, "maximum": 3},  # a property named like a keyword
    }}
    props = outlines_schema(schema)["properties"]
    assert props["n"] == {"type": "integer", "enum": [1, 2, 3, 4, 5, 6]}
    assert props["p"]["enum"][:3] == [0.0, 0.01, 0.02] and props["p"]["enum"][-1] == 1.0
    assert props["id"] == {"type": "string", "pattern": "^[0-9a-f]{8}$"}  # outlines_core then uses the pattern
    assert props["free"] == schema["properties"]["free"]  # an unbounded pattern keeps its length bound
    assert "minLength" not in props["q"] and props["q"]["pattern"].endswith("{0,499}$")
    assert props["enum"]["enum"] == [0, 1, 2, 3]
    lowered = json.dumps(outlines_schema(schema_for(AgentResponse)))
    assert '"minimum"' not in lowered and '"maximum"' not in lowered


def test_wide_integer_ranges_are_capped_by_digits() -> None:
    # outlines_core ignores minimum/maximum; a range too wide for an enum gets a digit cap that
    # keeps every integer it can write inside the range (found when a sampled 4921553490 escaped)
    import json
    import re

    from outlines_core.json_schema import build_regex_from_schema

    schema = outlines_schema({"type": "integer", "minimum": -(10**9), "maximum": 10**9})
    regex = build_regex_from_schema(json.dumps(schema))
    assert re.fullmatch(regex, "999999999") and re.fullmatch(regex, "-999999999")
    assert not re.fullmatch(regex, "4921553490") and not re.fullmatch(regex, "1000000000")


def test_regex_decoding_plans_one_intent_a_turn() -> None:
    """outlines compiles a schema to one regex: NextStep's batch list is emptied so its DFA stays buildable."""
    from agentic_rag.protocol import NextStep

    lowered = outlines_schema(NextStep.model_json_schema())
    alsos = [v["properties"]["also"] for v in lowered["anyOf"]]
    assert alsos and all(a == {"type": "array", "maxItems": 0} for a in alsos)
    assert NextStep.model_json_schema()["anyOf"][0]["properties"]["also"]["maxItems"] == 3  # the contract keeps it


CLOSED = {"type": "object", "additionalProperties": False, "required": ["step"],
          "properties": {"step": {"type": "string", "enum": ["characters of Dororo (anime)",
                                                             "studio that animated Dororo (anime)",
                                                             "sequel of Dororo (anime), what comes after"]}}}


def _reply_logprob(backend: TransformersBackend, messages: list[Message], reply: str) -> float:
    """A reply's log-probability from one plain forward pass over prompt + reply (no cache, no batching)."""
    prompt = backend.tokenizer(backend.render(messages), add_special_tokens=False)["input_ids"]
    tail = backend.tokenizer(reply, add_special_tokens=False)["input_ids"] + [backend.tokenizer.eos_token_id]
    ids = torch.tensor([prompt + tail])
    with torch.inference_mode():
        logp = torch.log_softmax(backend.model(input_ids=ids).logits[0].float(), dim=-1)
    return sum(float(logp[len(prompt) + k - 1, t]) for k, t in enumerate(tail))


async def test_a_closed_form_is_the_option_the_model_scores_highest(backend: TransformersBackend) -> None:
    messages = _messages(5)
    options = closed_options(CLOSED)
    assert options is not None and len(options) == 3
    backend.choice = "likelihood"
    try:
        done = await backend.complete(messages, CLOSED, max_tokens=64, temperature=0.0)
        neutral = [messages[0], {"role": "user", "content": "Question: N/A"}]
        calibrated = await backend.complete(messages, CLOSED, max_tokens=64, temperature=0.0, calibration=neutral)
    finally:
        backend.choice = "decode"
    # the batched, cached scoring agrees with a plain forward pass over each whole reply
    plain = [_reply_logprob(backend, messages, o) for o in options]
    assert done.text == options[max(range(3), key=plain.__getitem__)]
    assert done.finish_reason == "stop" and done.completion_tokens >= 2
    # calibrated: the score the question adds over the same call without it
    base = [_reply_logprob(backend, neutral, o) for o in options]
    assert calibrated.text == options[max(range(3), key=lambda i: plain[i] - base[i])]
    # decode (the default): the constraint engine writes it token by token, still one of the options
    decoded = await backend.complete(messages, CLOSED, max_tokens=64, temperature=0.0)
    assert json.loads(decoded.text) in [json.loads(o) for o in options]  # outlines may space it out


def test_closed_options_enumerate_only_small_closed_schemas() -> None:
    assert closed_options(schema_for(SufficiencyReport)) is None  # free text: not a choice
    yes_no = {"type": "object", "additionalProperties": False, "required": ["ok"],
              "properties": {"ok": {"type": "boolean"}}}
    assert closed_options(yes_no) == ['{"ok":true}', '{"ok":false}']
    assert closed_options({"anyOf": [yes_no, {"type": "object", "additionalProperties": False, "required": ["n"],
                                              "properties": {"n": {"const": 1}}}]}) == [
        '{"ok":true}', '{"ok":false}', '{"n":1}']
    wide = {"type": "object", "additionalProperties": False, "required": ["a"],
            "properties": {"a": {"enum": list(range(500))}}}
    assert closed_options(wide) is None  # too many to score


async def test_a_schema_xgrammar_cannot_compile_is_a_value_error(tiny_model_dir: Path) -> None:
    # the conformance suite runs outlines, the default; xgrammar raises its own RuntimeError, which must not leak
    backend = TransformersBackend(tiny_model_dir, constraint="xgrammar")
    nowhere = {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
    with pytest.raises(ValueError, match="cannot decode under the schema"):
        await backend.complete(_messages(1), nowhere, max_tokens=4, temperature=0.0)


async def test_concurrent_constrained_calls_are_decoded_together(tiny_model_dir: Path) -> None:
    """Issue 39: with xgrammar, concurrent greedy constrained calls are decoded as one batch (prompts prefilled over
    their role's cached beginning, left-padded, a grammar matcher and a token budget per row), and each row decodes
    what ``generate`` decodes for the call alone."""
    batched = TransformersBackend(tiny_model_dir, constraint="xgrammar", batch_size=8, batch_wait_s=0.05)
    schema = schema_for(SufficiencyReport)
    budgets = [24 + 16 * i for i in range(6)]  # rows of different lengths and budgets
    # a shared beginning (system, an example exchange), then each call's own question: as a role's calls are
    asked = [[*_example(), *_messages(i * 37)[1:]] for i in range(6)]
    done = await asyncio.gather(*(batched.complete(m, schema, max_tokens=b, temperature=0.0)
                                  for m, b in zip(asked, budgets, strict=True)))
    # one batch, whose rows leave as they end; the beginning prefilled once
    assert batched.batches[0] == 6 and batched.batches == sorted(batched.batches, reverse=True)
    assert len(batched._prefixes) == 1
    for i, (d, budget) in enumerate(zip(done, budgets, strict=True)):
        assert 0 < d.completion_tokens <= budget
        if d.finish_reason == "stop":
            SufficiencyReport.model_validate_json(d.text)
        # the same call through transformers' own generate under the same grammar, alone
        alone = await asyncio.to_thread(batched._generate, asked[i], schema, budget, 0.0, threading.Event())
        assert (d.text, d.completion_tokens, d.prompt_tokens, d.finish_reason) == (
            alone.text, alone.completion_tokens, alone.prompt_tokens, alone.finish_reason), i


async def test_a_call_joins_the_batch_that_is_decoding(tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Continuous batching: a call that arrives while a batch decodes is prefilled and joins it at the next step (it
    does not wait for the batch to end), the rows of different lengths sharing one cache; every row still decodes what
    ``generate`` decodes for the call alone."""
    monkeypatch.setattr(transformers_backend, "ROOM", 3)  # the cache runs out of room every few steps and grows
    batched = TransformersBackend(tiny_model_dir, constraint="xgrammar", batch_size=8, batch_wait_s=0.05)
    schema = schema_for(SufficiencyReport)
    asked = [[*_example(), *_messages(i * 53)[1:]] for i in range(3)]
    asked[2] = _messages(999)  # no shared beginning: prefilled whole, a row of another width
    early = [asyncio.create_task(batched.complete(m, schema, max_tokens=160, temperature=0.0)) for m in asked[:2]]
    for _ in range(2000):  # until the first two decode
        if len(batched.batches) >= 3:
            break
        await asyncio.sleep(0.001)
    assert batched.batches[:3] == [2, 2, 2]
    late = await batched.complete(asked[2], schema, max_tokens=40, temperature=0.0)
    done = [await t for t in early]
    assert 3 in batched.batches  # the late call decoded beside the two that were running
    for m, d, budget in zip(asked, [*done, late], [160, 160, 40], strict=True):
        alone = await asyncio.to_thread(batched._generate, m, schema, budget, 0.0, threading.Event())
        assert (d.text, d.completion_tokens, d.prompt_tokens, d.finish_reason) == (
            alone.text, alone.completion_tokens, alone.prompt_tokens, alone.finish_reason)


def _example() -> list[Message]:
    return [{"role": "system", "content": "Reply with one JSON object."},
            {"role": "user", "content": "Question: is the answer sufficient?"},
            {"role": "assistant", "content": '{"sufficient": true, "rationale": "it names the studio"}'}]


async def test_a_cancelled_call_leaves_its_batch(tiny_model_dir: Path) -> None:
    backend = TransformersBackend(tiny_model_dir, constraint="xgrammar", batch_size=4, batch_wait_s=0.05)
    schema = schema_for(SufficiencyReport)
    calls = [asyncio.create_task(backend.complete(_messages(i), schema, max_tokens=200, temperature=0.0))
             for i in range(3)]
    await asyncio.sleep(0.01)
    calls[1].cancel()
    first, third = await calls[0], await calls[2]
    assert first.completion_tokens > 0 and third.completion_tokens > 0
    with pytest.raises(asyncio.CancelledError):
        await calls[1]
    # a bad schema fails its own call only, even inside a batch
    bad = {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b"}}, "required": ["x"]}
    results = await asyncio.gather(backend.complete(_messages(1), bad, max_tokens=20, temperature=0.0),
                                   backend.complete(_messages(2), schema, max_tokens=60, temperature=0.0),
                                   return_exceptions=True)
    assert isinstance(results[0], ValueError) and not isinstance(results[1], BaseException)
