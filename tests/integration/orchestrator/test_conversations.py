"""Conversations end to end, in-process (issue 38): follow-ups read in the light of earlier turns, kept in
PostgreSQL a turn at a time, scoped to their tenant, bounded, forgotten on request."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from agentic_rag.orchestrator.conversations import (
    ConversationBusy,
    ConversationFull,
    ConversationNotFound,
    ConversationStore,
)
from agentic_rag.orchestrator.loop import Orchestrator
from agentic_rag.orchestrator.trajectory import TrajectoryStore
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import make_pool

pytestmark = pytest.mark.integration


def with_settings(o: Orchestrator, **changes: object) -> Orchestrator:
    settings = o.settings.model_copy(update=changes)
    return Orchestrator(settings, planner=o.planner, validator=o.validator, fallback=o.fallback,
                        retrieval=o.retrieval, store=o.store, policy=o.policy,
                        conversations=ConversationStore(o.store.pool, settings))


async def standalone_of(o: Orchestrator, trajectory_id: uuid.UUID) -> str | None:
    traj = await o.store.get(trajectory_id)
    assert traj is not None
    return next((e.payload["standalone"] for e in traj.events if e.stage == "rewrite" and "standalone" in e.payload),
                None)


async def test_a_follow_up_is_read_in_the_light_of_the_turns_before_it(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    assert first.conversation_id is not None and first.turn == 1
    assert "Tetsurō Araki" in first.response.answer
    he = await orchestrator.run("and what else did he direct?", tenant="conv", conversation_id=first.conversation_id)
    assert (he.conversation_id, he.turn) == (first.conversation_id, 2)
    assert await standalone_of(orchestrator, he.trajectory_id) == "and what else did Tetsurō Araki direct?"
    assert "Attack on Titan" in he.response.answer
    it = await orchestrator.run("how many episodes?", tenant="conv", conversation_id=first.conversation_id)
    assert "37" in it.response.answer  # Death Note's: what the conversation was about, not Araki's other work
    # the conversation keeps every turn, with the question as asked and as read
    kept = await orchestrator.conversations.get(first.conversation_id, tenant="conv")
    assert kept is not None and [t.seq for t in kept.turns] == [1, 2, 3]
    assert kept.turns[1].question == "and what else did he direct?"
    assert kept.turns[1].trajectory_id == he.trajectory_id


async def test_a_new_topic_inherits_nothing_and_a_pointing_word_with_nothing_behind_it_is_asked(
        orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("when was MAPPA founded?", tenant="conv")
    other = await orchestrator.run("who animated Cowboy Bebop?", tenant="conv", conversation_id=first.conversation_id)
    assert "Sunrise" in other.response.answer
    assert await standalone_of(orchestrator, other.trajectory_id) == "who animated Cowboy Bebop?"
    lost = await orchestrator.run("how old is she?", tenant="conv", conversation_id=first.conversation_id)
    assert lost.response.status == "needs_clarification"
    assert lost.response.clarification is not None and lost.response.clarification.choices == []
    assert '"she"' in lost.response.answer


async def test_a_first_question_that_only_points_is_asked_back_and_the_name_given_answers_it(
        orchestrator: Orchestrator) -> None:
    """"when did it end?" opening a conversation points at nothing: it is asked back, and the name the reply gives
    completes the question asked ("the fullmetal alchemist manga": when it ended)."""
    lost = await orchestrator.run("when did it end?", tenant="conv")
    assert lost.response.status == "needs_clarification" and '"it"' in lost.response.answer
    named = await orchestrator.run("the fullmetal alchemist manga", tenant="conv",
                                   conversation_id=lost.conversation_id)
    assert named.response.status == "answered" and "2010" in named.response.answer
    assert await standalone_of(orchestrator, named.trajectory_id) == "when did the fullmetal alchemist manga end?"


async def test_a_clarification_is_answered_in_words(orchestrator: Orchestrator) -> None:
    asked = await orchestrator.run("who animated hunter x hunter?", tenant="conv")
    assert asked.response.status == "needs_clarification"
    picked = await orchestrator.run("no, I meant the 2011 one", tenant="conv", conversation_id=asked.conversation_id)
    assert picked.response.status == "answered" and "Madhouse" in picked.response.answer


async def test_a_clarification_resumed_by_its_button_is_the_next_turn(orchestrator: Orchestrator) -> None:
    asked = await orchestrator.run("who animated hunter x hunter?", tenant="conv")
    assert asked.response.clarification is not None
    choice = next(i for i, c in enumerate(asked.response.clarification.choices) if "2011" in c.label)
    resumed = await orchestrator.resume(asked.trajectory_id, choice, tenant="conv")
    assert (resumed.conversation_id, resumed.turn) == (asked.conversation_id, 2)
    it = await orchestrator.run("when did it start?", tenant="conv", conversation_id=asked.conversation_id)
    assert "2011" in it.response.answer


async def test_bad_conversation_ids_change_nothing(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    assert first.conversation_id is not None
    before = await orchestrator.store.list(tenant="conv", limit=200)
    for cid, tenant in ((uuid.uuid4(), "conv"), (first.conversation_id, "someone-else")):
        with pytest.raises(ConversationNotFound):
            await orchestrator.run("and what else did he direct?", tenant=tenant, conversation_id=cid)
    assert await orchestrator.conversations.get(first.conversation_id, tenant="someone-else") is None
    assert [t.id for t in await orchestrator.store.list(tenant="conv", limit=200)] == [t.id for t in before]


async def test_a_conversation_at_its_turn_limit_says_to_start_a_new_one(orchestrator: Orchestrator) -> None:
    o = with_settings(orchestrator, conversation_max_turns=2)
    first = await o.run("who directed Death Note?", tenant="conv")
    await o.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    with pytest.raises(ConversationFull, match="without a conversation_id"):
        await o.run("how many episodes?", tenant="conv", conversation_id=first.conversation_id)


async def test_an_expired_conversation_is_gone(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    assert first.conversation_id is not None
    async with orchestrator.store.pool.acquire() as conn:
        await conn.execute("UPDATE conversations SET expires_at = now() - interval '1 second' WHERE id = $1",
                           first.conversation_id)
    with pytest.raises(ConversationNotFound, match="expired"):
        await orchestrator.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    assert await orchestrator.conversations.expire() >= 1
    assert await orchestrator.conversations.get(first.conversation_id, tenant="conv") is None


async def test_two_turns_at_once_one_runs_and_the_other_is_told_to_retry(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    results = await asyncio.gather(*(orchestrator.run(q, tenant="conv", conversation_id=first.conversation_id)
                                     for q in ("is it finished?", "how many episodes?")), return_exceptions=True)
    busy = [r for r in results if isinstance(r, ConversationBusy)]
    done = [r for r in results if not isinstance(r, BaseException)]
    assert len(busy) == 1 and len(done) == 1 and done[0].turn == 2
    # ... and once it has answered, the next turn goes through
    again = await orchestrator.run("how many episodes?", tenant="conv", conversation_id=first.conversation_id)
    assert again.turn == 3


async def test_a_turn_whose_run_died_does_not_hold_the_conversation(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    assert first.conversation_id is not None
    # a replica that claimed the next turn and died: its hold lapses at the run's deadline
    await orchestrator.conversations.claim(first.conversation_id, tenant="conv", trajectory_id=uuid.uuid4(),
                                           deadline_ms=100)
    with pytest.raises(ConversationBusy):
        await orchestrator.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    async with orchestrator.store.pool.acquire() as conn:
        await conn.execute("UPDATE conversations SET busy_until = now() - interval '1 second' WHERE id = $1",
                           first.conversation_id)
    later = await orchestrator.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    assert later.turn == 2 and "finished" in later.response.answer


async def test_a_turn_whose_run_was_closed_as_abandoned_frees_the_conversation_at_once(
        orchestrator: Orchestrator) -> None:
    """Issue 41, point 7: once the run holding a turn is closed as abandoned (its process is gone), the next turn
    goes through without waiting for the claim's lease."""
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    assert first.conversation_id is not None
    dead = uuid.uuid4()
    await orchestrator.conversations.claim(first.conversation_id, tenant="conv", trajectory_id=dead,
                                           deadline_ms=60_000)
    with pytest.raises(ConversationBusy):
        await orchestrator.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    assert await orchestrator.conversations.release_runs([uuid.uuid4()]) == 0  # another run's: nothing
    assert await orchestrator.conversations.release_runs([dead]) == 1
    later = await orchestrator.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    assert later.turn == 2


