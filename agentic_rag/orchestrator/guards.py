"""Guards: the policy hooks before the loop and after it (the rules are in policy.yaml).

The input guard cleans the question, redacts PII, and blocks what the policy says must not reach a
model (card numbers, blocked topics, questions too long or empty). The output guard keeps the answer
honest: every entity id it returns must have appeared in a context card, and PII in the answer text
is redacted too. Each thing a guard does is a ``GuardDecision``, logged as a trajectory event; a
decision's detail never repeats the text it matched, so logs do not become a second copy of the PII.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from agentic_rag.errors import InvalidInput
from agentic_rag.protocol import AgentResponse
from agentic_rag.protocol.limits import max_len

DEFAULT_POLICY = "policy.yaml"  # inside this package
MAX_RULES = 100
MAX_PATTERN_CHARS = 500

GuardStage = Literal["input", "output"]
GuardAction = Literal["allow", "redact", "block", "flag", "drop"]
_Decide = Callable[[str, GuardAction, str, int], None]  # (rule, action, detail, count)


class GuardPolicyError(InvalidInput):
    """A guard policy file that cannot be read or does not validate; the message names the file and field."""


def _compiles(pattern: str) -> str:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    if compiled.fullmatch(""):
        raise ValueError("the pattern matches the empty string, so it would match everywhere")
    return pattern


Regex = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN_CHARS), AfterValidator(_compiles)]
RuleName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]


class _PolicyModel(BaseModel):
    # Unknown keys are errors so that a typo in a policy file ("acton: block") cannot silently weaken it.
    model_config = ConfigDict(extra="forbid", frozen=True)


class PiiRule(_PolicyModel):
    """A kind of personal data: what it looks like, and whether it is redacted or blocks the question."""

    name: RuleName = Field(description="Short name, used in [REDACTED:<name>] and in decisions.")
    pattern: Regex = Field(description="Python regex; case-sensitive unless it says (?i).")
    action: Literal["redact", "block"] = Field(description="redact: replace and go on. block: also stop the question.")
    checksum: Literal["luhn"] | None = Field(
        None, description="luhn: a match counts only when its digits pass the Luhn check (card numbers)."
    )
    _regex: re.Pattern[str] = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._regex = re.compile(self.pattern)

    def redact(self, text: str) -> tuple[str, int]:
        """Replace every non-empty match with ``[REDACTED:<name>]``; return the text and how many were replaced."""
        count = 0
        token = f"[REDACTED:{self.name}]"

        def replace(match: re.Match[str]) -> str:
            nonlocal count
            if not match.group():  # a lookaround-only match would otherwise insert tokens between characters
                return ""
            if self.checksum == "luhn" and not _luhn_ok(match.group()):
                return match.group()
            count += 1
            return token

        return self._regex.sub(replace, text), count


def _luhn_ok(text: str) -> bool:
    # Card numbers carry a Luhn check digit; a run of years or ids with the same shape almost never does.
    digits = [int(c) for c in text if c.isdecimal()]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return len(digits) > 1 and total % 10 == 0


class BlockedTopic(_PolicyModel):
    """A topic the service does not answer about, recognised by any of its patterns."""

    name: RuleName = Field(description="Short name, used in decisions.")
    patterns: list[Regex] = Field(min_length=1, max_length=MAX_RULES, description="Regexes, any of which matches.")
    _regexes: list[re.Pattern[str]] = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._regexes = [re.compile(rf"\b(?:{p})\b", re.IGNORECASE) for p in self.patterns]

    def matches(self, text: str) -> int:
        """How many of this topic's patterns match ``text``."""
        return sum(1 for regex in self._regexes if regex.search(text))


class OutputPolicy(_PolicyModel):
    """What the output guard enforces on a finished answer."""

    drop_unknown_ids: bool = Field(
        True, description="Drop entity ids that no context card carried (false: keep them and flag)."
    )
    max_answer_chars: int = Field(4000, ge=1, le=100_000, description="Longer answers are cut (the protocol's own "
                                  "limit on answer length applies as well).")


