"""The loop end to end, in-process, with the heuristic models over the demo catalog.

Everything is real: PostgreSQL, Qdrant local mode, the embedding model, the trajectory store. Faults
are real too: a killed database connection, a pool pointed at a port where nothing listens.
"""

from __future__ import annotations

import asyncio
import io

import pytest
from PIL import Image
from ray.exceptions import RayActorError

from agentic_rag.models.embeddings import Embedder
from agentic_rag.orchestrator.guards import load_policy
from agentic_rag.orchestrator.loop import (
    IMAGE_NOT_RESUMED,
    ClarificationError,
    NotAwaitingClarification,
    Orchestrator,
)
from agentic_rag.orchestrator.retrieval import LocalRetrieval
from agentic_rag.orchestrator.runtime import build_orchestrator
from agentic_rag.orchestrator.trajectory import TrajectoryError, TrajectoryStore
from agentic_rag.planners.heuristic import HeuristicModel
from agentic_rag.protocol import GraphIntent, GraphResult
from agentic_rag.retrievers.errors import RetrievalError
from agentic_rag.retrievers.graph import PostgresGraphExecutor
from agentic_rag.settings import Settings
from agentic_rag.storage.postgres import connect, make_pool
from agentic_rag.storage.qdrant import VectorStore
from agentic_rag.storage.sql import Pool
from tests.support.helpers import eid

pytestmark = pytest.mark.integration


LUFFY, NAMI, ONE_PIECE = eid("character", "monkey-d-luffy"), eid("character", "nami"), eid("anime", "one-piece")


def with_settings(o: Orchestrator, **changes: object) -> Orchestrator:
    return Orchestrator(o.settings.model_copy(update=changes), planner=o.planner, validator=o.validator,
                        fallback=o.fallback, retrieval=o.retrieval, store=o.store, policy=o.policy)


def stages_of(events: list[tuple[str, str]]) -> list[str]:
    return [f"{stage}:{type_}" for stage, type_ in events]