async def test_deleting_a_conversation_forgets_its_turns(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("who directed Death Note?", tenant="conv")
    assert first.conversation_id is not None
    assert not await orchestrator.conversations.delete(first.conversation_id, tenant="someone-else")
    assert await orchestrator.conversations.delete(first.conversation_id, tenant="conv")
    async with orchestrator.store.pool.acquire() as conn:
        left = await conn.fetchval("SELECT count(*) FROM conversation_turns WHERE conversation_id = $1",
                                   first.conversation_id)
    assert left == 0
    with pytest.raises(ConversationNotFound):
        await orchestrator.run("is it finished?", tenant="conv", conversation_id=first.conversation_id)
    # the run itself stays on record, append-only like every trajectory
    assert await orchestrator.store.get(first.trajectory_id) is not None


class Recording:
    """The planner, with every role input it was given kept."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.inputs: list[object] = []

    async def generate(self, role_input: object, output_type: type, **options: object) -> object:
        self.inputs.append(role_input)
        return await self.inner.generate(role_input, output_type, **options)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


async def test_every_role_of_a_follow_up_is_given_the_conversation(orchestrator: Orchestrator) -> None:
    recording = Recording(orchestrator.planner)
    o = Orchestrator(orchestrator.settings, planner=recording, validator=orchestrator.validator,  # type: ignore[arg-type]
                     fallback=orchestrator.fallback, retrieval=orchestrator.retrieval, store=orchestrator.store,
                     policy=orchestrator.policy)
    first = await o.run("who directed Death Note?", tenant="conv")
    assert all(getattr(i, "conversation", None) is None for i in recording.inputs)
    recording.inputs.clear()
    await o.run("what else did he direct?", tenant="conv", conversation_id=first.conversation_id)
    cards = [getattr(i, "conversation", None) for i in recording.inputs]
    assert cards and all(c is not None and c.turns[-1].question == "who directed Death Note?" for c in cards)
    assert "Tetsurō Araki" in {n.name for n in cards[0].turns[-1].answers}


async def test_two_replicas_take_turns_on_one_conversation(orchestrator: Orchestrator, dsn: str,
                                                          settings: Settings) -> None:
    """Two Orchestrators with pools of their own, as two replicas are: a conversation's state is in PostgreSQL,
    so turns alternating between them read each other's."""
    pool = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 2}))
    try:
        other = Orchestrator(orchestrator.settings, planner=orchestrator.planner, validator=orchestrator.validator,
                             fallback=orchestrator.fallback, retrieval=orchestrator.retrieval,
                             store=TrajectoryStore(pool, orchestrator.settings), policy=orchestrator.policy)
        replicas = [orchestrator, other, orchestrator, other]
        asked = ["who directed Death Note?", "what else did he direct?", "how many episodes?", "and the manga?"]
        conversation = None
        answers = []
        for replica, question in zip(replicas, asked, strict=True):
            result = await replica.run(question, tenant="replicas", conversation_id=conversation)
            conversation = result.conversation_id
            answers.append(result.response.answer)
        assert "Tetsurō Araki" in answers[0] and "Attack on Titan" in answers[1] and "37" in answers[2]
        kept = await other.conversations.get(conversation, tenant="replicas") if conversation else None
        assert kept is not None and [t.seq for t in kept.turns] == [1, 2, 3, 4]
        # (the manga's length is counted in its own unit)
        assert kept.turns[3].standalone == "how many volumes of Death Note manga?" and "12" in answers[3]
    finally:
        await pool.close()