class GuardPolicy(_PolicyModel):
    """The whole policy: question limits, PII rules, blocked topics, and output rules."""

    max_question_chars: int = Field(2000, ge=1, le=100_000, description="Longer questions are blocked.")
    min_question_chars: int = Field(1, ge=1, le=1000, description="Shorter questions are blocked.")
    pii: list[PiiRule] = Field(default_factory=list, max_length=MAX_RULES, description="Applied in order.")
    blocked_topics: list[BlockedTopic] = Field(default_factory=list, max_length=MAX_RULES)
    output: OutputPolicy = Field(default_factory=OutputPolicy)

    @model_validator(mode="after")
    def _consistent(self) -> GuardPolicy:
        if self.min_question_chars > self.max_question_chars:
            raise ValueError(f"min_question_chars ({self.min_question_chars}) is above "
                             f"max_question_chars ({self.max_question_chars})")
        rule_names = {"pii": [r.name for r in self.pii], "blocked_topics": [t.name for t in self.blocked_topics]}
        for kind, names in rule_names.items():
            if duplicates := sorted({n for n in names if names.count(n) > 1}):
                raise ValueError(f"{kind} rule names must be unique; repeated: {', '.join(duplicates)}")
        return self


def _read_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise GuardPolicyError(f"{source}: not valid YAML: {exc}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise GuardPolicyError(f"{source}: a guard policy is a mapping of fields, not {type(raw).__name__}")
    return raw


def load_policy(path: Path | None = None) -> GuardPolicy:
    """Load a guard policy (``settings.guard_policy``); None loads the shipped default.

    A top-level key the file leaves out keeps its value from the shipped default, so a file that only
    changes ``max_question_chars`` does not lose the PII rules.
    """
    default_file = resources.files(__package__ or "agentic_rag.orchestrator").joinpath(DEFAULT_POLICY)
    raw = _read_yaml(default_file.read_text(encoding="utf-8"), str(default_file))
    source = str(default_file)
    if path is not None:
        source = str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise GuardPolicyError(f"{source}: cannot read the guard policy: {exc.strerror or exc}") from None
        raw = {**raw, **_read_yaml(text, source)}
    try:
        return GuardPolicy.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or '(policy)'}: {err['msg']}" for err in exc.errors()
        )
        raise GuardPolicyError(f"{source}: invalid guard policy: {problems}") from None


class GuardDecision(BaseModel):
    """One thing a guard did. ``detail`` is for people and never contains the matched text itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stage: GuardStage
    rule: str = Field(max_length=80, description="Which rule or check decided, e.g. 'email' or 'max_question_chars'.")
    action: GuardAction
    detail: str = Field(max_length=300, description="Short, human-readable; never the matched text.")
    count: int = Field(0, ge=0, description="How many matches, items or characters the decision covers.")

    def event(self) -> dict[str, Any]:
        """The decision as a trajectory event payload (JSON-ready)."""
        return {"event": "guard", **self.model_dump(mode="json")}


class InputVerdict(BaseModel):
    """What the input guard made of a question."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(description="The cleaned, redacted question; clipped to the limit when it was too long.")
    blocked: bool = Field(description="True when the question must not go further.")
    decisions: list[GuardDecision] = Field(default_factory=list)


def _strip_invisible(text: str) -> tuple[str, int]:
    # Control, format (zero-width, bidi overrides) and lone surrogate characters carry no meaning in a
    # question, can hide a word from the patterns below ("pass\u200bwords") and break encoders downstream.
    kept = [c for c in text if c in "\t\n" or unicodedata.category(c) not in ("Cc", "Cf", "Cs")]
    return "".join(kept), len(text) - len(kept)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def check_input(policy: GuardPolicy, question: str) -> InputVerdict:
    """Run the input guard on a question. Never raises on any text."""
    decisions: list[GuardDecision] = []

    def decide(rule: str, action: GuardAction, detail: str, count: int = 0) -> None:
        decisions.append(GuardDecision(stage="input", rule=rule, action=action, detail=detail, count=count))

    text, removed = _strip_invisible(question)
    text = text.strip()
    if removed:
        decide("control_characters", "flag", f"removed {_plural(removed, 'control or invisible character')}", removed)
    if not text:
        decide("min_question_chars", "block", "question is empty")
    elif len(text) < policy.min_question_chars:
        decide("min_question_chars", "block",
               f"question is {len(text)} characters; the minimum is {policy.min_question_chars}", len(text))
    elif len(text) > policy.max_question_chars:
        decide("max_question_chars", "block",
               f"question is {len(text)} characters; the limit is {policy.max_question_chars}", len(text))
        # Nothing past the limit is scanned (the patterns' cost grows with length) or kept.
        text = text[: policy.max_question_chars]

    for rule in policy.pii:
        text, count = rule.redact(text)
        if count:
            what = "redacted" if rule.action == "redact" else "found (the question is blocked)"
            decide(rule.name, rule.action, f"{_plural(count, rule.name)} {what}", count)
    for topic in policy.blocked_topics:
        if hits := topic.matches(text):
            decide(topic.name, "block", f"question touches the blocked topic {topic.name!r}", hits)

    blocked = any(d.action == "block" for d in decisions)
    if not decisions:
        decide("input_guard", "allow", "question passed the input guard")
    return InputVerdict(text=text, blocked=blocked, decisions=decisions)


