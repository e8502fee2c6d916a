"""The transformers backend on a real (tiny, random) model: constrained output, retries, token counts.

A random model is a fuzzer: whatever it emits under the outlines constraint must be schema-valid,
and pydantic may only reject it for a cross-field rule that JSON schema does not express. With
constraints off it emits garbage, which exercises the correction retries end to end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import torch
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from agentic_rag.models.base import (
    Completion,
    GenerationError,
    Message,
    StructuredGenerator,
    TextBackend,
    schema_for,
)
from agentic_rag.models.schemas import closed_options, outlines_schema
from agentic_rag.models.transformers_backend import TransformersBackend
from agentic_rag.protocol import (
    AgentResponse,
    DraftAnswer,
    GradeReport,
    GraphIntent,
    NextStep,
    QueryRewrite,
    SearchIntent,
    SufficiencyReport,
)
from agentic_rag.settings import Settings

# Loads and runs a real (tiny) model for about two minutes on 2 CPU cores: not a unit test.
pytestmark = pytest.mark.integration

N = 50
# Room for the longest output the random model produces per schema (the longest measured: 263
# QueryRewrite, 276 NextStep/SearchIntent, 240 GraphIntent, 493 DraftAnswer, 206 SufficiencyReport,
# 145 GradeReport, 998 AgentResponse); that every output ended by itself is checked below.
MAX_TOKENS: dict[type[BaseModel], int] = {
    QueryRewrite: 1024, NextStep: 1024, SearchIntent: 1024, GraphIntent: 1024, DraftAnswer: 2048,
    SufficiencyReport: 1024, GradeReport: 1024, AgentResponse: 2048,
}
# Contracts whose every rule is in their JSON schema: a constrained output must validate at once.
SCHEMA_COMPLETE = {QueryRewrite, SufficiencyReport, GradeReport}


class Recording(TextBackend):
    """Delegates to a real backend and keeps what each call received and returned."""

    def __init__(self, inner: TextBackend) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[tuple[list[Message], dict[str, Any] | None, Completion]] = []

    async def complete(self, messages: list[Message], schema: dict[str, Any] | None, *, max_tokens: int,
                       temperature: float, calibration: list[Message] | None = None) -> Completion:
        done = await self.inner.complete(messages, schema, max_tokens=max_tokens, temperature=temperature,
                                            calibration=calibration)
        self.calls.append((list(messages), schema, done))
        return done


@pytest.fixture(scope="session")
def backend(tiny_backend: TransformersBackend) -> TransformersBackend:
    return tiny_backend


def _messages(output_type: type[BaseModel], i: int) -> list[Message]:
    return [
        {"role": "system", "content": f"Reply with one {output_type.__name__} JSON object."},
        {"role": "user", "content": f"Question {i}: which anime did studio {i} animate after {1990 + i}?"},
    ]


@pytest.mark.parametrize("output_type", list(MAX_TOKENS), ids=lambda t: t.__name__)
async def test_constrained_outputs_are_schema_valid(backend: TransformersBackend,
                                                    output_type: type[BaseModel]) -> None:
    recorder = Recording(backend)
    generator = StructuredGenerator(recorder, max_attempts=3)
    validator = jsonschema.Draft202012Validator(schema_for(output_type))
    attempts: Counter[int] = Counter()
    failed: list[GenerationError] = []
    for i in range(N):
        torch.manual_seed(i)
        temperature = (0.7, 1.0)[i % 2]  # greedy decoding of a random model loops; see the test below
        try:
            result = await generator.generate(_messages(output_type, i), output_type,
                                              max_tokens=MAX_TOKENS[output_type], temperature=temperature)
        except GenerationError as exc:
            failed.append(exc)
        else:
            assert isinstance(result.output, output_type)
            attempts[result.usage.attempts] += 1
            assert result.usage.completion_tokens > 0 and result.usage.prompt_tokens > 0

    texts = [done.text for _, _, done in recorder.calls]
    # the constraint: every completion ended by itself and is valid against the JSON schema
    assert all(done.finish_reason == "stop" for _, _, done in recorder.calls)
    for text in texts:
        validator.validate(json.loads(text))
    assert len(set(texts)) > N // 2, "outputs should differ"
    # what pydantic rejected can only be a rule the JSON schema does not carry (a model validator)
    rejected = [e for text in texts for e in _pydantic_errors(output_type, text)]
    assert all(e["type"] == "value_error" for e in rejected), rejected
    print(f"\n{output_type.__name__}: valid at attempt {dict(sorted(attempts.items()))}, GenerationError "
          f"{len(failed)}/{N}; {len(texts)} completions, {len(rejected)} model-validator errors, longest "
          f"{max(done.completion_tokens for _, _, done in recorder.calls)} tokens")
    if output_type in SCHEMA_COMPLETE:
        assert attempts[1] == N
    else:  # a failure is the correction retries running out on cross-field rules, nothing else
        assert all(exc.attempts == 3 and len(exc.errors) == 3 for exc in failed)


def _pydantic_errors(output_type: type[BaseModel], text: str) -> list[ErrorDetails]:
    try:
        output_type.model_validate_json(text)
    except ValidationError as exc:
        return exc.errors(include_url=False)
    return []


async def test_unconstrained_garbage_is_retried_then_rejected(backend: TransformersBackend) -> None:
    recorder = Recording(backend)
    generator = StructuredGenerator(recorder, max_attempts=3, constrained=False)
    messages = _messages(QueryRewrite, 7)
    torch.manual_seed(7)
    with pytest.raises(GenerationError) as info:
        await generator.generate(messages, QueryRewrite, max_tokens=48, temperature=1.0)
    exc = info.value
    assert exc.attempts == 3 and len(recorder.calls) == 3
    assert all(schema is None for _, schema, _ in recorder.calls)
    assert len(exc.errors) == 3
    # pydantic's own words, e.g. "(root): Invalid JSON: expected value at line 1 column 1"
    assert all("Invalid JSON" in e or "Field required" in e or "Input should be" in e for e in exc.errors), exc.errors
    assert exc.last_text == recorder.calls[-1][2].text
    assert recorder.calls[0][0] == messages
    for attempt in (1, 2):
        sent, _, _ = recorder.calls[attempt]
        previous = recorder.calls[attempt - 1][2].text
        assert sent[: len(messages)] == messages  # corrections follow the original messages, not each other
        assert sent[-2] == {"role": "assistant", "content": previous[:4000]}
        assert sent[-1]["role"] == "user" and exc.errors[attempt - 1] in sent[-1]["content"]


async def test_counts_tokens_and_is_greedy_at_zero_temperature(backend: TransformersBackend) -> None:
    messages = _messages(SufficiencyReport, 1)
    schema = schema_for(SufficiencyReport)
    first = await backend.complete(messages, schema, max_tokens=512, temperature=0.0)
    again = await backend.complete(messages, schema, max_tokens=512, temperature=0.0)
    assert first.text == again.text
    prompt = backend.render(messages)
    assert prompt.endswith("<|im_start|>assistant\n")  # the tokenizer's chat template
    assert first.prompt_tokens == len(backend.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert first.finish_reason == "stop" and first.completion_tokens >= 1

    cut = await backend.complete(messages, None, max_tokens=5, temperature=1.0)
    assert cut.finish_reason == "length" and cut.completion_tokens == 5


async def test_a_cancelled_call_frees_the_model(backend: TransformersBackend) -> None:
    messages = _messages(QueryRewrite, 3)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(backend.complete(messages, None, max_tokens=100_000, temperature=1.0), 0.2)
    done = await asyncio.wait_for(backend.complete(messages, None, max_tokens=4, temperature=1.0), 30)
    # the model is free again: the next call runs to its limit, or to an end-of-text token sampled sooner
    # (a random tiny model at temperature 1 can sample it first: the flake CI saw)
    assert (done.finish_reason, done.completion_tokens) == ("length", 4) or (
        done.finish_reason == "stop" and 1 <= done.completion_tokens < 4)


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
        backend.complete(_messages(SufficiencyReport, i), schema, max_tokens=512, temperature=0.0) for i in range(4)
    ))
    for d in done:
        SufficiencyReport.model_validate_json(d.text)
    assert len(spans) == 4
    spans.sort()
    # every generation started after the one before it had ended
    assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), spans


def test_from_settings_loads_the_role_model(tiny_model_dir: Path) -> None:
    settings = Settings(planner_backend="transformers", planner_model=str(tiny_model_dir))
    assert TransformersBackend.from_settings(settings, "planner").name == f"transformers:{tiny_model_dir.name}"
    with pytest.raises(ValueError, match="RAG_VALIDATOR_MODEL"):
        TransformersBackend.from_settings(settings, "validator")
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
    messages = _messages(QueryRewrite, 5)
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