async def test_it_after_a_settled_reading_asks_no_clarification_again(orchestrator: Orchestrator) -> None:
    """"the Bleach manga" settles which Bleach; "is it still going?" is that manga's question, not a new choice."""
    first = await orchestrator.run("how many volumes does the bleach manga have?", tenant="conv")
    assert "74" in first.response.answer
    it = await orchestrator.run("when did it end?", tenant="conv", conversation_id=first.conversation_id)
    assert it.response.status == "answered", it.response.answer
    assert "2016" in it.response.answer


async def test_how_long_asks_which_and_a_reply_in_words_gets_that_one_s_length(orchestrator: Orchestrator) -> None:
    first = await orchestrator.run("how long is bleach?", tenant="conv")
    assert first.response.status == "needs_clarification"
    manga = await orchestrator.run("the manga one", tenant="conv", conversation_id=first.conversation_id)
    assert manga.response.status == "answered" and "74 volumes" in manga.response.answer, manga.response.answer


async def ask(o: Orchestrator, *turns: str) -> list[str]:
    """The answers to ``turns`` asked one after another in one conversation."""
    conversation, answers = None, []
    for question in turns:
        r = await o.run(question, tenant="conv", conversation_id=conversation)
        conversation = r.conversation_id
        answers.append(r.response.answer)
    return answers