@functools.cache
def _response_limits() -> tuple[int, int, int]:
    """The answer, warning and warning-list lengths the protocol allows, read from its fields so that the
    guard never builds a response the protocol would reject."""
    return (max_len(AgentResponse, "answer"), max_len(AgentResponse, "warnings", item=True),
            max_len(AgentResponse, "warnings"))


def _unknown_ids(
    policy: OutputPolicy, response: AgentResponse, known: set[str], decide: _Decide
) -> dict[str, Any]:
    """Drop (or flag) entity ids that no context card carried; return the fields to update."""
    evidence = response.evidence
    # A path is an explanation chain: with one node made up, none of it can be trusted, so it goes whole.
    paths = [path for path in evidence.paths if all(node.id in known for node in path.nodes)]
    checked: list[tuple[str, list[Any], list[Any]]] = [
        (where, refs, [ref for ref in refs if ref.id in known])
        for where, refs in (("source_entities", response.source_entities),
                            ("result_entities", response.result_entities), ("evidence.ranked", evidence.ranked))
    ]
    checked.append(("evidence.paths", evidence.paths, paths))
    update: dict[str, Any] = {}
    evidence_update: dict[str, Any] = {}
    for where, before, after in checked:
        unknown = len(before) - len(after)
        if not unknown:
            continue
        noun = "path with an unknown node" if where == "evidence.paths" else "entity id not in the retrieved context"
        if not policy.drop_unknown_ids:
            decide(f"unknown_ids:{where}", "flag", f"{where} has {_plural(unknown, noun)}", unknown)
            continue
        decide(f"unknown_ids:{where}", "drop", f"dropped {_plural(unknown, noun)} from {where}", unknown)
        if where.startswith("evidence."):
            evidence_update[where.removeprefix("evidence.")] = after
        else:
            update[where] = after
    if evidence_update:
        update["evidence"] = evidence.model_copy(update=evidence_update)
    return update


def _guard_answer(policy: GuardPolicy, answer: str, limit: int, decide: _Decide) -> str:
    """Redact PII in the answer (every rule redacts here: an answer cannot be blocked) and cut it to length."""
    for rule in policy.pii:
        answer, count = rule.redact(answer)
        if count:
            decide(rule.name, "flag", f"redacted {_plural(count, rule.name)} in the answer", count)
    limit = min(policy.output.max_answer_chars, limit)
    if len(answer) > limit:
        decide("max_answer_chars", "flag", f"answer is {len(answer)} characters; cut to {limit}", len(answer))
        answer = answer[: limit - 1].rstrip() + "…"
    return answer


def check_output(
    policy: GuardPolicy, response: AgentResponse, known_ids: set[str]
) -> tuple[AgentResponse, list[GuardDecision]]:
    """Run the output guard: unknown entity ids, PII in the answer, answer length.

    ``known_ids`` are the ids that appeared in context cards. Returns a new response, with one warning
    per decision, and the decisions.
    """
    decisions: list[GuardDecision] = []

    def decide(rule: str, action: GuardAction, detail: str, count: int) -> None:
        decisions.append(GuardDecision(stage="output", rule=rule, action=action, detail=detail, count=count))

    answer_limit, warning_limit, max_warnings = _response_limits()
    update = _unknown_ids(policy.output, response, {i.strip().lower() for i in known_ids}, decide)
    answer = _guard_answer(policy, response.answer, answer_limit, decide)
    if answer != response.answer:
        update["answer"] = answer
    if not decisions:
        decide("output_guard", "allow", "answer passed the output guard", 0)
        return response, decisions
    # The guard's own warnings win over older ones when the list is full: they explain what was removed.
    new = [f"guard: {d.detail}"[:warning_limit] for d in decisions][:max_warnings]
    update["warnings"] = [*response.warnings[: max_warnings - len(new)], *new]
    return response.model_copy(update=update), decisions
