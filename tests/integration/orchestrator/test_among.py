"""A choice among listed names by a predicate, end to end over the demo catalog: the set difference, with why.

Questions written for these tests (none is from an eval set); everything is real: linking, the graph steps, the
records fetched, the answer writer.
"""

from __future__ import annotations

import pytest

from agentic_rag.orchestrator.loop import Orchestrator
from tests.support.helpers import eid

pytestmark = pytest.mark.integration


async def test_which_is_not_in_a_work_names_the_one_and_where_it_is(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of these is not in Spy x Family: anya, yor, luffy or bond?")).response
    assert r.status == "answered"
    assert r.answer.startswith("Monkey D. Luffy is not in Spy x Family; Anya Forger, Yor Forger and Bond Forger are.")
    assert "One Piece" in r.answer  # where he is instead
    assert [e.id for e in r.result_entities] == [eid("character", "monkey-d-luffy")]
    assert eid("character", "anya-forger") in {e.id for e in r.source_entities}


async def test_a_listed_name_with_two_readings_is_the_one_beside_the_others(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("which of these isn't in Spy x Family: anya, franky, luffy?")
    r = result.response
    assert r.status == "answered" and r.clarification is None  # no "which franky?": the list says
    assert "Franky Franklin" in r.answer and "Monkey D. Luffy is not in Spy x Family" in r.answer


async def test_the_positive_form_and_a_studio(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of the following were animated by Wit Studio: Spy x Family, Mob Psycho 100, "
                                "Naruto?")).response
    assert r.answer.startswith("Spy x Family was animated by Wit Studio; Mob Psycho 100 and Naruto were not.")
    assert "Bones" in r.answer and "Studio Pierrot" in r.answer


async def test_a_relation_to_anyone(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("of gojo, nanami and yuji, who has never taught anyone?")).response
    assert r.answer.startswith("Kento Nanami and Yuji Itadori are not anyone's mentor in the catalog; Satoru Gojo is.")


async def test_a_group_the_catalog_lacks_is_read_from_each_record(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of these is not a Warrior: reiner, bertholdt, armin?")).response
    assert 'no entry for "Warrior"' in r.answer
    assert "Armin Arlert is not a Warrior; Reiner Braun and Bertholdt Hoover are." in r.answer
    assert [e.id for e in r.result_entities] == [eid("character", "armin-arlert")]


async def test_a_group_no_record_mentions_is_no_answer(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of these is not a pirate guild member: luffy, zoro, nami?")).response
    assert "cannot tell" in r.answer and not r.result_entities


async def test_names_the_catalog_lacks_are_said_and_the_rest_answered(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of these is not in Naruto: Kakashi, Zorblax, Gaara or Quinnetta?")).response
    assert r.answer.startswith("Zorblax is not in the catalog. Quinnetta is not in the catalog.")
    assert "Kakashi Hatake and Gaara are both in Naruto" in r.answer and not r.result_entities


async def test_a_list_of_only_names_the_catalog_lacks_answers_nothing_else(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of these isn't in Naruto: Zorblax, Quinnetta or Varnimoth?")).response
    assert r.answer == ("Zorblax is not in the catalog. Quinnetta is not in the catalog. Varnimoth is not in the "
                        "catalog.")
    assert not r.result_entities


async def test_a_value_of_each_record_status(orchestrator: Orchestrator) -> None:
    """A predicate over each listed work's own record, not a relation: its run's status; the type word before the
    list says which form of each title is meant."""
    r = (await orchestrator.run("out of naruto, one piece and death note, which manga are still not done?")).response
    assert r.answer.startswith("One Piece is not finished; Naruto and Death Note are."), r.answer
    assert [e.id for e in r.result_entities] == [eid("manga", "one-piece-manga")]


async def test_a_value_of_each_record_magazine_and_format(orchestrator: Orchestrator) -> None:
    r = (await orchestrator.run("which of these manga never ran in shonen jump - bleach, frieren, one piece?")).response
    assert r.answer.startswith("Frieren: Beyond Journey's End was not serialized in shonen jump"), r.answer
    assert "Weekly Shōnen Sunday" in r.answer  # each one's magazine, said
    r = (await orchestrator.run("which of the following is a film: Mob Psycho 100, Jujutsu Kaisen 0, Naruto?")).response
    assert r.answer.startswith("Jujutsu Kaisen 0 is a film;"), r.answer


async def test_who_did_what_for_several_works_answers_each(orchestrator: Orchestrator) -> None:
    """Names joined by "and" asked the same thing: each is answered, in the order asked (not a relation between them,
    and not the first alone)."""
    r = (await orchestrator.run("who composed the music for evangelion and cowboy bebop?")).response
    assert r.answer == "Neon Genesis Evangelion has music by Shirō Sagisu. Cowboy Bebop has music by Yoko Kanno.", \
        r.answer