async def test_the_anime_after_a_manga_is_its_adaptation_whatever_is_asked_of_it(orchestrator: Orchestrator) -> None:
    """"the anime" names the form of the work talked about: what is asked of it (episodes) does not first narrow
    the conversation's names to anime, which would find none after a manga's turns."""
    answers = await ask(orchestrator, "who drew the one-punch man manga?", "how many episodes did the anime have?")
    assert "Yusuke Murata" in answers[0] and "12 episodes" in answers[1], answers


async def test_each_and_both_stand_for_the_names_before(orchestrator: Orchestrator) -> None:
    answers = await ask(orchestrator, "is naruto older than bleach?", "who drew each?")
    assert "Masashi Kishimoto" in answers[1] and "Tite Kubo" in answers[1], answers[1]


async def test_a_short_reply_that_asks_its_own_thing_is_not_the_last_question_again(
        orchestrator: Orchestrator) -> None:
    """"and killua's dad?" after "who is gon's best friend" names Killua and a relation of its own: no new subject
    for the friend question. "oh no, I meant X" is a correction too."""
    answers = await ask(orchestrator, "who is gon's best friend?", "and killua's dad?")
    assert "Killua Zoldyck" in answers[0] and "Silva Zoldyck" in answers[1], answers
    answers = await ask(orchestrator, "how many episodes does hunter x hunter (1999) have?",
                        "oh no i meant the 2011 one")
    assert "148" in answers[1], answers[1]


async def test_which_one_chooses_among_the_names_asked_about_as_they_were_meant(orchestrator: Orchestrator) -> None:
    """"which one" with nothing after it chooses among the last question's names, each the reading it had there
    (the One Piece manga stays the manga: no clarification)."""
    answers = await ask(orchestrator, "how many volumes do the one piece manga and naruto's have?",
                        "which one started first?")
    assert "One Piece started in 1997 and Naruto in 1999" in answers[1], answers[1]


async def test_a_cue_word_with_a_letter_left_out_and_a_marriage(orchestrator: Orchestrator) -> None:
    answers = await ask(orchestrator, "who does goku end up marrying?", "who directd dragon ball z?")
    assert "Chi-Chi (wife)" in answers[0], answers[0]
    assert "was directed by" in answers[1], answers[1]
