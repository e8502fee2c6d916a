"""The input and output guards under the shipped policy and under broken policy files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_rag.orchestrator.guards import (
    GuardPolicy,
    GuardPolicyError,
    check_input,
    check_output,
    load_policy,
)
from agentic_rag.protocol import AgentResponse, EntityRef, Evidence, GraphPath

POLICY = load_policy()
EMAIL = re.compile(next(rule.pattern for rule in POLICY.pii if rule.name == "email"))

NARUTO = EntityRef(entity_type="anime", id="00000000-0000-4000-8000-000000000001")
SHIPPUDEN = EntityRef(entity_type="anime", id="00000000-0000-4000-8000-000000000002")
FAKE = EntityRef(entity_type="anime", id="00000000-0000-4000-8000-00000000dead")


def test_default_policy_loads_with_the_documented_rules() -> None:
    assert POLICY.max_question_chars == 2000 and POLICY.min_question_chars == 1
    assert {r.name: r.action for r in POLICY.pii} == {
        "iban": "redact", "credit_card": "block", "us_ssn": "block", "email": "redact", "phone": "redact",
    }
    assert {t.name for t in POLICY.blocked_topics} >= {"self_harm_instructions", "weapons_explosives"}
    assert POLICY.output.drop_unknown_ids and POLICY.output.max_answer_chars == 4000


def test_plain_catalog_question_is_allowed_unchanged() -> None:
    question = "Which anime from 2002-2007 had more than 220 episodes, like Naruto (1999 2000 2001 2002)?"
    verdict = check_input(POLICY, question)
    assert verdict.text == question
    assert not verdict.blocked
    assert [d.action for d in verdict.decisions] == ["allow"]


def test_email_and_phone_are_redacted_and_never_echoed() -> None:
    verdict = check_input(POLICY, "I'm jane.doe@example.com, call +1 555 123 4567 or (555) 123-4567: who is Itachi?")
    assert verdict.text == "I'm [REDACTED:email], call [REDACTED:phone] or [REDACTED:phone]: who is Itachi?"
    assert not verdict.blocked
    counts = {d.rule: (d.action, d.count) for d in verdict.decisions}
    assert counts == {"email": ("redact", 1), "phone": ("redact", 2)}
    for decision in verdict.decisions:
        assert "jane" not in decision.detail and "555" not in decision.detail
        assert decision.event() == {"event": "guard", "stage": "input", "rule": decision.rule,
                                    "action": "redact", "detail": decision.detail, "count": decision.count}


def test_card_number_blocks_and_is_redacted_from_the_text() -> None:
    verdict = check_input(POLICY, "my card is 4111 1111 1111 1111, recommend a mecha anime")
    assert verdict.blocked
    assert "4111" not in verdict.text and "[REDACTED:credit_card]" in verdict.text
    [decision] = verdict.decisions
    assert (decision.rule, decision.action, decision.count) == ("credit_card", "block", 1)
    assert "4111" not in decision.detail


def test_digit_runs_failing_the_luhn_check_are_not_cards() -> None:
    assert not check_input(POLICY, "order 4111-1111-1111-1112 arrived").blocked


def test_ssn_blocks() -> None:
    verdict = check_input(POLICY, "ssn 123-45-6789")
    assert verdict.blocked and "6789" not in verdict.text


def test_blocked_topic_blocks_case_insensitively() -> None:
    verdict = check_input(POLICY, "How do I MAKE a pipe bomb like in Akira?")
    assert verdict.blocked
    assert [(d.rule, d.action) for d in verdict.decisions] == [("weapons_explosives", "block")]
    # naming a dark plot point is not asking for instructions
    assert not check_input(POLICY, "Which character commits suicide in Evangelion?").blocked


def test_over_long_question_is_blocked_with_its_length() -> None:
    verdict = check_input(POLICY, "a" * 2500)
    assert verdict.blocked
    [decision] = verdict.decisions
    assert decision.rule == "max_question_chars"
    assert decision.detail == "question is 2500 characters; the limit is 2000"
    assert len(verdict.text) == 2000


@pytest.mark.parametrize("question", ["", "   \n\t ", "\x00\x07"])
def test_empty_question_is_blocked(question: str) -> None:
    verdict = check_input(POLICY, question)
    assert verdict.blocked and verdict.text == ""
    assert any(d.detail == "question is empty" for d in verdict.decisions)


def test_control_and_invisible_characters_are_stripped() -> None:
    verdict = check_input(POLICY, "Who\x00 is\x1b Na\u200bruto's\u202e rival?\n")
    assert verdict.text == "Who is Naruto's rival?"
    assert not verdict.blocked
    [decision] = verdict.decisions
    assert (decision.rule, decision.action, decision.count) == ("control_characters", "flag", 4)


def test_zero_width_characters_cannot_hide_a_blocked_topic() -> None:
    assert check_input(POLICY, "how to make a b\u200bomb").blocked


def test_policy_file_overrides_only_the_keys_it_sets(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("max_question_chars: 50\nblocked_topics: []\n")
    policy = load_policy(path)
    assert policy.max_question_chars == 50 and policy.blocked_topics == []
    assert policy.pii == POLICY.pii
    assert check_input(policy, "x" * 51).blocked
    assert not check_input(policy, "how to make a bomb").blocked


@pytest.mark.parametrize(
    ("content", "field", "problem"),
    [
        ("pii:\n  - {name: bad, pattern: '(unclosed', action: redact}\n", "pii.0.pattern",
         "not a valid regular expression"),
        ("blocked_topics:\n  - {name: x, patterns: ['a[']}\n", "blocked_topics.0.patterns.0",
         "not a valid regular expression"),
        ("pii:\n  - {name: bad, pattern: 'x', acton: redact}\n", "pii.0.acton", "Extra inputs are not permitted"),
        ("max_question_chars: 10\nmax_chars: 5\n", "max_chars", "Extra inputs are not permitted"),
        ("pii:\n  - {name: bad, pattern: 'a*', action: redact}\n", "pii.0.pattern", "matches the empty string"),
        ("pii:\n  - {name: bad, pattern: '" + "a" * 501 + "', action: redact}\n", "pii.0.pattern", "at most 500"),
        ("output: {max_answer_chars: 0}\n", "output.max_answer_chars", "greater than or equal to 1"),
        ("pii: [", "", "not valid YAML"),
        ("- just a list\n", "", "a guard policy is a mapping"),
    ],
)
def test_bad_policy_file_names_the_file_and_the_field(tmp_path: Path, content: str, field: str, problem: str) -> None:
    path = tmp_path / "strict.yaml"
    path.write_text(content)
    with pytest.raises(GuardPolicyError) as info:
        load_policy(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert field in message and problem in message


def test_missing_policy_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(GuardPolicyError, match=re.escape(str(tmp_path / "nope.yaml"))):
        load_policy(tmp_path / "nope.yaml")


def test_rule_count_is_bounded() -> None:
    rules = [{"name": f"r{i}", "pattern": "x", "action": "redact"} for i in range(101)]
    with pytest.raises(ValueError, match="at most 100"):
        GuardPolicy.model_validate({"pii": rules})


def _response(**update: object) -> AgentResponse:
    base = AgentResponse(
        answer="Naruto Shippuden is the sequel of Naruto.",
        source_entities=[NARUTO, SHIPPUDEN, FAKE],
        result_entities=[SHIPPUDEN, FAKE],
        evidence=Evidence(
            paths=[GraphPath(nodes=[NARUTO, SHIPPUDEN], rels=["sequel"]),
                   GraphPath(nodes=[NARUTO, FAKE], rels=["sequel"])],
            ranked=[SHIPPUDEN, NARUTO],
        ),
        confidence=0.8,
        warnings=["earlier warning"],
    )
    return base.model_copy(update=update)


def test_output_guard_drops_fabricated_ids_and_paths_and_says_so() -> None:
    known = {NARUTO.id, SHIPPUDEN.id.upper()}  # ids compare case-insensitively
    guarded, decisions = check_output(POLICY, _response(), known)
    assert guarded.source_entities == [NARUTO, SHIPPUDEN]
    assert guarded.result_entities == [SHIPPUDEN]
    assert guarded.evidence.paths == [GraphPath(nodes=[NARUTO, SHIPPUDEN], rels=["sequel"])]
    assert guarded.evidence.ranked == [SHIPPUDEN, NARUTO]
    assert {(d.rule, d.action, d.count) for d in decisions} == {
        ("unknown_ids:source_entities", "drop", 1),
        ("unknown_ids:result_entities", "drop", 1),
        ("unknown_ids:evidence.paths", "drop", 1),
    }
    assert all(d.stage == "output" for d in decisions)
    assert guarded.warnings[0] == "earlier warning"
    assert len(guarded.warnings) == 4 and all(w.startswith("guard: ") for w in guarded.warnings[1:])
    AgentResponse.model_validate(guarded.model_dump())  # still a valid response


def test_output_guard_leaves_a_clean_response_alone() -> None:
    response = _response(source_entities=[NARUTO], result_entities=[SHIPPUDEN],
                         evidence=Evidence(paths=[GraphPath(nodes=[NARUTO, SHIPPUDEN], rels=["sequel"])]))
    guarded, decisions = check_output(POLICY, response, {NARUTO.id, SHIPPUDEN.id})
    assert guarded == response
    assert [d.action for d in decisions] == ["allow"]


def test_output_guard_redacts_pii_and_cuts_long_answers() -> None:
    policy = POLICY.model_copy(update={"output": POLICY.output.model_copy(update={"max_answer_chars": 60})})
    response = _response(answer="Write to fan@club.jp for " + "more " * 40, source_entities=[],
                         result_entities=[], evidence=Evidence())
    guarded, decisions = check_output(policy, response, set())
    assert guarded.answer.startswith("Write to [REDACTED:email] for more")
    assert len(guarded.answer) <= 60 and guarded.answer.endswith("…")
    assert {(d.rule, d.action) for d in decisions} == {("email", "flag"), ("max_answer_chars", "flag")}
    assert not any("fan@club" in w for w in guarded.warnings)


def test_output_guard_flags_instead_of_dropping_when_told() -> None:
    policy = POLICY.model_copy(update={"output": POLICY.output.model_copy(update={"drop_unknown_ids": False})})
    guarded, decisions = check_output(policy, _response(), {NARUTO.id, SHIPPUDEN.id})
    assert guarded.result_entities == [SHIPPUDEN, FAKE]
    assert {d.action for d in decisions} == {"flag"}


def test_output_guard_keeps_the_warning_list_within_bounds() -> None:
    response = _response(warnings=[f"w{i}" for i in range(50)])
    guarded, decisions = check_output(POLICY, response, set())
    assert len(guarded.warnings) == 50
    assert guarded.warnings[-len(decisions):] == [f"guard: {d.detail}" for d in decisions]


emails = st.from_regex(r"[a-z0-9._+-]{1,12}@[a-z0-9-]{1,10}\.[a-z]{2,6}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2600))
def test_check_input_never_raises_and_leaves_no_email(text: str) -> None:
    verdict = check_input(POLICY, text)
    assert EMAIL.search(verdict.text) is None
    assert len(verdict.text) <= POLICY.max_question_chars
    assert verdict.blocked == any(d.action == "block" for d in verdict.decisions)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), emails), max_size=12))
def test_embedded_emails_never_survive(parts: list[str]) -> None:
    text = " ".join(parts)
    verdict = check_input(POLICY, text)
    assert EMAIL.search(verdict.text) is None
    for part in parts:
        if EMAIL.fullmatch(part):
            assert part not in verdict.text