async def test_seed_trace_which_anime_is_luffy_in(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("Which anime is Luffy in?")
    r = result.response
    assert r.status == "answered" and r.evidence.termination_reason == "sufficient"
    assert ONE_PIECE in {e.id for e in r.result_entities}
    assert "One Piece" in r.answer
    assert result.turns == 2  # resolve the character, then fetch its anime by id

    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None and traj.status == "answered" and traj.request_id == result.request_id
    selects = [e.payload for e in traj.events if e.stage == "select" and e.type == "decision"]
    assert selects[0]["intents"][0]["entity_type"] == "character" and selects[0]["intents"][0]["query"] == "Luffy"
    assert selects[1]["intents"][0]["filters"]["id"], "turn 2 fetches the anime by id"
    validations = [e.payload["sufficient"] for e in traj.events if e.stage == "validate"]
    assert validations == [False, True]
    assert [e.seq for e in traj.events] == list(range(1, len(traj.events) + 1))
    # entity linking runs before any model: every planner reads the same names
    assert [e.stage for e in traj.events[:3]] == ["guard_input", "link", "rewrite"]
    assert traj.events[1].payload["mentions"][0]["text"] == "Luffy"
    assert "retrieval_mode" in traj.events[2].payload["rewrite"]
    assert traj.events[-1].stage == "final"
    assert traj.timings["total_ms"] > 0 and traj.timings["qdrant_ms"] > 0
    assert traj.final_response is not None and traj.final_response["status"] == "answered"


async def test_seed_trace_luffy_and_nami_is_a_path(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("How is Luffy related to Nami?")
    r = result.response
    assert r.status == "answered"
    assert {e.id for e in r.result_entities} == {LUFFY, NAMI}
    assert r.evidence.paths, "evidence.paths carries the relation chain"
    path = r.evidence.paths[0]
    assert {path.nodes[0].id, path.nodes[-1].id} == {LUFFY, NAMI} and path.rels
    assert {n.id for n in path.nodes} <= {e.id for e in r.source_entities}
    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None
    first = next(e.payload for e in traj.events if e.stage == "select")
    # both names resolve in one batch, and the path between their linked ids runs beside them: one turn
    assert [i.get("query") for i in first["intents"]] == ["Luffy", "Nami", None]
    assert first["intents"][2]["query_type"] == "path"
    assert sum(e.stage == "select" for e in traj.events) == 1
    actions = [e for e in traj.events if e.stage == "retrieve" and e.type == "action"]
    assert [a.payload["intent"].get("query_type") for a in actions][-1] == "path"


async def test_a_batch_runs_concurrently(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("Compare Hunter x Hunter (1999) and Hunter x Hunter (2011)")
    assert result.response.status == "answered"
    assert "62" in result.response.answer and "148" in result.response.answer
    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None
    stages = [(e.stage, e.type) for e in traj.events]
    # both fetches and the comparison of their linked ids start before any observation comes back
    first_obs = stages.index(("retrieve", "observation"))
    assert stages[:first_obs].count(("retrieve", "action")) == 3


async def test_fast_path_skips_the_validator(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("Tell me about Monkey D. Luffy")
    assert result.response.status == "answered" and result.response.evidence.termination_reason == "fast_path"
    assert LUFFY in {e.id for e in result.response.result_entities}
    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None and not [e for e in traj.events if e.stage == "validate" and "sufficient" in e.payload]


async def test_no_match_is_an_explicit_not_found(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("Tell me about Zxqv Plorbnik")
    r = result.response
    assert r.status == "not_found" and r.answer == "Zxqv Plorbnik is not in the catalog."
    assert not r.result_entities
    assert result.turns <= orchestrator.settings.agent_max_turns
    # a question that names nothing is no name the catalog lacks
    result = await orchestrator.run("tell me about the show where a corgi plays chess on the moon")
    assert result.response.status in ("not_found", "best_effort") and "not in the catalog" not in result.response.answer


async def test_a_name_the_catalog_lacks_beside_one_it_has_is_said_plainly(orchestrator: Orchestrator) -> None:
    """The answer about the names the catalog has never passes for an answer about the one it lacks."""
    r = (await orchestrator.run("did Mamoru Hosoda direct dragon ball z battle of gods?")).response
    assert r.status == "answered" and r.answer.startswith("Mamoru Hosoda is not in the catalog. ")
    assert "Masahiro Hosoda" in r.answer  # and what the catalog says of the film
    r = (await orchestrator.run("is Kokushibo stronger than akaza? theyre both upper moons in demon slayer")).response
    assert r.answer.startswith("Kokushibo is not in the catalog.")
    # a question that names only what the catalog has says nothing of the kind
    r = (await orchestrator.run("which studio animated death note?")).response
    assert "not in the catalog" not in r.answer


async def test_who_a_record_describes_beside_the_name_given_is_that_record(orchestrator: Orchestrator) -> None:
    """The words of the question pick out the record that says them of the name ("responsible for the loss of Jet's
    arm"); the name's own record does not answer who did it to him."""
    r = (await orchestrator.run("who took Jet Black's arm")).response
    assert r.status == "answered" and r.answer.startswith("Udai Taxim is a character in Cowboy Bebop.")


async def test_who_a_record_describes_by_one_word_a_relations_detail_or_in_a_work(orchestrator: Orchestrator) -> None:
    """One word of its own beside the name is enough to search ("who killed ace"), a relation's detail is its
    target's words ("L's handler"), the work a question is set in is no second name, a question the encoder read as
    a chain ("who gave luffy his straw hat", nearest "who directed ...") searches first, and a work's character is
    found by its description alone ("the captain of the 6th division")."""
    for question, who in [("who killed ace", "Sakazuki"), ("who is L's handler in death note", "Watari"),
                          ("who gave luffy his straw hat", "Shanks"), ("who rebuilt genos", "Dr. Kuseno"),
                          ("who's the captain of the 6th division in bleach", "Byakuya Kuchiki"),
                          # "leads" the verb, no lead role; the record says "Leader of the Phantom Troupe"
                          ("who leads the phantom troupe in hunter x hunter", "Chrollo Lucilfer"),
                          # found by a relation's detail alone ("Maes Hughes: his killer"): kept though its snippet
                          # never names him (an entry its words found is not graded away)
                          ("who killed maes hughes in fma", "Envy")]:
        r = (await orchestrator.run(question)).response
        assert r.status == "answered" and r.answer.startswith(f"{who} is a character"), (question, r.answer)
    # a record that shares only the name's words (Zeke's father's, which names him) is not who the question means
    r = (await orchestrator.run("zeke yeager... remind me who that guy is again?")).response
    assert r.answer.startswith("Zeke Yeager is a character"), r.answer
    # ... nor one that shares only the question's other words and never the name ("talking" chimeras)
    r = (await orchestrator.run("just started csm and everyone keeps talking about makima.. who even is she")).response
    assert r.answer.startswith("Makima is a character"), r.answer


async def test_a_relation_the_graph_lacks_quotes_what_the_record_says(orchestrator: Orchestrator) -> None:
    """"what does illumi fight with" reads as his enemies, which the catalog does not record; his description says
    it, and is quoted, cited, beside saying so."""
    r = (await orchestrator.run("what does illumi fight with")).response
    assert r.answer.startswith("The catalog records no enemy for Illumi Zoldyck. The catalog says of Illumi Zoldyck: ")
    assert "needles" in r.answer and "Illumi Zoldyck" in r.citations


async def test_a_set_less_another_set_is_answered_from_both_chains(orchestrator: Orchestrator) -> None:
    """Set differences over what retrieval returns: the franchise's anime less the character's; one work's main
    characters less another's cast. The names left are the results."""
    r = (await orchestrator.run("which demon slayer anime is zenitsu missing from")).response
    assert r.status == "answered" and r.answer.startswith(
        "Zenitsu Agatsuma does not appear in Demon Slayer: Kimetsu no Yaiba - Swordsmith Village Arc;"), r.answer
    assert [e.entity_type for e in r.result_entities] == ["anime"]
    r = (await orchestrator.run("which of the jjk season 1 main characters don't show up in the jjk 0 movie")).response
    assert r.answer.startswith("Of the main characters of Jujutsu Kaisen, ") and "Yuji Itadori" in r.answer
    assert "Satoru Gojo" not in r.answer and len(r.result_entities) >= 3


async def test_what_someone_a_relation_reaches_does_is_quoted_from_their_record(orchestrator: Orchestrator) -> None:
    """"what does yor's brother do": the brother, and the sentence of his description nearest what is asked, cited."""
    r = (await orchestrator.run("what does yor's brother do")).response
    assert r.answer.startswith("Yor Forger's brother is Yuri Briar. The catalog says of Yuri Briar: ")
    assert "State Security" in r.answer and "Yuri Briar" in r.citations
    r = (await orchestrator.run("who is luffy's dad and what does he do")).response
    assert "Revolutionary Army" in r.answer, r.answer


async def test_a_value_or_relation_the_record_lacks_is_not_found_and_said(orchestrator: Orchestrator) -> None:
    """The record asked about is found and what is asked of it is not recorded: the run says so and ends not_found,
    at once (no turns spent looking for what the record cannot hold)."""
    result = await orchestrator.run("how many volumes does the frieren manga have")
    assert result.response.status == "not_found" and result.turns == 1
    assert result.response.answer == "The catalog does not record the volumes of Frieren: Beyond Journey's End."
    assert result.response.source_entities and not result.response.result_entities
    result = await orchestrator.run("who directed one piece film red")
    assert result.response.status == "not_found" and result.turns == 1
    assert result.response.answer == "The catalog records no director or chief director for One Piece Film: Red."
    # what the catalog records of nothing (a voice cast) is said to be not in the catalog, of the record named
    r = (await orchestrator.run("who voices gojo in the jujutsu kaisen anime?")).response
    assert r.status == "not_found" and r.answer.startswith("Voice actors are not in the catalog: it records none")
    # a part that is answered beside it is an answer; so is an original anime's missing source (it is original)
    r = (await orchestrator.run("is cowboy bebop based on a manga")).response
    assert r.status == "answered" and "original anime" in r.answer


async def test_a_question_about_a_name_the_catalog_lacks_set_in_a_work_it_has_is_not_found(
        orchestrator: Orchestrator) -> None:
    """The work is only where the question is set: what the catalog has of it answers nothing asked."""
    r = (await orchestrator.run("In Jujutsu Kaisen, what is Hiromi Higuruma's domain expansion?")).response
    assert r.status == "not_found" and not r.result_entities
    assert r.answer == ("Hiromi Higuruma is not in the catalog. The catalog has Jujutsu Kaisen, but nothing about what "
                        "the question asks.")


async def test_names_the_catalog_lacks_whole_numbered_or_led_by_a_type_word(orchestrator: Orchestrator) -> None:
    """One word of an unknown name linking elsewhere, a numbering, or a type word the catalog's names use leading
    it, never hides the name the catalog lacks."""
    r = (await orchestrator.run("did Shinji Morikawa ever fight naruto?")).response  # "Shinji" is Shinji Ikari's
    assert r.answer.startswith("Shinji Morikawa is not in the catalog.")
    r = (await orchestrator.run("is Gorugon No. 9 animated by the bleach studio?")).response
    assert r.answer.startswith("Gorugon No. 9 is not in the catalog.")
    r = (await orchestrator.run("did Studio Ghibli animate any of the naruto films?")).response
    assert r.answer.startswith("Studio Ghibli is not in the catalog.")
    r = (await orchestrator.run("did Studio Pierrot animate naruto?")).response  # a studio the catalog has
    assert "not in the catalog" not in r.answer


async def test_a_title_whose_readings_answer_alike_is_answered_not_asked(orchestrator: Orchestrator) -> None:
    """An anime and its manga that are both finished: "is it finished?" needs no question."""
    r = (await orchestrator.run("has my hero academia finished?")).response
    assert r.status == "answered" and r.clarification is None and "finished" in r.answer
    # a verb that only one reading takes says which is meant
    r = (await orchestrator.run("where can I read mob psycho 100?")).response
    assert r.status == "answered" and "manga" in r.answer


async def test_a_clarification_is_still_asked_where_the_answer_depends_on_it(orchestrator: Orchestrator) -> None:
    # the One-Punch Man anime is finished, the manga is not
    r = (await orchestrator.run("has one-punch man finished?")).response
    assert r.status == "needs_clarification" and r.clarification is not None
    assert {c.entity.entity_type for c in r.clarification.choices} == {"anime", "manga"}
    # two characters of one name
    r = (await orchestrator.run("Annie: what is her story?")).response
    assert r.status == "needs_clarification" and r.clarification is not None
    assert {c.entity.entity_type for c in r.clarification.choices} == {"character"}


async def test_a_clarification_after_an_image_question_says_the_image_is_not_kept(orchestrator: Orchestrator) -> None:
    picture = io.BytesIO()
    Image.new("RGB", (32, 32), (200, 40, 40)).save(picture, "PNG")
    asked = await orchestrator.run("Tell me about Naruto", image=picture.getvalue())
    assert asked.response.status == "needs_clarification" and asked.response.clarification is not None
    done = await orchestrator.resume(asked.trajectory_id, 0)
    assert IMAGE_NOT_RESUMED in done.response.warnings
    # a question without an image resumes without the warning
    plain = await orchestrator.run("Tell me about Naruto")
    assert IMAGE_NOT_RESUMED not in (await orchestrator.resume(plain.trajectory_id, 0)).response.warnings


async def test_clarification_round_trip_from_another_orchestrator(
        orchestrator: Orchestrator, pool: Pool, qdrant: VectorStore, embedder: Embedder,
        settings: Settings) -> None:
    asked = await orchestrator.run("Tell me about Naruto")
    r = asked.response
    assert r.status == "needs_clarification" and r.clarification is not None
    types = {c.entity.entity_type for c in r.clarification.choices}
    assert {"anime", "manga", "character"} <= types
    # any replica can resume: a second orchestrator with its own store object
    other = build_orchestrator(settings, pool, qdrant, embedder)[0]
    character = next(i for i, c in enumerate(r.clarification.choices) if c.entity.entity_type == "character")
    done = await other.resume(asked.trajectory_id, character)
    assert done.trajectory_id == asked.trajectory_id
    assert done.response.status == "answered"
    chosen = r.clarification.choices[character].entity
    assert chosen in done.response.result_entities
    traj = await other.store.get(asked.trajectory_id)
    assert traj is not None and traj.status == "answered"
    assert [e.stage for e in traj.events].count("clarify") == 2  # asked, then chosen
    with pytest.raises(ClarificationError, match="not waiting"):
        await other.resume(asked.trajectory_id, 0)


async def test_a_bad_clarification_choice_is_a_clear_error(orchestrator: Orchestrator) -> None:
    asked = await orchestrator.run("Tell me about Naruto")
    with pytest.raises(ClarificationError, match="not one of the offered choices"):
        await orchestrator.resume(asked.trajectory_id, 99)


async def test_context_narrows_the_reading_instead_of_asking(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("What is the sequel of Naruto?")
    assert result.response.status == "answered"
    assert "Shippuden" in result.response.answer


async def test_pii_is_redacted_before_anything_is_stored(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("Which anime is Luffy in? mail me at fan@example.com")
    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None and "fan@example.com" not in traj.query
    assert any(e.type == "guard" and e.stage == "guard_input" for e in traj.events)
    assert any("input guard" in w for w in result.response.warnings)


async def test_a_blocked_question_never_reaches_a_model(orchestrator: Orchestrator) -> None:
    result = await orchestrator.run("My card is 4111 1111 1111 1111, which anime is Luffy in?")
    assert result.response.status == "blocked"
    traj = await orchestrator.store.get(result.trajectory_id)
    assert traj is not None and traj.status == "blocked"
    assert not [e for e in traj.events if e.stage in ("rewrite", "select")]
    assert "4111" not in traj.query


async def test_linear_mode_retrieves_once(orchestrator: Orchestrator) -> None:
    # the anime a character appears in are fetched from the ids on its row: a second step, which linear never takes
    result = await orchestrator.run("Which anime is Luffy in?", mode="linear")
    assert result.turns == 1 and result.response.evidence.termination_reason == "linear"
    assert ONE_PIECE not in {e.id for e in result.response.result_entities}


async def test_turn_budget_ends_best_effort(orchestrator: Orchestrator) -> None:
    o = with_settings(orchestrator, agent_max_turns=1)
    result = await o.run("Which anime is Luffy in?")  # the character, then the anime its row lists: two turns
    assert result.turns == 1
    assert result.response.status in ("best_effort", "not_found")
    assert result.response.evidence.termination_reason == "max_turns"
    assert any("turn budget" in w for w in result.response.warnings)


class SlowRetrieval(LocalRetrieval):
    """The real retrieval, slowed down: fault injection for the deadline."""

    async def graph(self, intent):  # type: ignore[no-untyped-def]
        await asyncio.sleep(5)
        return await super().graph(intent)


async def test_deadline_ends_the_run_with_what_was_found(orchestrator: Orchestrator, pool: Pool,
                                                         qdrant: VectorStore, embedder: Embedder) -> None:
    o = with_settings(orchestrator, agent_deadline_ms=1500)
    o.retrieval = SlowRetrieval(pool, qdrant, embedder.aembed, o.settings)
    t0 = asyncio.get_running_loop().time()
    result = await o.run("How is Luffy related to Nami?")
    assert asyncio.get_running_loop().time() - t0 < 4
    assert result.response.evidence.termination_reason == "deadline"
    assert any("deadline" in w for w in result.response.warnings)


async def _terminate(dsn: str, pid: int) -> None:
    admin = await connect(dsn)
    try:
        await admin.execute("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()


async def _dead_pool(settings: Settings) -> Pool:
    """A pool of a server that is not there (it opens no connection until asked for one)."""
    return await make_pool("host=127.0.0.1 port=1 connect_timeout=1",
                           settings.model_copy(update={"pool_min_size": 0, "pool_max_size": 1}))


async def test_a_killed_database_connection_is_retried(orchestrator: Orchestrator, dsn: str, settings: Settings,
                                                       pool: Pool, qdrant: VectorStore,
                                                       embedder: Embedder) -> None:
    graph_pool = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}))
    try:
        async with graph_pool.acquire() as conn:
            pid = conn.get_server_pid()
        await _terminate(dsn, pid)
        o = with_settings(orchestrator)
        o.retrieval = LocalRetrieval(pool, qdrant, embedder.aembed, settings,
                                     graph=PostgresGraphExecutor(graph_pool, settings))
        result = await o.run("How is Luffy related to Nami?")
        assert result.response.status == "answered" and result.response.evidence.paths
    finally:
        await graph_pool.close()


async def test_a_dead_graph_database_gives_partial_results_with_warnings(
        orchestrator: Orchestrator, settings: Settings, pool: Pool, qdrant: VectorStore,
        embedder: Embedder) -> None:
    dead = await _dead_pool(settings)
    try:
        o = with_settings(orchestrator)
        o.retrieval = LocalRetrieval(pool, qdrant, embedder.aembed, settings,
                                     graph=PostgresGraphExecutor(dead, settings.model_copy(
                                         update={"retry_attempts": 2})))
        result = await o.run("How is Luffy related to Nami?")
        r = result.response
        assert r.status in ("best_effort", "not_found")
        assert any("failed" in w for w in r.warnings)
        traj = await o.store.get(result.trajectory_id)
        assert traj is not None and any(e.type == "error" and e.stage == "retrieve" for e in traj.events)
        # the searches that worked are still there
        assert any(e.type == "observation" and e.stage == "retrieve" and e.payload["count"] for e in traj.events)
    finally:
        await dead.close()


async def test_an_unreachable_trajectory_store_fails_the_run_clearly(orchestrator: Orchestrator,
                                                                     settings: Settings) -> None:
    dead = await _dead_pool(settings)
    try:
        o = Orchestrator(settings.model_copy(update={"retry_attempts": 2}), planner=HeuristicModel(),
                         validator=HeuristicModel(), fallback=HeuristicModel(), retrieval=orchestrator.retrieval,
                         store=TrajectoryStore(dead, settings.model_copy(update={"retry_attempts": 2})),
                         policy=load_policy())
        with pytest.raises(TrajectoryError, match="trajectory store unavailable"):
            await o.run("Which anime is Luffy in?")
    finally:
        await dead.close()


async def test_losing_the_store_mid_run_reports_nothing(orchestrator: Orchestrator, dsn: str,
                                                        settings: Settings) -> None:
    store_pool = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}))
    store = TrajectoryStore(store_pool, settings.model_copy(update={"retry_attempts": 2}))
    o = Orchestrator(settings, planner=HeuristicModel(), validator=HeuristicModel(), fallback=HeuristicModel(),
                     retrieval=orchestrator.retrieval, store=store, policy=load_policy())

    seen: list[str] = []

    async def sink(event: dict[str, object]) -> None:
        seen.append(str(event["stage"]))
        if event["stage"] == "select":  # the database goes away after the run started
            await store_pool.close()

    with pytest.raises(TrajectoryError):
        await o.run("Which anime is Luffy in?", sink=sink)
    assert "final" not in seen


async def test_concurrent_runs_do_not_mix(orchestrator: Orchestrator) -> None:
    questions = ["Which anime is Luffy in?", "How is Luffy related to Nami?", "What is the sequel of Naruto?",
                 "Who directed Cowboy Bebop?"] * 3
    results = await asyncio.gather(*(orchestrator.run(q) for q in questions))
    assert all(r.response.status == "answered" for r in results)
    assert len({r.trajectory_id for r in results}) == len(questions)
    for q, r in zip(questions, results, strict=True):
        traj = await orchestrator.store.get(r.trajectory_id)
        assert traj is not None and traj.query == q
        assert [e.seq for e in traj.events] == list(range(1, len(traj.events) + 1))


async def test_every_log_line_of_a_run_carries_its_request_id(orchestrator: Orchestrator) -> None:
    import io
    import json
    import logging

    from agentic_rag.logs import configure_logging

    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = configure_logging(orchestrator.settings.model_copy(update={"log_level": "INFO"}), stream)
    try:
        result = await orchestrator.run("Which anime is Luffy in?", request_id="req-log-1")
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    loop_lines = [line for line in lines if line["logger"] == "agentic_rag.orchestrator.loop"]
    assert loop_lines and all(line["request_id"] == "req-log-1" for line in loop_lines)
    assert result.request_id == "req-log-1"


async def test_every_clarification_choice_answers_about_that_entity(orchestrator: Orchestrator) -> None:
    asked = await orchestrator.run("Tell me about Naruto")
    assert asked.response.clarification is not None
    for i, choice in enumerate(asked.response.clarification.choices):
        again = await orchestrator.run("Tell me about Naruto")
        done = await orchestrator.resume(again.trajectory_id, i)
        assert done.response.status == "answered"
        assert [e.id for e in done.response.result_entities] == [choice.entity.id], choice.label


async def test_concurrent_resumes_on_many_replicas_resolve_exactly_once(
        orchestrator: Orchestrator, pool: Pool, qdrant: VectorStore, embedder: Embedder,
        settings: Settings) -> None:
    asked = await orchestrator.run("Tell me about Naruto")
    assert asked.response.clarification is not None
    n = len(asked.response.clarification.choices)
    replicas = [build_orchestrator(settings, pool, qdrant, embedder)[0] for _ in range(4)]
    outcomes = await asyncio.gather(*(replicas[i % 4].resume(asked.trajectory_id, i % n) for i in range(12)),
                                    return_exceptions=True)
    won = [o for o in outcomes if not isinstance(o, BaseException)]
    lost = [o for o in outcomes if isinstance(o, NotAwaitingClarification)]
    assert len(won) == 1 and len(lost) == 11, outcomes
    assert all("another request is resuming it" in str(e) or "ended with status" in str(e) for e in lost)
    traj = await orchestrator.store.get(asked.trajectory_id)
    assert traj is not None and traj.status == "answered"
    chosen = [e for e in traj.events if e.stage == "clarify" and "chosen" in e.payload]
    assert len(chosen) == 1
    assert [e.seq for e in traj.events] == list(range(1, len(traj.events) + 1))


LONG = "ActorDiedError: The actor died unexpectedly before finishing this task. " + "node 10.0.0.7 pid 4242 " * 300


class DeadGraph(LocalRetrieval):
    """The real retrieval with a dead graph retriever whose error text is long and full of internals."""

    def __init__(self, *args: object, error: Exception, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.error = error

    async def graph(self, intent: GraphIntent) -> tuple[GraphResult, dict[str, str]]:
        raise self.error


@pytest.mark.parametrize("error", [RetrievalError("postgres", "unavailable", LONG), RayActorError(error_msg=LONG)],
                         ids=["retrieval-error", "ray-error"])
async def test_a_dead_retriever_is_a_degraded_step_in_our_own_words(
        orchestrator: Orchestrator, pool: Pool, qdrant: VectorStore, embedder: Embedder,
        settings: Settings, error: Exception) -> None:
    o = with_settings(orchestrator)
    o.retrieval = DeadGraph(pool, qdrant, embedder.aembed, settings, error=error)
    result = await o.run("How is Luffy related to Nami?")  # a path between two characters: a graph step
    r = result.response
    assert r.status in ("best_effort", "not_found")
    failed = [w for w in r.warnings if "failed" in w]
    assert failed and all(len(w) <= 200 for w in r.warnings)
    expected = ("is unavailable" if isinstance(error, RetrievalError) else "failed")
    assert any(f"the graph retriever {expected}" in w for w in failed), r.warnings
    traj = await o.store.get(result.trajectory_id)
    assert traj is not None and traj.status == r.status
    assert "10.0.0.7" not in traj.model_dump_json() and "10.0.0.7" not in r.model_dump_json()


async def test_a_terminated_backend_before_the_clarify_lookup_is_retried(
        orchestrator: Orchestrator, dsn: str, settings: Settings, qdrant: VectorStore, embedder: Embedder) -> None:
    one = await make_pool(dsn, settings.model_copy(update={"pool_min_size": 1, "pool_max_size": 1}))
    try:
        async with one.acquire() as conn:
            pid = conn.get_server_pid()
        await _terminate(dsn, pid)
        await asyncio.sleep(0.1)
        o = with_settings(orchestrator)
        o.retrieval = LocalRetrieval(one, qdrant, embedder.aembed, settings)  # linking reads names from ``one``
        result = await o.run("Tell me about Naruto")
        assert result.response.status == "needs_clarification" and not result.response.warnings
    finally:
        await one.close()
