"""What every :class:`~agentic_rag.models.base.TextBackend` must do, as one suite each backend's tests run.

:class:`BackendConformance` holds the checks; a test class that inherits it and provides two fixtures runs
them on one backend: ``backend`` (the backend, serving the tiny test model of ``tiny.py``) and ``model_dir``
(that model's directory, whose tokenizer gives the exact token counts).
tests/integration/models/test_conformance.py runs it on the transformers backend and on the OpenAI-compatible
backend in front of our server; tests/gpu/test_vllm_backend.py on vLLM. A random model is a fuzzer: whatever it
emits under a schema must fit it, and with no schema it emits garbage, which drives the correction retries to
their bound.

A test module imports it as ``tests.support.conformance``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError
from transformers import AutoTokenizer

from agentic_rag.models.base import (
    CallShape,
    Completion,
    Generation,
    GenerationError,
    Message,
    StructuredGenerator,
    TextBackend,
    schema_for,
)
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

N = 16  # samples per schema and backend: a broken constraint shows in most samples; 30 cost CI two minutes more
ATTEMPTS = 3
# Room for the longest output the random model produces per schema (the longest measured under outlines: 263
# QueryRewrite, 276 NextStep/SearchIntent, 240 GraphIntent, 493 DraftAnswer, 206 SufficiencyReport, 145
# GradeReport, 998 AgentResponse).
MAX_TOKENS: dict[type[BaseModel], int] = {
    QueryRewrite: 1024, NextStep: 1024, SearchIntent: 1024, GraphIntent: 1024, DraftAnswer: 2048,
    SufficiencyReport: 1024, GradeReport: 1024, AgentResponse: 2048,
}
# Contracts whose every rule is in their JSON schema: every generation must validate.
SCHEMA_COMPLETE = {QueryRewrite, SufficiencyReport, GradeReport}
# Valid JSON schema (the server's own check passes it) that no constraint engine can compile: its $ref points
# nowhere.
UNCOMPILABLE: dict[str, Any] = {"title": "Nowhere", "type": "object", "required": ["a"],
                                "properties": {"a": {"$ref": "#/$defs/missing"}}}


class Recording:
    """Delegates to a backend and keeps what each call received and returned (every attempt, corrections too)."""

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


def messages_for(output_type: type[BaseModel], i: int) -> list[Message]:
    """The ``i``-th prompt asking for an ``output_type``."""
    return [
        {"role": "system", "content": f"Reply with one {output_type.__name__} JSON object."},
        {"role": "user", "content": f"Question {i}: which anime did studio {i} animate after {1990 + i}?"},
    ]


def pydantic_errors(output_type: type[BaseModel], text: str) -> list[str]:
    """The types of what pydantic finds wrong with ``text`` as an ``output_type`` (none when it validates)."""
    try:
        output_type.model_validate_json(text)
    except ValidationError as exc:
        return [e["type"] for e in exc.errors(include_url=False)]
    return []


class BackendConformance:
    """The checks; the module of a subclass provides the ``backend`` and ``model_dir`` fixtures, and may narrow
    ``samples`` for a backend that forwards to one already checked in full (its constraint is that one's)."""

    @pytest.fixture
    def samples(self) -> int:
        """Completions sampled per schema."""
        return N

    @pytest.mark.parametrize("output_type", list(MAX_TOKENS), ids=lambda t: t.__name__)
    async def test_constrained_outputs_fit_the_schema(self, backend: TextBackend, output_type: type[BaseModel],
                                                      samples: int) -> None:
        recording = Recording(backend)
        generator = StructuredGenerator(recording, max_attempts=ATTEMPTS)
        # concurrent, as the loop's callers are; sampled: a random model's greedy strings run to their limit
        results = await asyncio.gather(*(
            generator.generate_shaped(CallShape(messages=messages_for(output_type, i), schema=schema_for(output_type)),
                                      output_type, max_tokens=MAX_TOKENS[output_type], temperature=1.0)
            for i in range(samples)
        ), return_exceptions=True)

        # the constraint: every completion that ended fits the JSON schema it was sent, and most end
        completions = [done for _, _, done in recording.calls]
        assert {done.finish_reason for done in completions} <= {"stop", "length"}
        ended = [done for done in completions if done.finish_reason == "stop"]
        assert len(ended) >= 0.9 * len(completions), "most completions should end within max_tokens"
        validator = jsonschema.Draft202012Validator(schema_for(output_type))
        for done in ended:
            validator.validate(json.loads(done.text))
            assert done.prompt_tokens > 0 and done.completion_tokens > 0
        assert len({done.text for done in ended}) > samples // 2, "sampled outputs should differ"
        # pydantic may reject an output only for a rule its JSON schema cannot carry (a model validator)
        rejected = [e for done in ended for e in pydantic_errors(output_type, done.text)]
        assert set(rejected) <= {"value_error"}, rejected

        # what the loop relies on: valid instances with their cost, or a GenerationError after bounded retries
        assert all(isinstance(r, Generation | GenerationError) for r in results), results
        valid = [r for r in results if isinstance(r, Generation)]
        for result in valid:
            assert isinstance(result.output, output_type)
            assert 1 <= result.usage.attempts <= ATTEMPTS
            assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
        failed = [r for r in results if isinstance(r, GenerationError)]
        assert all(exc.attempts == ATTEMPTS and len(exc.errors) == ATTEMPTS for exc in failed)
        assert len(recording.calls) == sum(r.usage.attempts for r in valid) + ATTEMPTS * len(failed)
        if output_type in SCHEMA_COMPLETE:
            assert len(valid) == samples
        else:
            assert valid, f"none of {samples} generations validated"

    async def test_greedy_is_repeatable_and_counts_the_templated_prompt(self, backend: TextBackend,
                                                                        model_dir: Path) -> None:
        messages = messages_for(SufficiencyReport, 1)
        schema = schema_for(SufficiencyReport)
        first = await backend.complete(messages, schema, max_tokens=512, temperature=0.0)
        again = await backend.complete(messages, schema, max_tokens=512, temperature=0.0)
        assert first.text == again.text
        SufficiencyReport.model_validate_json(first.text)
        tokenizer: Any = AutoTokenizer.from_pretrained(model_dir)
        templated = tokenizer.apply_chat_template(list(messages), tokenize=False, add_generation_prompt=True)
        assert first.prompt_tokens == len(tokenizer(templated, add_special_tokens=False)["input_ids"])
        assert first.finish_reason == "stop" and first.completion_tokens >= 1

    async def test_a_completion_cut_at_max_tokens_says_length(self, backend: TextBackend) -> None:
        # greedy, unconstrained: the random model's greedy text runs on (see the cancel test)
        done = await backend.complete(messages_for(QueryRewrite, 3), None, max_tokens=5, temperature=0.0)
        assert (done.finish_reason, done.completion_tokens) == ("length", 5)

    async def test_unconstrained_garbage_is_retried_then_rejected(self, backend: TextBackend) -> None:
        recording = Recording(backend)
        generator = StructuredGenerator(recording, max_attempts=ATTEMPTS, constrained=False)
        messages = messages_for(QueryRewrite, 7)
        with pytest.raises(GenerationError) as info:
            await generator.generate_shaped(CallShape(messages=messages, schema=schema_for(QueryRewrite)), QueryRewrite,
                                            max_tokens=48, temperature=1.0)
        exc = info.value
        assert exc.attempts == ATTEMPTS and len(recording.calls) == ATTEMPTS and len(exc.errors) == ATTEMPTS
        assert all(schema is None for _, schema, _ in recording.calls)
        # pydantic's own words, e.g. "(root): Invalid JSON: expected value at line 1 column 1"
        assert all("Invalid JSON" in e or "Field required" in e or "Input should be" in e for e in exc.errors)
        assert exc.last_text == recording.calls[-1][2].text
        assert recording.calls[0][0] == messages
        for attempt in range(1, ATTEMPTS):
            sent, _, _ = recording.calls[attempt]
            previous = recording.calls[attempt - 1][2].text
            assert sent[: len(messages)] == messages  # corrections follow the original messages, not each other
            assert sent[-2] == {"role": "assistant", "content": previous[:4000]}
            assert sent[-1]["role"] == "user" and exc.errors[attempt - 1] in sent[-1]["content"]

    async def test_a_schema_the_backend_cannot_compile_is_a_value_error(self, backend: TextBackend) -> None:
        with pytest.raises(ValueError):
            await backend.complete(messages_for(QueryRewrite, 2), UNCOMPILABLE, max_tokens=8, temperature=0.0)
        # the backend still serves
        done = await backend.complete(messages_for(QueryRewrite, 2), None, max_tokens=4, temperature=0.0)
        assert done.completion_tokens > 0

    async def test_a_cancelled_call_leaves_the_backend_free(self, backend: TextBackend) -> None:
        messages = messages_for(QueryRewrite, 3)
        # greedy and unconstrained, the random model runs to the limit: 3000 tokens take the transformers backend
        # about half a minute on two CPU cores (and fit vLLM's 4096-token context with the prompt)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(backend.complete(messages, None, max_tokens=3000, temperature=0.0), 0.2)
        # the next call is served at once, not after the abandoned one ran on
        done = await asyncio.wait_for(backend.complete(messages, None, max_tokens=4, temperature=0.0), 10)
        assert (done.finish_reason, done.completion_tokens) == ("length", 4)
